// Command fake-trtmc-server is a TEST FIXTURE, never shipped or configured
// as a default. It plays the `trtmc-server` CONSOLE SCRIPT that TRTMC's
// wheel puts on PATH (pyproject.toml idx@05348945: `trtmc-server =
// "trtmc_server.cli:main"`): the Python control plane, which is a separate
// program from the native worker binary (testdata/fake-trtmc-native). It is
// as strict as the public sources it cites, read for facts only:
//
//   - apps/server/python/trtmc_server/cli.py (idx@a9ed5f69; idx@ddf1735f
//     has no --records): argparse, `[BUNDLE] --model-name NAME [--model
//     NAME=PATH]... [--replicas N] [--host H] [--port P] [--runtime-root D]
//     [--kv-cache-size N] [--runtime-cache P] [--cuda-graphs]
//     [--startup-timeout S] [--request-timeout S] [--max-body-bytes N]
//     [--max-prompt-bytes N] [--max-new-tokens N] [--records PATH]
//     [--access-log]` and the hidden --worker-binary. Any unknown argument,
//     `_serve-worker` included (argparse takes it for the bundle and the real
//     bundle is then unrecognized), exits 2 with "trtmc-server: error: ...";
//     so do a non-loopback --host, a missing bundle and a missing native
//     worker. The worker is found as packaged_runtime_root does: --worker-
//     binary, else tensorrt_model_connect/bin/trtmc-server beside the
//     control plane's package (the fixture reads that site-packages
//     directory from FAKE_TRTMC_SITE_PACKAGES, which its install writes into
//     the console script), where libtrtmc_runtime.so and
//     libtrtmc_backend_trt.so must be too; it is started as
//     `WORKER _serve-worker BUNDLE [--runtime-root D] ...`.
//   - app.py (idx@a9ed5f69): routes /health/live, /health/ready (200 ready,
//     503 not_ready), /v1/models, /metrics, /v1/completions,
//     /v1/chat/completions; _BodyLimitMiddleware answers 413
//     content_too_large above --max-body-bytes (default 1 MiB) on the two
//     completion routes; errors are {"error":{"message","type","param",
//     "code"}}; chat answers have finish_reason null and usage
//     {prompt_tokens: 0, completion_tokens, total_tokens}; `model` is the
//     request's model, which must be a served name (404 otherwise).
//   - schemas.py (idx@334c75f6): extra fields forbidden (400), n must be 1,
//     stop refused, max_tokens and max_completion_tokens exclusive.
//   - records.py (idx@a9ed5f69) RequestPolicy: one X-Request-ID header
//     matching ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$ is echoed; an invalid or
//     repeated one is a 400 (invalid_request); none gives req-<hex>.
//     Records: one JSON line per terminal request, only for /v1/completions
//     and /v1/chat/completions, with request_id, route, model, replica,
//     input_tokens, input_token_source, completion_tokens,
//     completion_token_source, status (the HTTP status number), handler_ms,
//     admission_ms, generation_config, has_system_prompt, setup_ms,
//     prefill_ms, decode_ms, model_call_ms, timing_scope,
//     worker_roundtrip_ms, streaming — no task_ms, no text.
//
// Beyond the public server it serves what the seeds' later main serves and
// the public code does not (the assumptions families/trtmc.yaml makes
// visible): one image_url part in a chat user message (sent to the worker
// as image_path), and NIM `POST /v1/infer` (op detect; boxes divided by the
// image size and clamped to [0, 1]), which gets no record (the public
// route check) and the same body limit.
//
// Environment:
//
//	FAKE_TRTMC_SERVER_VERSION  a9ed5f69 (default: --records, echoes
//	                           X-Request-ID) | ddf1735f (no --records, so
//	                           the flag exits 2; ignores X-Request-ID and
//	                           always generates req-<uuid hex>)
//	FAKE_TRTMC_SERVER_IDS      ignore: generate an id whatever the header says
//	FAKE_TRTMC_SERVER_MODEL    answer this `model` instead of the request's
//	FAKE_TRTMC_SITE_PACKAGES   where tensorrt_model_connect is installed
//	FAKE_TRTMC_LOG             append this invocation's argv (JSON)
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	bundle, modelName, host, records, runtimeRoot, runtimeCache, workerBinary string
	port                                                                      int
	kvCache                                                                   string
	cudaGraphs                                                                bool
	startupTimeout, requestTimeout                                            float64
	maxBody, maxPrompt, maxNewTokens                                          int64
}

