package reports_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func summaryOf(t *testing.T, g *GroupReport, f *ReconcileFact) string {
	t.Helper()
	g.Summary = SummaryOptions{Reconcile: f, Pack: "detection-pack.tar.gz"}
	return string(render(t, g, FormatSummary))
}

var currentFact = &ReconcileFact{Ref: "main", Commit: "a832817e6ed9603b100bbff25dce3f04c65beaca", Head: "a832817e6ed9603b100bbff25dce3f04c65beaca", Normal: 2}

// TestSummaryCompleteGroup: every normal profile in scope qualified, one
// excluded with its reason, a variant apart, the reconciliation current:
// the summary reads as complete and states the seeds' facts.
func TestSummaryCompleteGroup(t *testing.T) {
	g, err := published(Load([]string{RootComplete}, "detection"))
	require.NoError(t, err)
	s := summaryOf(t, g, currentFact)
	assert.True(t, strings.HasPrefix(s, "**detection: complete.** The 1 normal profile in scope passed owning-family correctness and real AIPerf 0.13.0 qualification (50 measured + 5 warmup requests; all 55 complete native/HTTP matches; zero client errors). "+
		"Measured at TRTMC source commit `e82d4d98b889bbd7e787fb302db9128504081d27` (ref-detect-small). The inventory was reconciled with TRTMC's specs at `a832817e6ed9603b100bbff25dce3f04c65beaca`.\n"), s)
	assert.Empty(t, Incomplete(g))
	for _, want := range []string{
		"reconciled against TRTMC `main` at `a832817e6ed9603b100bbff25dce3f04c65beaca`: 2 normal profiles in the specs, 0 needing action; `main` is still at that commit (current).",
		"  - `e82d4d98b889bbd7e787fb302db9128504081d27`: ref-detect-small\n",
		"- **Excluded, with their reasons:**\n  - ref-detect-large (normal): checkpoint licence does not allow CI redistribution\n",
		"- **Variants and partial profiles** (listed apart, never counted):\n  - ref-detect-small-tp2 (variant, of ref-detect-small): qualified\n",
		"- **Hardware:** 1× NVIDIA H200 (h200); 2× NVIDIA H200 (h200).",
		"`tar xzf detection-pack.tar.gz && trtmc-qual report --from detection-pack --group detection --rejudge`",
		"[ref-detect-small](detection/ref-detect-small)",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "missing")
}

// TestSummaryNeverReadsAsAPass: one failed row, an unreconciled or stale
// inventory, a failed variant, no normal profile at all: each opens with
// NOT complete and names what is missing.
func TestSummaryNeverReadsAsAPass(t *testing.T) {
	load := func() *GroupReport {
		g, err := published(Load([]string{RootComplete}, "detection"))
		require.NoError(t, err)
		return g
	}
	fail := func(g *GroupReport, profile string) {
		for i := range g.Rows {
			if g.Rows[i].Profile == profile {
				r := *g.Rows[i].Result
				r.Problems = append(r.Problems, verdict.Problem{Stage: "join", Code: verdict.CodeMismatched, Message: "measured: 1 of 50 requests: the native and HTTP answers differ"})
				verdict.Judge(&r)
				g.Rows[i].Result, g.Rows[i].Status, g.Rows[i].Verdict = &r, StatusFailed, r.Verdict
			}
		}
		g.Summarize()
	}
	g := load()
	fail(g, "ref-detect-small")
	s := summaryOf(t, g, currentFact)
	assert.True(t, strings.HasPrefix(s, "**detection: NOT complete — 0 of 1 normal profile in scope qualified.** What is missing:\n\n- **ref-detect-small** (normal): failed — join/mismatched: measured: 1 of 50 requests"), s)

	for name, tc := range map[string]struct {
		fact *ReconcileFact
		want string
	}{
		"none":       {nil, "- the inventory's reconciliation with TRTMC's specs: none given"},
		"unchecked":  {&ReconcileFact{Ref: "main", Commit: "abc"}, "whether the reconciliation at `abc` is current: not checked"},
		"stale":      {&ReconcileFact{Ref: "main", Commit: "abc", Head: "def"}, "reconciled at `abc`, but `main` is now `def`"},
		"needs work": {&ReconcileFact{Ref: "main", Commit: "abc", Head: "abc", NeedAction: 2}, "2 profiles need action"},
	} {
		s := summaryOf(t, load(), tc.fact)
		assert.True(t, strings.HasPrefix(s, "**detection: NOT complete — 1 of 1 normal profile in scope qualified.**"), name)
		assert.Contains(t, s, tc.want, name)
	}

	g = load()
	fail(g, "ref-detect-small-tp2")
	s = summaryOf(t, g, currentFact)
	assert.Contains(t, s, "NOT complete")
	assert.Contains(t, s, "- **ref-detect-small-tp2** (variant): failed")

	v, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	s = summaryOf(t, v, currentFact)
	assert.True(t, strings.HasPrefix(s, "**vlm: NOT complete — 1 of 5 normal profiles in scope qualified.**"), s)
	assert.Contains(t, s, "- **ref-vlm-tiny** (normal): not-run — planned; no result in the evidence")
	assert.Contains(t, s, "  - ref-vlm-xl (normal): needs two GPUs; the qualification host has one")
	assert.Contains(t, s, "130 measured + 15 warmup requests; 141 of 145 requests with complete native/HTTP matches")
	assert.Contains(t, s, "  - not recorded: ref-vlm-large")
}
