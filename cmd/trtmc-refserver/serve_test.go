package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// detectSetup returns a ref-detect bundle and one /v1/infer payload.
func detectSetup(t *testing.T) (bundle, payload string) {
	t.Helper()
	dir := t.TempDir()
	bundle = makeBundle(t, dir, "ref-detect")
	return bundle, corpusPayloads(t, makeCorpus(t, dir, "ref-detect", 1), "ref-detect")[0]
}

func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bundle, payload := detectSetup(t)
	s := startServer(t, bundle, nil, true, "--fault", "slow-ms=300", "--shutdown-grace-ms", "5000")
	require.Equal(t, http.StatusOK, s.get("/health/ready").status)

	results := make(chan httpResult, 3)
	for range 3 {
		go func() { results <- s.post("/v1/infer", payload, 10*time.Second) }()
	}
	// One request runs and two wait before the signal.
	require.Eventually(t, func() bool {
		m := string(s.get("/metrics").body)
		return strings.Contains(m, "trtmc_refserver_worker_busy 1\n") && strings.Contains(m, "trtmc_refserver_queue_depth 2\n")
	}, 5*time.Second, time.Millisecond)
	s.signal(syscall.SIGTERM)

	require.Eventually(t, func() bool { return s.get("/health/ready").status == http.StatusServiceUnavailable },
		2*time.Second, 5*time.Millisecond, "readiness fails first")
	r := s.post("/v1/infer", payload, 5*time.Second)
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Contains(t, string(r.body), "server_draining")

	for range 3 {
		r := <-results
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status, "queued work drains")
	}
	assert.Equal(t, 0, s.wait(10*time.Second))
	assert.Contains(t, s.logs(), `"event":"shutdown_complete","drained":true`)
	assert.Len(t, s.readRecords(), 4)
}

func TestServeStopsOnSIGINT(t *testing.T) {
	t.Parallel()
	bundle, _ := detectSetup(t)
	s := startServer(t, bundle, nil, true)
	s.signal(syscall.SIGINT)
	assert.Equal(t, 0, s.wait(10*time.Second))
	assert.Contains(t, s.logs(), "server_stopped")
}

func TestServeGraceDeadlineWithHungTask(t *testing.T) {
	t.Parallel()
	bundle, payload := detectSetup(t)
	s := startServer(t, bundle, nil, true, "--fault", "hang-after=0", "--shutdown-grace-ms", "300")
	r := s.post("/v1/infer", payload, 500*time.Millisecond)
	require.Error(t, r.err, "hang-after=0: the first request never answers")
	start := time.Now()
	s.signal(syscall.SIGTERM)
	assert.Equal(t, 0, s.wait(5*time.Second))
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Contains(t, s.logs(), `"drained":false`)
}

func TestServeIgnoreSIGTERMFromEnvironment(t *testing.T) {
	t.Parallel()
	bundle, payload := detectSetup(t)
	s := startServer(t, bundle, []string{"TRTMC_REFSERVER_FAULT=ignore-sigterm"}, true)
	// Ignored signals are discarded when sent: once the server's
	// disposition says so, nothing is left to wait for.
	require.Contains(t, s.logs(), `"event":"ignoring_signals"`)
	if runtime.GOOS == "linux" {
		assert.True(t, ignores(t, s.cmd.Process.Pid, syscall.SIGTERM, syscall.SIGINT), "SIGTERM and SIGINT are ignored")
	}
	s.signal(syscall.SIGTERM)
	s.signal(syscall.SIGINT)
	require.True(t, s.running(), "SIGTERM is ignored")
	assert.Equal(t, http.StatusOK, s.get("/health/ready").status)
	assert.Equal(t, http.StatusOK, s.post("/v1/infer", payload, 5*time.Second).status)
	s.signal(syscall.SIGKILL)
	assert.Equal(t, -1, s.wait(5*time.Second), "only SIGKILL stops it")
}

