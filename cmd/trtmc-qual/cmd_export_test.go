package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/publish/export"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestExportJoinInputsAreTheJoins: the files export publishes byte for
// byte are exactly the files the one join reads, so a re-judge of a pack
// joins what the run joined.
func TestExportJoinInputsAreTheJoins(t *testing.T) {
	f := streamjoin.CheckpointFiles("DIR")
	var join []string
	for _, p := range []string{f.Dataset, f.Records, f.Raw, f.ServerRecords, f.Native} {
		rel, err := filepath.Rel("DIR", p)
		require.NoError(t, err)
		join = append(join, filepath.ToSlash(rel))
	}
	slices.Sort(join)
	got := export.JoinInputs()
	slices.Sort(got)
	assert.Equal(t, join, got)
}

func TestExportFlags(t *testing.T) {
	var got *exportOptions
	io, _, _ := testIO()
	f := newFactory(io, nil)
	f.Config = &Config{Out: "out"}
	cmd := newExportCmd(f, func(o *exportOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--group", "vlm", "--output-file", "p.tar.gz", "--logs", "tail", "--log-tail", "7", "--root", "DATA=/data", "--forbid", "x"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, []string{"out"}, got.From)
	assert.Equal(t, "tail", got.Logs)
	assert.Equal(t, 7, got.LogTail)
	assert.Equal(t, []string{"DATA=/data"}, got.Roots)

	for args, want := range map[string][]string{
		`--logs "some": valid values are none, tail, full`: {"--group", "vlm", "--output-file", "p.tar.gz", "--logs", "some"},
		"--output-file PACK.tar.gz is required":            {"--group", "vlm"},
		"--group is required":                              {"--output-file", "p.tar.gz"},
		"--log-tail must be":                               {"--group", "vlm", "--output-file", "p.tar.gz", "--log-tail", "0"},
	} {
		code, _, errOut := runCLI(t, nil, append([]string{"export"}, want...)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, errOut, args)
	}
	code, _, errOut := runCLI(t, nil, "export", "--from", evidenceRoot("a"), "--group", "vlm", "--output-file", "p.tar.gz", "--root", "lower=/x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--root: root name \"lower\"")
}

// TestExportValidate: export's checks of its flags, on the options alone.
func TestExportValidate(t *testing.T) {
	valid := func() *exportOptions {
		return &exportOptions{Group: "vlm", Output: "p.tar.gz", Logs: "none", LogTail: 5}
	}
	require.NoError(t, valid().Validate())
	for want, edit := range map[string]func(*exportOptions){
		"--group is required":                   func(o *exportOptions) { o.Group = "" },
		"--group":                               func(o *exportOptions) { o.Group = "a/b" },
		"--output-file PACK.tar.gz is required": func(o *exportOptions) { o.Output = "" },
		`--logs "all": valid values are none`:   func(o *exportOptions) { o.Logs = "all" },
		"--log-tail must be > 0, got -1":        func(o *exportOptions) { o.LogTail = -1 },
		`--root: root name "lower"`:             func(o *exportOptions) { o.Roots = []string{"lower=/x"} },
	} {
		o := valid()
		edit(o)
		err := o.Validate()
		require.Error(t, err, want)
		assert.Equal(t, exitUsage, codeFor(err), want)
		assert.Contains(t, err.Error(), want)
	}
	o := valid()
	o.Roots = []string{"DATA=/data"}
	require.NoError(t, o.Validate())
	assert.Equal(t, []verdict.Root{{Name: "DATA", Path: "/data"}}, o.declared)
}

// TestExportPackValidates: a pack's PACK.json, manifests, rows and tables
// match their schemas, and `report` on the extracted pack prints what it
// prints on the original.
func TestExportPackValidates(t *testing.T) {
	root := publishableRoot(t, "ref-detect-large", "ref-detect-small")
	out := t.TempDir()
	pack := filepath.Join(out, "det.tar.gz")
	code, stdout, errOut := runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, stdout)
	assert.Contains(t, errOut, "export: wrote "+pack+": 2 rows")
	assert.Contains(t, errOut, "trtmc-qual report --from DIR/det --group detection --rejudge")
	x := t.TempDir()
	golden.ExtractTarGz(t, pack, x)
	_, per := validateEvidenceCount(t, loadSchemas(t), filepath.Join(x, "det"))
	assert.Equal(t, 1, per["evidence-pack"])
	assert.Equal(t, 2, per["manifest"])
	_, orig, _ := runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "md")
	code, fromPack, errOut := runCLI(t, nil, "report", "--from", filepath.Join(x, "det"), "--group", "detection", "-o", "md")
	assert.Equal(t, orig, fromPack)
	assert.Equal(t, exitOK, code, "the pack's snapshot is sealed by its rows: %s", errOut)

	code, _, errOut = runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "already exists")
}
