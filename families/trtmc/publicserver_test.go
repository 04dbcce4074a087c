package trtmc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

// The fake server follows the current public server (app.py, records.py,
// registry.py, worker.py, metrics.py idx@a9ed5f69/idx@a4ba28be) in each
// point the harness meets: no queue, the replica's name, readiness, the
// error envelope by type, FastAPI's own 404, streaming, the generation
// config, /metrics, both size limits and the launcher of a source build.

// startProgram starts a trtmc-server program (the console script, or a
// source build's launcher) on a free port and waits for /health/ready.
func startProgram(t *testing.T, program string, env []string, args ...string) *liveServer {
	t.Helper()
	d := t.TempDir()
	bundle := filepath.Join(d, "m.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("b"), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &liveServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), records: filepath.Join(d, "records.jsonl")}
	argv := append([]string{bundle, "--model-name", "qwen3-vl-2b", "--port", fmt.Sprint(port), "--records", s.records}, args...)
	s.cmd = exec.Command(program, argv...)
	s.cmd.Env = append(os.Environ(), env...)
	var log bytes.Buffer
	s.cmd.Stderr = &log
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		require.True(t, time.Now().Before(deadline), "the server never became ready")
		time.Sleep(50 * time.Millisecond)
	}
}

// get returns the status, headers and body of a GET.
func (s *liveServer) get(t *testing.T, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// postRaw posts a body and returns the whole answer.
func (s *liveServer) postRaw(t *testing.T, route string, body []byte, id string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+route, bytes.NewReader(body))
	require.NoError(t, err)
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func errorOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var env struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env), body)
	require.NotNil(t, env.Error, body)
	return env.Error
}

// No queue: a request that arrives while the one replica is leased is
// refused at once, 429 rate_limit_error server_busy with Retry-After: 1
// (app.py execute, registry.py WorkerGroup.acquire_session); a worker that
// hangs past --request-timeout is a 504 and retires the replica, after
// which /health/ready is 503 not_ready and a request is 503
// server_draining.
func TestPublicServerHasNoQueue(t *testing.T) {
	in := trtmctest.New(t)
	srv := startProgram(t, in.ConsoleScript, []string{"FAKE_WORKER=hang:qwen3-vl-2b-1-1"}, "--request-timeout", "3")
	type answer struct {
		status int
		body   string
	}
	first := make(chan answer, 1)
	go func() {
		resp, body := srv.postRaw(t, RouteChat, chatPayload(t, `,"max_tokens":8`), "first")
		first <- answer{resp.StatusCode, body}
	}()
	// The first request holds the replica once /metrics counts it busy.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, m := srv.get(t, "/metrics")
		if strings.Contains(m, "trtmc_server_busy_replicas 1\n") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the first request never leased the replica:\n%s", m)
		time.Sleep(20 * time.Millisecond)
	}
	resp, body := srv.postRaw(t, RouteChat, chatPayload(t, `,"max_tokens":8`), "overlapping")
	assert.Equal(t, 429, resp.StatusCode, body)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "overlapping", resp.Header.Get("X-Request-ID"))
	e := errorOf(t, body)
	assert.Equal(t, "rate_limit_error", e["type"])
	assert.Equal(t, "server_busy", e["code"])
	assert.Equal(t, "all model worker replicas are busy", e["message"])

	a := <-first
	assert.Equal(t, 504, a.status, a.body)
	assert.Equal(t, "server_error", errorOf(t, a.body)["type"])
	assert.Equal(t, "worker_timeout", errorOf(t, a.body)["code"])
	code, _, ready := srv.get(t, "/health/ready")
	assert.Equal(t, 503, code)
	assert.JSONEq(t, `{"status":"not_ready","degraded":false}`, ready)
	resp, body = srv.postRaw(t, RouteChat, chatPayload(t, ``), "after")
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "server_draining", errorOf(t, body)["code"])

	recs := srv.recordLines(t)
	require.Len(t, recs, 3)
	byID := map[string]map[string]any{}
	for _, r := range recs {
		byID[r["request_id"].(string)] = r
	}
	assert.EqualValues(t, 429, byID["overlapping"]["status"])
	assert.Nil(t, byID["overlapping"]["replica"], "a refused request leased no replica")
	assert.EqualValues(t, 504, byID["first"]["status"])
	assert.Equal(t, "qwen3-vl-2b-1", byID["first"]["replica"], "registry.py names replica i <model>-<i+1>")
}

