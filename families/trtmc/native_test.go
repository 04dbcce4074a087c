package trtmc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

type nativeFixture struct {
	dir, bundle, in, out, meta, workerLog, argvLog string
	ids                                            []string
	inst                                           *trtmctest.Install
}

// newNativeFixture writes n request lines for the task, the way the
// harness's native stage writes them.
func newNativeFixture(t *testing.T, task string, n int) *nativeFixture {
	t.Helper()
	inst := trtmctest.OnPath(t)
	d := t.TempDir()
	fx := &nativeFixture{inst: inst, dir: d, bundle: filepath.Join(d, "qwen3-vl-2b.bundle"), in: filepath.Join(d, "native_requests.jsonl"),
		out: filepath.Join(d, "native_answers.jsonl"), meta: filepath.Join(d, "native_meta.json"),
		workerLog: filepath.Join(d, "worker.log"), argvLog: filepath.Join(d, "argv.log")}
	require.NoError(t, os.WriteFile(fx.bundle, []byte("bundle bytes"), 0o644))
	t.Setenv("FAKE_WORKER_LOG", fx.workerLog)
	t.Setenv("FAKE_TRTMC_LOG", fx.argvLog)
	var lines []string
	for i := range n {
		id := fmt.Sprintf("req-%02d", i)
		fx.ids = append(fx.ids, id)
		payload, route := string(chatPayload(t, fmt.Sprintf(`,"max_tokens":%d,"temperature":0`, 16+i))), RouteChat
		if task == TaskDetect {
			payload, route = `{"input":[{"type":"image_url","url":"`+pngURL(t, 640, 480)+`"}]}`, RouteInfer
		}
		b, err := json.Marshal(map[string]any{"request_id": id, "route": route, "payload": json.RawMessage(payload)})
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	require.NoError(t, os.WriteFile(fx.in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return fx
}

func (fx *nativeFixture) opts(task, path string) NativeOptions {
	op := "generate"
	if task == TaskDetect {
		op = "detect"
	}
	return NativeOptions{Task: task, Path: path, Bundle: fx.bundle, In: fx.in, Out: fx.out, Meta: fx.meta,
		Worker: WorkerSpec{Protocol: 2, Capability: map[string]string{TaskChat: "image_text_generation", TaskDetect: "object_detection"}[task],
			StartupTimeout: time.Minute, RequestTimeout: time.Minute, Stderr: io.Discard},
		Locate: LocateOptions{Runner: proc.OS{}}, WorkerArgs: []string{"--kv-cache-size", "1024"},
		WorkerOp: op, WorkerImage: "image_path",
		CLI:    CLISpec{Trtmc: "trtmc", Extra: []string{"--runtime-root", "/opt/trtmc"}, Timeout: time.Minute, TempDir: fx.dir},
		Limits: ChatLimits{MaxNewTokens: 4096},
		NIM:    NIMOptions{Clamp: true, Decimals: 4},
		Runner: proc.OS{}, Log: io.Discard, TempDir: fx.dir}
}

type answerLine struct {
	RequestID string          `json:"request_id"`
	Answer    json.RawMessage `json:"answer"`
	TaskMS    *float64        `json:"task_ms"`
	WallMS    *float64        `json:"wall_ms"`
	Error     string          `json:"error"`
}

// programArgv is the argv log of one program (the fakes log every call;
// the python3 probes included).
func (fx *nativeFixture) programArgv(t *testing.T, program string) [][]string {
	t.Helper()
	var out [][]string
	for _, a := range readLines[[]string](t, fx.argvLog) {
		if a[0] == program {
			out = append(out, a)
		}
	}
	return out
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), sc.Text())
		out = append(out, v)
	}
	return out
}

