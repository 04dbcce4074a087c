// Command fake-trtmc is a TEST FIXTURE, never shipped or configured as a
// default: one binary that, by the name it is invoked as, plays TRTMC's
// `trtmc`, `trtmc-server` and `pytest` with exactly the formats documented in
// docs/trtmc.md (stdout, stderr timing lines, result.json, the JSONL worker
// protocol v2), and misbehaves on request so tests can show what the
// harness does with each failure.
//
// Environment:
//
//	FAKE_TRTMC_LOG   append each invocation's argv (JSON) to this file
//	FAKE_WORKER      worker scenario: "" | error:<id> | runtime-error:<id> |
//	                 crash:<id> | crash-at:<n-th request> | hang:<id> | garbage |
//	                 textonly | protocol:<n> | wrong-id:<id> | nosize
//	FAKE_TRTMC       trtmc scenario: "" | no-timing | fail:<n-th call>
//	FAKE_PYTEST      pytest scenario: pass | fail | no-metrics | skip | error |
//	                 build | contradict | none | exit5 | touch-bundle | ref
//	FAKE_REFSERVER   path of trtmc-refserver: `trtmc-server BUNDLE ...` serves
//	                 through it and the worker answers with the reference
//	                 Task, so a real run can qualify end to end
//	FAKE_CORPUS      reference corpus for FAKE_PYTEST=ref
//	FAKE_WORKER_LOG  append every request line the worker reads to this file
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
	"strings"
	"syscall"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/ref/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/ref/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/ref/task"
)

func main() {
	logArgv()
	switch filepath.Base(os.Args[0]) {
	case "trtmc-server":
		os.Exit(server(os.Args[1:]))
	case "trtmc":
		os.Exit(trtmc(os.Args[1:]))
	case "pytest":
		os.Exit(pytest(os.Args[1:]))
	case "python3":
		os.Exit(python(os.Args[1:]))
	}
	fmt.Fprintf(os.Stderr, "fake-trtmc: invoked as %q (want trtmc, trtmc-server or pytest)\n", os.Args[0])
	os.Exit(2)
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
	b, _ := json.Marshal(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...))
	f.Write(append(b, '\n'))
}

func flag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func has(args []string, name string) bool {
	for _, a := range args {
		if a == name {
			return true
		}
	}
	return false
}

// --- trtmc-server ----------------------------------------------------------

func server(args []string) int {
	if len(args) > 0 && args[0] == "_serve-worker" {
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: trtmc-server _serve-worker BUNDLE")
			return 2
		}
		return worker(args[1])
	}
	ref := os.Getenv("FAKE_REFSERVER")
	if ref == "" {
		fmt.Fprintln(os.Stderr, "fake trtmc-server: serving needs FAKE_REFSERVER")
		return 2
	}
	// trtmc-server BUNDLE --model-name N --host H --port P --records F: the
	// same shape as trtmc-refserver serve, less the worker timeouts the
	// reference server does not have.
	argv := []string{ref, "serve"}
	for i := 0; i < len(args); i++ {
		if (args[i] == "--startup-timeout" || args[i] == "--request-timeout") && i+1 < len(args) {
			i++
			continue
		}
		argv = append(argv, args[i])
	}
	if err := syscall.Exec(ref, argv, os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "fake trtmc-server:", err)
	}
	return 1
}

func scenario(env string) (kind, arg string) {
	kind, arg, _ = strings.Cut(os.Getenv(env), ":")
	return kind, arg
}

