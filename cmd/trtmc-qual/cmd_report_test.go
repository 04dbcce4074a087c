package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		f := newFactory(io, func() {})
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
	assert.Equal(t, []string{"out"}, o.From, "defaults to the configured out")
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
}

func TestReportExitZeroWhenQualified(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "detection", "--format", "md")
	assert.Equal(t, exitOK, code, errOut)
	assert.Equal(t, goldenFile(t, "detection.md"), out)
}

func TestReportMergeAndBaseline(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--from", evidenceRoot("b"), "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "## Conflicts")
	assert.Contains(t, errOut, "2 profile(s) have conflicting results")

	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"), "--group", "vlm", "--format", "md")
	assert.Contains(t, out, "% ▲)")
	_, out, _ = runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--baseline", evidenceRoot("baseline"),
		"--regression-threshold", "1000", "--group", "vlm", "--format", "md")
	assert.NotContains(t, out, "% ▲)")
}

func TestReportOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlm.html")
	code, out, errOut := runCLI(t, nil, "report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "html", "--output-file", path)
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "wrote "+path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, goldenFile(t, "vlm.html"), string(data))
}

func TestReportRejudge(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(evidenceRoot("rejudge"))))
	io, out, errOut := testIO()
	f := newFactory(io, func() {})
	f.Getenv = func(string) string { return "" }
	f.Now = func() time.Time { return time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC) }
	f.Version = "test"
	root0 := newRootCmd(f)
	root0.SetArgs([]string{"report", "--from", root, "--group", "vlm", "--format", "md", "--rejudge"})
	err := root0.Execute()
	assert.Equal(t, exitFailed, codeFor(err))
	assert.Equal(t, goldenFile(t, "rejudged.md"), out.String())
	assert.Contains(t, errOut.String(), "re-judged 2 result(s)")
	_, err = os.Stat(filepath.Join(root, "vlm", "ref-vlm-small", "result.rejudged.json"))
	require.NoError(t, err)
}

func TestReportEvidenceErrors(t *testing.T) {
	code, _, errOut := runCLI(t, nil, "report", "--from", t.TempDir(), "--group", "vlm")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no evidence for group "vlm"`)

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "vlm", "p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "vlm", "p", "result.json"), []byte("{\n  \"schema\": 1\n}\n"), 0o644))
	code, _, errOut = runCLI(t, nil, "report", "--from", root, "--group", "vlm")
	assert.Equal(t, exitHarness, code)
	assert.Contains(t, errOut, "p/result.json:2: schema: is number, want string")
}
