//go:build integration

package qual_test

// Invariants the fault tests assert in-process (qual.Run), beside the
// CLI-level matrix in cmd/trtmc-qual/cmd_run_faults_integration_test.go.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

const markerEnv = "TRTMC_RELIABILITY_MARKER"

// childWatch records every child a run starts (through its proc.Runner)
// and marks them all with an environment variable unique to the test.
type childWatch struct {
	inner  proc.Runner
	marker string
	mu     sync.Mutex
	pgids  []int
}

// watchChildren wraps opts.Runner and adds the marker to the environment of
// every family's children (server, correctness case, AIPerf, native runner).
func watchChildren(t *testing.T, opts *qual.Options) *childWatch {
	t.Helper()
	w := &childWatch{inner: opts.Runner,
		marker: fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())}
	for _, f := range opts.Families.Families {
		if f.Env == nil {
			f.Env = map[string]string{}
		}
		f.Env[markerEnv] = w.marker
	}
	opts.Runner = w
	return w
}

// Start implements proc.Runner.
func (w *childWatch) Start(ctx context.Context, s proc.Spec) (proc.Process, error) {
	p, err := w.inner.Start(ctx, s)
	if err == nil {
		w.mu.Lock()
		w.pgids = append(w.pgids, p.Pid())
		w.mu.Unlock()
	}
	return p, err
}

// Run implements proc.Runner, as proc.OS does: Start, then Wait.
func (w *childWatch) Run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	p, err := w.Start(ctx, s)
	if err != nil {
		return proc.Result{Argv: s.Argv}, err
	}
	return p.Wait()
}

// assertGone checks, not assumes, that nothing the run started is alive
// once it returned: every child's process group is gone (proc.GroupAlive:
// the server's, AIPerf's with its services, the correctness case's and the
// native runner's), and no process carries the marker (a child that left
// its group). AIPerf renames its processes, which clobbers their /proc
// environ, so the groups are the primary check.
func (w *childWatch) assertGone(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	pgids := append([]int(nil), w.pgids...)
	w.mu.Unlock()
	assert.NotEmpty(t, pgids, "the run started no child")
	want := []byte(markerEnv + "=" + w.marker + "\x00")
	var left []string
	for deadline := time.Now().Add(2 * time.Second); ; {
		left = left[:0]
		for _, pg := range pgids {
			if proc.GroupAlive(pg) {
				left = append(left, fmt.Sprintf("process group %d", pg))
			}
		}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(append(env, 0), want) {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '})))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pg := range pgids {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	assert.Empty(t, left, "processes outlived the run")
}

// assertAccounted checks that nothing was dropped silently: the client
// reported every expected request, and each one has exactly one status.
func assertAccounted(t *testing.T, r verdict.Result) {
	t.Helper()
	for phase, c := range r.RequestsByPhase {
		sum := c.Matched + c.Mismatched + c.Errored + c.MissingNative + c.MissingHTTP + c.MissingServerRecord + c.Duplicates + c.Meaningless +
			c.UnknownConversation + c.Inconsistent + c.EchoMissing + c.EchoMismatched
		assert.Equal(t, c.Sent, sum, "phase %s: %d sent, %d accounted for: %+v", phase, c.Sent, sum, c)
		assert.Equal(t, c.Expected, c.Sent, "phase %s: the client reported %d of %d requests", phase, c.Sent, c.Expected)
	}
}
