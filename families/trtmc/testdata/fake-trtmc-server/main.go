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
//     [--startup-timeout S] [--request-timeout S] [--max-body-bytes N
//     (1 MiB)] [--max-prompt-bytes N (256 KiB)] [--max-new-tokens N (4096)]
//     [--records PATH] [--access-log]` and the hidden --worker-binary. Any
//     unknown argument, `_serve-worker` included (argparse takes it for the
//     bundle and the real bundle is then unrecognized), exits 2 with
//     "trtmc-server: error: ..."; so do a non-loopback --host, a missing
//     bundle, a --model that is not NAME=PATH of an existing file
//     (model_assignment; a well-formed one is checked, never served) and
//     a missing native worker. The worker is found as
//     packaged_runtime_root does: --worker-binary, else
//     tensorrt_model_connect/bin/trtmc-server beside the control plane's own
//     package (the fixture reads the directory trtmc_server was imported
//     from in FAKE_TRTMC_SERVER_PKG_PARENT, else FAKE_TRTMC_SITE_PACKAGES),
//     where libtrtmc_runtime.so and libtrtmc_backend_trt.so must be too;
//     each replica is started as `WORKER _serve-worker BUNDLE
//     [--runtime-root D] ...`.
//   - registry.py (idx@a4ba28be): replica i of model M is the worker named
//     `M-<i+1>` (so one replica is `M-1`); a request leases one idle
//     replica or fails at once: 429 when all are busy (WorkerSaturatedError,
//     errors.py code server_busy), 503 server_draining when none is healthy
//     or the server is closing (execute catches RuntimeError); a replica is
//     leased until its worker call ends (worker.py WorkerGroup). There is no
//     queue. The request's max_new_tokens defaults to the worker's ready
//     default_max_new_tokens (128 when absent), capped by --max-new-tokens.
//   - app.py (idx@a9ed5f69): routes /health/live, /health/ready (200
//     {"status":"ready","degraded":...} or 503 {"status":"not_ready",
//     "degraded":...}), /v1/models, /metrics (metrics.py idx@a4ba28be),
//     /v1/completions, /v1/chat/completions; any other path is FastAPI's 404
//     {"detail":"Not Found"} and another method its 405 {"detail":"Method
//     Not Allowed"}. _BodyLimitMiddleware answers 413 content_too_large
//     "request body exceeds limit" above --max-body-bytes on the two
//     completion routes only (Content-Length first, then the bytes read).
//     execute checks, in order: n (400 unsupported_parameter),
//     stream_options without stream (400 invalid_request), stop (400
//     unsupported_parameter), prompt plus system text in UTF-8 above
//     --max-prompt-bytes (413 content_too_large "prompt exceeds the server
//     limit"), the model (404 model_not_found), max tokens above
//     --max-new-tokens (400 max_tokens_exceeded), then the lease (429
//     rate_limit_error server_busy with Retry-After: 1; 503
//     server_draining). Errors are {"error":{"message","type","param",
//     "code"}}, type server_error for 5xx, rate_limit_error for 429,
//     invalid_request_error otherwise. Worker failures: 503 worker_crashed,
//     504 worker_timeout, 502 worker_protocol_error, 400 (the worker's
//     message) or 502 worker_operation_failed for a worker error reply.
//     Chat answers have finish_reason null and usage {prompt_tokens: 0,
//     completion_tokens, total_tokens}; stream=true is answered as buffered
//     SSE (X-TRTMC-Streaming: buffered) by a worker that does not stream.
//   - schemas.py (idx@334c75f6): extra fields forbidden (400), n >= 1,
//     max_tokens >= 1, temperature >= 0 and finite, top_p and min_p in
//     [0, 1], top_k >= 0, seed >= 0, enable_thinking a bool, 1 or 2
//     messages; protocol.py (idx@80436b4c): generation_config carries
//     max_new_tokens and whichever of temperature, top_p, min_p, top_k,
//     seed, enable_thinking the request set; chat_prompt: one user message
//     after an optional system message, text parts joined.
//   - records.py (idx@a9ed5f69) RequestPolicy: one X-Request-ID header
//     matching ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$ is echoed on every
//     answer; an invalid or repeated one is a 400 (invalid_request); none
//     gives req-<hex>. Records: one JSON line per terminal request, only
//     for /v1/completions and /v1/chat/completions, with request_id, route,
//     model, replica, input_tokens, input_token_source, completion_tokens,
//     completion_token_source, status (the HTTP status number), handler_ms,
//     and, once a replica was leased, admission_ms, generation_config
//     (without system_prompt), has_system_prompt; once the worker answered,
//     setup_ms, prefill_ms, decode_ms, model_call_ms, timing_scope,
//     worker_roundtrip_ms and streaming ("none" or "buffered") — no
//     task_ms, no text.
//   - uvicorn: "Uvicorn running on http://HOST:PORT (Press CTRL+C to quit)"
//     once the workers are ready; there is no server_ready line.
//
// Beyond the public server it serves what the seeds' later main serves and
// the public code does not (the assumptions families/trtmc.yaml makes
// visible): one image_url part in a chat user message (sent to the worker
// as image_path), and NIM `POST /v1/infer` (op detect; boxes divided by the
// image size and clamped to [0, 1]), which gets no record (the public
// route check) and the same body limit. Whether the seeds' image chat
// counts the image into --max-prompt-bytes is not public: by default the
// prompt is the text (as the public chat_prompt has it);
// FAKE_TRTMC_SERVER_PROMPT_IMAGE=count counts the image's data URL too.
//
// Environment:
//
//	FAKE_TRTMC_SERVER_VERSION  a9ed5f69 (default: --records, echoes
//	                           X-Request-ID) | ddf1735f (no --records, so
//	                           the flag exits 2; ignores X-Request-ID and
//	                           always generates req-<uuid hex>)
//	FAKE_TRTMC_SERVER_IDS      ignore: generate an id whatever the header says
//	FAKE_TRTMC_SERVER_MODEL    answer this `model` instead of the request's
//	FAKE_TRTMC_SERVER_PROMPT_IMAGE  count: the image counts into the prompt
//	FAKE_TRTMC_SERVER_INTRUDE  N: a second client overlaps the N-th chat
//	                           request's successor (see intrude)
//	FAKE_TRTMC_SERVER_PKG_PARENT  the directory trtmc_server is imported from
//	FAKE_TRTMC_SITE_PACKAGES   where tensorrt_model_connect is installed
//	FAKE_TRTMC_LOG             append this invocation's argv (JSON)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	bundle, modelName, host, records, runtimeRoot, runtimeCache, workerBinary string
	port                                                                      int
	kvCache                                                                   string
	cudaGraphs                                                                bool
	startupTimeout, requestTimeout                                            float64
	maxBody, maxPrompt, maxNewTokens, replicas                                int64
	models                                                                    []string // --model NAME=PATH, checked and not served
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