func readMeta(t *testing.T, path string) families.NativeMeta {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m families.NativeMeta
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// The worker path: one worker for every request, the protocol v2
// handshake, controls as the server maps them, answers in the extractor's
// form, Task time = model_call_ms (public_task_call_wall).
func TestNativeWorkerChat(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 3)
	meta, err := RunNative(context.Background(), fx.opts(TaskChat, PathWorker))
	require.NoError(t, err)
	assert.Equal(t, 3, meta.Answered)
	assert.Equal(t, ScopeTaskCall, meta.TimingScope)
	assert.True(t, meta.TokenCounts)
	require.NotNil(t, meta.Worker)
	assert.Equal(t, 2, meta.Worker.ProtocolVersion)
	assert.Equal(t, meta, ptr(readMeta(t, fx.meta)))

	// Exactly one worker process: the native binary beside the package the
	// TRTMC interpreter imports (never the console script on PATH), with
	// the wheel's runtime root as the control plane passes it, then the
	// family's arguments.
	argv := fx.programArgv(t, "trtmc-server(native)")
	require.Len(t, argv, 1)
	assert.Equal(t, []string{"trtmc-server(native)", "_serve-worker", fx.bundle, "--runtime-root", fx.inst.RuntimeRoot, "--kv-cache-size", "1024"}, argv[0])
	assert.Empty(t, fx.programArgv(t, "trtmc-server"), "the console script is never started")
	require.NotNil(t, meta.WorkerBinary)
	assert.Equal(t, fx.inst.Native, meta.WorkerBinary.Path)
	assert.Equal(t, WorkerFromPackage, meta.WorkerBinary.Source)
	assert.Equal(t, fx.inst.RuntimeRoot, meta.WorkerBinary.RuntimeRoot)
	assert.Len(t, meta.WorkerBinary.SHA256, 64)

	// The requests the worker read: generate, the prompt, the controls,
	// the image as a file, then the shutdown.
	reqs := readLines[map[string]any](t, fx.workerLog)
	require.Len(t, reqs, 4)
	assert.Equal(t, "req-01", reqs[1]["id"])
	assert.Equal(t, "generate", reqs[1]["op"])
	assert.Equal(t, "What color is the car?", reqs[1]["prompt"])
	assert.Equal(t, map[string]any{"max_new_tokens": 17.0, "temperature": 0.0, "use_chat_template": true}, reqs[1]["config"])
	assert.Contains(t, reqs[1]["image_path"], ".png")
	assert.Equal(t, map[string]any{"id": "shutdown", "op": "shutdown"}, reqs[3])

	ex := families.DefaultRegistry().Extractors["openai-chat-text"]
	cmp := families.DefaultRegistry().Comparators["exact"]
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 3)
	for i, l := range lines {
		assert.Equal(t, fx.ids[i], l.RequestID)
		require.NotNil(t, l.TaskMS)
		require.NotNil(t, l.WallMS)
		assert.GreaterOrEqual(t, *l.TaskMS, 0.0)
		assert.LessOrEqual(t, *l.TaskMS, *l.WallMS, "the Task call is inside the call the adapter timed")
		nat, err := ex.FromNative(l.Answer)
		require.NoError(t, err)
		assert.Equal(t, `"What color is the car? -\u003e a 64x48 image"`, string(nat.Canonical))
		assert.Equal(t, 12, nat.Tokens)
		// The HTTP answer the server would give for the same call matches.
		body := `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"What color is the car? -> a 64x48 image"},"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":12,"total_tokens":12}}`
		h, err := ex.FromHTTP([]byte(body))
		require.NoError(t, err)
		assert.Empty(t, cmp.Compare(h, nat, nil))
	}
	// Decoded images are gone once answered.
	left, _ := filepath.Glob(filepath.Join(fx.dir, "req-*"))
	assert.Empty(t, left)
}

func ptr[T any](v T) *T { return &v }

func TestNativeWorkerDetect(t *testing.T) {
	fx := newNativeFixture(t, TaskDetect, 2)
	o := fx.opts(TaskDetect, PathWorker)
	thr := 0.25
	o.ScoreThreshold = &thr
	meta, err := RunNative(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, 2, meta.Answered)
	reqs := readLines[map[string]any](t, fx.workerLog)
	assert.Equal(t, "detect", reqs[0]["op"])
	assert.Equal(t, map[string]any{"score_threshold": 0.25}, reqs[0]["config"])
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 2)
	assert.JSONEq(t, `[{"index":0,"bounding_boxes":{
		"0":[{"x_min":0.1,"y_min":0.2,"x_max":0.5,"y_max":0.6,"confidence":0.91}],
		"17":[{"x_min":0.5,"y_min":0.5,"x_max":1,"y_max":0.95,"confidence":0.42}]}}]`, string(lines[0].Answer),
		"x_max 1.02 clamped as configured; class numbers kept")
	require.NotNil(t, lines[0].TaskMS)
	require.NotNil(t, lines[0].WallMS)
	assert.LessOrEqual(t, *lines[0].TaskMS, *lines[0].WallMS)
	ex := families.DefaultRegistry().Extractors["nim-bounding-boxes"]
	a, err := ex.FromNative(lines[0].Answer)
	require.NoError(t, err)
	assert.Empty(t, ex.NotMeaningful(a, &verdict.Semantics{Labels: families.LabelSpaces["coco-contiguous-80"]}))
}

