package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelperProcess is not a test: it is the child the tests below start,
// re-executing this test binary with TRTMC_HELPER naming what it does.
func TestHelperProcess(t *testing.T) {
	scenario := os.Getenv("TRTMC_HELPER")
	if scenario == "" {
		return
	}
	switch scenario {
	case "exit-3":
		fmt.Fprintln(os.Stderr, "loading bundle")
		fmt.Fprintln(os.Stderr, "fatal: bundle has no weights")
		os.Exit(3)
	case "crash":
		fmt.Fprintln(os.Stderr, "about to crash")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "ignore-sigterm":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Minute)
	case "sleep":
		fmt.Println("ready")
		time.Sleep(time.Minute)
	case "slow-start":
		// Listens only after a delay, as a server loading a model does,
		// then answers 200 on /health.
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("HELPER_PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	case "exit-during-startup":
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "CUDA out of memory")
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper scenario", scenario)
		os.Exit(99)
	}
	os.Exit(0)
}

// helper is the Spec of a helper child doing scenario.
func helper(scenario string, env ...string) Spec {
	return Spec{Name: scenario, Argv: []string{os.Args[0], "-test.run=^TestHelperProcess$"},
		Env: append([]string{"TRTMC_HELPER=" + scenario}, env...)}
}

// startReady starts a helper and waits for its "ready" line.
func startReady(t *testing.T, ctx context.Context, s Spec) Process {
	t.Helper()
	r, w := io.Pipe()
	s.Stdout = w
	p, err := OS{}.Start(ctx, s)
	require.NoError(t, err)
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return p
}

func TestExitCodeAndStderrTail(t *testing.T) {
	res, err := OS{}.Run(context.Background(), helper("exit-3"))
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.False(t, res.Stopped)
	assert.Contains(t, res.StderrTail, "fatal: bundle has no weights")
	assert.Contains(t, err.Error(), "exit-3 ("+os.Args[0]+") exited with status 3; last output:\n    loading bundle\n    fatal: bundle has no weights")
}

func TestCrashIsReportedWithItsSignal(t *testing.T) {
	res, err := OS{}.Run(context.Background(), helper("crash"))
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, "killed", res.Signal)
	assert.Contains(t, err.Error(), "was killed by killed")
	assert.Contains(t, err.Error(), "about to crash")
}

func TestStopEndsAChildThatHonoursSIGTERM(t *testing.T) {
	s := helper("sleep")
	s.Grace = time.Minute
	p := startReady(t, context.Background(), s)
	res, err := p.Stop()
	require.NoError(t, err, "a stopped child is not an error")
	assert.True(t, res.Stopped)
	assert.False(t, res.Killed, "SIGTERM was enough")
	assert.Equal(t, "terminated", res.Signal)
	assert.False(t, GroupAlive(p.Pid()))
}

func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	s := helper("ignore-sigterm")
	s.Grace = 200 * time.Millisecond
	p := startReady(t, context.Background(), s)
	res, err := p.Stop()
	require.NoError(t, err)
	assert.True(t, res.Stopped)
	assert.True(t, res.Killed, "SIGKILL after the grace period")
	assert.Equal(t, "killed", res.Signal)
	assert.False(t, GroupAlive(p.Pid()), "nothing of its group is left")
}

func TestCancellingTheContextStopsTheChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := startReady(t, ctx, helper("sleep"))
	cancel()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the child outlived its context")
	}
	res, err := p.Wait()
	require.NoError(t, err)
	assert.True(t, res.Stopped)
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func TestWaitReadyWaitsForASlowStart(t *testing.T) {
	port := freeTCPPort(t)
	p, err := OS{}.Start(context.Background(), helper("slow-start", "HELPER_PORT="+strconv.Itoa(port)))
	require.NoError(t, err)
	defer func() { _, _ = p.Stop() }()
	waited, err := WaitReady(context.Background(), p, fmt.Sprintf("http://127.0.0.1:%d/health", port), 30*time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, waited, 300*time.Millisecond, "ready only once it listens")
}

func TestWaitReadyReportsTheChildsOwnExit(t *testing.T) {
	port := freeTCPPort(t)
	p, err := OS{}.Start(context.Background(), helper("exit-during-startup"))
	require.NoError(t, err)
	_, err = WaitReady(context.Background(), p, fmt.Sprintf("http://127.0.0.1:%d/health", port), 30*time.Second)
	var ee *ExitError
	require.ErrorAs(t, err, &ee, "the child's exit, not connection refused")
	assert.Contains(t, err.Error(), "server exited during startup")
	assert.Contains(t, err.Error(), "CUDA out of memory")
}

func TestWaitReadyDeadline(t *testing.T) {
	port := freeTCPPort(t)
	p := startReady(t, context.Background(), helper("sleep"))
	defer func() { _, _ = p.Stop() }()
	_, err := WaitReady(context.Background(), p, fmt.Sprintf("http://127.0.0.1:%d/health", port), 200*time.Millisecond)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Contains(t, nr.LastStatus, "connection refused")
}

// A server that answers but is not ready (trtmc-server's 503 with its
// body) is waited for, and the deadline's error quotes its last answer.
func TestWaitReadyQuotesANotReadyAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"not_ready","degraded":false}`))
	}))
	defer srv.Close()
	p := startReady(t, context.Background(), helper("sleep"))
	defer func() { _, _ = p.Stop() }()
	_, err := WaitReady(context.Background(), p, srv.URL+"/health/ready", 200*time.Millisecond)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, `503 Service Unavailable {"status":"not_ready","degraded":false}`, nr.LastStatus)
}
