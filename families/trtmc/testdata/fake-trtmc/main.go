// Command fake-trtmc is a TEST FIXTURE, never shipped or configured as a
// default: one binary that, by the name it is invoked as, plays TRTMC's
// `trtmc` CLI (src/cli/args.cpp, src/cli/main.cpp at e9132e79: stdout and
// the [trtmc.timing] stderr line; `trtmc detect --output-json`,
// families/yolo11/tests/test_e2e.py idx@66af49e4), `pytest` (TRTMC's e2e
// cases: result.json as tests/e2e_harness/artifact_sink.py and
// result_schema.py at e9132e79 write it) and the TRTMC environment's
// `python3` (the bundle build of tests/e2e_harness/orchestrator.py, the
// package version, and where `import tensorrt_model_connect` resolves), and
// misbehaves on request so tests can show what the harness does with each
// failure. The two `trtmc-server` programs are separate fixtures, as they
// are separate programs in TRTMC: fake-trtmc-server (the pip console
// script, the Python control plane) and fake-trtmc-native (the native
// binary, whose `_serve-worker` is the JSONL worker).
//
// Environment:
//
//	FAKE_TRTMC_LOG   append each invocation's argv (JSON) to this file
//	FAKE_TRTMC       trtmc scenario: "" | no-timing | fail:<n-th call> |
//	                 timing:<prefill>,<decode>,<total>
//	FAKE_PYTEST      pytest scenario: pass | fail | no-metrics | skip | error |
//	                 build | contradict | none | exit5 | touch-bundle | ref
//	FAKE_REFSERVER   path of trtmc-refserver (FAKE_PYTEST=ref runs its check)
//	FAKE_CORPUS      reference corpus for FAKE_PYTEST=ref
//	FAKE_TRTMC_SITE_PACKAGES  the site-packages directory where the fake
//	                 python3 finds tensorrt_model_connect (unset: it is not
//	                 installed)
//	FAKE_PYTHON_VERSION  what the fake python3 reports (default 3.12.3)
//	FAKE_QUALIFY     trtmc-qualify scenario (see qualify)
//
// It also plays `trtmc-qualify` (the newer layout's family-owned
// qualification CLI) and the newer layout's families/<f>/tests/test_e2e.py
// when pytest is given that file.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var started = time.Now()

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if name == "fake-trtmc" && len(args) > 0 {
		// Installed as a wrapper script: `fake-trtmc ROLE ARGS...`.
		name, args = args[0], args[1:]
	}
	logArgv(name, args)
	switch name {
	case "trtmc":
		os.Exit(trtmc(args))
	case "pytest":
		os.Exit(pytest(args))
	case "python3":
		os.Exit(python(args))
	case "trtmc-qualify":
		os.Exit(qualify(args))
	}
	fmt.Fprintf(os.Stderr, "fake-trtmc: invoked as %q (want trtmc, pytest or python3)\n", os.Args[0])
	os.Exit(2)
}