// An error reply answers that request with an error line; the worker lives
// on and the others are answered.
func TestNativeWorkerErrorReply(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 3)
	t.Setenv("FAKE_WORKER", "error:req-01")
	meta, err := RunNative(context.Background(), fx.opts(TaskChat, PathWorker))
	require.NoError(t, err)
	assert.Equal(t, 2, meta.Answered)
	assert.Equal(t, 1, meta.Errors)
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 3)
	assert.Equal(t, "invalid_request_error: generation request is invalid for this model", lines[1].Error)
	assert.Nil(t, lines[1].Answer)
	assert.NotEmpty(t, lines[2].Answer)
}

// A worker that dies mid-request: everything answered before is kept, the
// request it died on gets an error line, and the run fails naming it, the
// exit status and the worker's last words.
func TestNativeWorkerCrashMidStream(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 4)
	t.Setenv("FAKE_WORKER", "crash:req-02")
	meta, err := RunNative(context.Background(), fx.opts(TaskChat, PathWorker))
	require.Error(t, err)
	var gone *WorkerGone
	require.ErrorAs(t, err, &gone)
	msg := err.Error()
	assert.Contains(t, msg, "request req-02")
	assert.Contains(t, msg, "exited with status 134")
	assert.Contains(t, msg, "illegal memory access")
	assert.Contains(t, msg, "2 of 4 requests answered")
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 3, "two answers and the error line of the request it died on; nothing invented after")
	assert.NotEmpty(t, lines[0].Answer)
	assert.NotEmpty(t, lines[1].Answer)
	assert.Contains(t, lines[2].Error, "exited with status 134")
	m := readMeta(t, fx.meta)
	assert.Equal(t, 2, m.Answered)
	assert.Contains(t, m.Fatal, "req-02")
	assert.Equal(t, meta.Fatal, m.Fatal)
}

func TestNativeWorkerFailures(t *testing.T) {
	for name, tt := range map[string]struct{ scenario, want string }{
		"runtime error":   {"runtime-error:req-00", "failed with runtime_error: native worker operation failed"},
		"text-only":       {"textonly", `lack "image_text_generation"`},
		"other protocol":  {"protocol:3", "speaks protocol_version 3, the family is configured for 2"},
		"not a handshake": {"garbage", `sent "loading engines... done" instead of its ready line`},
		"out of step":     {"wrong-id:req-00", `answered id "someone-else"`},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newNativeFixture(t, TaskChat, 2)
			t.Setenv("FAKE_WORKER", tt.scenario)
			_, err := RunNative(context.Background(), fx.opts(TaskChat, PathWorker))
			assert.ErrorContains(t, err, tt.want)
			_, statErr := os.Stat(fx.meta)
			assert.NoError(t, statErr, "the meta file says what happened")
		})
	}
}

func TestNativeWorkerRequestTimeout(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 2)
	t.Setenv("FAKE_WORKER", "hang:req-00")
	o := fx.opts(TaskChat, PathWorker)
	o.Worker.RequestTimeout = 300 * time.Millisecond
	_, err := RunNative(context.Background(), o)
	assert.ErrorContains(t, err, "did not answer within 300ms (stopped)")
}