var version = func() string {
	if v := os.Getenv("FAKE_TRTMC_SERVER_VERSION"); v != "" {
		return v
	}
	return "a9ed5f69"
}()

func hasRecords() bool { return version != "ddf1735f" }

func usage() string {
	u := "usage: trtmc-server [-h] [--model-name MODEL_NAME] [--model NAME=PATH] [--replicas REPLICAS] [--host HOST] [--port PORT]\n" +
		"                    [--runtime-root RUNTIME_ROOT] [--kv-cache-size KV_CACHE_SIZE] [--runtime-cache RUNTIME_CACHE] [--cuda-graphs]\n" +
		"                    [--startup-timeout STARTUP_TIMEOUT] [--request-timeout REQUEST_TIMEOUT] [--max-body-bytes MAX_BODY_BYTES]\n" +
		"                    [--max-prompt-bytes MAX_PROMPT_BYTES] [--max-new-tokens MAX_NEW_TOKENS]"
	if hasRecords() {
		u += " [--records RECORDS]"
	}
	return u + " [--access-log]\n                    [bundle]\n"
}

func help() string {
	h := usage() + "\nServe text-generation bundles through persistent native workers\n\npositional arguments:\n  bundle                single .bundle artifact\n\noptions:\n" +
		"  -h, --help            show this help message and exit\n" +
		"  --model-name MODEL_NAME\n                        API model name for the positional bundle\n" +
		"  --model NAME=PATH     register another text model; repeatable\n" +
		"  --replicas REPLICAS\n  --host HOST\n  --port PORT\n  --runtime-root RUNTIME_ROOT\n  --kv-cache-size KV_CACHE_SIZE\n" +
		"  --runtime-cache RUNTIME_CACHE\n  --cuda-graphs\n  --startup-timeout STARTUP_TIMEOUT\n  --request-timeout REQUEST_TIMEOUT\n" +
		"  --max-body-bytes MAX_BODY_BYTES\n  --max-prompt-bytes MAX_PROMPT_BYTES\n  --max-new-tokens MAX_NEW_TOKENS\n"
	if hasRecords() {
		h += "  --records RECORDS     append terminal request timing JSONL (no text)\n"
	}
	return h + "  --access-log\n"
}

// argError is argparse's error: usage, "trtmc-server: error: MSG", exit 2.
func argError(format string, args ...any) {
	fmt.Fprint(os.Stderr, usage())
	fmt.Fprintf(os.Stderr, "trtmc-server: error: "+format+"\n", args...)
	os.Exit(2)
}

