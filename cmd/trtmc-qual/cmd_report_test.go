package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// The hand-made evidence trees and golden files of the reports package.
func evidenceRoot(name string) string { return repoFile("reports", "testdata", "evidence", name) }

func goldenFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(repoFile("reports", "testdata", name+".golden"))
	require.NoError(t, err)
	return string(data)
}

func TestReportFlags(t *testing.T) {
	var got *reportOptions
	capture := func(o *reportOptions) error { got = o; return nil }
	parse := func(args ...string) (*reportOptions, error) {
		t.Helper()
		got = nil
		io, _, _ := testIO()
		f := newFactory(io, nil)
		f.Getenv = func(string) string { return "" }
		root := newRootCmd(f)
		root.RemoveCommand(mustFind(t, root.Commands(), "report"))
		root.AddCommand(newReportCmd(f, capture))
		root.SetArgs(append([]string{"report"}, args...))
		root.SetOut(io.Out)
		root.SetErr(io.ErrOut)
		return got, root.Execute()
	}

	o, err := parse("--group", "vlm", "--from", "out/a", "--from", "out/b,c", "-o", "md", "--output", "x.md",
		"--rejudge", "--baseline", "out/old", "--regression-threshold", "5")
	require.NoError(t, err)
	assert.Equal(t, []string{"out/a", "out/b,c"}, o.From, "--from repeats and keeps commas")
	assert.Equal(t, "vlm", o.Group)
	assert.Equal(t, "md", o.Format)
	assert.Equal(t, "x.md", o.Output)
	assert.True(t, o.Rejudge)
	assert.Equal(t, []string{"out/old"}, o.Baseline)
	assert.InDelta(t, 5.0, o.ThresholdPct, 0)

	o, err = parse("--group", "vlm")
	require.NoError(t, err)
	assert.Equal(t, []string{fileio.Abs("out")}, o.From, "defaults to the configured out, made absolute")
	assert.InDelta(t, 10.0, o.ThresholdPct, 0)

	_, err = parse("--from", "out")
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	_, err = parse("--group", "vlm", "--format", "xml")
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.Contains(t, err.Error(), `invalid format "xml": valid values are md, csv, json, html, table, tsv`)
	_, err = parse("--group", "vlm", "--regression-threshold", "-1")
	assert.Equal(t, exitUsage, codeFor(err))

	o, err = parse("--group", "vlm")
	require.NoError(t, err)
	assert.InDelta(t, stats.DefaultRunSD, o.RunNoise, 0, "--run-noise defaults to the rule's")
	o, err = parse("--group", "vlm", "--run-noise", "0")
	require.NoError(t, err)
	assert.InDelta(t, 0, o.RunNoise, 0)
	for _, bad := range []string{"-0.01", "1", "NaN", "x"} {
		_, err = parse("--group", "vlm", "--run-noise", bad)
		require.Error(t, err, bad)
		assert.Equal(t, exitUsage, codeFor(err), bad)
	}
	_, err = parse("--group", "vlm", "--run-noise", "1.5")
	assert.ErrorContains(t, err, "--run-noise is the standard deviation of the log of a run's median between runs: want 0 <= SD < 1, got 1.5")
}