// A request the server would reject is an error line, and the run goes on.
func TestNativeRejectsWhatTheServerRejects(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 2)
	data, err := os.ReadFile(fx.in)
	require.NoError(t, err)
	lines := strings.SplitN(string(data), "\n", 2)
	bad := strings.Replace(lines[0], `"temperature":0`, `"temperature":0,"n":3`, 1)
	require.NoError(t, os.WriteFile(fx.in, []byte(bad+"\n"+lines[1]), 0o644))
	meta, err := RunNative(context.Background(), fx.opts(TaskChat, PathWorker))
	require.NoError(t, err)
	assert.Equal(t, 1, meta.Errors)
	out := readLines[answerLine](t, fx.out)
	assert.Equal(t, "invalid request: n must be 1", out[0].Error)
	assert.NotEmpty(t, out[1].Answer)
}

func TestNativeBadInputLines(t *testing.T) {
	trtmctest.OnPath(t)
	d := t.TempDir()
	for name, tt := range map[string]struct{ in, want string }{
		"not json":     {"{\n", "native_requests.jsonl:1: not a {request_id, route, payload} line"},
		"repeated id":  {`{"request_id":"a","route":"/v1/infer","payload":{}}` + "\n" + `{"request_id":"a","route":"/v1/infer","payload":{}}`, `native_requests.jsonl:2: request_id "a" is repeated`},
		"no payload":   {`{"request_id":"a","route":"/v1/infer"}`, "native_requests.jsonl:1: payload is missing"},
		"extra field":  {`{"request_id":"a","route":"/v1/infer","payload":{},"x":1}`, `unknown field "x"`},
		"missing file": {"", "no such file"},
	} {
		in := filepath.Join(d, "native_requests.jsonl")
		os.Remove(in)
		if tt.in != "" {
			require.NoError(t, os.WriteFile(in, []byte(tt.in), 0o644))
		}
		_, err := RunNative(context.Background(), NativeOptions{Task: TaskDetect, Path: PathWorker, In: in, Out: filepath.Join(d, "o"), Runner: proc.OS{}})
		assert.ErrorContains(t, err, tt.want, name)
	}
}

// The fallback path: one `trtmc run` per request with the controls as
// flags; Task time is its total_ms (prefill + decode), the scope says so.
func TestNativeCLIChat(t *testing.T) {
	fx := newNativeFixture(t, TaskChat, 2)
	meta, err := RunNative(context.Background(), fx.opts(TaskChat, PathCLI))
	require.NoError(t, err)
	assert.Equal(t, ScopeRunPrefillDecode, meta.TimingScope)
	assert.False(t, meta.TokenCounts, "trtmc run prints no token count")
	argv := fx.programArgv(t, "trtmc")
	require.Len(t, argv, 2)
	img := argv[0][6]
	assert.Equal(t, []string{"trtmc", "run", fx.bundle, "--prompt", "What color is the car?", "--image", img,
		"--max-new-tokens", "16", "--temperature", "0", "--chat-template", "--runtime-root", "/opt/trtmc"}, argv[0])
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 2)
	assert.JSONEq(t, `{"text":"What color is the car? -> a 64x48 image"}`, string(lines[0].Answer))
	require.NotNil(t, lines[0].TaskMS)
	require.NotNil(t, lines[0].WallMS)
	assert.LessOrEqual(t, *lines[0].TaskMS, *lines[0].WallMS, "prefill + decode happened inside the process the adapter timed")
	nat, err := families.DefaultRegistry().Extractors["openai-chat-text"].FromNative(lines[0].Answer)
	require.NoError(t, err)
	assert.Equal(t, 0, nat.Tokens, "no count, and no word count either")

	// Without the timing line task_ms is null, not invented.
	t.Setenv("FAKE_TRTMC", "no-timing")
	_, err = RunNative(context.Background(), fx.opts(TaskChat, PathCLI))
	require.NoError(t, err)
	lines = readLines[answerLine](t, fx.out)
	assert.Nil(t, lines[0].TaskMS)
}

// A trtmc process that fails answers its request with an error line naming
// the program and its last words; the others are answered.
func TestNativeCLIFailureIsPerRequest(t *testing.T) {
	fx := newNativeFixture(t, TaskDetect, 3)
	t.Setenv("FAKE_TRTMC", "fail:2")
	meta, err := RunNative(context.Background(), fx.opts(TaskDetect, PathCLI))
	require.NoError(t, err)
	assert.Equal(t, ScopeNone, meta.TimingScope)
	lines := readLines[answerLine](t, fx.out)
	require.Len(t, lines, 3)
	assert.NotEmpty(t, lines[0].Answer)
	assert.Nil(t, lines[0].TaskMS, "trtmc detect prints no timing")
	assert.Contains(t, lines[1].Error, "exited with status 1")
	assert.Contains(t, lines[1].Error, "engine plan is corrupt")
	assert.NotEmpty(t, lines[2].Answer)
	argv := fx.programArgv(t, "trtmc")
	assert.Equal(t, []string{"trtmc", "detect", fx.bundle, "--image"}, argv[0][:4])
	assert.Equal(t, "--output-json", argv[0][5])
}

