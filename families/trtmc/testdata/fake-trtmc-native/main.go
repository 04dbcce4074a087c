// Command fake-trtmc-native is a TEST FIXTURE, never shipped or configured
// as a default. It plays the NATIVE `trtmc-server` binary of TRTMC, the C++
// program that the wheel installs at
// site-packages/tensorrt_model_connect/bin/trtmc-server beside
// libtrtmc_runtime.so and libtrtmc_backend_trt.so (or a source build's
// build/trtmc-server). Its sources, read for facts only:
//
//   - apps/server/main.cpp (idx@0f958bfb): `trtmc-server _serve-worker
//     BUNDLE [--runtime-root D] [--runtime-cache P] [--kv-cache-size N]
//     [--cuda-graphs]` is the worker; an unknown option, a missing value or
//     a non-positive --kv-cache-size is "trtmc-server: <what>" on stderr and
//     exit status 1. Without `_serve-worker` the binary is the frontend
//     (frontend_main) that execs the Python control plane with itself as
//     the worker: resolved from /proc/self/exe; when
//     <its dir>/server/python/trtmc_server is a directory (a source build,
//     build/trtmc-server) it prepends <its dir>/server/python to PYTHONPATH
//     and runs `python3 -P -m trtmc_server ARGS --worker-binary SELF`
//     (python3 from PATH); otherwise `<its dir>/python3` when that exists,
//     else python3, with -I. A failed exec is "trtmc-server: failed to
//     start Python control plane: ..." and exit 127. So a source build's
//     `build/trtmc-server BUNDLE --model-name N ...` is a server command.
//   - apps/server/native_worker.cpp (idx@0772b486; protocol 1 at
//     idx@ddf1735f): the JSONL worker. First line {"event":"ready",
//     "protocol_version":2,"capabilities":[...],"default_max_new_tokens":N};
//     requests {"id","op":"generate","prompt","config":{...}}; replies
//     {"id","ok":true,"result":{"text","completion_tokens","setup_ms",
//     "prefill_ms","decode_ms","model_call_ms","timing_scope":
//     "public_task_call_wall"}} or {"id","ok":false,"error":{"type",
//     "message"}}; a runtime_error reply is fatal (the worker exits);
//     {"op":"shutdown"} ends it; lines up to 16 MiB. Protocol 1 replies have
//     no model_call_ms and no timing_scope.
//
// Beyond the public worker (text only), it answers image requests the way
// the seeds' later server needs (`image_path`, capability
// image_text_generation; op `detect` returning {scores, classes, boxes} in
// source pixels, as `trtmc detect` prints them): the assumption the TRTMC
// families make visible with --worker-capability/--worker-image/--worker-op.
//
// Environment:
//
//	FAKE_TRTMC_LOG   append each invocation's argv (JSON) to this file
//	FAKE_WORKER      scenario: "" | error:<id> | runtime-error:<id> |
//	                 crash:<id> | crash-at:<n> | hang:<id> | garbage |
//	                 textonly | protocol:<n> | wrong-id:<id> | nosize |
//	                 scope:<timing_scope> | call-ms:<model_call_ms> |
//	                 slow:<ms per call>
//	FAKE_REFSERVER   when set (any value), `generate` answers with the
//	                 reference Task of the bundle (families/reference-target), so a real
//	                 run can qualify end to end
//	FAKE_WORKER_LOG  append every request line the worker reads to this file
//	FAKE_TRTMC_EXCLUSIVE  a file the worker locks (flock, exclusive) while
//	                 it lives: a second worker started while one lives exits
//	                 1 naming it, so a test sees two workers on one node
//	                 overlap (the server's and the native replay's, or the
//	                 probe's)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

func main() {
	logArgv()
	if len(os.Args) >= 2 && os.Args[1] == "_serve-worker" {
		code, err := workerMain(os.Args)
		if err != nil {
			fmt.Fprintln(os.Stderr, "trtmc-server:", err)
		}
		os.Exit(code)
	}
	os.Exit(frontend(os.Args[1:]))
}

