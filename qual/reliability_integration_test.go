//go:build integration

package qual_test

// Invariants the fault tests assert in-process (qual.Run), beside the
// CLI-level matrix in cmd/trtmc-qual/reliability_integration_test.go.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

const markerEnv = "TRTMC_RELIABILITY_MARKER"

// markChildren adds a marker unique to the test to the environment of
// every family's children (server, correctness case, AIPerf, native
// runner), and returns it for assertNoChildren.
func markChildren(t *testing.T, opts qual.Options) string {
	t.Helper()
	marker := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
	for _, f := range opts.Families.Families {
		if f.Env == nil {
			f.Env = map[string]string{}
		}
		f.Env[markerEnv] = marker
	}
	return marker
}

// assertNoChildren checks, not assumes, that no process carrying the
// marker is alive once the run returned: the server's and AIPerf's process
// groups, and anything they forked, are gone.
func assertNoChildren(t *testing.T, marker string) {
	t.Helper()
	want := []byte(markerEnv + "=" + marker + "\x00")
	var left []string
	for deadline := time.Now().Add(2 * time.Second); ; {
		left = left[:0]
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
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Empty(t, left, "processes outlived the run")
}

// assertAccounted checks that nothing was dropped silently: the client
// reported every expected request, and each one has exactly one status.
func assertAccounted(t *testing.T, r reports.Result) {
	t.Helper()
	for phase, c := range r.RequestsByPhase {
		sum := c.Matched + c.Mismatched + c.Errored + c.MissingNative + c.MissingHTTP + c.MissingServerRecord + c.Duplicates + c.Meaningless
		assert.Equal(t, c.Sent, sum, "phase %s: %d sent, %d accounted for: %+v", phase, c.Sent, sum, c)
		assert.Equal(t, c.Expected, c.Sent, "phase %s: the client reported %d of %d requests", phase, c.Sent, c.Expected)
	}
}