type opt struct {
	dest   any
	flag   bool
	hidden bool
	kind   string // "", "int", "positive", "float", "append"
}

func (c *config) options() map[string]opt {
	opts := map[string]opt{
		"--model-name": {dest: &c.modelName}, "--model": {dest: &c.models, kind: "append"}, "--replicas": {dest: &c.replicas, kind: "positive"},
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
	return opts
}

func setValue(o opt, name, value string) {
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
	case "append":
		*(o.dest.(*[]string)) = append(*(o.dest.(*[]string)), value)
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

func parseArgs(args []string) config {
	c := config{host: "127.0.0.1", port: 8000, startupTimeout: 120, requestTimeout: 120, maxBody: 1 << 20, maxPrompt: 256 << 10,
		maxNewTokens: 4096, replicas: 1}
	opts := c.options()
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
		setValue(o, name, value)
	}
	if len(unknown) > 0 {
		argError("unrecognized arguments: %s", strings.Join(unknown, " "))
	}
	if len(positional) == 1 {
		c.bundle = positional[0]
	}
	c.check()
	return c
}

// check is main()'s checks that parser().error() reports (exit 2).
func (c *config) check() {
	if ip, err := netip.ParseAddr(c.host); err != nil || !ip.IsLoopback() {
		argError("--host must be a loopback IP address")
	}
	if c.port < 0 || c.port > 65535 {
		argError("--port must be between 0 and 65535")
	}
	if c.startupTimeout <= 0 || c.requestTimeout <= 0 {
		argError("worker timeouts must be positive")
	}
	for _, m := range c.models {
		modelAssignment(m)
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
}

// modelAssignment is cli.py's model_assignment: NAME=PATH with both sides
// set and the bundle a file, else exit 2. The fixture serves the
// positional bundle only, so another model's requests are 404
// model_not_found: stricter than the public server, never more lenient.
func modelAssignment(value string) {
	name, path, ok := strings.Cut(value, "=")
	if !ok || name == "" || path == "" {
		argError("--model must use NAME=PATH")
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		argError("bundle for model '%s' does not exist", name)
	}
}

// packagedRuntimeRoot is cli.py's packaged_runtime_root: the
// tensorrt_model_connect/bin beside the control plane's own package, when
// the worker and both DSOs are there. A source build's control plane
// (imported from build/server/python) has none.
func packagedRuntimeRoot() string {
	parent := os.Getenv("FAKE_TRTMC_SERVER_PKG_PARENT")
	if parent == "" {
		parent = os.Getenv("FAKE_TRTMC_SITE_PACKAGES")
	}
	if parent == "" {
		return ""
	}
	dir := filepath.Join(parent, "tensorrt_model_connect", "bin")
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
	fmt.Fprintf(os.Stderr, "INFO:     Started server process [%d]\nINFO:     Waiting for application startup.\n", os.Getpid())
	s, err := newServer(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ERROR:    Traceback (most recent call last):\n  ...\ntrtmc_server.errors.WorkerStartupError:", err)
		fmt.Fprintln(os.Stderr, "ERROR:    Application startup failed. Exiting.")
		os.Exit(3)
	}
	fmt.Fprintln(os.Stderr, "INFO:     Application startup complete.")
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR:    [Errno 98] error while attempting to bind on address: %v\n", err)
		s.close()
		os.Exit(1)
	}
	s.self = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(os.Stderr, "INFO:     Uvicorn running on http://%s (Press CTRL+C to quit)\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "INFO:     Shutting down")
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "ERROR:", err)
	}
	fmt.Fprintln(os.Stderr, "INFO:     Waiting for application shutdown.")
	s.close()
	fmt.Fprintln(os.Stderr, "INFO:     Application shutdown complete.")
}