// What the server answers and records, each as the public source has it.
func TestPublicServerAnswersAndRecords(t *testing.T) {
	in := trtmctest.New(t)
	srv := startProgram(t, in.ConsoleScript, nil, "--max-prompt-bytes", "64", "--max-new-tokens", "256")

	// stream=true: buffered SSE of the whole answer (the worker does not
	// stream), recorded as streaming "buffered".
	resp, body := srv.postRaw(t, RouteChat, []byte(strings.Replace(string(chatPayload(t,
		`,"max_tokens":8,"min_p":0.05,"enable_thinking":false,"stream_options":{"include_usage":true}`)), `"stream":false`, `"stream":true`, 1)), "streamed")
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "buffered", resp.Header.Get("X-TRTMC-Streaming"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	assert.True(t, strings.HasPrefix(body, `data: {"`), body)
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), body)
	assert.Contains(t, body, `"usage":{`)
	// A system message (AIPerf's warmup marker) and the plain answer.
	sys := strings.Replace(string(chatPayload(t, `,"max_tokens":8`)), `"messages":[`, `"messages":[{"role":"system","content":"warmup"},`, 1)
	resp, body = srv.postRaw(t, RouteChat, []byte(sys), "with-system")
	require.Equal(t, 200, resp.StatusCode, body)
	// The prompt limit: prompt plus system text in UTF-8 above
	// --max-prompt-bytes; then max_tokens above --max-new-tokens; then
	// another model.
	long := strings.Replace(string(chatPayload(t, ``)), "What color is the car?", strings.Repeat("é", 40), 1)
	resp, body = srv.postRaw(t, RouteChat, []byte(long), "long-prompt")
	assert.Equal(t, 413, resp.StatusCode)
	e := errorOf(t, body)
	assert.Equal(t, "content_too_large", e["code"])
	assert.Equal(t, "prompt exceeds the server limit", e["message"])
	assert.Equal(t, "invalid_request_error", e["type"])
	resp, body = srv.postRaw(t, RouteChat, chatPayload(t, `,"max_tokens":257`), "too-many-tokens")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "max_tokens_exceeded", errorOf(t, body)["code"])
	assert.Equal(t, "requested generation exceeds 256 tokens", errorOf(t, body)["message"])
	resp, body = srv.postRaw(t, RouteChat, []byte(strings.Replace(string(chatPayload(t, ``)), `"qwen3-vl-2b"`, `"other"`, 1)), "")
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "model_not_found", errorOf(t, body)["code"])
	// FastAPI's own 404 and 405, without the error envelope; the id is
	// still echoed (RequestPolicy wraps every route).
	resp, body = srv.postRaw(t, "/v1/nowhere", []byte(`{}`), "lost")
	assert.Equal(t, 404, resp.StatusCode)
	assert.JSONEq(t, `{"detail":"Not Found"}`, body)
	assert.Equal(t, "lost", resp.Header.Get("X-Request-ID"))
	code, _, body := srv.get(t, RouteChat)
	assert.Equal(t, 405, code)
	assert.JSONEq(t, `{"detail":"Method Not Allowed"}`, body)
	// /metrics, as metrics.py renders it.
	code, hdr, m := srv.get(t, "/metrics")
	assert.Equal(t, 200, code)
	assert.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4"))
	for _, want := range []string{"trtmc_server_ready 1\n", "trtmc_server_queue_depth 0\n", "trtmc_server_busy_replicas 0\n",
		`trtmc_server_requests_total{route="/v1/chat/completions",status="200"} 2`,
		`trtmc_server_requests_total{route="/v1/chat/completions",status="413"} 1`} {
		assert.Contains(t, m, want)
	}

	recs := srv.recordLines(t)
	byID := map[string]map[string]any{}
	for _, r := range recs {
		if id, ok := r["request_id"].(string); ok {
			byID[id] = r
		}
	}
	require.Contains(t, byID, "streamed")
	s := byID["streamed"]
	assert.Equal(t, "buffered", s["streaming"], "streaming is a string")
	assert.Equal(t, "qwen3-vl-2b-1", s["replica"])
	assert.Equal(t, false, s["has_system_prompt"])
	assert.Equal(t, map[string]any{"max_new_tokens": 8.0, "min_p": 0.05, "enable_thinking": false, "use_chat_template": true},
		s["generation_config"], "generation_config keeps min_p and enable_thinking")
	for _, k := range []string{"handler_ms", "admission_ms", "worker_roundtrip_ms", "model_call_ms"} {
		assert.IsType(t, 0.0, s[k], k)
	}
	assert.Equal(t, "none", byID["with-system"]["streaming"])
	assert.Equal(t, true, byID["with-system"]["has_system_prompt"])
	assert.NotContains(t, byID["with-system"]["generation_config"], "system_prompt")
	assert.EqualValues(t, 413, byID["long-prompt"]["status"])
	assert.EqualValues(t, 400, byID["too-many-tokens"]["status"])
	assert.NotContains(t, byID, "lost", "no record outside the two completion routes")
}