func logArgv(name string, args []string) {
	p := os.Getenv("FAKE_TRTMC_LOG")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(append([]string{name}, args...))
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

func scenario(env string) (kind, arg string) {
	kind, arg, _ = strings.Cut(os.Getenv(env), ":")
	return kind, arg
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
		// Times of this very process, so they are possible: prefill and
		// decode inside it, total their sum (as print_text_timing prints).
		call := float64(time.Since(started).Microseconds()) / 1000
		prefill, decode := math.Round(call*250)/1000, math.Round(call*500)/1000
		total := prefill + decode
		if kind == "timing" {
			fmt.Sscanf(arg, "%g,%g,%g", &prefill, &decode, &total)
		}
		if kind != "no-timing" {
			fmt.Fprintf(os.Stderr, "[trtmc.timing] prefill_ms=%.6f decode_ms=%.6f total_ms=%.6f\n", prefill, decode, total)
			fmt.Fprintf(os.Stderr, "[trtmc.setup_timing] setup_ms=%.6f\n", 0.0)
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
	if len(args) > 0 && strings.HasPrefix(args[0], "families/") && strings.HasSuffix(args[0], "/tests/test_e2e.py") {
		return newerE2E(args)
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
	case "other-case":
		profile = "internvl3-2b"
	case "stage-timeout":
		stages["full_generation"].(map[string]any)["status"] = "timeout"
	case "failure-type":
		failure = "full_generation"
	case "unflagged":
		stages["full_generation"].(map[string]any)["metrics"].(map[string]metric)["answer_nonempty"] = metric{Value: 0, Operator: ">=", Passed: false}
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
	cases, known := manifestTestcases(profile)
	if !known {
		fmt.Fprintf(os.Stderr, "ERROR: --e2e-model %s: no manifest of this checkout names it\n", profile)
		return 4
	}
	for _, c := range cases {
		result := map[string]any{"case_name": c, "status": status, "failure_type": failure, "oracle_level": "L1_external_reference",
			"timestamp": "2026-11-02T10:00:00Z", "stages": stages, "commands": []any{}}
		dir := filepath.Join(artifacts, c)
		os.MkdirAll(dir, 0o755)
		b, _ := json.MarshalIndent(result, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
			return 3
		}
		fmt.Printf("tests/e2e/models/x/test_x_e2e.py::test_e2e[%s] %s\n", c, map[int]string{0: "PASSED", 1: "FAILED"}[exit])
	}
	return exit
}

// manifestTestcases are the testcases of the profile's manifest in the
// checkout (the working directory), as TRTMC's e2e collection selects them
// for --e2e-model (one result.json per testcase, artifact_sink.py): the
// older layout's tests/e2e/models/<f>/manifests, or the newer
// families/<f>/tests/manifests. A directory that holds no manifest at all
// (not a checkout: the adapter's own tests) plays one case named as the
// profile; a checkout whose manifests do not name the profile is a usage
// error.
func manifestTestcases(profile string) ([]string, bool) {
	var files []string
	for _, g := range []string{"tests/e2e/models/*/manifests/*.json", "families/*/tests/manifests/*.json"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) == 0 {
		return []string{profile}, true
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var m struct {
			Name      string `json:"name"`
			Testcases []struct {
				Name string `json:"name"`
			} `json:"testcases"`
		}
		if json.Unmarshal(data, &m) != nil || m.Name != profile {
			continue
		}
		var out []string
		for _, tc := range m.Testcases {
			out = append(out, tc.Name)
		}
		return out, len(out) > 0
	}
	return nil, false
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

// pythonC plays the few `python3 [-I] -c CODE` the harness runs: the
// package version (importlib.metadata), and where the TRTMC interpreter
// imports tensorrt_model_connect from with its own version (the code prints
// one JSON line {"file", "version"}, or fails with ModuleNotFoundError as
// Python does when the package is not installed).
func pythonC(code string) int {
	sp := os.Getenv("FAKE_TRTMC_SITE_PACKAGES")
	pkg := filepath.Join(sp, "tensorrt_model_connect", "__init__.py")
	_, err := os.Stat(pkg)
	installed := sp != "" && err == nil
	ver := os.Getenv("FAKE_PYTHON_VERSION")
	if ver == "" {
		ver = "3.12.3"
	}
	const notFound = "ModuleNotFoundError: No module named 'tensorrt_model_connect'"
	switch {
	case strings.Contains(code, "tensorrt_model_connect") && strings.Contains(code, "__file__"):
		// The probe catches the import error and says so (as Python does).
		var v [3]int
		fmt.Sscanf(ver, "%d.%d.%d", &v[0], &v[1], &v[2])
		info := map[string]any{"version": v, "executable": os.Args[0]}
		if installed {
			info["file"] = pkg
		} else {
			info["error"] = notFound
		}
		b, _ := json.Marshal(info)
		fmt.Println(string(b))
	case !installed && (strings.Contains(code, "tensorrt_model_connect") || strings.Contains(code, "tensorrt-model-connect")):
		fmt.Fprintln(os.Stderr, notFound)
		return 1
	case strings.Contains(code, "importlib.metadata"):
		fmt.Println("tensorrt-model-connect 0.0.0-fake")
	default:
		fmt.Fprintln(os.Stderr, "fake python3: this -c code is not played")
		return 2
	}
	return 0
}

// newerE2E plays the newer layout's families/<f>/tests/test_e2e.py
// (idx@9777fef7): it asserts TRTMC_BINARY, TRTMC_RUNTIME_ROOT and
// TRTMC_<FAMILY>_MODEL_DIR exist, builds its own bundle in its tmp_path
// (under --basetemp), asserts its thresholds and records nothing.
// FAKE_PYTEST=same-bundle makes the bundle it builds a byte copy of
// FAKE_E2E_BUNDLE (a deterministic build); FAKE_PYTEST=fail fails.
func newerE2E(args []string) int {
	family := strings.Split(args[0], "/")[1]
	profile, base := flag(args, "--e2e-model"), flag(args, "--basetemp")
	for _, k := range []string{"TRTMC_BINARY", "TRTMC_RUNTIME_ROOT", "TRTMC_" + strings.ToUpper(family) + "_MODEL_DIR"} {
		if os.Getenv(k) == "" {
			fmt.Printf("E   AssertionError: selected %s E2E requires %s\n", family, k)
			return 1
		}
	}
	if base == "" {
		base = os.TempDir()
	}
	if code, done := prebuiltE2E(args[0], profile); done {
		return code
	}
	dir := filepath.Join(base, "test_official_checkpoint_e2e_"+profile+"_0")
	os.MkdirAll(dir, 0o755)
	data := []byte("a bundle built by the test")
	kind, _ := scenario("FAKE_PYTEST")
	if kind == "same-bundle" {
		data, _ = os.ReadFile(os.Getenv("FAKE_E2E_BUNDLE"))
	}
	os.WriteFile(filepath.Join(dir, profile+".bundle"), data, 0o644)
	if kind == "fail" {
		fmt.Println("E   assert similarity >= float(thresholds[\"semantic_similarity\"])")
		return 1
	}
	fmt.Printf("%s::test_official_checkpoint_e2e[%s] PASSED\n", args[0], profile)
	return 0
}

// prebuiltE2E plays the newer text families' prebuilt validation
// (families/gpt2/tests/test_prebuilt_validation.py idx@6aa3968c,
// _validation_revision and _validation_bundle): when the family's tests
// read TRTMC_E2E_BUNDLE (the checkout's families/<f>/tests/*.py mention
// it) and it is set, TRTMC_E2E_PROFILE must name the manifest and
// TRTMC_E2E_CHECKPOINT_REVISION be its exact revision (the manifest's
// hf_revision, when it pins one), and the test runs on that bundle
// without building its own. done is false when the test builds its own.
func prebuiltE2E(test, profile string) (code int, done bool) {
	bundle := os.Getenv("TRTMC_E2E_BUNDLE")
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(test), "*.py"))
	accepts := false
	for _, f := range files {
		data, _ := os.ReadFile(f)
		accepts = accepts || strings.Contains(string(data), "TRTMC_E2E_BUNDLE")
	}
	if !accepts || bundle == "" {
		return 0, false
	}
	fail := func(msg string) (int, bool) {
		fmt.Println("E   AssertionError: " + msg)
		return 1, true
	}
	if os.Getenv("TRTMC_E2E_PROFILE") != profile {
		return fail("prebuilt validation requires TRTMC_E2E_PROFILE naming the matching manifest")
	}
	rev := os.Getenv("TRTMC_E2E_CHECKPOINT_REVISION")
	if rev == "" {
		return fail("prebuilt validation requires the exact checkpoint revision")
	}
	if pinned := manifestRevision(profile); pinned != "" && pinned != rev {
		return fail("TRTMC_E2E_CHECKPOINT_REVISION differs from the manifest's hf_revision")
	}
	if _, err := os.Stat(bundle); err != nil {
		return fail("prebuilt bundle " + bundle + " does not exist")
	}
	fmt.Printf("%s::test_official_checkpoint_e2e[%s] PASSED\n", test, profile)
	return 0, true
}

// manifestRevision is the hf_revision of the profile's newer-layout
// manifest in the checkout ("" when none pins one).
func manifestRevision(profile string) string {
	files, _ := filepath.Glob("families/*/tests/manifests/*.json")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		var m struct {
			Name       string `json:"name"`
			HFRevision string `json:"hf_revision"`
		}
		if json.Unmarshal(data, &m) == nil && m.Name == profile {
			return m.HFRevision
		}
	}
	return ""
}

// qualify plays `trtmc-qualify run --kind accuracy --model P --environment
// E -o DIR` (apps/benchmark/trtmc_benchmark/qualification_cli.py
// idx@2969ba82), writing DIR/report.json as qualification.py
// generate_report (idx@ce7a1333) does: schema_version, kind, status,
// summary, items (one per suite case, each with model, suite_id, case_id,
// gate_policy, execution, verdict, details). FAKE_QUALIFY: "" (pass, with
// details.metrics gates and no bundle named) | bundle (details.bundle_sha256
// of FAKE_QUALIFY_BUNDLE) | other-model | fail.
func qualify(args []string) int {
	if len(args) == 0 || args[0] != "run" || flag(args, "--kind") != "accuracy" || flag(args, "-o") == "" {
		fmt.Fprintln(os.Stderr, "error: fake trtmc-qualify plays only run --kind accuracy -o DIR")
		return 2
	}
	if flag(args, "--environment") == "" {
		fmt.Fprintln(os.Stderr, "error: run requires --environment or --run-config")
		return 2
	}
	out := flag(args, "-o")
	if _, err := os.Stat(out); err == nil {
		fmt.Fprintf(os.Stderr, "error: output directory already exists: %s\n", out)
		return 2
	}
	kind, _ := scenario("FAKE_QUALIFY")
	model := flag(args, "--model")
	details := map[string]any{"metrics": map[string]any{
		"answer_accuracy": map[string]any{"value": 0.97, "threshold": 0.9, "operator": ">=", "passed": true},
		"samples":         55,
	}}
	verdict, status := "pass", "pass"
	switch kind {
	case "bundle":
		data, _ := os.ReadFile(os.Getenv("FAKE_QUALIFY_BUNDLE"))
		sum := sha256.Sum256(data)
		details["bundle_sha256"] = hex.EncodeToString(sum[:])
	case "other-model":
		model = "internvl3-2b"
	case "fail":
		details["metrics"].(map[string]any)["answer_accuracy"] = map[string]any{"value": 0.5, "threshold": 0.9, "operator": ">=", "passed": false}
		verdict, status = "fail", "fail"
	}
	if kind == "fail" || kind == "other-model" {
		data, _ := os.ReadFile(os.Getenv("FAKE_QUALIFY_BUNDLE"))
		sum := sha256.Sum256(data)
		details["bundle_sha256"] = hex.EncodeToString(sum[:])
	}
	report := map[string]any{"schema_version": "trtmc.qualification-report/v1", "plan_id": "p", "kind": "accuracy", "status": status,
		"summary": map[string]any{"planned": 1, "results": 1},
		"items": []any{map[string]any{"schema_version": "trtmc.qualification-result/v1", "model": model, "family": "qwen_vl",
			"kind": "accuracy", "suite_id": "vqa", "case_id": "public-vqa-100", "gate_policy": "blocking",
			"execution": "completed", "verdict": verdict, "details": details, "artifacts": []any{}}}}
	os.MkdirAll(out, 0o755)
	b, _ := json.MarshalIndent(report, "", "  ")
	os.WriteFile(filepath.Join(out, "report.json"), b, 0o644)
	fmt.Printf("%s: 1 planned, 1 result(s)\n", status)
	if status != "pass" {
		return 1
	}
	return 0
}

// --- python3 (the bundle build) ---------------------------------------------

// python plays `python3 -m tensorrt_model_connect.__main__ build HF -o OUT ...`.
func python(args []string) int {
	if len(args) >= 2 && args[len(args)-2] == "-c" {
		return pythonC(args[len(args)-1])
	}
	if i := index(args, "-m"); i >= 0 && i+1 < len(args) && args[i+1] == "trtmc_server" {
		return controlPlane(args[:i], args[i+2:])
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

func index(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// controlPlane plays `python3 [-I|-P] -m trtmc_server ARGS`: the
// trtmc_server package is imported from PYTHONPATH (ignored under -I, as
// Python does) or the interpreter's site-packages, and its __main__ runs
// the control plane (testdata/fake-trtmc-server, built beside this
// program), which then looks for the wheel's runtime beside the directory
// it was imported from (cli.py packaged_runtime_root).
func controlPlane(flags, args []string) int {
	var path []string
	if index(flags, "-I") < 0 && index(flags, "-E") < 0 {
		path = filepath.SplitList(os.Getenv("PYTHONPATH"))
	}
	if sp := os.Getenv("FAKE_TRTMC_SITE_PACKAGES"); sp != "" {
		path = append(path, sp)
	}
	parent := ""
	for _, d := range path {
		if _, err := os.Stat(filepath.Join(d, "trtmc_server", "__main__.py")); err == nil {
			parent = d
			break
		}
	}
	if parent == "" {
		fmt.Fprintf(os.Stderr, "%s: No module named trtmc_server\n", os.Args[0])
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	server := filepath.Join(filepath.Dir(self), "fake-trtmc-server")
	env := append(os.Environ(), "FAKE_TRTMC_SERVER_PKG_PARENT="+parent)
	err = syscall.Exec(server, append([]string{"trtmc-server"}, args...), env)
	fmt.Fprintln(os.Stderr, "fake python3:", err)
	return 1
}