func parseArgs(args []string) config {
	c := config{host: "127.0.0.1", port: 8000, startupTimeout: 120, requestTimeout: 120, maxBody: 1 << 20, maxPrompt: 256 << 10, maxNewTokens: 4096}
	type opt struct {
		dest   any
		flag   bool
		hidden bool
		kind   string // "", "int", "positive", "float"
	}
	opts := map[string]opt{
		"--model-name": {dest: &c.modelName}, "--model": {dest: new(string)}, "--replicas": {dest: new(int64), kind: "positive"},
		"--host": {dest: &c.host}, "--port": {dest: &c.port, kind: "int"}, "--runtime-root": {dest: &c.runtimeRoot},
		"--kv-cache-size": {dest: &c.kvCache, kind: "positive"}, "--runtime-cache": {dest: &c.runtimeCache},
		"--cuda-graphs": {dest: &c.cudaGraphs, flag: true}, "--startup-timeout": {dest: &c.startupTimeout, kind: "float"},
		"--request-timeout": {dest: &c.requestTimeout, kind: "float"}, "--max-body-bytes": {dest: &c.maxBody, kind: "positive"},
		"--max-prompt-bytes": {dest: &c.maxPrompt, kind: "positive"}, "--max-new-tokens": {dest: &c.maxNewTokens, kind: "positive"},
		"--access-log": {dest: new(bool), flag: true}, "--worker-binary": {dest: &c.workerBinary, hidden: true},
	}
	if hasRecords() {
		opts["--records"] = opt{dest: &c.records}
	}
	var positional, unknown []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			fmt.Print(help())
			os.Exit(0)
		}
		name, value, inline := strings.Cut(a, "=")
		o, ok := opts[name]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if len(positional) == 1 {
				unknown = append(unknown, a) // argparse: one positional, the rest unrecognized, in order
				continue
			}
			positional = append(positional, a)
			continue
		}
		if !ok {
			unknown = append(unknown, a)
			continue
		}
		if o.flag {
			*(o.dest.(*bool)) = true
			continue
		}
		if !inline {
			if i+1 >= len(args) || (strings.HasPrefix(args[i+1], "--") && len(args[i+1]) > 2) {
				argError("argument %s: expected one argument", name)
			}
			i++
			value = args[i]
		}
		switch o.kind {
		case "int":
			n, err := strconv.Atoi(value)
			if err != nil {
				argError("argument %s: invalid int value: '%s'", name, value)
			}
			*(o.dest.(*int)) = n
		case "positive":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				argError("argument %s: invalid positive value: '%s'", name, value)
			}
			if n <= 0 {
				argError("argument %s: value must be positive", name)
			}
			switch d := o.dest.(type) {
			case *int64:
				*d = n
			case *string:
				*d = value
			}
		case "float":
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				argError("argument %s: invalid float value: '%s'", name, value)
			}
			*(o.dest.(*float64)) = f
		default:
			*(o.dest.(*string)) = value
		}
	}
	if len(unknown) > 0 {
		argError("unrecognized arguments: %s", strings.Join(unknown, " "))
	}
	if len(positional) == 1 {
		c.bundle = positional[0]
	}
	// main(): the checks that parser().error() reports (exit 2).
	if ip, err := netip.ParseAddr(c.host); err != nil || !ip.IsLoopback() {
		argError("--host must be a loopback IP address")
	}
	if c.port < 0 || c.port > 65535 {
		argError("--port must be between 0 and 65535")
	}
	if c.startupTimeout <= 0 || c.requestTimeout <= 0 {
		argError("worker timeouts must be positive")
	}
	switch {
	case c.bundle != "" && c.modelName == "":
		argError("--model-name is required with the positional bundle")
	case c.bundle == "" && c.modelName != "":
		argError("--model-name requires the positional bundle")
	case c.bundle == "":
		argError("provide a bundle or at least one --model NAME=PATH")
	}
	if fi, err := os.Stat(c.bundle); err != nil || !fi.Mode().IsRegular() {
		argError("bundle does not exist")
	}
	packaged := packagedRuntimeRoot()
	if c.workerBinary == "" && packaged != "" {
		c.workerBinary = filepath.Join(packaged, "trtmc-server")
	}
	if fi, err := os.Stat(c.workerBinary); c.workerBinary == "" || err != nil || !fi.Mode().IsRegular() {
		argError("native worker executable is unavailable")
	}
	if c.runtimeRoot != "" {
		if fi, err := os.Stat(c.runtimeRoot); err != nil || !fi.IsDir() {
			argError("--runtime-root must be a directory")
		}
	} else if packaged != "" {
		c.runtimeRoot = packaged
	}
	return c
}