// A missing executable stops the run at once: it is not the request's fault.
func TestNativeMissingExecutable(t *testing.T) {
	fx := newNativeFixture(t, TaskDetect, 2)
	o := fx.opts(TaskDetect, PathCLI)
	o.CLI.Trtmc = "trtmc-does-not-exist"
	_, err := RunNative(context.Background(), o)
	assert.ErrorContains(t, err, "trtmc-does-not-exist")
	o = fx.opts(TaskDetect, PathWorker)
	o.Locate.Explicit = filepath.Join(fx.dir, "trtmc-server-does-not-exist")
	_, err = RunNative(context.Background(), o)
	assert.ErrorContains(t, err, "locate the native worker: --worker-binary")
	assert.ErrorContains(t, err, "not found")
}

// A worker reply whose Task time is outside its domain is that request's
// error line, naming the cause (issue 25 item 17): another timing_scope,
// none at all (a protocol-1 worker), a negative model_call_ms, or one
// longer than the whole call the adapter timed (1e300 ms, an hour).
func TestNativeWorkerTimingDomain(t *testing.T) {
	for name, tt := range map[string]struct {
		scenario string
		protocol int
		want     string
	}{
		"another scope":   {"scope:server_handler_wall", 2, `timing: the worker's reply has timing_scope "server_handler_wall", not public_task_call_wall`},
		"negative":        {"call-ms:-5", 2, "timing: the worker's model_call_ms -5 is not a time"},
		"impossible":      {"call-ms:1e300", 2, "timing: the worker's model_call_ms 1e+300 exceeds the"},
		"an hour":         {"call-ms:3600000", 2, "timing: the worker's model_call_ms 3.6e+06 exceeds the"},
		"protocol 1 only": {"protocol:1", 1, "timing: the worker's reply has neither model_call_ms nor timing_scope (a protocol-1 worker?"},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newNativeFixture(t, TaskChat, 2)
			t.Setenv("FAKE_WORKER", tt.scenario)
			o := fx.opts(TaskChat, PathWorker)
			o.Worker.Protocol = tt.protocol
			meta, err := RunNative(context.Background(), o)
			require.NoError(t, err, "a reply out of its domain is the request's error line, not a dead worker")
			assert.Equal(t, 2, meta.Errors)
			for _, l := range readLines[answerLine](t, fx.out) {
				assert.Contains(t, l.Error, tt.want)
				assert.Nil(t, l.TaskMS)
				assert.Nil(t, l.Answer)
			}
		})
	}
}

// trtmc run's timing line in its domain: a total its parts contradict, a
// negative part, is the request's error line, never a Task time.
func TestNativeCLITimingDomain(t *testing.T) {
	for name, tt := range map[string]struct{ timing, want string }{
		"total contradicted": {"1,2,-5", "timing: trtmc run's [trtmc.timing] total_ms=-5.000000 is not a time"},
		"sum contradicted":   {"1,2,10", "timing: trtmc run's [trtmc.timing] total_ms=10.000000 contradicts prefill_ms=1.000000 + decode_ms=2.000000"},
		"negative part":      {"-1,2,1", "prefill_ms=-1.000000 is not a time"},
		"longer than a run":  {"1e9,1e9,2e9", "exceeds the"},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newNativeFixture(t, TaskChat, 1)
			t.Setenv("FAKE_TRTMC", "timing:"+tt.timing)
			_, err := RunNative(context.Background(), fx.opts(TaskChat, PathCLI))
			require.NoError(t, err)
			lines := readLines[answerLine](t, fx.out)
			require.Len(t, lines, 1)
			assert.Contains(t, lines[0].Error, tt.want)
			assert.Nil(t, lines[0].TaskMS)
		})
	}
}