// frontend is main.cpp frontend_main: exec the Python control plane with
// this binary as its worker.
func frontend(args []string) int {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trtmc-server: cannot resolve the trtmc-server executable")
		return 1
	}
	dir := filepath.Dir(self)
	source := filepath.Join(dir, "server", "python")
	python, isolation := "python3", "-I"
	if fi, err := os.Stat(filepath.Join(source, "trtmc_server")); err == nil && fi.IsDir() {
		pp := source
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += ":" + old
		}
		os.Setenv("PYTHONPATH", pp)
		isolation = "-P"
	} else if _, err := os.Stat(filepath.Join(dir, "python3")); err == nil {
		python = filepath.Join(dir, "python3")
	}
	argv := append([]string{python, isolation, "-m", "trtmc_server"}, args...)
	argv = append(argv, "--worker-binary", self)
	path, err := exec.LookPath(python)
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintln(os.Stderr, "trtmc-server: failed to start Python control plane:", err)
	return 127
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
	b, _ := json.Marshal(append([]string{"trtmc-server(native)"}, os.Args[1:]...))
	f.Write(append(b, '\n'))
}

// workerMain parses `_serve-worker BUNDLE [options]` as main.cpp
// worker_main does, then serves.
func workerMain(argv []string) (int, error) {
	if len(argv) < 3 {
		return 1, fmt.Errorf("_serve-worker requires a bundle path")
	}
	bundlePath := argv[2]
	for i := 3; i < len(argv); i++ {
		switch opt := argv[i]; opt {
		case "--runtime-root", "--runtime-cache", "--kv-cache-size":
			if i+1 >= len(argv) || argv[i+1] == "" {
				return 1, fmt.Errorf("%s requires a value", opt)
			}
			i++
			if opt == "--kv-cache-size" {
				if n, err := strconv.ParseUint(argv[i], 10, 64); err != nil || n == 0 || strings.HasPrefix(argv[i], "+") {
					return 1, fmt.Errorf("%s must be a positive integer", opt)
				}
			}
			if opt == "--runtime-root" {
				if fi, err := os.Stat(argv[i]); err != nil || !fi.IsDir() {
					return 1, fmt.Errorf("runtime root %s is not a directory", argv[i])
				}
			}
		case "--cuda-graphs":
		default:
			return 1, fmt.Errorf("unknown _serve-worker option: %s", opt)
		}
	}
	return worker(bundlePath), nil
}

func scenario() (kind, arg string) {
	kind, arg, _ = strings.Cut(os.Getenv("FAKE_WORKER"), ":")
	return kind, arg
}

// exclusive takes FAKE_TRTMC_EXCLUSIVE's lock for the worker's lifetime.
func exclusive() error {
	p := os.Getenv("FAKE_TRTMC_EXCLUSIVE")
	if p == "" {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("another native worker is running on this node (%s is locked): two workers overlap", p)
	}
	held = f // kept referenced: held until the process exits
	return nil
}

var held *os.File

func worker(bundlePath string) int {
	if err := exclusive(); err != nil {
		fmt.Fprintln(os.Stderr, "[trtmc.server.worker]", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	kind, arg := scenario()
	var refTask *task.Task
	if os.Getenv("FAKE_REFSERVER") != "" {
		b, err := bundle.Load(bundlePath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "[trtmc.server.worker] load:", err)
			return 1
		}
		refTask = task.New(b, task.Options{})
	} else if _, err := os.Stat(bundlePath); err != nil {
		fmt.Fprintln(os.Stderr, "[trtmc.server.worker] bundle:", err)
		return 1
	}
	caps := []string{"text_generation", "image_text_generation", "object_detection"}
	version := 2
	switch kind {
	case "garbage":
		fmt.Println("loading engines... done")
		return 0
	case "textonly":
		caps = []string{"text_generation"}
	case "protocol":
		fmt.Sscanf(arg, "%d", &version)
	}
	fmt.Fprintln(os.Stderr, "[trtmc.server.worker] bundle loaded")
	emit(map[string]any{"event": "ready", "protocol_version": version, "capabilities": caps, "default_max_new_tokens": 128})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20+2)
	served := 0
	for in.Scan() {
		served++
		if p := os.Getenv("FAKE_WORKER_LOG"); p != "" {
			if fh, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fh.Write(append(append([]byte(nil), in.Bytes()...), '\n'))
				fh.Close()
			}
		}
		var req map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			emit(map[string]any{"id": nil, "ok": false, "error": map[string]any{"type": "invalid_request_error", "message": "request is not valid JSON"}})
			continue
		}
		id, _ := req["id"].(string)
		op, _ := req["op"].(string)
		if op == "shutdown" {
			emit(map[string]any{"id": id, "ok": true, "result": map[string]any{"status": "shutting_down"}})
			return 0
		}
		switch {
		case kind == "crash" && id == arg, kind == "crash-at" && fmt.Sprint(served) == arg:
			fmt.Fprintln(os.Stderr, "[trtmc.server.worker] CUDA error: an illegal memory access was encountered")
			return 134
		case kind == "hang" && id == arg:
			time.Sleep(time.Hour)
		case kind == "error" && id == arg:
			emit(map[string]any{"id": id, "ok": false, "error": map[string]any{"type": "invalid_request_error", "message": "generation request is invalid for this model"}})
			continue
		case kind == "runtime-error" && id == arg:
			fmt.Fprintln(os.Stderr, "[trtmc.server.worker] out of memory")
			emit(map[string]any{"id": id, "ok": false, "error": map[string]any{"type": "runtime_error", "message": "native worker operation failed"}})
			return 1
		case kind == "wrong-id" && id == arg:
			emit(map[string]any{"id": "someone-else", "ok": true, "result": map[string]any{}})
			continue
		case kind == "slow":
			ms, _ := strconv.Atoi(arg)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		res, err := answer(refTask, op, req, kind == "nosize")
		if err != nil {
			emit(map[string]any{"id": id, "ok": false, "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
			continue
		}
		switch {
		case version < 2:
			// Protocol 1 (idx@ddf1735f): no model_call_ms, no timing_scope.
			delete(res, "model_call_ms")
			delete(res, "timing_scope")
		case kind == "scope":
			res["timing_scope"] = arg
		case kind == "call-ms":
			v, _ := strconv.ParseFloat(arg, 64)
			res["model_call_ms"] = v
		}
		emit(map[string]any{"id": id, "ok": true, "result": res})
	}
	return 0
}

func readImage(req map[string]any) (string, []byte, int, int, error) {
	path, _ := req["image_path"].(string)
	if path == "" {
		return "", nil, 0, 0, fmt.Errorf("image_path is missing")
	}
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "", nil, 0, 0, err
	}
	cfg, format, err := image.DecodeConfig(strings.NewReader(string(data)))
	if err != nil {
		return "", nil, 0, 0, err
	}
	return "image/" + format, data, cfg.Width, cfg.Height, nil
}