// packagedRuntimeRoot is cli.py's packaged_runtime_root: the wheel's
// tensorrt_model_connect/bin when the worker and both DSOs are there.
func packagedRuntimeRoot() string {
	sp := os.Getenv("FAKE_TRTMC_SITE_PACKAGES")
	if sp == "" {
		return ""
	}
	dir := filepath.Join(sp, "tensorrt_model_connect", "bin")
	for _, f := range []string{"trtmc-server", "libtrtmc_runtime.so", "libtrtmc_backend_trt.so"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			return ""
		}
	}
	return dir
}

func logArgv() {
	p := os.Getenv("FAKE_TRTMC_LOG")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(append([]string{"trtmc-server"}, os.Args[1:]...))
	f.Write(append(b, '\n'))
}

func main() {
	logArgv()
	c := parseArgs(os.Args[1:])
	logf := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(os.Stderr, "INFO:     %s\n", b)
	}
	w, err := startWorker(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ERROR:    Application startup failed:", err)
		os.Exit(3)
	}
	s := &server{c: c, w: w, log: logf}
	if c.records != "" {
		f, err := os.OpenFile(c.records, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ERROR:", err)
			os.Exit(1)
		}
		s.records = f
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR:    [Errno 98] error while attempting to bind on address: %v\n", err)
		w.close()
		os.Exit(1)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(os.Stderr, "INFO:     Uvicorn running on http://%s (Press CTRL+C to quit)\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "ERROR:", err)
	}
	w.close()
	if s.records != nil {
		s.records.Close()
	}
}

// --- the native worker, as worker.py drives it -----------------------------

type worker struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	timeout time.Duration
	n       int
}

func startWorker(c config) (*worker, error) {
	argv := []string{"_serve-worker", c.bundle}
	if c.runtimeRoot != "" {
		argv = append(argv, "--runtime-root", c.runtimeRoot)
	}
	if c.kvCache != "" {
		argv = append(argv, "--kv-cache-size", c.kvCache)
	}
	if c.runtimeCache != "" {
		argv = append(argv, "--runtime-cache", c.runtimeCache)
	}
	if c.cudaGraphs {
		argv = append(argv, "--cuda-graphs")
	}
	cmd := exec.Command(c.workerBinary, argv...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20+2)
	w := &worker{cmd: cmd, in: in, out: sc, timeout: time.Duration(c.requestTimeout * float64(time.Second))}
	if !sc.Scan() {
		_ = cmd.Wait()
		return nil, fmt.Errorf("native worker exited before it was ready")
	}
	var ready struct {
		Event    string `json:"event"`
		Protocol int    `json:"protocol_version"`
	}
	if json.Unmarshal(sc.Bytes(), &ready) != nil || ready.Event != "ready" {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("native worker did not announce ready")
	}
	return w, nil
}

type workerReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (w *worker) call(req map[string]any) (workerReply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	req["id"] = fmt.Sprintf("http-%d", w.n)
	b, _ := json.Marshal(req)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		return workerReply{}, fmt.Errorf("native worker crashed")
	}
	if !w.out.Scan() {
		return workerReply{}, fmt.Errorf("native worker crashed")
	}
	var rep workerReply
	if err := json.Unmarshal(w.out.Bytes(), &rep); err != nil {
		return workerReply{}, fmt.Errorf("native worker protocol error")
	}
	return rep, nil
}

func (w *worker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.in.Write([]byte(`{"id":"shutdown","op":"shutdown"}` + "\n"))
	_ = w.in.Close()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = w.cmd.Process.Kill()
	}
}

// --- HTTP ------------------------------------------------------------------

type server struct {
	c       config
	w       *worker
	log     func(map[string]any)
	recMu   sync.Mutex
	records *os.File
}

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

func genID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

type apiError struct {
	status    int
	code, msg string
	param     any
}

func (e *apiError) Error() string { return e.msg }

