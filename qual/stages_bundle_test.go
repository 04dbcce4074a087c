package qual

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/proc/proctest"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict/verdicttest"
)

// TestABundleChangedByValidationOrServingFailsTheRow runs the real
// correctness and bundle-check stages over a real bundle file, with a
// correctness case (a fake child) and a "serving" stage that may write to
// it: a bundle changed after the correctness case or after the run fails
// an otherwise qualified row, naming the stage and both digests.
func TestABundleChangedByValidationOrServingFailsTheRow(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		touchInCase, touchRun bool
		want                  []verdict.Code
	}{
		{"unchanged", false, false, nil},
		{"the correctness case writes to the bundle", true, false, []verdict.Code{verdict.CodeBundleChangedValidate}},
		{"serving writes to the bundle", false, true, []verdict.Code{verdict.CodeBundleChangedServing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundle := filepath.Join(t.TempDir(), "model.bundle")
			require.NoError(t, os.WriteFile(bundle, []byte("engine bytes"), 0o644))
			before, err := fileio.FileSHA256(context.Background(), bundle)
			require.NoError(t, err)
			touch := func() {
				f, err := os.OpenFile(bundle, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString("rebuilt by the case")
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			runner := &proctest.FakeRunner{}
			runner.Expect(`^correctness-case `).Do(func(_ context.Context, s proc.Spec) (proc.Result, error) {
				if tc.touchInCase {
					touch()
				}
				out := s.Argv[len(s.Argv)-1]
				return proc.Result{}, os.WriteFile(out, []byte(`{"passed":true,"gates":[{"name":"accuracy","value":1,"op":">=","threshold":0.9,"passed":true}]}`), 0o644)
			})
			t.Cleanup(func() { require.NoError(t, runner.Verify()) })

			// The facts of a qualified row but for the stages under test.
			facts := stageDef{name: "preflight", run: func(cr *checkpointRun, _ context.Context) error {
				verdicttest.Qualified(&cr.res)
				cr.res.Provenance.BundleChecks = nil
				cr.res.Stages = nil
				cr.bundle = bundle
				cr.res.Provenance.BundleSHA256, cr.res.Provenance.BundlePinnedSHA256 = before, before
				cr.family.Correctness = []string{"correctness-case", "{correctness_out}"}
				return nil
			}}
			ok := func(name string, fn func()) stageDef {
				return stageDef{name: name, run: func(*checkpointRun, context.Context) error {
					if fn != nil {
						fn()
					}
					return nil
				}}
			}
			serve := func() {
				if tc.touchRun {
					touch()
				}
			}
			stages := []stageDef{facts, ok("server", nil), {name: "correctness", run: (*checkpointRun).correctness},
				ok("aiperf", serve), ok("stop-server", nil), ok("native", nil),
				{name: verdict.StageBundleCheck, run: (*checkpointRun).bundleCheck, always: true}, ok("join", nil)}
			e, p := stageEnv(t, stages)
			e.opts.Runner = runner
			res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})

			require.Len(t, res.Provenance.BundleChecks, 2, "re-hashed after the correctness case and after the run")
			assert.Equal(t, verdict.BundleAfterCorrectness, res.Provenance.BundleChecks[0].After)
			assert.Equal(t, verdict.BundleAfterRun, res.Provenance.BundleChecks[1].After)
			var codes []verdict.Code
			for _, r := range res.Reasons {
				codes = append(codes, r.Code)
				if strings.HasPrefix(string(r.Code), "bundle_changed") {
					assert.Contains(t, r.Message, before, "the digest before is named")
					assert.Contains(t, r.Message, " changed the bundle")
				}
			}
			assert.Equal(t, tc.want, codes)
			if tc.want == nil {
				assert.Equal(t, verdict.VerdictQualified, res.Verdict, "%+v", res.Reasons)
			} else {
				assert.Equal(t, verdict.VerdictFailed, res.Verdict)
			}
		})
	}
}

// TestJudgeWantsTheBundleRehashed: a row that served but records no
// re-hash after the correctness case or the run (an earlier trtmc-qual)
// does not qualify; one whose re-hash failed does not either.
func TestJudgeWantsTheBundleRehashed(t *testing.T) {
	var r verdict.Result
	verdicttest.Qualified(&r)
	require.Equal(t, verdict.VerdictQualified, r.Verdict)
	checks := r.Provenance.BundleChecks
	r.Provenance.BundleChecks = nil
	verdict.Judge(&r)
	assert.Equal(t, verdict.VerdictFailed, r.Verdict)
	require.Len(t, r.Reasons, 2)
	assert.Contains(t, r.Reasons[0].Message, "not re-hashed after the correctness case")
	r.Provenance.BundleChecks = []verdict.BundleCheck{checks[0], {After: verdict.BundleAfterRun, Error: "open model.bundle: no such file or directory"}}
	verdict.Judge(&r)
	require.Len(t, r.Reasons, 1)
	assert.Equal(t, verdict.CodeBundleChangedServing, r.Reasons[0].Code)
	assert.Contains(t, r.Reasons[0].Message, "no such file")
}