// TestReportValidate: report's checks of its flags together, on the
// options alone (no cobra), and the format they settle.
func TestReportValidate(t *testing.T) {
	for _, tt := range []struct {
		name       string
		edit       func(*reportOptions)
		want       string // "" = valid
		wantFormat string
	}{
		{"valid", func(*reportOptions) {}, "", reports.FormatAuto},
		{"no group", func(o *reportOptions) { o.Group = "" }, "--group is required", ""},
		{"unknown format", func(o *reportOptions) { o.Format = "xml" }, `invalid format "xml"`, ""},
		{"both file flags", func(o *reportOptions) { o.OutputGiven, o.OutputFileGiven = true, true }, "--output is the old name of --output-file; pass one", ""},
		{"empty file name", func(o *reportOptions) { o.OutputFileGiven = true }, "--output-file needs a file name", ""},
		{"extension selects", func(o *reportOptions) { o.Output, o.OutputFileGiven = "r.csv", true }, "", reports.FormatCSV},
		{"extension disagrees", func(o *reportOptions) { o.Output, o.Format = "r.csv", "md" }, "the extension says csv but --format says md", ""},
		{"update-doc is markdown", func(o *reportOptions) { o.UpdateDoc = "page.md" }, "", reports.FormatMarkdown},
		{"update-doc and a file", func(o *reportOptions) { o.UpdateDoc, o.Output = "page.md", "r.md" }, "--update-doc and --output-file both name a file", ""},
		{"dry-run alone", func(o *reportOptions) { o.DryRun = true }, "--dry-run only applies to --update-doc", ""},
		{"reconcile without summary", func(o *reportOptions) { o.Reconcile = "r.json" }, "only apply to --format summary", ""},
		{"negative threshold", func(o *reportOptions) { o.ThresholdPct = -1 }, "want 0 <= PCT < 1000, got -1", ""},
		{"threshold past the rule", func(o *reportOptions) { o.ThresholdPct = 1000 }, "want 0 <= PCT < 1000, got 1000", ""},
		{"bad root", func(o *reportOptions) { o.Roots = []string{"lower=/x"} }, `--root: root name "lower"`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, _ := testIO()
			o := &reportOptions{IO: streams, Group: "vlm"}
			tt.edit(o)
			err := o.Validate()
			if tt.want != "" {
				require.Error(t, err)
				assert.Equal(t, exitUsage, codeFor(err))
				assert.Contains(t, err.Error(), tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantFormat, o.Format)
		})
	}
	o := &reportOptions{IO: &IOStreams{ErrOut: io.Discard}, Group: "vlm", Roots: []string{"DATA=/data"}}
	require.NoError(t, o.Validate())
	assert.Equal(t, []verdict.Root{{Name: "DATA", Path: "/data"}}, o.declared, "Validate parses --root")
}

// TestReportRunDirect: the logic called with options, no cobra: the group
// table of stored evidence, byte for byte what run wrote, and the exit
// status from the rows.
func TestReportRunDirect(t *testing.T) {
	streams, out, _ := testIO()
	opts := &reportOptions{IO: streams, From: []string{evidenceRoot("a")}, Group: "detection", Format: reports.FormatMarkdown,
		Now: time.Now, Getenv: func(string) string { return "" }}
	err := runReport(context.Background(), opts)
	assert.Equal(t, exitFailed, codeFor(err), "no inventory snapshot: nothing proves every profile ran")
	assert.Equal(t, goldenFile(t, "detection.md"), out.String())

	streams, _, _ = testIO()
	opts.IO, opts.From = streams, []string{evidenceRoot("complete")}
	require.NoError(t, runReport(context.Background(), opts))
	opts.From = []string{evidenceRoot("a")}

	streams, out, _ = testIO()
	opts.IO, opts.Group = streams, "vlm"
	err = runReport(context.Background(), opts)
	assert.Equal(t, exitFailed, codeFor(err), "the vlm evidence has rows that did not qualify")
	assert.Equal(t, goldenFile(t, "vlm.md"), out.String())
}

func mustFind[T interface{ Name() string }](t *testing.T, cmds []T, name string) T {
	t.Helper()
	for _, c := range cmds {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %q", name)
	var zero T
	return zero
}

// The acceptance check: report prints exactly what run wrote (here the
// golden results.md of the same evidence).
func TestReportPrintsResultsMarkdown(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code, "the group has failed, broken and not-run rows")
	assert.Equal(t, goldenFile(t, "vlm.md"), out)
	assert.Contains(t, errOut, "1 of 5 normal profiles qualified")
}

func TestReportAllFormatsMatchGoldens(t *testing.T) {
	for _, f := range []string{"md", "csv", "json", "html", "table", "tsv"} {
		t.Run(f, func(t *testing.T) {
			_, out, _ := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", f)
			assert.Equal(t, goldenFile(t, "vlm."+f), out)
		})
	}
	// The summary is published text: the hand-made rows have no raw
	// artifacts to re-derive them from, so it is refused (its rendering
	// is reports.TestGoldenVLMAllFormats').
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "summary")
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "refused: group vlm: ")
	assert.Contains(t, errOut, "ref-vlm-small: verdict: stored qualified, re-derived error")
}

