package qual

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict/verdicttest"
)

// The fast tests of the checkpoint loop: fake stages over a real
// checkpointRun (evidence directory, result.json, the seal, Judge), no
// child process.

// TestPipelineOrder is the documented order of stages (stages.go).
func TestPipelineOrder(t *testing.T) {
	var names []string
	var always, accounts []string
	for _, st := range pipeline {
		names = append(names, st.name)
		if st.always {
			always = append(always, st.name)
		}
		if st.accounts {
			accounts = append(accounts, st.name)
		}
	}
	assert.Equal(t, []string{"preflight", "server", "correctness", "aiperf", "stop-server", "native", "bundle-check", "join", "gpu-release"}, names)
	assert.Equal(t, []string{"stop-server", "bundle-check", "gpu-release"}, always)
	assert.Equal(t, []string{"native", "join"}, accounts)
}

// stageEnv is a group of one profile whose checkpoints run stages.
func stageEnv(t *testing.T, stages []stageDef) (*groupRun, *inventory.Profile) {
	t.Helper()
	p := &inventory.Profile{ID: "p", Family: "f"}
	g := &inventory.Group{Name: "g", Profiles: []*inventory.Profile{p}}
	fams := &families.Config{Families: map[string]*families.Family{"f": {Name: "f"}}}
	e := &groupRun{opts: Options{Families: fams, Out: t.TempDir(), Now: time.Now, Log: io.Discard,
		Provenance: ProvenanceOptions{HarnessVersion: "test", HarnessCommit: "test"}}, group: g, stages: stages}
	return e, p
}

// recorder is a list of fake stages that record that they ran.
type recorder struct{ ran []string }

func (r *recorder) stage(name string, err error, opts ...func(*stageDef)) stageDef {
	d := stageDef{name: name, run: func(*checkpointRun, context.Context) error {
		r.ran = append(r.ran, name)
		return err
	}}
	for _, o := range opts {
		o(&d)
	}
	return d
}

func always(d *stageDef)   { d.always = true }
func accounts(d *stageDef) { d.accounts = true }

// statuses is each recorded stage as "name status[ code]".
func statuses(res *verdict.Result) []string {
	var out []string
	for _, s := range res.Stages {
		line := s.Name + " " + s.Status
		if s.Code != "" {
			line += " " + string(s.Code)
		}
		out = append(out, line)
	}
	return out
}

func TestStagesRunInOrder(t *testing.T) {
	var r recorder
	e, p := stageEnv(t, []stageDef{r.stage("a", nil), r.stage("b", nil), r.stage("c", nil, always)})
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"a", "b", "c"}, r.ran)
	assert.Equal(t, []string{"a ok", "b ok", "c ok"}, statuses(res))
	assert.NotEqual(t, verdict.VerdictQualified, res.Verdict, "stages that measured nothing never make a green row")
	assert.FileExists(t, filepath.Join(e.opts.Out, "g", "p", "result.json"))
	assert.FileExists(t, filepath.Join(e.opts.Out, "g", "p", "manifest.json"), "the row is sealed")
}

func TestAfterABrokenStageOnlyAlwaysStagesRun(t *testing.T) {
	var r recorder
	e, p := stageEnv(t, []stageDef{
		r.stage("preflight", nil),
		r.stage("server", stageFailure(verdict.CodeServerStart, errors.New("server exited during startup"))),
		r.stage("correctness", nil),
		r.stage("stop-server", nil, always),
		r.stage("native", nil, accounts),
		r.stage("gpu-release", nil, always),
	})
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"preflight", "server", "stop-server", "gpu-release"}, r.ran)
	assert.Equal(t, []string{"preflight ok", "server error " + string(verdict.CodeServerStart), "correctness skipped",
		"stop-server ok", "native skipped", "gpu-release ok"}, statuses(res))
	assert.Equal(t, verdict.VerdictError, res.Verdict)
	require.NotEmpty(t, res.Reasons)
	assert.Equal(t, "server", res.Reasons[0].Stage)
}

// An accounts stage still runs after a break when AIPerf reported
// requests: the broken row accounts for every request it sent.
func TestAccountsStagesRunWhenAIPerfSentRequests(t *testing.T) {
	var r recorder
	sent := stageDef{name: "aiperf", run: func(cr *checkpointRun, _ context.Context) error {
		r.ran = append(r.ran, "aiperf")
		cr.run = &aiperf.Run{Requests: []aiperf.Request{{}}}
		return stageFailure(verdict.CodeAIPerfFailed, errors.New("aiperf exited with status 1"))
	}}
	e, p := stageEnv(t, []stageDef{sent, r.stage("stop-server", nil, always), r.stage("native", nil, accounts), r.stage("join", nil, accounts)})
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"aiperf", "stop-server", "native", "join"}, r.ran)
	assert.Equal(t, verdict.VerdictError, res.Verdict, "the row stays broken")
}

func TestAnInterruptedStageEndsTheLoop(t *testing.T) {
	var r recorder
	ctx, cancel := context.WithCancel(context.Background())
	stop := stageDef{name: "aiperf", run: func(*checkpointRun, context.Context) error {
		r.ran = append(r.ran, "aiperf")
		cancel()
		return context.Canceled
	}}
	e, p := stageEnv(t, []stageDef{r.stage("server", nil), stop, r.stage("stop-server", nil, always)})
	res := e.checkpoint(ctx, p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"server", "aiperf"}, r.ran)
	assert.Equal(t, []string{"server ok", "aiperf interrupted"}, statuses(res))
	assert.Equal(t, verdict.VerdictInterrupted, res.Verdict)
}

