package specs

import (
	"fmt"
	"io"
	"strings"
)

// mdTable writes a GitHub-flavoured Markdown table. Cells are escaped so a
// pipe or a line break in a detail cannot break the table.
func mdTable(w io.Writer, header []string, rows [][]string) error {
	esc := strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ")
	line := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = esc.Replace(c)
			if out[i] == "" {
				out[i] = " "
			}
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(line(header))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, r := range rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// code quotes s as inline Markdown code.
func code(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "`") {
		return "``" + s + "``"
	}
	return "`" + s + "`"
}

// Markdown writes the reconcile report for a pull request: the summary
// line, what needs action, every row, and the spec problems.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Reconcile `%s` against %s @ `%s`\n\n", r.Group, r.Ref, short(r.Commit))
	fmt.Fprintf(&b, "**%s**\n\n", r.Line())
	fmt.Fprintf(&b, "Spec commit `%s`; task strategies %s; families %s.\n\n", r.Commit,
		joinCode(r.TaskStrategies), joinCode(r.Families))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	rows := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		state := row.State
		if row.NeedsAction {
			state = "**" + state + "**"
		}
		rows = append(rows, []string{code(row.Profile), row.Family, code(row.Checkpoint), row.Kind,
			ruleCell(row), state, row.Detail})
	}
	if err := mdTable(w, r.TableHeader(), rows); err != nil {
		return err
	}
	if len(r.Gaps) > 0 {
		b.Reset()
		b.WriteString("\nCheckpoints without a normal profile (explicit gaps, not models):\n\n")
		for _, g := range r.Gaps {
			fmt.Fprintf(&b, "- %s: %s\n", code(g.Checkpoint), joinCode(g.Profiles))
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func joinCode(items []string) string {
	if len(items) == 0 {
		return "(none)"
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}