func answer(ref *task.Task, op string, req map[string]any, nosize bool) (map[string]any, error) {
	mime, data, w, h, err := readImage(req)
	if err != nil {
		return nil, err
	}
	cfg, _ := req["config"].(map[string]any)
	start := time.Now()
	switch op {
	case "generate":
		prompt, _ := req["prompt"].(string)
		var text string
		var tokens int
		if ref != nil {
			body := map[string]any{"model": "fake", "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": prompt},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": imaging.DataURL(mime, data)}}}}}}
			if n, ok := cfg["max_new_tokens"]; ok {
				body["max_tokens"] = n
			}
			if t, ok := cfg["temperature"]; ok {
				body["temperature"] = t
			}
			payload, _ := json.Marshal(body)
			r, err := ref.Answer(task.RouteChat, payload)
			if err != nil {
				return nil, err
			}
			text, tokens = r.Text, r.CompletionTokens
		} else {
			text = fmt.Sprintf("%s -> a %dx%d image", prompt, w, h)
			tokens = len(strings.Fields(text)) + 3
			if n, ok := cfg["max_new_tokens"].(float64); ok && int(n) < tokens {
				tokens = int(n)
			}
		}
		// As the worker's steady clock: a call never takes 0 ms (issue 32
		// item 6); microseconds would round a fast fake's call to 0.
		call := float64(time.Since(start).Nanoseconds()) / 1e6
		return map[string]any{"text": text, "completion_tokens": tokens, "setup_ms": 0.0, "prefill_ms": call / 2,
			"decode_ms": call / 2, "model_call_ms": call, "timing_scope": "public_task_call_wall"}, nil
	case "detect":
		if nosize {
			w, h = 0, 0
		}
		d := detections(w, h)
		d["model_call_ms"] = float64(time.Since(start).Nanoseconds()) / 1e6
		d["timing_scope"] = "public_task_call_wall"
		return d, nil
	}
	return nil, fmt.Errorf("unknown operation: %s", op)
}

// detections are two boxes in source pixels, class numbers as a
// COCO-contiguous detector reports them (the second box runs past the
// right edge, as real detectors' boxes may).
func detections(w, h int) map[string]any {
	fw, fh := float64(w), float64(h)
	return map[string]any{
		"scores":  []float64{0.91, 0.42},
		"classes": []int{0, 17},
		"boxes":   []float64{0.1 * fw, 0.2 * fh, 0.5 * fw, 0.6 * fh, 0.5 * fw, 0.5 * fh, 1.02 * fw, 0.95 * fh},
	}
}
