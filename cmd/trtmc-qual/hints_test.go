package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Issue 36: a misspelled group or profile id gets the name it most likely
// meant, on every verb that takes one; the exit status stays 2.
func TestMisspelledNamesGetDidYouMean(t *testing.T) {
	out := t.TempDir()
	slurmDir := filepath.Join(out, ".slurm", "vlm")
	require.NoError(t, os.MkdirAll(slurmDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(slurmDir, "job.json"), []byte("{}"), 0o644))
	inv := invFlags()
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"run", "--group", "vlmm", "--gpus", "cpu", "--out", out}, inv...),
			`no group "vlmm" in the inventory (groups: vlm); did you mean "vlm"?`},
		{append([]string{"run", "--group", "vlm", "--only", "qwen3-vl-2b,qwen3vl-2b-tp2", "--gpus", "cpu", "--out", out}, inv...),
			`--only: no profile qwen3vl-2b-tp2 (did you mean "qwen3-vl-2b-tp2"?) in group vlm`},
		{append([]string{"inventory", "list", "--group", "vml"}, inv...), `no group "vml" in the inventory (groups: vlm); did you mean "vlm"?`},
		{append([]string{"inventory", "show", "qwen3-vl-2"}, inv...), `no profile "qwen3-vl-2" in the inventory; did you mean "qwen3-vl-2b"?`},
		{append([]string{"doctor", "--group", "vlmm"}, inv...), `did you mean "vlm"?`},
		{[]string{"report", "--from", evidenceRoot("a"), "--group", "vlmm"}, `no evidence for group "vlmm" under`},
		{[]string{"report", "--from", evidenceRoot("a"), "--group", "vlmm"}, `; did you mean "vlm"?`},
		{[]string{"export", "--from", evidenceRoot("a"), "--group", "detecton", "--output-file", filepath.Join(t.TempDir(), "p.tar.gz")},
			`; did you mean "detection"?`},
		{[]string{"status", "--out", out, "--group", "vml"}, `no Slurm submission recorded for group vml under ` + out + `; did you mean "vlm"?`},
	} {
		code, _, errOut := runCLI(t, nil, c.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", c.args, errOut)
		assert.Contains(t, errOut, c.want, "%v", c.args)
	}
	// Nothing close: the message as it was, no question.
	code, _, errOut := runCLI(t, nil, append([]string{"inventory", "show", "audio"}, inv...)...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no profile "audio" in the inventory`)
	assert.NotContains(t, errOut, "did you mean")
}

// Issue 36: a wrong bundle pin ended "setup failed … (server, GPU or AIPerf
// unavailable)"; the message now says what failed, in the reason's words,
// with its code and stage, row by row.
func TestSetupFailureSaysWhatFailed(t *testing.T) {
	row := func(id string, code verdict.Code, stage, msg string) *verdict.Result {
		r := &verdict.Result{Profile: id, Problems: []verdict.Problem{{Stage: stage, Code: code, Message: msg}}}
		verdict.Judge(r)
		require.True(t, r.HasClass(verdict.ClassSetup), code)
		return r
	}
	ok := &verdict.Result{Profile: "ok", Verdict: verdict.VerdictQualified}
	pin := row("yolo11n", verdict.CodeBundleIdentity, "preflight",
		"profile yolo11n: bundle b.bundle has sha256 aaa but the inventory (inv.yaml:17) pins bbb: not the bundle that was qualified\nsecond line")
	err := runVerdictError([]*verdict.Result{ok, pin})
	assert.Equal(t, exitSetup, codeFor(err))
	assert.Equal(t, "setup failed for yolo11n: bundle_identity (stage preflight): profile yolo11n: bundle b.bundle has sha256 aaa "+
		"but the inventory (inv.yaml:17) pins bbb: not the bundle that was qualified", err.Error())
	assert.NotContains(t, err.Error(), "server, GPU or AIPerf unavailable")

	late := row("rt-detr", verdict.CodeServerNotReady, "server", "server not ready after 600s")
	err = runVerdictError([]*verdict.Result{pin, ok, late})
	assert.Equal(t, exitSetup, codeFor(err))
	assert.Contains(t, err.Error(), "setup failed for 2 rows:\n  yolo11n: bundle_identity (stage preflight): ")
	assert.Contains(t, err.Error(), "\n  rt-detr: server_not_ready (stage server): server not ready after 600s")
}