// Resume: a finished row with the same run key and intact evidence is
// kept, without running a stage; anything else runs again.
func TestResume(t *testing.T) {
	var r recorder
	e, p := stageEnv(t, []stageDef{r.stage("only", nil)})
	e.opts.Resume = true
	cr := e.newCheckpointRun(p, Slot{Name: "cpu0"}, placement{})
	key, err := cr.runKey(context.Background())
	require.NoError(t, err)
	writePrev := func(verdict, runKey string) {
		t.Helper()
		prev := BaseResult("g", &e.group.Workload, p)
		verdicttest.WithVerdict(&prev, verdict)
		prev.RunKey = runKey
		require.NoError(t, WriteRow(e.opts.Out, &prev, false, time.Now))
	}

	writePrev(verdict.VerdictFailed, key)
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Empty(t, r.ran, "the finished row is kept")
	assert.Equal(t, verdict.VerdictFailed, res.Verdict)

	for _, tt := range []struct{ name, verdict, key string }{
		{"another run key", verdict.VerdictQualified, "other"},
		{"a broken row", verdict.VerdictError, key},
	} {
		r.ran = nil
		require.NoError(t, os.RemoveAll(filepath.Join(e.opts.Out, "g")))
		writePrev(tt.verdict, tt.key)
		e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
		assert.Equal(t, []string{"only"}, r.ran, tt.name)
	}

	// Evidence changed after it was sealed runs again.
	r.ran = nil
	require.NoError(t, os.RemoveAll(filepath.Join(e.opts.Out, "g")))
	writePrev(verdict.VerdictQualified, key)
	require.NoError(t, os.WriteFile(filepath.Join(e.opts.Out, "g", "p", "aiperf.log"), []byte("added later\n"), 0o644))
	e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"only"}, r.ran, "changed evidence")
}

// No stage overlaps another on the served model (issue 33): trtmc-server
// has no queue, so a request sent while another is in flight is refused
// 429 server_busy. The pipeline runs its stages one at a time; the served
// model is up from "server" to "stop-server"; only "aiperf" sends it
// requests; the native replay (its own worker on the bundle) starts after
// "stop-server". A stage run concurrently with another, or moved across
// those bounds, fails this test. (End to end, the strict fake TRTMC
// refuses an overlap with 429 and locks its workers exclusively:
// TestTRTMCFamilyEndToEnd qualifies only if nothing overlapped.)
func TestNoStageOverlapsTheServedModel(t *testing.T) {
	idx := map[string]int{}
	for i, st := range pipeline {
		idx[st.name] = i
	}
	requests := []string{"aiperf"} // the only stage that sends the served model requests
	for _, name := range requests {
		assert.Greater(t, idx[name], idx["server"], "%s runs after the server is ready", name)
		assert.Less(t, idx[name], idx["stop-server"], "%s runs before the server stops", name)
	}
	assert.Less(t, idx["correctness"], idx["aiperf"], "the correctness case ends before the measured requests start")
	assert.Greater(t, idx["native"], idx["stop-server"], "the native replay starts its worker once the server's is gone")

	var inFlight, most atomic.Int32
	var order []string
	stages := make([]stageDef, len(pipeline))
	for i, st := range pipeline {
		st.run = func(*checkpointRun, context.Context) error {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			order = append(order, st.name)
			runtime.Gosched()
			inFlight.Add(-1)
			return nil
		}
		stages[i] = st
	}
	e, p := stageEnv(t, stages)
	e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.EqualValues(t, 1, most.Load(), "two stages ran at once")
	names := make([]string, len(pipeline))
	for i, st := range pipeline {
		names[i] = st.name
	}
	assert.Equal(t, names, order)
}

// TestPreflightStopsOnAWrongBundle runs the real preflight over a bundle
// whose digest is not the inventory's pin: the preflight records the
// digest beside the pin and stops the checkpoint (nothing else runs, no
// problem recorded), and Judge gives the row its one reason,
// bundle_identity, a setup error.
func TestPreflightStopsOnAWrongBundle(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "p.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("engine bytes"), 0o644))
	corpus := filepath.Join(dir, "corpus")
	require.NoError(t, os.MkdirAll(corpus, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(corpus, "corpus.json"), []byte("{}"), 0o644))
	var r recorder
	e, p := stageEnv(t, []stageDef{{name: "preflight", run: (*checkpointRun).preflight}, r.stage("server", nil), r.stage("gpu-release", nil, always)})
	p.File, p.Bundle = filepath.Join(dir, "inventory.yaml"), inventory.Bundle{Path: bundle, SHA256: strings.Repeat("b", 64)}
	e.group.File, e.group.Workload.EndpointType, e.group.Workload.Dataset.Corpus = p.File, endpoint.ImageRetrieval, corpus
	e.group.Workload.Warmup, e.group.Workload.Measured, e.group.Workload.Concurrency = 5, 50, 1
	e.opts.Families.Families["f"].EndpointType = endpoint.ImageRetrieval
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, []string{"gpu-release"}, r.ran, "nothing is served")
	assert.Equal(t, []string{"preflight error", "server skipped", "gpu-release ok"}, statuses(res))
	assert.Empty(t, res.Problems, "the preflight reports the fact; Judge makes the reason")
	assert.Equal(t, strings.Repeat("b", 64), res.Provenance.BundlePinnedSHA256)
	assert.NotEqual(t, res.Provenance.BundlePinnedSHA256, res.Provenance.BundleSHA256)
	assert.Equal(t, verdict.VerdictError, res.Verdict)
	require.Len(t, res.Reasons, 1, "%+v", res.Reasons)
	assert.Equal(t, verdict.CodeBundleIdentity, res.Reasons[0].Code)
	assert.Contains(t, res.Reasons[0].Message, "profile p: bundle "+bundle)
	assert.Contains(t, res.Reasons[0].Message, "not the bundle that was qualified")
}
