package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
)

// TestRunVerdictErrorGPU: the exit codes of GPU rows. A busy GPU, an
// unreadable nvidia-smi and a GPU family on CPU slots are setup errors
// (exit 3); a profile not run for want of GPUs or hardware scope, and a GPU
// leak, are rows that did not qualify (exit 1); never success.
func TestRunVerdictErrorGPU(t *testing.T) {
	row := func(code string) *reports.Result {
		r := &reports.Result{Profile: code, Problems: []reports.Problem{{Stage: "x", Code: code, Message: code}}}
		reports.Judge(r)
		return r
	}
	ok := &reports.Result{Profile: "ok", Verdict: reports.VerdictQualified}
	for code, want := range map[string]exitCode{
		reports.CodeGPUBusy: exitSetup, reports.CodeGPUProbe: exitSetup, reports.CodeGPURequired: exitSetup,
		reports.CodeInsufficientGPUs: exitFailed, reports.CodeHardwareMismatch: exitFailed, reports.CodeGPULeak: exitFailed,
		reports.CodeGPUUnused: exitFailed, reports.CodeHardwareMismatchAllowed: exitFailed,
	} {
		err := runVerdictError([]*reports.Result{ok, row(code)})
		require.Error(t, err, code)
		assert.Equal(t, want, codeFor(err), code)
		assert.Contains(t, err.Error(), code, "the profile is named")
	}
}
