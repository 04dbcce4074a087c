package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binary is the trtmc-refserver built once for the tests that need a real
// process (signals, exit codes, faults).
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "trtmc-refserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "trtmc-refserver")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build trtmc-refserver:", err)
		return 1
	}
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// runBinary runs the binary to completion.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// makeBundle writes a bundle and returns its path.
func makeBundle(t *testing.T, dir, family string, extra ...string) string {
	t.Helper()
	path := filepath.Join(dir, family+".bundle")
	r := runBinary(t, nil, append([]string{"make-bundle", "--family", family, "--out", path}, extra...)...)
	require.Equal(t, 0, r.code, r.stderr)
	return path
}

// makeCorpus writes a corpus and returns its directory.
func makeCorpus(t *testing.T, dir, family string, count int) string {
	t.Helper()
	out := filepath.Join(dir, family+"-corpus")
	r := runBinary(t, nil, "corpus", "--family", family, "--out", out, "--count", fmt.Sprint(count))
	require.Equal(t, 0, r.code, r.stderr)
	return out
}

// server is a running `trtmc-refserver serve` process.
type serverProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	url     string
	records string
	exited  chan struct{}
	code    int

	mu    sync.Mutex
	lines []string
	ready chan int // receives the port of the server_ready line
}

// startServer starts serve; unless waitReady is false it waits for the
// server_ready line and learns the port from it.
func startServer(t *testing.T, bundle string, env []string, waitReady bool, args ...string) *serverProc {
	t.Helper()
	s := &serverProc{t: t, records: filepath.Join(t.TempDir(), "records.jsonl"), exited: make(chan struct{}), ready: make(chan int, 1)}
	argv := append([]string{"serve", bundle, "--model-name", "ref-model", "--records", s.records, "--port", "0"}, args...)
	s.cmd = exec.Command(binary, argv...)
	s.cmd.Env = append(os.Environ(), env...)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	go s.readLogs(stderr)
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		s.assertJSONLogs()
	})
	if waitReady {
		select {
		case port := <-s.ready:
			s.url = fmt.Sprintf("http://127.0.0.1:%d", port)
		case <-s.exited:
			t.Fatalf("server exited with %d before ready:\n%s", s.code, s.logs())
		case <-time.After(20 * time.Second):
			t.Fatalf("no server_ready line:\n%s", s.logs())
		}
	}
	return s
}

func (s *serverProc) readLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
		var ev struct {
			Event string `json:"event"`
			Port  int    `json:"port"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "server_ready" {
			s.ready <- ev.Port
		}
	}
	err := s.cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		s.code = exitErr.ExitCode() // -1 when killed by a signal
	case err != nil:
		s.code = -2
	}
	close(s.exited)
}

func (s *serverProc) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// assertJSONLogs checks that every stderr line is a JSON log line.
func (s *serverProc) assertJSONLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range s.lines {
		var ev map[string]any
		if assert.NoError(s.t, json.Unmarshal([]byte(line), &ev), "stderr line is not JSON: %s", line) {
			assert.NotEmpty(s.t, ev["ts"], line)
			assert.NotEmpty(s.t, ev["level"], line)
			assert.NotEmpty(s.t, ev["event"], line)
		}
	}
}

func (s *serverProc) signal(sig os.Signal) { require.NoError(s.t, s.cmd.Process.Signal(sig)) }

// wait waits for the process to exit and returns its exit code.
func (s *serverProc) wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.exited:
		return s.code
	case <-time.After(timeout):
		s.t.Fatalf("server still running after %v:\n%s", timeout, s.logs())
		return 0
	}
}

func (s *serverProc) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (s *serverProc) post(path, body string, timeout time.Duration) httpResult {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return httpResult{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return httpResult{status: resp.StatusCode, header: resp.Header, body: data, err: err}
}

func (s *serverProc) get(path string) httpResult {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(s.url + path)
	if err != nil {
		return httpResult{err: err}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return httpResult{status: resp.StatusCode, header: resp.Header, body: data}
}

func (s *serverProc) readRecords() []map[string]any {
	s.t.Helper()
	data, err := os.ReadFile(s.records)
	require.NoError(s.t, err)
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(line), &rec))
		out = append(out, rec)
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// corpusPayloads builds the request bodies AIPerf would send for a corpus.
func corpusPayloads(t *testing.T, dir, family string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	require.NoError(t, err)
	var c struct {
		Entries []struct{ File, MIME, Question string }
	}
	require.NoError(t, json.Unmarshal(data, &c))
	var out []string
	for i, e := range c.Entries {
		img, err := os.ReadFile(filepath.Join(dir, e.File))
		require.NoError(t, err)
		url := "data:" + e.MIME + ";base64," + base64Std(img)
		if family == "ref-detect" {
			out = append(out, `{"input":[{"type":"image_url","url":"`+url+`"}]}`)
			continue
		}
		q, _ := json.Marshal(e.Question)
		system := ""
		if i == 0 {
			system = `{"role":"system","content":"warmup"},`
		}
		out = append(out, `{"messages":[`+system+`{"role":"user","content":[{"type":"text","text":`+string(q)+
			`},{"type":"image_url","image_url":{"url":"`+url+`"}}]}],"model":"ref-model","stream":false,"max_completion_tokens":`+fmt.Sprint(2+i%5)+`}`)
	}
	return out
}