func TestServeStartupFaults(t *testing.T) {
	t.Parallel()
	bundle, _ := detectSetup(t)

	t.Run("startup-fail", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, bundle, nil, false, "--fault", "startup-fail")
		assert.Equal(t, exitFailed, s.wait(10*time.Second))
		assert.Contains(t, s.logs(), `"level":"error","event":"startup_failed"`)
		assert.NotContains(t, s.logs(), "server_ready")
	})
	t.Run("startup-delay", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		s := startServer(t, bundle, nil, true, "--fault", "startup-delay=0.4")
		assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
		assert.Equal(t, http.StatusOK, s.get("/health/ready").status)
	})
	t.Run("never-ready", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		s := startServer(t, bundle, []string{"TRTMC_REFSERVER_FAULT=never-ready"}, false, "--port", fmt.Sprint(port))
		s.url = fmt.Sprintf("http://127.0.0.1:%d", port)
		require.Eventually(t, func() bool { return s.get("/health/live").status == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
		for range 3 {
			assert.Equal(t, http.StatusServiceUnavailable, s.get("/health/ready").status)
			time.Sleep(50 * time.Millisecond)
		}
		assert.NotContains(t, s.logs(), "server_ready")
		s.signal(syscall.SIGTERM)
		assert.Equal(t, 0, s.wait(10*time.Second))
	})
	t.Run("bad fault", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, bundle, nil, false, "--fault", "explode")
		assert.Equal(t, exitUsage, s.wait(10*time.Second))
		assert.Contains(t, s.logs(), `unknown fault`)
	})
	t.Run("non-loopback host", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, bundle, nil, false, "--host", "0.0.0.0")
		assert.Equal(t, exitUsage, s.wait(10*time.Second))
		assert.Contains(t, s.logs(), "not a loopback address")
	})
	t.Run("port in use", func(t *testing.T) {
		t.Parallel()
		busy := startServer(t, bundle, nil, true)
		port := strings.TrimPrefix(busy.url, "http://127.0.0.1:")
		s := startServer(t, bundle, nil, false, "--port", port)
		assert.Equal(t, exitFailed, s.wait(10*time.Second))
		assert.Contains(t, s.logs(), "address already in use")
	})
	t.Run("wrong bundle", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "bad.bundle")
		require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o644))
		s := startServer(t, path, nil, false)
		assert.Equal(t, exitUsage, s.wait(10*time.Second))
		assert.Contains(t, s.logs(), path)
	})
}

func TestServeCrashAfter(t *testing.T) {
	t.Parallel()
	bundle, payload := detectSetup(t)
	s := startServer(t, bundle, nil, true, "--fault", "crash-after=2")
	for range 2 {
		assert.Equal(t, http.StatusOK, s.post("/v1/infer", payload, 5*time.Second).status)
	}
	r := s.post("/v1/infer", payload, 5*time.Second)
	assert.Error(t, r.err, "the third request finds the server gone")
	assert.Equal(t, exitCrash, s.wait(5*time.Second))
	assert.Len(t, s.readRecords(), 2, "records written before the crash survive")
}

func TestServeEveryNFaultsAndAuth(t *testing.T) {
	t.Parallel()
	bundle, payload := detectSetup(t)
	s := startServer(t, bundle, []string{"TRTMC_SERVE_TOKEN=tok3n"}, true,
		"--fault", "http-500-every=2,drop-record-every=3")
	r := s.post("/v1/infer", payload, 5*time.Second)
	assert.Equal(t, http.StatusUnauthorized, r.status, "the token from the environment is required")

	var statuses []int
	for range 5 {
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/infer", strings.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok3n")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	// Inference requests 2..6: even ones answer 500.
	assert.Equal(t, []int{500, 200, 500, 200, 500}, statuses)
	assert.Len(t, s.readRecords(), 4, "requests 3 and 6 have no record")
	assert.NotContains(t, s.logs(), "tok3n")
}

// ignores reports whether process pid ignores every one of sigs (the
// SigIgn mask of /proc/PID/status, Linux).
func ignores(t *testing.T, pid int, sigs ...syscall.Signal) bool {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(data)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			require.NoError(t, err)
			for _, sig := range sigs {
				if bits&(1<<(uint(sig)-1)) == 0 {
					return false
				}
			}
			return true
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return false
}
