package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Missing is what every human-readable format shows for a value that was
// not measured (never 0).
const Missing = "—"

// fmtMS formats milliseconds with two decimals.
func fmtMS(v *float64) string {
	if v == nil {
		return Missing
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

// fmtRate formats images/s with two decimals.
func fmtRate(v *float64) string { return fmtMS(v) }

// fmtPlain formats an optional number for CSV: two decimals, "" if missing.
func fmtPlain(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

// correctnessCell is the group table's correctness column: the gates with
// a mark each, or pass / FAIL / not run / error.
func correctnessCell(c *verdict.Correctness) string {
	switch {
	case c == nil || !c.Ran:
		return "not run"
	case c.Error != "":
		return "error"
	case len(c.Gates) == 0 && c.Passed:
		return "pass"
	case len(c.Gates) == 0:
		return "FAIL"
	}
	parts := make([]string, len(c.Gates))
	for i, g := range c.Gates {
		mark := "✓"
		if !g.Passed {
			mark = "✗"
		}
		parts[i] = g.String() + " " + mark
	}
	return strings.Join(parts, "; ")
}

// correctnessWord is the CSV correctness column.
func correctnessWord(c *verdict.Correctness) string {
	switch {
	case c == nil || !c.Ran:
		return "not_run"
	case c.Error != "":
		return "error"
	case c.Passed:
		return "passed"
	}
	return "failed"
}

// gatesPlain lists gates with ASCII ops, for CSV.
func gatesPlain(c *verdict.Correctness) string {
	if c == nil {
		return ""
	}
	parts := make([]string, len(c.Gates))
	for i, g := range c.Gates {
		v := "pass"
		if !g.Passed {
			v = "fail"
		}
		parts[i] = fmt.Sprintf("%s %s %s %s %s", g.Name, verdict.FormatMetric(g.Value), g.Op, verdict.FormatMetric(g.Threshold), v)
	}
	return strings.Join(parts, "; ")
}

// phaseCell is "sent/expected" of one phase.
func phaseCell(r *verdict.Result, phase string) string {
	c, ok := r.RequestsByPhase[phase]
	if !ok {
		return Missing
	}
	return fmt.Sprintf("%d/%d", c.Sent, c.Expected)
}

// errorsOf is the number of requests that were answered but did not match.
func errorsOf(c verdict.Counts) int {
	return c.Mismatched + c.Errored + c.Duplicates + c.Meaningless + c.EchoMismatched + c.ServerBusy
}

func errorsCell(c verdict.Counts) string {
	n := errorsOf(c)
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, breakdown([]part{
		{c.Mismatched, "mismatched"}, {c.Errored, "errored"}, {c.Duplicates, "duplicate"}, {c.Meaningless, "meaningless"},
		{c.EchoMismatched, "echo differs"},
		{c.ServerBusy, "server busy"},
	}))
}

func missingCell(c verdict.Counts) string {
	n := c.MissingJoins()
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, breakdown([]part{
		{c.MissingNative, "native"}, {c.MissingHTTP, "HTTP"}, {c.MissingServerRecord, "server record"}, {c.EchoMissing, "echo"},
	}))
}

type part struct {
	n    int
	what string
}

func breakdown(parts []part) string {
	var out []string
	for _, p := range parts {
		if p.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(out, ", ")
}

// outputCell is "1234 tokens" or "463 boxes".
func outputCell(r *verdict.Result) string {
	switch {
	case r.OutputTokens != nil:
		return fmt.Sprintf("%d tokens", *r.OutputTokens)
	case r.Boxes != nil:
		return fmt.Sprintf("%d boxes", *r.Boxes)
	}
	return Missing
}

func aiperfCell(p verdict.Provenance) string {
	v := orMissing(p.AIPerfVersion)
	if p.AIPerfVersionMismatch != "" {
		v += " (mismatch allowed)"
	}
	return v
}

// verdictCell is the verdict, with a re-judged one's original.
func verdictCell(row *Row) string {
	if row.Result == nil {
		if row.Status == StatusExcluded && row.Note != "" {
			return "excluded: " + row.Note
		}
		return row.Status
	}
	r := row.Result
	v := r.Verdict
	if r.Verdict == verdict.VerdictExcluded && r.Exclusion != "" {
		v += ": " + r.Exclusion
	}
	if r.Rejudged != nil {
		if r.Rejudged.OriginalVerdict != r.Verdict {
			v += " (rejudged; was " + r.Rejudged.OriginalVerdict + ")"
		} else {
			v += " (rejudged)"
		}
	}
	return v
}

func orMissing(s string) string {
	if s == "" {
		return Missing
	}
	return s
}

// short is the first 12 characters of a digest or commit.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// ShellQuote renders argv as one line a POSIX shell reads back as argv:
// text.ShellJoin, whose ShellQuote is the one quoting function.
func ShellQuote(argv []string) string { return text.ShellJoin(argv) }

// ReproduceCommand is the command a row prints for a person to paste: the
// stored line, which the harness quoted word by word (text.ShellQuote)
// when it wrote the row, with control, bidirectional and invisible
// characters escaped, so a hostile or damaged result.json cannot act on a
// terminal or hide words (the seal tells whether it was changed).
func ReproduceCommand(r *verdict.Result) string { return text.Printable(r.Command) }

// fence is a Markdown code fence longer than any run of backticks in s,
// so no content can close it early.
func fence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// shellLines renders argv over several lines, breaking before each option,
// with backslash continuations; with a scrubber, each word as it is
// published (Mapper.ShellWord: "$ROOT/rest" expands the root).
func shellLines(argv []string, s Mapper) string {
	quote := text.ShellQuote
	if s != nil {
		quote = s.ShellWord
	}
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			if strings.HasPrefix(a, "-") {
				b.WriteString(" \\\n  ")
			} else {
				b.WriteString(" ")
			}
		}
		if i == 0 && s == nil {
			b.WriteString(text.ShellJoin(argv[:1]))
		} else {
			b.WriteString(quote(a))
		}
	}
	return b.String()
}

