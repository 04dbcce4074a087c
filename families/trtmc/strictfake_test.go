package trtmc

import (
	"bufio"
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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

// The fake TRTMC is as strict as TRTMC (its fixtures cite their sources).
// These tests pin the strictness itself, so a lenient fake cannot hide the
// harness's mistakes: the console script's argv (exactly the public
// flags), its body limit, its X-Request-ID policy and its records; the
// harness's answer to each is shown where the harness meets it (the
// adapter tests, the join's, doctor's and the end-to-end run's).

func consoleScript(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	in := trtmctest.New(t)
	if len(env) > 0 && env[0] == "no-native" {
		require.NoError(t, os.Remove(in.Native))
		env = env[1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.ConsoleScript, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, string(out))
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

func TestConsoleScriptArgv(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "m.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("b"), 0o644))
	for name, tt := range map[string]struct {
		env  []string
		args []string
		code int
		want string
	}{
		"_serve-worker is not the console script's": {nil, []string{"_serve-worker", bundle}, 2, "trtmc-server: error: unrecognized arguments: " + bundle},
		"an unknown flag":                     {nil, []string{bundle, "--model-name", "m", "--api-key", "k"}, 2, "unrecognized arguments: --api-key k"},
		"a host off loopback":                 {nil, []string{bundle, "--model-name", "m", "--host", "0.0.0.0"}, 2, "--host must be a loopback IP address"},
		"no model name":                       {nil, []string{bundle}, 2, "--model-name is required with the positional bundle"},
		"a body limit that is not positive":   {nil, []string{bundle, "--model-name", "m", "--max-body-bytes", "0"}, 2, "argument --max-body-bytes: value must be positive"},
		"--records in a version without it":   {[]string{"FAKE_TRTMC_SERVER_VERSION=ddf1735f"}, []string{bundle, "--model-name", "m", "--records", "r.jsonl"}, 2, "unrecognized arguments: --records r.jsonl"},
		"no native worker beside the package": {[]string{"no-native"}, []string{bundle, "--model-name", "m"}, 2, "native worker executable is unavailable"},
		"--model without NAME=PATH":           {nil, []string{bundle, "--model-name", "m", "--model", "other"}, 2, "--model must use NAME=PATH"},
		"--model with no bundle there":        {nil, []string{bundle, "--model-name", "m", "--model", "other=/nowhere.bundle"}, 2, "bundle for model 'other' does not exist"},
		"--help lists the flags":              {nil, []string{"--help"}, 0, "--max-body-bytes MAX_BODY_BYTES"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := consoleScript(t, tt.env, tt.args...)
			assert.Equal(t, tt.code, code, out)
			assert.Contains(t, out, tt.want)
		})
	}
	_, out := consoleScript(t, []string{"FAKE_TRTMC_SERVER_VERSION=ddf1735f"}, "--help")
	assert.NotContains(t, out, "--records")
}

// liveServer starts the console script on a free loopback port and waits
// until it is ready.
type liveServer struct {
	url, records string
	cmd          *exec.Cmd
}

func startConsoleScript(t *testing.T, env []string, records bool) *liveServer {
	t.Helper()
	in := trtmctest.New(t)
	d := t.TempDir()
	bundle := filepath.Join(d, "m.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("b"), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &liveServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), records: filepath.Join(d, "records.jsonl")}
	args := []string{bundle, "--model-name", "qwen3-vl-2b", "--port", fmt.Sprint(port)}
	if records {
		args = append(args, "--records", s.records)
	}
	s.cmd = exec.Command(in.ConsoleScript, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = io.Discard
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.url + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		require.True(t, time.Now().Before(deadline), "the console script never became ready")
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *liveServer) post(t *testing.T, route string, body []byte, ids ...string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+route, bytes.NewReader(body))
	require.NoError(t, err)
	for _, id := range ids {
		req.Header.Add("X-Request-ID", id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header.Get("X-Request-ID"), out
}

func (s *liveServer) recordLines(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(s.records)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

var genID = regexp.MustCompile(`^req-[0-9a-f]{32}$`)

func TestConsoleScriptServes(t *testing.T) {
	srv := startConsoleScript(t, nil, true)

	// Echo of a valid X-Request-ID; the answer names the request's model,
	// finish_reason null, usage from the native Task.
	code, echo, body := srv.post(t, RouteChat, chatPayload(t, `,"max_tokens":8`), "client-id-1")
	require.Equal(t, 200, code, "%v", body)
	assert.Equal(t, "client-id-1", echo)
	assert.Equal(t, "qwen3-vl-2b", body["model"])
	assert.Nil(t, body["choices"].([]any)[0].(map[string]any)["finish_reason"])
	// None: the server's own req-<hex>.
	code, echo, _ = srv.post(t, RouteChat, chatPayload(t, ""))
	assert.Equal(t, 200, code)
	assert.Regexp(t, genID, echo)
	// Invalid, or repeated: 400.
	code, _, body = srv.post(t, RouteChat, chatPayload(t, ""), "!bad id")
	assert.Equal(t, 400, code)
	assert.Equal(t, "invalid X-Request-ID header", body["error"].(map[string]any)["message"])
	code, _, _ = srv.post(t, RouteChat, chatPayload(t, ""), "a", "b")
	assert.Equal(t, 400, code)
	// Above the default 1 MiB body limit: 413.
	big := chatPayload(t, `,"max_tokens":8,"seed":`+strings.Repeat("1", 1<<20)+``)
	code, _, body = srv.post(t, RouteChat, big, "too-big")
	assert.Equal(t, 413, code)
	assert.Equal(t, "content_too_large", body["error"].(map[string]any)["code"])
	// /v1/infer is served (the seeds) but never recorded (records.py).
	code, echo, _ = srv.post(t, RouteInfer, []byte(`{"input":[{"type":"image_url","url":"`+pngURL(t, 32, 32)+`"}]}`), "infer-1")
	assert.Equal(t, 200, code)
	assert.Equal(t, "infer-1", echo)

	recs := srv.recordLines(t)
	require.Len(t, recs, 5, "one record per terminal chat request, none for /v1/infer")
	ok := recs[0]
	assert.Equal(t, "client-id-1", ok["request_id"])
	assert.Equal(t, RouteChat, ok["route"])
	assert.EqualValues(t, 200, ok["status"])
	assert.Equal(t, ScopeTaskCall, ok["timing_scope"])
	assert.Contains(t, ok, "model_call_ms")
	assert.NotContains(t, ok, "task_ms", "the public records have no task_ms")
	for _, k := range []string{"replica", "input_tokens", "input_token_source", "completion_tokens", "completion_token_source",
		"handler_ms", "admission_ms", "generation_config", "has_system_prompt", "setup_ms", "prefill_ms", "decode_ms",
		"worker_roundtrip_ms", "streaming", "model"} {
		assert.Contains(t, ok, k)
	}
	assert.EqualValues(t, 400, recs[2]["status"])
	assert.Regexp(t, genID, recs[2]["request_id"], "an invalid id is recorded under the server's own")
	assert.EqualValues(t, 413, recs[4]["status"])
}

// The policy of idx@ddf1735f (and the ignore mode): the incoming header is
// ignored and the server always names the request itself.
func TestConsoleScriptThatIgnoresRequestIDs(t *testing.T) {
	for _, env := range [][]string{{"FAKE_TRTMC_SERVER_IDS=ignore"}, {"FAKE_TRTMC_SERVER_VERSION=ddf1735f"}} {
		srv := startConsoleScript(t, env, false)
		code, echo, _ := srv.post(t, RouteChat, chatPayload(t, ""), "client-id-1")
		assert.Equal(t, 200, code, env)
		assert.Regexp(t, genID, echo, env)
	}
}