// A worker's model_call_ms is held to the domain of the other timings
// (protocol.py extract_result idx@a9ed5f69): a negative one is a 502
// worker_protocol_error that retires the replica, never a 200 with the
// value recorded.
func TestPublicServerRefusesANegativeCallTime(t *testing.T) {
	in := trtmctest.New(t)
	srv := startProgram(t, in.ConsoleScript, []string{"FAKE_WORKER=call-ms:-5"})
	resp, body := srv.postRaw(t, RouteChat, chatPayload(t, `,"max_tokens":8`), "negative-call")
	assert.Equal(t, 502, resp.StatusCode, body)
	e := errorOf(t, body)
	assert.Equal(t, "worker_protocol_error", e["code"])
	assert.Equal(t, "server_error", e["type"])
	code, _, _ := srv.get(t, "/health/ready")
	assert.Equal(t, 503, code, "the replica is retired")
	recs := srv.recordLines(t)
	require.Len(t, recs, 1)
	assert.EqualValues(t, 502, recs[0]["status"])
	assert.NotContains(t, recs[0], "model_call_ms")
}

// Whether the seeds' image chat counts the image into --max-prompt-bytes
// is not public; the fake counts it on request, so a test can show what
// the harness does with a server that does.
func TestPublicServerPromptLimitCountingTheImage(t *testing.T) {
	in := trtmctest.New(t)
	srv := startProgram(t, in.ConsoleScript, []string{"FAKE_TRTMC_SERVER_PROMPT_IMAGE=count"}, "--max-prompt-bytes", "1024")
	resp, body := srv.postRaw(t, RouteChat, chatPayload(t, ``), "")
	assert.Equal(t, 200, resp.StatusCode, "a 64x48 PNG fits: %s", body)
	big := strings.Replace(string(chatPayload(t, ``)), pngURL(t, 64, 48), pngURL(t, 640, 480), 1)
	resp, body = srv.postRaw(t, RouteChat, []byte(big), "")
	assert.Equal(t, 413, resp.StatusCode)
	assert.Equal(t, "prompt exceeds the server limit", errorOf(t, body)["message"])
}

// A source build: build/trtmc-server BUNDLE --model-name N is the server
// command (main.cpp frontend_main runs `python3 -P -m trtmc_server ...
// --worker-binary <itself>` with build/server/python on PYTHONPATH), and
// serves with itself as the worker, without a runtime root.
func TestSourceBuildLauncherServes(t *testing.T) {
	repo := t.TempDir()
	sb := trtmctest.NewSourceBuild(t, repo)
	log := filepath.Join(t.TempDir(), "argv.log")
	env := append(sb.Env(), "PATH="+sb.Path()+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_TRTMC_LOG="+log)
	srv := startProgram(t, sb.Native, env)
	resp, body := srv.postRaw(t, RouteChat, chatPayload(t, `,"max_tokens":8`), "via-launcher")
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "via-launcher", resp.Header.Get("X-Request-ID"))
	require.Len(t, srv.recordLines(t), 1)

	data, err := os.ReadFile(log)
	require.NoError(t, err)
	var argvs [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var a []string
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		argvs = append(argvs, a)
	}
	require.Len(t, argvs, 4, "the launcher, python3, the control plane, its worker: %v", argvs)
	assert.Equal(t, "trtmc-server(native)", argvs[0][0])
	assert.Equal(t, []string{"python3", "-P", "-m", "trtmc_server"}, argvs[1][:4])
	assert.Equal(t, "trtmc-server", argvs[2][0])
	assert.Equal(t, []string{"--worker-binary", sb.Native}, argvs[2][len(argvs[2])-2:])
	assert.Equal(t, "trtmc-server(native)", argvs[3][0])
	assert.Equal(t, "_serve-worker", argvs[3][1])
	assert.NotContains(t, argvs[3], "--runtime-root", "a source build's control plane finds no packaged runtime root")

	// Without build/server/python beside it, the launcher runs an
	// installed control plane (python3 -I), which this environment lacks.
	require.NoError(t, os.RemoveAll(filepath.Join(sb.Build, "server")))
	cmd := exec.Command(sb.Native, "m.bundle", "--model-name", "m")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "No module named trtmc_server")
}

// The fixture's overlap detector: while the server's worker lives, a
// second worker on the node (a native replay or a probe started too early)
// exits naming the overlap. The server's worker runs in a session of its
// own with worker.py's environment allowlist.
func TestFakeWorkersAreExclusive(t *testing.T) {
	in := trtmctest.New(t)
	lock := filepath.Join(t.TempDir(), "gpu.lock")
	srv := startProgram(t, in.ConsoleScript, []string{"FAKE_TRTMC_EXCLUSIVE=" + lock, "TRTMC_QUAL_CHECKPOINT=marker"})
	cmd := exec.Command(in.Native, "_serve-worker", filepath.Join(t.TempDir(), "m.bundle"))
	cmd.Env = append(os.Environ(), "FAKE_TRTMC_EXCLUSIVE="+lock)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "another native worker is running on this node")
	resp, body := srv.postRaw(t, RouteChat, chatPayload(t, ``), "")
	assert.Equal(t, 200, resp.StatusCode, body)
}