func TestReportExitZeroWhenQualified(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("complete"), "--group", "detection", "--format", "md")
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "**1 of 1 normal profile qualified; 1 excluded with a reason; 1 variant or partial profile listed separately, not counted.**")

	// The same rows without their snapshot (issue 32 item 1): exit 1.
	code, out, errOut = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "detection", "--format", "md")
	assert.Equal(t, exitFailed, code, errOut)
	assert.Equal(t, goldenFile(t, "detection.md"), out)
}

func TestReportMergeAndBaseline(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--from", evidenceRoot("b"), "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "## Conflicts")
	assert.Contains(t, errOut, "2 profile(s) have conflicting results")

	// By default single runs carry the run-to-run noise: the fixtures'
	// +20 % between two single runs is within it.
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"), "--group", "vlm", "--format", "md")
	assert.NotContains(t, out, "% ▲)")
	assert.Contains(t, out, "Compared with a baseline run: 2 rows compared — 0 regressed, 0 improved, 0 no change, 2 inconclusive.")
	assert.Contains(t, out, "(run-to-run sd 0.075 included for each side that is a single run;")
	assert.Regexp(t, `HTTP inconclusive \+[0-9.]+% \\\[-[0-9.]+%, \+[0-9.]+%\\\] \\\[within the runs \+[0-9.]+%, \+[0-9.]+%\\\]`, out)
	// Within the runs alone (runs known to share a server and host state)
	// it is a called regression.
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"), "--run-noise", "0", "--group", "vlm", "--format", "md")
	assert.Contains(t, out, "% ▲)")
	assert.Contains(t, out, "Compared with a baseline run: 2 rows compared — 1 regressed, 0 improved, 1 no change, 0 inconclusive.")
	assert.Contains(t, out, "(the interval within the runs alone: run-to-run sd 0).")
	assert.Contains(t, out, "\n## Baseline\n")
	// Each series with its decision, its estimate and its 95 % interval.
	assert.Regexp(t, `- \*\*ref-vlm-small\*\* — HTTP regressed \+[0-9.]+% \\\[\+[0-9.]+%, \+[0-9.]+%\\\] \(median [0-9.]+ → [0-9.]+ ms, n 50 → 50\); Task regressed`, out)
	assert.Regexp(t, `- \*\*ref-vlm-small-fp16\*\* — HTTP no change [-+][0-9.]+% \\\[`, out)
	// The minimum effect is the rule's: at 50 % the same +20 % is not called.
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"),
		"--regression-threshold", "50", "--run-noise", "0", "--group", "vlm", "--format", "md")
	assert.NotContains(t, out, "% ▲)")
	assert.Contains(t, out, "0 regressed")
	assert.Contains(t, out, "at least 50% (the interval within the runs alone: run-to-run sd 0).")
	code, _, errOut = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"),
		"--regression-threshold", "1000", "--group", "vlm", "--format", "md")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--regression-threshold is the baseline rule's minimum effect in percent")
	code, _, errOut = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"),
		"--run-noise", "-1", "--group", "vlm", "--format", "md")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--run-noise is the standard deviation of the log of a run's median between runs")
	// JSON and CSV carry the interval and the decision.
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"), "--run-noise", "0", "--group", "vlm", "--format", "json")
	var rep reports.GroupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.Baseline)
	assert.Equal(t, stats.MethodHodgesLehmannLog, rep.Baseline.Method)
	for _, row := range rep.Rows {
		if row.Profile == "ref-vlm-small" {
			require.NotNil(t, row.Baseline)
			d := row.Baseline.HTTPP50
			require.NotNil(t, d)
			assert.Equal(t, "regressed", d.Decision)
			assert.Less(t, 0.0, d.LowerPct)
			assert.LessOrEqual(t, d.LowerPct, d.ChangePct)
			assert.LessOrEqual(t, d.ChangePct, d.UpperPct)
		}
	}
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"), "--group", "vlm", "--format", "csv")
	assert.Contains(t, strings.SplitN(out, "\n", 2)[0], ",baseline_decision,http_change_lower_pct,http_change_upper_pct,http_decision,")
}

func TestReportOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlm.html")
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "html", "--output-file", path)
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "wrote "+path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, goldenFile(t, "vlm.html"), linksFromGroupDir(t, path, filepath.Join(evidenceRoot("a"), "vlm"), data),
		"the golden page, its evidence links relative to the file")
}

