package reconcile

import (
	"fmt"
	"io"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
)

// Markdown writes the reconcile report for a pull request: the summary
// line, what needs action, every row, and the spec problems.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Reconcile %s against %s @ %s\n\n", markdown.Code(r.Group), markdown.Text(r.Ref), markdown.Code(specs.ShortSHA(r.Commit)))
	fmt.Fprintf(&b, "**%s**\n\n", markdown.Text(r.Line()))
	fmt.Fprintf(&b, "Spec commit %s; task strategies %s; families %s.\n\n", markdown.Code(r.Commit),
		markdown.CodeList(r.TaskStrategies), markdown.CodeList(r.Families))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	rows := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		state := markdown.Text(row.State)
		if row.NeedsAction {
			state = "**" + state + "**"
		}
		rows = append(rows, []string{markdown.Code(row.Profile), markdown.Text(row.Family), markdown.Code(row.Checkpoint), markdown.Text(row.Kind),
			markdown.Text(ruleCell(row)), state, markdown.Text(row.Detail), markdown.Code(manifestCell(row))})
	}
	if err := markdown.Table(w, r.TableHeader(), rows); err != nil {
		return err
	}
	if len(r.Gaps) > 0 {
		b.Reset()
		b.WriteString("\nCheckpoints without a normal profile (explicit gaps, not models):\n\n")
		for _, g := range r.Gaps {
			fmt.Fprintf(&b, "- %s: %s\n", markdown.Code(g.Checkpoint), markdown.CodeList(g.Profiles))
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
