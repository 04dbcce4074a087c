// Package ci is the premerge job of a qualification pull request (`trtmc-qual
// ci`): its named steps, their exit codes, and the job as JUnit XML and as a
// Markdown summary. Run validates the inventory and the families,
// reconciles and drift-checks each group, and runs the smoke qualification
// it is handed (SmokeFunc: cmd/trtmc-qual passes the pipeline's smoke run,
// so this package, beside the pipeline, does not import it). The job is
// written as JUnit XML through reports/junit and as Markdown through
// reports/markdown; cmd_ci.go only wires it and writes the reports.
package ci

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
)

// Step outcomes of a CI job.
const (
	StepPassed  = "passed"
	StepFailed  = "failed"  // a check found something (exit 1)
	StepError   = "error"   // the step could not run: configuration, setup or harness
	StepSkipped = "skipped" // not asked for, or a step it depends on failed
)

// Step is one named check of the premerge job; it becomes one JUnit test
// case and one line of the pull-request summary.
type Step struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Code is the exit status this step asks for: 0 passed or skipped,
	// 1 failed, 2 configuration, 3 setup, 4 harness error.
	Code int `json:"code"`
	// Message is one line: the summary of a reconcile, the first error...
	Message string `json:"message"`
	// Output is the plain-text detail (JUnit system-out and failure body).
	Output string `json:"output,omitempty"`
	// Markdown is the step's section of the pull-request summary.
	Markdown string        `json:"-"`
	Duration time.Duration `json:"duration_ns"`
}

// Job is the premerge job: its steps and the refs it checked.
type Job struct {
	Name       string    `json:"name"`
	Repo       string    `json:"repo"`
	Base       string    `json:"base"`
	BaseCommit string    `json:"base_commit"`
	Head       string    `json:"head"`
	HeadCommit string    `json:"head_commit"`
	Started    time.Time `json:"started"`
	Steps      []Step    `json:"steps"`
}

// ExitCode is the largest code of the steps: harness > setup >
// configuration > failed > 0 (the table's numbers are in that order).
func (j *Job) ExitCode() int {
	code := 0
	for _, s := range j.Steps {
		code = max(code, s.Code)
	}
	return code
}

// Counts returns how many steps passed, failed, errored and were skipped.
func (j *Job) Counts() (passed, failed, errored, skipped int) {
	for _, s := range j.Steps {
		switch s.Status {
		case StepPassed:
			passed++
		case StepFailed:
			failed++
		case StepError:
			errored++
		case StepSkipped:
			skipped++
		}
	}
	return
}

// codeType names an error code in JUnit.
func codeType(code int) string {
	switch code {
	case CodeFailed:
		return "check-failed"
	case CodeUsage:
		return "configuration-error"
	case CodeSetup:
		return "setup-error"
	case CodeHarness:
		return "harness-error"
	}
	return "error"
}

// JUnit writes the job as a JUnit XML report, one test case per step.
func (j *Job) JUnit(w io.Writer) error {
	suite := junit.Suite{Name: j.Name, Timestamp: j.Started, Properties: [][2]string{
		{"repo", j.Repo}, {"base", j.Base}, {"base_commit", j.BaseCommit}, {"head", j.Head}, {"head_commit", j.HeadCommit}}}
	for _, s := range j.Steps {
		c := junit.Case{Name: s.Name, Classname: "trtmc-qual.ci", Duration: s.Duration, Message: s.Message, Output: s.Output}
		switch s.Status {
		case StepFailed:
			c.Status, c.Type = junit.Failed, codeType(s.Code)
		case StepError:
			c.Status, c.Type = junit.Error, codeType(s.Code)
		case StepSkipped:
			c.Status = junit.Skipped
		default:
			c.Status = junit.Passed
		}
		suite.Cases = append(suite.Cases, c)
	}
	return junit.Write(w, j.Name, suite)
}

var statusMark = map[string]string{
	StepPassed:  "✅ passed",
	StepFailed:  "❌ failed",
	StepError:   "⚠️ error",
	StepSkipped: "⏭️ skipped",
}

// Markdown writes the job summary for a pull-request comment: the verdict,
// one line per step, then each step's section.
func (j *Job) Markdown(w io.Writer) error {
	var b strings.Builder
	exit := j.ExitCode()
	verdict := "✅ all checks passed"
	if exit != 0 {
		verdict = fmt.Sprintf("❌ %s (exit %d)", codeVerdict(exit), exit)
	}
	fmt.Fprintf(&b, "## %s: %s\n\n", j.Name, verdict)
	if j.Repo != "" {
		fmt.Fprintf(&b, "Specs from %s: base %s", markdown.Code(j.Repo), code2(j.Base, j.BaseCommit))
		if j.Head != "" {
			fmt.Fprintf(&b, ", head %s", code2(j.Head, j.HeadCommit))
		}
		b.WriteString(".\n\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	rows := make([][]string, 0, len(j.Steps))
	for _, s := range j.Steps {
		rows = append(rows, []string{markdown.Code(s.Name), statusMark[s.Status], markdown.Text(s.Message)})
	}
	if err := markdown.Table(w, []string{"step", "result", "summary"}, rows); err != nil {
		return err
	}
	for _, s := range j.Steps {
		if s.Markdown == "" {
			continue
		}
		open := ""
		if s.Status == StepFailed || s.Status == StepError {
			open = " open"
		}
		sec := fmt.Sprintf("\n<details%s><summary><code>%s</code>: %s</summary>\n\n%s\n</details>\n",
			open, html.EscapeString(s.Name), statusMark[s.Status], strings.TrimRight(s.Markdown, "\n")+"\n")
		if _, err := io.WriteString(w, sec); err != nil {
			return err
		}
	}
	return nil
}

func codeVerdict(code int) string {
	switch code {
	case CodeFailed:
		return "checks failed"
	case CodeUsage:
		return "configuration error"
	case CodeSetup:
		return "setup error"
	}
	return "harness error"
}

func code2(ref, commit string) string {
	if commit == "" {
		return markdown.Code(ref)
	}
	return fmt.Sprintf("%s @ %s", markdown.Code(ref), markdown.Code(specs.ShortSHA(commit)))
}