// TestReportRejudge re-derives a sealed synthetic row from its artifacts:
// clean, it qualifies (exit 0); after a native answer is changed, the
// rejudge finds the mismatch and the broken seal (exit 1, an error row),
// and result.json is never modified.
func TestReportRejudge(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bench", "synth")
	exp, err := synth.Write(dir, synth.Config{Requests: 55, Seed: 3, NoFaults: true, ImageMin: 64, ImageMax: 128})
	require.NoError(t, err)
	require.NoError(t, synth.Seal(dir, "bench", "synth", exp))
	before, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)

	code, out, errOut := runCLI(t, nil, "report", "--from", root, "--group", "bench", "--rejudge", "--format", "json")
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "re-judged 1 result(s)")
	var rep reports.GroupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, verdict.VerdictQualified, rep.Rows[0].Verdict, "%+v", rep.Rows[0].Result.Reasons)

	native := filepath.Join(dir, "native_answers.jsonl")
	data, err := os.ReadFile(native)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(native, bytes.Replace(data, []byte(`"confidence":0.9`), []byte(`"confidence":0.1`), 1), 0o644))
	code, out, _ = runCLI(t, nil, "report", "--from", root, "--group", "bench", "--rejudge", "--format", "json")
	assert.Equal(t, exitFailed, code)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	r := rep.Rows[0].Result
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	var codes []verdict.Code
	for _, x := range r.Reasons {
		codes = append(codes, x.Code)
	}
	assert.Contains(t, codes, verdict.CodeEvidenceChanged)
	assert.Contains(t, codes, verdict.CodeMismatched)
	after, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "result.json is never modified")
}