func worker(bundlePath string) int {
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	kind, arg := scenario("FAKE_WORKER")
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
		}
		res, err := answer(refTask, op, req, kind == "nosize")
		if err != nil {
			emit(map[string]any{"id": id, "ok": false, "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
			continue
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
	data, err := os.ReadFile(path)
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
		return map[string]any{"text": text, "completion_tokens": tokens, "setup_ms": 0.0, "prefill_ms": 1.0,
			"decode_ms": 2.0, "model_call_ms": 3.25 + float64(time.Since(start).Microseconds())/1000,
			"timing_scope": "public_task_call_wall"}, nil
	case "detect":
		if nosize {
			w, h = 0, 0
		}
		d := detections(w, h)
		d["model_call_ms"] = 1.75
		d["timing_scope"] = "public_task_call_wall"
		return d, nil
	}
	return nil, fmt.Errorf("unknown operation: %s", op)
}

// detections are two boxes in source pixels, class numbers as a
// COCO-contiguous detector reports them.
func detections(w, h int) map[string]any {
	fw, fh := float64(w), float64(h)
	return map[string]any{
		"scores":  []float64{0.91, 0.42},
		"classes": []int{0, 17},
		"boxes":   []float64{0.1 * fw, 0.2 * fh, 0.5 * fw, 0.6 * fh, 0.5 * fw, 0.5 * fh, 1.02 * fw, 0.95 * fh},
	}
}

// --- trtmc -----------------------------------------------------------------

func trtmc(args []string) int {
	if len(args) == 0 {
		return 2
	}
	kind, arg := scenario("FAKE_TRTMC")
	if kind == "fail" && countCall() == arg {
		fmt.Fprintln(os.Stderr, "Error: failed to load bundle: engine plan is corrupt")
		return 1
	}
	switch args[0] {
	case "version":
		fmt.Println("trtmc 0.0.0-fake")
		fmt.Println("TRT support: no")
		return 0
	case "run":
		if len(args) < 2 || flag(args, "--prompt") == "" || flag(args, "--image") == "" {
			fmt.Fprintln(os.Stderr, "Error: run requires a .bundle artifact file")
			return 1
		}
		data, err := os.ReadFile(flag(args, "--image"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error: failed to load image:", flag(args, "--image"))
			return 1
		}
		cfg, _, err := image.DecodeConfig(strings.NewReader(string(data)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error: failed to load image:", flag(args, "--image"))
			return 1
		}
		text := fmt.Sprintf("%s -> a %dx%d image", flag(args, "--prompt"), cfg.Width, cfg.Height)
		if kind != "no-timing" {
			fmt.Fprintf(os.Stderr, "[trtmc.timing] prefill_ms=%.6f decode_ms=%.6f total_ms=%.6f\n", 1.0, 2.0, 3.0)
			fmt.Fprintf(os.Stderr, "[trtmc.setup_timing] setup_ms=%.6f\n", 812.5)
		}
		fmt.Println(text)
		return 0
	case "detect":
		img := flag(args, "--image")
		data, err := os.ReadFile(img)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error: failed to load image:", img)
			return 1
		}
		cfg, _, err := image.DecodeConfig(strings.NewReader(string(data)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error: failed to load image:", img)
			return 1
		}
		b, _ := json.Marshal(detections(cfg.Width, cfg.Height))
		if out := flag(args, "--output-json"); out != "" {
			if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
				return 1
			}
			fmt.Println("Detections saved:", out)
			return 0
		}
		fmt.Println(string(b))
		return 0
	}
	fmt.Fprintln(os.Stderr, "Error: unknown command", args[0])
	return 1
}

// countCall numbers the trtmc invocations of a test (via FAKE_TRTMC_LOG).
func countCall() string {
	data, _ := os.ReadFile(os.Getenv("FAKE_TRTMC_LOG"))
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, `["trtmc",`) {
			n++
		}
	}
	return fmt.Sprint(n)
}

// --- pytest ----------------------------------------------------------------

type metric struct {
	Value     float64  `json:"value"`
	Threshold *float64 `json:"threshold"`
	Operator  string   `json:"operator"`
	Passed    bool     `json:"passed"`
	Note      string   `json:"note,omitempty"`
}

func f(v float64) *float64 { return &v }