func errorBody(e *apiError) []byte {
	typ := "invalid_request_error"
	switch {
	case e.status >= 500:
		typ = "server_error"
	case e.status == 429:
		typ = "rate_limit_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.msg, "type": typ, "param": e.param, "code": e.code}})
	return b
}

func recorded(path string) bool { return path == "/v1/completions" || path == "/v1/chat/completions" }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	ids := r.Header.Values("X-Request-Id")
	valid := len(ids) <= 1 && (len(ids) == 0 || requestIDRE.MatchString(ids[0]))
	id := genID()
	if version != "ddf1735f" && os.Getenv("FAKE_TRTMC_SERVER_IDS") != "ignore" && len(ids) == 1 && valid {
		id = ids[0]
	}
	if version == "ddf1735f" || os.Getenv("FAKE_TRTMC_SERVER_IDS") == "ignore" {
		valid = true // that server never looks at the header
	}
	rec := map[string]any{"request_id": id, "route": r.URL.Path, "model": nil, "replica": nil, "input_tokens": nil,
		"input_token_source": "unavailable", "completion_tokens": nil, "completion_token_source": "unavailable"}
	w.Header().Set("X-Request-ID", id)
	status, body, ctype := s.route(r, valid, rec)
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(status)
	_, _ = w.Write(body)
	rec["status"] = status
	rec["handler_ms"] = float64(time.Since(started).Microseconds()) / 1000
	s.log(map[string]any{"event": "http_request", "request_id": id, "route": r.URL.Path, "status": status,
		"duration_seconds": time.Since(started).Seconds()})
	if s.records != nil && recorded(r.URL.Path) {
		b, _ := json.Marshal(rec)
		s.recMu.Lock()
		_, _ = s.records.Write(append(b, '\n'))
		s.recMu.Unlock()
	}
}

func (s *server) route(r *http.Request, validID bool, rec map[string]any) (int, []byte, string) {
	const jsonType = "application/json"
	fail := func(e *apiError) (int, []byte, string) { return e.status, errorBody(e), jsonType }
	if !validID {
		return fail(&apiError{status: 400, code: "invalid_request", msg: "invalid X-Request-ID header", param: "X-Request-ID"})
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/health/live":
		return 200, []byte(`{"status":"live"}`), jsonType
	case r.Method == http.MethodGet && r.URL.Path == "/health/ready":
		return 200, []byte(`{"status":"ready","degraded":false}`), jsonType
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		b, _ := json.Marshal(map[string]any{"object": "list", "data": []any{map[string]any{"id": s.c.modelName, "object": "model", "owned_by": "trtmc"}}})
		return 200, b, jsonType
	case r.Method == http.MethodGet && r.URL.Path == "/metrics":
		return 200, []byte("trtmc_server_ready 1\n"), "text/plain; version=0.0.4"
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/infer"):
	default:
		return fail(&apiError{status: 404, code: "not_found", msg: "Not Found"})
	}
	// _BodyLimitMiddleware (and, as the seeds' server must, /v1/infer).
	if r.ContentLength > s.c.maxBody {
		return fail(&apiError{status: 413, code: "content_too_large", msg: "request body exceeds limit"})
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.c.maxBody+1))
	if err != nil {
		return fail(&apiError{status: 400, code: "invalid_request", msg: "could not read the body"})
	}
	if int64(len(body)) > s.c.maxBody {
		return fail(&apiError{status: 413, code: "content_too_large", msg: "request body exceeds limit"})
	}
	var out any
	var aerr *apiError
	switch r.URL.Path {
	case "/v1/chat/completions":
		out, aerr = s.chat(body, rec)
	case "/v1/completions":
		aerr = &apiError{status: 400, code: "invalid_request", msg: "text completions are not played by this fixture"}
	case "/v1/infer":
		out, aerr = s.infer(body)
	}
	if aerr != nil {
		return fail(aerr)
	}
	b, _ := json.Marshal(out)
	return 200, b, jsonType
}