func TestReportEvidenceErrors(t *testing.T) {
	code, _, errOut := runCLI(t, nil, "report", "--from", t.TempDir(), "--group", "vlm")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no evidence for group "vlm"`)

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "vlm", "p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "vlm", "p", "result.json"), []byte("{\n  \"schema\": 1\n}\n"), 0o644))
	code, out, _ := runCLI(t, nil, "report", "--from", root, "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code, "malformed evidence is the row's error, not the harness's")
	assert.Contains(t, out, "evidence_malformed: ")
	assert.Contains(t, out, "p/result.json:2: schema: is number, want string")
}

var evidenceHref = regexp.MustCompile(`href="([^"#][^"]*)"`)

// linksFromGroupDir checks that every evidence link of an HTML report
// written to page resolves from the page's directory, and rewrites each
// to what it is from groupDir (where `run` writes results.html), so the
// page compares with the golden file.
func linksFromGroupDir(t *testing.T, page, groupDir string, html []byte) string {
	t.Helper()
	base, err := filepath.Abs(filepath.Dir(page))
	require.NoError(t, err)
	group, err := filepath.Abs(groupDir)
	require.NoError(t, err)
	return evidenceHref.ReplaceAllStringFunc(string(html), func(m string) string {
		href := evidenceHref.FindStringSubmatch(m)[1]
		target := filepath.Join(base, filepath.FromSlash(href))
		assert.FileExists(t, target, href)
		rel, err := filepath.Rel(group, target)
		require.NoError(t, err)
		return `href="` + filepath.ToSlash(rel) + `"`
	})
}

// TestReportSummary: -o summary with a saved reconciliation checked
// against the TRTMC checkout's main: complete while main is at the
// reconciled commit, NOT complete (naming the new head) once it moved;
// a reconciliation of another group or a flag without -o summary is a
// usage error.
func TestReportSummary(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	gitRun := func(args ...string) string {
		cmd := exec.Command(git, append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	gitRun("init", "-q", "-b", "main")
	gitRun("commit", "-q", "--allow-empty", "-m", "one")
	head := gitRun("rev-parse", "HEAD")
	rec := filepath.Join(t.TempDir(), "reconcile.json")
	write := func(group string) {
		require.NoError(t, os.WriteFile(rec, []byte(`{"schema":"trtmc-qual/reconcile/v1","group":"`+group+`","ref":"main","commit":"`+head+`","summary":{"normal":1,"need_action":0}}`), 0o644))
	}
	write("detection")
	root := publishableRoot(t, "ref-detect-small")
	args := []string{"report", "--from", root, "--group", "detection", "-o", "summary", "--reconcile", rec, "--repo", repo}
	code, out, errOut := runCLI(t, nil, args...)
	assert.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasPrefix(out, "**detection: complete.**"), out)
	assert.Contains(t, out, "`main` is still at that commit (current)")

	gitRun("commit", "-q", "--allow-empty", "-m", "two")
	code, out, errOut = runCLI(t, nil, args...)
	assert.Equal(t, exitFailed, code, "NOT complete exits 1, whatever is missing (here: a current reconciliation)")
	assert.Contains(t, errOut, "group detection: NOT complete: 1 thing missing")
	assert.True(t, strings.HasPrefix(out, "**detection: NOT complete"), out)
	assert.Contains(t, out, "but `main` is now `"+gitRun("rev-parse", "HEAD")+"`")

	// The same rows without their inventory snapshot (issue 32 item 1): NOT
	// complete, exit 1.
	bare := filepath.Join(t.TempDir(), "out")
	golden.CopyTree(t, filepath.Join(root, "detection"), filepath.Join(bare, "detection"))
	require.NoError(t, os.Remove(filepath.Join(bare, "detection", "inventory.json")))
	code, out, _ = runCLI(t, nil, "report", "--from", bare, "--group", "detection", "-o", "summary", "--reconcile", rec)
	assert.Equal(t, exitFailed, code)
	assert.True(t, strings.HasPrefix(out, "**detection: NOT complete"), out)
	assert.Contains(t, out, "the inventory snapshot (`detection/inventory.json`): not in the evidence")

	// Into a .md file: the summary is Markdown.
	file := filepath.Join(t.TempDir(), "summary.md")
	code, _, errOut = runCLI(t, nil, append(args, "--output-file", file)...)
	assert.Equal(t, exitFailed, code, errOut)
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(written), "**detection: NOT complete"))

	// --allow-incomplete drafts it: exit 0, and it still says NOT complete.
	code, out, errOut = runCLI(t, nil, append(args, "--allow-incomplete")...)
	assert.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasPrefix(out, "**detection: NOT complete"), out)
	assert.Contains(t, errOut, "group detection: NOT complete: 1 thing missing (the summary lists it); exit 0 (--allow-incomplete)")

	write("vlm")
	code, _, errOut = runCLI(t, nil, args...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `group is "vlm", want "detection"`)
	for _, extra := range [][]string{{"--reconcile", rec}, {"--drift", rec}, {"--allow-incomplete"}} {
		code, _, errOut = runCLI(t, nil, append([]string{"report", "--from", evidenceRoot("a"), "--group", "detection", "-o", "md"}, extra...)...)
		assert.Equal(t, exitUsage, code, extra)
		assert.Contains(t, errOut, "--reconcile, --repo, --drift and --allow-incomplete only apply to --format summary", extra)
	}
}