func pytest(args []string) int {
	if has(args, "--version") {
		fmt.Println("pytest 8.3.5")
		return 0
	}
	profile := flag(args, "--e2e-model")
	engines := flag(args, "--engine-dir")
	artifacts := flag(args, "--e2e-artifacts-dir")
	if profile == "" || engines == "" || artifacts == "" {
		fmt.Fprintln(os.Stderr, "ERROR: usage: --e2e-model, --engine-dir and --e2e-artifacts-dir are required")
		return 4
	}
	kind, _ := scenario("FAKE_PYTEST")
	bundles, _ := filepath.Glob(filepath.Join(engines, "*.bundle"))
	if len(bundles) != 1 {
		fmt.Fprintf(os.Stderr, "E   selected E2E found %d bundles in %s\n", len(bundles), engines)
		return 1
	}
	stages := map[string]any{
		"vision_encode": map[string]any{"status": "passed", "message": "", "metrics": map[string]metric{
			"cosine_similarity": {Value: 0.9991, Threshold: f(0.99), Operator: ">=", Passed: true},
			"max_abs_diff":      {Value: 0.012, Threshold: nil, Operator: ">=", Passed: true, Note: "informational"},
		}},
		"full_generation": map[string]any{"status": "passed", "message": "", "metrics": map[string]metric{
			"token_match_rate": {Value: 1.0, Threshold: f(0.9), Operator: ">=", Passed: true},
		}},
	}
	status, failure := "pass", any(nil)
	exit := 0
	switch kind {
	case "fail":
		stages["full_generation"] = map[string]any{"status": "failed", "message": "generated text differs", "metrics": map[string]metric{
			"token_match_rate": {Value: 0.4, Threshold: f(0.9), Operator: ">=", Passed: false},
		}}
		status, failure, exit = "fail", "full_generation", 1
	case "no-metrics":
		stages = map[string]any{"full_generation": map[string]any{"status": "skipped", "message": "no reference", "metrics": map[string]any{}}}
	case "skip":
		status = "skip"
	case "error":
		status, failure, exit = "error", "reference", 1
	case "contradict":
		stages["full_generation"] = map[string]any{"status": "passed", "metrics": map[string]metric{
			"token_match_rate": {Value: 0.4, Threshold: f(0.9), Operator: ">=", Passed: true},
		}}
	case "build":
		os.WriteFile(filepath.Join(engines, profile+"-rebuilt.bundle"), []byte("rebuilt"), 0o644)
	case "touch-bundle":
		target, _ := filepath.EvalSymlinks(bundles[0])
		fh, err := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			fh.Write([]byte("x"))
			fh.Close()
		}
	case "none":
		fmt.Println("1 passed in 0.01s")
		return 0
	case "exit5":
		fmt.Println("no tests ran in 0.01s")
		return 5
	case "ref":
		st, ok := refStages(bundles[0])
		if !ok {
			return 1
		}
		stages = st
		if st["reference_check"].(map[string]any)["status"] != "passed" {
			status, failure, exit = "fail", "reference_check", 1
		}
	}
	result := map[string]any{"case_name": profile, "status": status, "failure_type": failure, "oracle_level": "L1_external_reference",
		"timestamp": "2026-11-02T10:00:00Z", "stages": stages, "commands": []any{}}
	dir := filepath.Join(artifacts, profile)
	os.MkdirAll(dir, 0o755)
	b, _ := json.MarshalIndent(result, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		return 3
	}
	fmt.Printf("tests/e2e/models/x/test_x_e2e.py::test_e2e[%s] %s\n", profile, map[int]string{0: "PASSED", 1: "FAILED"}[exit])
	return exit
}

// refStages runs the reference correctness check on the bundle and reports
// its gates the way TRTMC's result.json holds metrics.
func refStages(bundlePath string) (map[string]any, bool) {
	ref, corpus := os.Getenv("FAKE_REFSERVER"), os.Getenv("FAKE_CORPUS")
	tmp, err := os.MkdirTemp("", "fake-pytest-*")
	if err != nil {
		return nil, false
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "check.json")
	cmd := exec.Command(ref, "check", "--bundle", bundlePath, "--corpus", corpus, "--out", out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	_ = cmd.Run()
	data, err := os.ReadFile(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "E   reference check wrote no result:", err)
		return nil, false
	}
	var chk struct {
		Gates []struct {
			Name      string  `json:"name"`
			Value     float64 `json:"value"`
			Op        string  `json:"op"`
			Threshold float64 `json:"threshold"`
			Passed    bool    `json:"passed"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(data, &chk); err != nil {
		return nil, false
	}
	metrics := map[string]metric{}
	stage := "passed"
	for _, g := range chk.Gates {
		metrics[g.Name] = metric{Value: g.Value, Threshold: f(g.Threshold), Operator: g.Op, Passed: g.Passed}
		if !g.Passed {
			stage = "failed"
		}
	}
	return map[string]any{"reference_check": map[string]any{"status": stage, "metrics": metrics}}, true
}

// --- python3 (the bundle build) ---------------------------------------------

// python plays `python3 -m tensorrt_model_connect.__main__ build HF -o OUT ...`.
func python(args []string) int {
	if len(args) == 2 && args[0] == "-c" && strings.Contains(args[1], "importlib.metadata") {
		fmt.Println("tensorrt-model-connect 0.0.0-fake")
		return 0
	}
	if len(args) < 4 || args[0] != "-m" || args[1] != "tensorrt_model_connect.__main__" || args[2] != "build" {
		fmt.Fprintln(os.Stderr, "fake python3: only the bundle build is played")
		return 2
	}
	out := flag(args, "-o")
	if out == "" {
		return 2
	}
	if os.Getenv("FAKE_BUILD") == "fail" {
		fmt.Fprintln(os.Stderr, "RuntimeError: CUDA out of memory while building engine")
		return 1
	}
	b, _ := json.Marshal(args)
	return map[bool]int{true: 0, false: 1}[os.WriteFile(out, b, 0o644) == nil]
}