var chatKeys = map[string]bool{"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"temperature": true, "top_p": true, "min_p": true, "top_k": true, "seed": true, "enable_thinking": true,
	"n": true, "stream": true, "stream_options": true, "stop": true}

func invalid(param any, format string, args ...any) *apiError {
	return &apiError{status: 400, code: "invalid_request", msg: fmt.Sprintf(format, args...), param: param}
}

func (s *server) chat(body []byte, rec map[string]any) (any, *apiError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, invalid(nil, "JSON decode error")
	}
	for k := range raw {
		if !chatKeys[k] {
			return nil, invalid(k, "Extra inputs are not permitted")
		}
	}
	var req struct {
		Model               string            `json:"model"`
		Messages            []json.RawMessage `json:"messages"`
		MaxTokens           *int64            `json:"max_tokens"`
		MaxCompletionTokens *int64            `json:"max_completion_tokens"`
		Temperature         *float64          `json:"temperature"`
		TopP                *float64          `json:"top_p"`
		TopK                *int64            `json:"top_k"`
		Seed                *int64            `json:"seed"`
		N                   *int64            `json:"n"`
		Stream              bool              `json:"stream"`
		Stop                json.RawMessage   `json:"stop"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, invalid(nil, "%v", err)
	}
	if req.Model == "" {
		return nil, invalid("model", "Field required")
	}
	if len(req.Messages) < 1 || len(req.Messages) > 2 {
		return nil, invalid("messages", "messages must hold 1 or 2 items")
	}
	if req.Temperature != nil && (*req.Temperature < 0 || math.IsInf(*req.Temperature, 0)) {
		return nil, invalid("temperature", "Input should be greater than or equal to 0")
	}
	prompt, system, img, aerr := chatPrompt(req.Messages)
	if aerr != nil {
		return nil, aerr
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil {
		return nil, invalid(nil, "max_tokens and max_completion_tokens are mutually exclusive")
	}
	rec["model"] = req.Model
	switch {
	case req.N != nil && *req.N != 1:
		return nil, &apiError{status: 400, code: "unsupported_parameter", msg: "n must be 1", param: "n"}
	case len(req.Stop) > 0 && string(req.Stop) != "null":
		return nil, &apiError{status: 400, code: "unsupported_parameter", msg: "stop is not supported", param: "stop"}
	case req.Stream:
		return nil, invalid("stream", "streaming is not played by this fixture")
	case int64(len(prompt)+len(system)) > s.c.maxPrompt:
		return nil, &apiError{status: 413, code: "content_too_large", msg: "prompt exceeds the server limit", param: "prompt"}
	case req.Model != s.c.modelName:
		return nil, &apiError{status: 404, code: "model_not_found", msg: fmt.Sprintf("model %q is not served", req.Model), param: "model"}
	}
	maxTokens := int64(128) // the worker's default_max_new_tokens
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens > s.c.maxNewTokens {
		return nil, &apiError{status: 400, code: "max_tokens_exceeded", msg: fmt.Sprintf("requested generation exceeds %d tokens", s.c.maxNewTokens), param: "max_tokens"}
	}
	cfg := map[string]any{"max_new_tokens": maxTokens}
	if req.Temperature != nil {
		cfg["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		cfg["top_p"] = *req.TopP
	}
	if req.TopK != nil {
		cfg["top_k"] = *req.TopK
	}
	if req.Seed != nil {
		cfg["seed"] = *req.Seed
	}
	cfg["use_chat_template"] = true
	rec["replica"] = s.c.modelName + "-0"
	rec["admission_ms"] = 0.0
	rec["generation_config"] = cfg
	rec["has_system_prompt"] = system != ""
	wcfg := map[string]any{}
	for k, v := range cfg {
		wcfg[k] = v
	}
	if system != "" {
		wcfg["system_prompt"] = system
	}
	path, err := writeTemp(img)
	if err != nil {
		return nil, &apiError{status: 500, code: "internal_error", msg: err.Error()}
	}
	defer os.Remove(path)
	started := time.Now()
	rep, err := s.w.call(map[string]any{"op": "generate", "prompt": prompt, "config": wcfg, "image_path": path})
	if err != nil {
		return nil, &apiError{status: 503, code: "worker_crashed", msg: err.Error()}
	}
	if !rep.OK {
		st := 502
		if rep.Error != nil && rep.Error.Type == "invalid_request_error" {
			st = 400
		}
		return nil, &apiError{status: st, code: "worker_error", msg: "the native worker rejected the request"}
	}
	var res struct {
		Text             *string  `json:"text"`
		CompletionTokens *int64   `json:"completion_tokens"`
		SetupMS          *float64 `json:"setup_ms"`
		PrefillMS        *float64 `json:"prefill_ms"`
		DecodeMS         *float64 `json:"decode_ms"`
		ModelCallMS      *float64 `json:"model_call_ms"`
		TimingScope      *string  `json:"timing_scope"`
	}
	if json.Unmarshal(rep.Result, &res) != nil || res.Text == nil || res.CompletionTokens == nil {
		return nil, &apiError{status: 502, code: "worker_protocol_error", msg: "the native worker answered out of protocol"}
	}
	// context.update(timings, worker_roundtrip_ms, completion_tokens,
	// completion_token_source, timing_scope, streaming).
	for k, v := range map[string]*float64{"setup_ms": res.SetupMS, "prefill_ms": res.PrefillMS, "decode_ms": res.DecodeMS, "model_call_ms": res.ModelCallMS} {
		if v != nil {
			rec[k] = *v
		}
	}
	rec["worker_roundtrip_ms"] = float64(time.Since(started).Microseconds()) / 1000
	rec["completion_tokens"] = *res.CompletionTokens
	rec["completion_token_source"] = "native_task"
	rec["timing_scope"] = "unavailable"
	if res.TimingScope != nil {
		rec["timing_scope"] = *res.TimingScope
	}
	rec["streaming"] = "none"
	model := req.Model
	if m := os.Getenv("FAKE_TRTMC_SERVER_MODEL"); m != "" {
		model = m
	}
	return map[string]any{
		"id": "chatcmpl-" + strings.TrimPrefix(genID(), "req-"), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": *res.Text},
			"logprobs": nil, "finish_reason": nil}},
		"usage": map[string]any{"prompt_tokens": 0, "completion_tokens": *res.CompletionTokens, "total_tokens": *res.CompletionTokens},
	}, nil
}

type imageData struct {
	mime string
	data []byte
	w, h int
}

// chatPrompt is protocol.py chat_prompt: one user message, optionally
// after one system message; text parts are joined; plus (the seeds) one
// image_url data URL in the user message.
func chatPrompt(raw []json.RawMessage) (prompt, system string, img imageData, aerr *apiError) {
	type part struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	content := func(m message, allowImage bool) (string, *imageData, *apiError) {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s, nil, nil
		}
		var parts []json.RawMessage
		if json.Unmarshal(m.Content, &parts) != nil {
			return "", nil, invalid("content", "content must be a string or a list of parts")
		}
		var text strings.Builder
		var im *imageData
		for _, pr := range parts {
			var p part
			dec := json.NewDecoder(bytes.NewReader(pr))
			dec.DisallowUnknownFields()
			if dec.Decode(&p) != nil {
				return "", nil, invalid("content", "Extra inputs are not permitted")
			}
			switch {
			case p.Type == "text" && p.Text != nil:
				text.WriteString(*p.Text)
			case p.Type == "image_url" && allowImage && im == nil:
				var u struct {
					URL string `json:"url"`
				}
				if json.Unmarshal(p.ImageURL, &u) != nil {
					return "", nil, invalid("image_url", "image_url must be {\"url\": ...}")
				}
				d, err := decodeDataURL(u.URL)
				if err != nil {
					return "", nil, invalid("image_url", "%v", err)
				}
				im = &d
			default:
				return "", nil, invalid("content", "unsupported content part %q", p.Type)
			}
		}
		return text.String(), im, nil
	}
	msgs := make([]message, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if dec.Decode(&msgs[i]) != nil {
			return "", "", imageData{}, invalid("messages", "Extra inputs are not permitted")
		}
	}
	user := msgs[len(msgs)-1]
	if user.Role != "user" || (len(msgs) == 2 && msgs[0].Role != "system") {
		return "", "", imageData{}, invalid("messages", "chat accepts one user message after an optional system message")
	}
	if len(msgs) == 2 {
		var e *apiError
		if system, _, e = content(msgs[0], false); e != nil {
			return "", "", imageData{}, e
		}
	}
	p, im, e := content(user, true)
	if e != nil {
		return "", "", imageData{}, e
	}
	if im == nil {
		return "", "", imageData{}, invalid("messages", "the user message needs one image")
	}
	return p, system, *im, nil
}

func decodeDataURL(u string) (imageData, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return imageData{}, errors.New("only data URLs are accepted")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return imageData{}, errors.New("want a base64 data URL")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return imageData{}, errors.New("invalid base64")
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return imageData{}, errors.New("not a decodable image")
	}
	return imageData{mime: "image/" + format, data: data, w: cfg.Width, h: cfg.Height}, nil
}

func writeTemp(im imageData) (string, error) {
	f, err := os.CreateTemp("", "fake-trtmc-server-*."+strings.TrimPrefix(im.mime, "image/"))
	if err != nil {
		return "", err
	}
	if _, err := f.Write(im.data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// infer is the seeds' NIM /v1/infer adapter over the worker's detect op.
func (s *server) infer(body []byte) (any, *apiError) {
	var req struct {
		Input []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&req) != nil || len(req.Input) != 1 || req.Input[0].Type != "image_url" {
		return nil, invalid("input", "one image_url input per request")
	}
	im, err := decodeDataURL(req.Input[0].URL)
	if err != nil {
		return nil, invalid("input", "%v", err)
	}
	path, err := writeTemp(im)
	if err != nil {
		return nil, &apiError{status: 500, code: "internal_error", msg: err.Error()}
	}
	defer os.Remove(path)
	rep, err := s.w.call(map[string]any{"op": "detect", "image_path": path, "config": map[string]any{}})
	if err != nil || !rep.OK {
		return nil, &apiError{status: 502, code: "worker_error", msg: "the native worker failed"}
	}
	var d struct {
		Scores  []float64 `json:"scores"`
		Classes []float64 `json:"classes"`
		Boxes   []float64 `json:"boxes"`
	}
	if json.Unmarshal(rep.Result, &d) != nil || len(d.Classes) != len(d.Scores) || len(d.Boxes) != 4*len(d.Scores) {
		return nil, &apiError{status: 502, code: "worker_protocol_error", msg: "bad detections"}
	}
	clamp := func(v float64) float64 { return math.Min(1, math.Max(0, v)) }
	boxes := map[string][]map[string]float64{}
	for i := range d.Scores {
		label := strconv.Itoa(int(d.Classes[i]))
		boxes[label] = append(boxes[label], map[string]float64{
			"x_min": clamp(d.Boxes[4*i] / float64(im.w)), "y_min": clamp(d.Boxes[4*i+1] / float64(im.h)),
			"x_max": clamp(d.Boxes[4*i+2] / float64(im.w)), "y_max": clamp(d.Boxes[4*i+3] / float64(im.h)),
			"confidence": d.Scores[i]})
	}
	return map[string]any{"data": []any{map[string]any{"index": 0, "bounding_boxes": boxes}},
		"usage": map[string]any{"num_images": 1}}, nil
}