// rootsNote says which named roots a published command uses and what
// each is, so that it can be run elsewhere.
func rootsNote(used []string, s Mapper) string {
	parts := make([]string, len(used))
	for i, n := range used {
		if d := s.RootDescription(n); d != "" {
			parts[i] = "$" + n + " " + d
		} else { // a root the publisher named (--root NAME=DIR)
			parts[i] = "$" + n + " the directory named " + n + " by --root"
		}
	}
	return "Paths are relative to named roots; set them before running: " + strings.Join(parts, "; ") + "."
}

// SplitText explains a row's HTTP minus Task from its HTTP split: the
// means, which add up (HTTP = client + sending + waiting + receiving,
// waiting = Task + outside Task), then each part's p50/p95. "" when the
// row has no split to show.
func SplitText(l verdict.Latency, matched int) string {
	s := l.HTTPSplit
	if s == nil {
		return ""
	}
	if s.Count < matched || s.HTTPMean == nil {
		msg := fmt.Sprintf("HTTP split withheld: %d of %d measured matched requests have one", s.Count, matched)
		if s.MissingExample != "" {
			msg += " (none for " + s.MissingExample + ")"
		}
		return msg
	}
	pp := func(p verdict.SplitPart) string { return fmtMS(p.P50) + "/" + fmtMS(p.P95) }
	return fmt.Sprintf("HTTP %s ms = client %s + sending %s + waiting %s + receiving %s; waiting = Task %s + %s outside the Task call "+
		"(means over %d measured matched %s); p50/p95: client %s, sending %s, waiting %s, receiving %s, outside Task %s ms",
		fmtMS(s.HTTPMean), fmtMS(s.Client.Mean), fmtMS(s.Sending.Mean), fmtMS(s.Waiting.Mean), fmtMS(s.Receiving.Mean),
		fmtMS(s.TaskMean), fmtMS(s.OutsideTask.Mean), s.Count, text.Plural(s.Count, "request", "requests"),
		pp(s.Client), pp(s.Sending), pp(s.Waiting), pp(s.Receiving), pp(s.OutsideTask))
}
