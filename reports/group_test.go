package reports

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// A not-run row shows as not-run with its reason, never as qualified, and
// blocks the report.
func TestNotRunStatus(t *testing.T) {
	r := verdict.Result{Schema: verdict.ResultSchema, Group: "g", Profile: "p", Verdict: verdict.VerdictQualified,
		Problems: []verdict.Problem{{Stage: "slurm", Code: verdict.CodeSlurmNotStarted, Message: "Slurm job 5_1 never started: CANCELLED"}}}
	verdict.Judge(&r)
	status, note := statusFor(nil, &r)
	assert.Equal(t, StatusNotRun, status)
	assert.Equal(t, "Slurm job 5_1 never started: CANCELLED", note)
	assert.True(t, blocking(status))
}
