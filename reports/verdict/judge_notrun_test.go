package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A not-run row (e.g. a Slurm task cancelled while queued) loads, keeps its
// verdict through Judge and shows as not-run with its reason, never as
// qualified.
func TestNotRunVerdict(t *testing.T) {
	r := Result{Schema: ResultSchema, Group: "g", Profile: "p", Verdict: VerdictQualified,
		Problems: []Problem{{Stage: "slurm", Code: CodeSlurmNotStarted, Message: "Slurm job 5_1 never started: CANCELLED"}}}
	Judge(&r)
	assert.Equal(t, VerdictNotRun, r.Verdict, "the problem's class makes it not-run, whatever was stored")
	assert.Equal(t, ClassNotRun, r.Reasons[0].Class)
	_, err := DecodeResult("result.json", []byte(`{"schema":"trtmc-qual/result/v2","group":"g","profile":"p","verdict":"not-run"}`), "g", "p")
	require.NoError(t, err)
}