// -o summary --drift FILE: a saved inventory drift -o json says whether the
// group's specs are unchanged; only a drift over the group that changed
// nothing lets the headline say "unchanged"; a file that is not one, or
// is another group's, is a usage error naming it.
func TestReportSummaryDrift(t *testing.T) {
	root := publishableRoot(t, "ref-detect-small")
	dir := t.TempDir()
	writeJSON := func(name string, v any) string {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	c := strings.Repeat("a", 40)
	rep := func(groups []string, changes ...drift.Change) drift.Report {
		r := drift.Report{Schema: drift.Schema, Groups: groups, Base: "main", BaseCommit: c, Head: "HEAD", HeadCommit: strings.Repeat("b", 40),
			Families: []string{"yolo11", "rtdetr"}, Changes: changes, ByCategory: map[string]int{}}
		for _, ch := range changes {
			r.ByCategory[ch.Category]++
		}
		return r
	}
	summary := func(file string, extra ...string) (exitCode, string, string) {
		return runCLI(t, nil, append([]string{"report", "--from", root, "--group", "detection", "-o", "summary", "--drift", file}, extra...)...)
	}
	code, out, errOut := summary(writeJSON("unchanged.json", rep([]string{"detection"})), "--allow-incomplete")
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "- **Model specs, thresholds and contracts:** unchanged between `main` (`aaaaaaaaaaaa`) and `HEAD` (`bbbbbbbbbbbb`)")

	// Changes of another group's family are not this group's; one no group
	// could be told for is (fail closed).
	other := drift.Change{Family: "qwen_vl", Groups: "vlm", Path: "families/qwen_vl/tests/thresholds/x.json", Category: "threshold"}
	unknown := drift.Change{Family: "misc", Groups: "?", Path: "families/misc/tests/manifests/m.json", Category: "manifest"}
	_, out, _ = summary(writeJSON("vlm-only.json", rep([]string{"detection", "vlm"}, other)), "--allow-incomplete")
	assert.Contains(t, out, "contracts:** unchanged between")
	_, out, _ = summary(writeJSON("unknown.json", rep([]string{"detection", "vlm"}, other, unknown)), "--allow-incomplete")
	assert.Contains(t, out, "contracts:** **changed** between `main` (`aaaaaaaaaaaa`) and `HEAD` (`bbbbbbbbbbbb`): 1 file of the 2 families checked differs (manifest 1;")

	for name, tc := range map[string]struct {
		file string
		want string
	}{
		"another group": {writeJSON("vlm.json", rep([]string{"vlm"})), `checked groups ["vlm"], not "detection"`},
		"another schema": {writeJSON("reconcile.json", map[string]any{"schema": "trtmc-qual/reconcile/v1", "group": "detection"}),
			`schema is "trtmc-qual/reconcile/v1", want "trtmc-qual/drift/v1"`},
		"not JSON":  {filepath.Join(dir, "bad.json"), "not the JSON of inventory drift"},
		"no commit": {writeJSON("nocommit.json", drift.Report{Schema: drift.Schema, Groups: []string{"detection"}}), "base_commit or head_commit is missing"},
		"missing":   {filepath.Join(dir, "absent.json"), "--drift"},
		// A field no drift report has is refused, naming the file and line.
		"unknown field": {filepath.Join(dir, "extra.json"), filepath.Join(dir, "extra.json") + `:3: colour: not the JSON of inventory drift -o json: unknown field "colour"`},
	} {
		if name == "unknown field" {
			require.NoError(t, os.WriteFile(tc.file, []byte("{\"schema\": \""+drift.Schema+"\",\n\"groups\": [\"detection\"],\n\"colour\": 1}\n"), 0o644))
		}
		if name == "not JSON" {
			require.NoError(t, os.WriteFile(tc.file, []byte("{"), 0o644))
		}
		code, out, errOut := summary(tc.file)
		assert.Equal(t, exitUsage, code, name)
		assert.Contains(t, errOut, tc.want, name)
		assert.Empty(t, out, "%s: nothing written", name)
	}
}

// Issue 36: the README's sample of `make demo`'s vlm table is what the
// renderer writes: its header and alignment rows are the Results table's
// as `report -o md` renders it (here of fixture evidence), and every row
// has as many cells as the header.
func TestReadmeSampleTableIsTheRenderersTable(t *testing.T) {
	readme, err := os.ReadFile(repoFile("README.md"))
	require.NoError(t, err)
	_, sample, ok := strings.Cut(string(readme), "The vlm table\nlooks like this (figures vary by machine):\n\n```\n")
	require.True(t, ok, "README.md has the sample of make demo's table")
	sample, _, _ = strings.Cut(sample, "```\n")
	sampleRows := tableLines(sample)
	require.GreaterOrEqual(t, len(sampleRows), 3, "header, alignment and a row:\n%s", sample)

	_, out, _ := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "md")
	_, results, ok := strings.Cut(out, "## Results\n")
	require.True(t, ok)
	rendered := tableLines(results)
	require.GreaterOrEqual(t, len(rendered), 2)
	assert.Equal(t, cells(rendered[0]), cells(sampleRows[0]), "README.md's sample header is the renderer's")
	assert.Equal(t, strings.Count(rendered[1], "|"), strings.Count(sampleRows[1], "|"), "the alignment row")
	for _, row := range sampleRows[2:] {
		assert.Len(t, cells(row), len(cells(rendered[0])), "README.md sample row %q", row)
	}
}

// tableLines are the lines of the first Markdown table in s.
func tableLines(s string) []string {
	var rows []string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "|"):
			rows = append(rows, l)
		case len(rows) > 0:
			return rows
		}
	}
	return rows
}

// cells are the trimmed cells of a Markdown table row.
func cells(row string) []string {
	parts := strings.Split(strings.Trim(row, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
