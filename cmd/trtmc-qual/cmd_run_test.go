package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
)

// TestRunVerdictErrorNotRun: a row the scheduler did not start (too few
// GPUs, another hardware scope, a GPU family without a GPU) is a setup
// failure, exit 3, naming the profile; never success.
func TestRunVerdictErrorNotRun(t *testing.T) {
	rows := []*reports.Result{
		{Profile: "ok", Verdict: reports.VerdictQualified},
		{Profile: "big", Verdict: reports.VerdictNotRun, Reasons: []reports.Reason{{Stage: "schedule", Code: "insufficient_gpus"}}},
	}
	err := runVerdictError(rows)
	require.Error(t, err)
	assert.Equal(t, exitSetup, codeFor(err))
	assert.Contains(t, err.Error(), "big")

	rows[1] = &reports.Result{Profile: "leak", Verdict: reports.VerdictError, Reasons: []reports.Reason{{Stage: "gpu-release", Code: "gpu_leak"}}}
	assert.Equal(t, exitFailed, codeFor(runVerdictError(rows)), "a GPU leak is a broken row")

	rows[1] = &reports.Result{Profile: "busy", Verdict: reports.VerdictError, Reasons: []reports.Reason{{Stage: "preflight", Code: "gpu_busy"}}}
	assert.Equal(t, exitSetup, codeFor(runVerdictError(rows)), "a busy GPU is a setup error")
}
