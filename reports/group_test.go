package reports

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// A not-run row shows as not-run with its reason, never as qualified; a
// normal profile's blocks the report, a variant's or partial's does not
// (Row.Blocks), while a variant that ran and failed does.
func TestNotRunStatus(t *testing.T) {
	r := verdict.Result{Schema: verdict.ResultSchema, Group: "g", Profile: "p", Verdict: verdict.VerdictQualified,
		Problems: []verdict.Problem{{Stage: "slurm", Code: verdict.CodeSlurmNotStarted, Message: "Slurm job 5_1 never started: CANCELLED"}}}
	verdict.Judge(&r)
	status, note := statusFor(nil, &r)
	assert.Equal(t, StatusNotRun, status)
	assert.Equal(t, "Slurm job 5_1 never started: CANCELLED", note)
	assert.True(t, (&Row{Status: status, Counted: true}).Blocks(), "a normal profile that did not run blocks")
	apart := &Row{Status: status, Kind: verdict.KindVariant}
	assert.False(t, apart.Blocks(), "a variant that did not run is not coverage")
	assert.True(t, apart.NotRunApart())
	for _, s := range []string{StatusFailed, StatusError, StatusInterrupted} {
		assert.True(t, (&Row{Status: s, Kind: verdict.KindPartial}).Blocks(), "a partial that ran and is %s blocks", s)
		assert.False(t, (&Row{Status: s, Kind: verdict.KindPartial}).NotRunApart())
	}
	for _, s := range []string{StatusImplemented, StatusFamilyValidated} {
		assert.True(t, (&Row{Status: s, Counted: true}).Blocks(), "a normal profile's claim without a result blocks")
		assert.False(t, (&Row{Status: s}).Blocks(), "a variant's claim without a result does not")
	}
	assert.False(t, (&Row{Status: StatusQualified}).NotRunApart())
	assert.False(t, (&Row{Status: StatusExcluded}).NotRunApart())
}
