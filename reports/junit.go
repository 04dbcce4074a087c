package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/junit"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// JUnit writes the group report as a JUnit XML report (`run --junit`), one
// test case per profile, so a nightly run shows up in any CI system:
// qualified passes; failed is a <failure> and a row that broke or was
// interrupted an <error>, each with the row's reasons as the message;
// excluded and not-run profiles are <skipped> with their reason. The suite
// is the group; its properties carry the coverage sentence.
func (g *GroupReport) JUnit(w io.Writer) error {
	r, err := g.published()
	if err != nil {
		return err
	}
	suite := junit.Suite{Name: "trtmc-qual run " + r.Group, Properties: [][2]string{
		{"group", r.Group}, {"coverage", r.Coverage.Summary}}}
	for i := range r.Rows {
		suite.Cases = append(suite.Cases, junitCase(r.Group, &r.Rows[i]))
		if res := r.Rows[i].Result; res != nil && (suite.Timestamp.IsZero() || res.StartedAt.Before(suite.Timestamp)) {
			suite.Timestamp = res.StartedAt
		}
	}
	return junit.Write(w, "trtmc-qual", suite)
}

func junitCase(group string, row *Row) junit.Case {
	c := junit.Case{Name: row.Profile, Classname: "trtmc-qual." + group + "." + row.Kind}
	res := row.Result
	var out strings.Builder
	fmt.Fprintf(&out, "checkpoint: %s\nkind: %s (counted: %t)\nverdict: %s\n", row.Checkpoint, row.Kind, row.Counted, verdictCell(row))
	if row.Evidence != "" {
		fmt.Fprintf(&out, "evidence: %s\n", row.Evidence)
	}
	if res == nil {
		c.Status = junit.Skipped
		c.Message = row.Status
		if row.Note != "" {
			c.Message += ": " + row.Note
		}
		c.Output = out.String()
		return c
	}
	if !res.StartedAt.IsZero() && res.EndedAt.After(res.StartedAt) {
		c.Duration = res.EndedAt.Sub(res.StartedAt)
	}
	fmt.Fprintf(&out, "requests matched: %d/%d\nHTTP p50/p95 ms: %s / %s\nTask p50/p95 ms: %s / %s\nimages/s: %s\n",
		res.Requests.Matched, res.Requests.Expected, fmtMS(res.LatencyMS.HTTP.P50), fmtMS(res.LatencyMS.HTTP.P95),
		fmtMS(res.LatencyMS.Task.P50), fmtMS(res.LatencyMS.Task.P95), fmtRate(res.ImagesPerSec))
	for _, reason := range res.Reasons {
		fmt.Fprintf(&out, "reason: %s/%s: %s\n", reason.Stage, reason.Code, reason.Message)
	}
	if res.Command != "" {
		fmt.Fprintf(&out, "reproduce: %s\n", res.Command)
	}
	c.Output = out.String()
	switch res.Verdict {
	case verdict.VerdictQualified:
		c.Status = junit.Passed
	case verdict.VerdictExcluded, verdict.VerdictSkipped:
		c.Status = junit.Skipped
		c.Message = verdictCell(row)
	case verdict.VerdictFailed:
		c.Status, c.Type, c.Message = junit.Failed, res.Verdict, reasonsOrVerdict(res)
	default: // error, interrupted, and any verdict this code does not know
		c.Status, c.Type, c.Message = junit.Error, res.Verdict, reasonsOrVerdict(res)
	}
	return c
}

// reasonsOrVerdict is the failure message: the row's reasons, or the bare
// verdict when a row that did not qualify somehow names none.
func reasonsOrVerdict(res *verdict.Result) string {
	if len(res.Reasons) == 0 {
		return res.Verdict + " (no reason recorded)"
	}
	return reasonsPlain(res.Reasons)
}
