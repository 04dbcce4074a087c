//go:build integration

package main

// End-to-end runs of a TRTMC-family profile (test tier iv): the real
// bin/trtmc-qual and the real AIPerf qualify a vision-language profile of
// the shipped families/trtmc.yaml family qwen_vl, unchanged, through a fake
// TRTMC as strict as TRTMC (families/trtmc/trtmctest, each fixture citing
// its source): `trtmc-server BUNDLE --model-name ... --records ...
// --max-body-bytes ...` is the pip console script (the Python control
// plane: exactly the public flags, 413 above its body limit, the
// X-Request-ID policy, public records with model_call_ms), which starts the
// native binary installed beside tensorrt_model_connect as its worker;
// `trtmc-qual adapter native` finds and starts that same native binary
// (never the console script); `trtmc-qual adapter correctness -- pytest
// ...` runs the fake e2e case. The worker answers with the reference Task
// and the e2e case with the reference check. The corpus holds an image that
// is over 1 MiB once encoded. Then bad input, one kind at a time.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

type trtmcRun struct {
	dir, bundle, corpus, refCorpus, argvLog, out string
	inst                                         *trtmctest.Install
	// repo is TRTMC_REPO, a git repository in one of TRTMC's layouts
	// (trtmcCheckout); src, when set, is a source build in it that
	// replaces the wheel (inst) on PATH.
	repo string
	src  *trtmctest.SourceBuild
	// tokenizerPin and bundlePath edit the inventory entry.
	tokenizerPin, bundlePath string
	env                      []string
	// gpus is the run's --gpus: "0" on the fake H200 (the default), "cpu"
	// for a host without a GPU.
	gpus string
	// families is the family configuration (default the shipped one).
	families string
	output   string
	code     int
}

// setupTRTMCRun prepares a reference bundle and corpus for the profile.
func setupTRTMCRun(t *testing.T, h harness) *trtmcRun {
	t.Helper()
	d := t.TempDir()
	r := &trtmcRun{dir: d, bundle: filepath.Join(d, "bundles", "qwen3-vl-2b.bundle"), corpus: filepath.Join(d, "corpora", "vlm"),
		refCorpus: filepath.Join(d, "corpora", "ref-vlm"), argvLog: filepath.Join(d, "argv.log"), out: filepath.Join(d, "out"),
		inst: trtmctest.New(t)}
	r.bundlePath = r.bundle
	r.gpus = "0"
	require.NoError(t, os.MkdirAll(filepath.Dir(r.bundle), 0o755))
	for _, argv := range [][]string{
		{"make-bundle", "--family", "ref-vlm", "--precision", "fp32", "--out", r.bundle},
		{"corpus", "--family", "ref-vlm", "--out", r.refCorpus, "--count", "12"},
	} {
		out, err := exec.Command(h.refserver, argv...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	writeTRTMCCorpus(t, r.refCorpus, r.corpus)
	r.repo = trtmcCheckout(t, filepath.Join(d, "TensorRT-Model-Connect"), layoutOlder)
	return r
}

// TRTMC's two layouts of a checkout (docs/trtmc.md "Both layouts").
const (
	layoutOlder = "older" // tests/e2e/models/<f>: MODEL.toml, manifests, test_<f>_e2e.py
	layoutNewer = "newer" // families/<f>/tests: manifests, qualification/<profile>.accuracy.yaml
)

// qwen3VL2BCases are the testcases of the fixture's qwen3-vl-2b manifest:
// the correctness adapter looks them up at the checkout's HEAD (through
// git, as reconcile reads) and requires a result for each.
var qwen3VL2BCases = []string{"qwen3-vl-2b-chart", "qwen3-vl-2b-scene"}

// trtmcCheckout builds a TRTMC checkout as a git repository (one commit;
// build/ ignored, where a source build goes) holding the qwen_vl family's
// qwen3-vl-2b manifest in the layout given, and its correctness case: the
// older layout's e2e test, or the newer layout's qualification profile.
// Synthetic files carrying the facts the harness reads, not TRTMC's.
func trtmcCheckout(t *testing.T, dir, layout string) string {
	t.Helper()
	tcs := make([]map[string]any, len(qwen3VL2BCases))
	for i, c := range qwen3VL2BCases {
		tcs[i] = map[string]any{"name": c, "prompt": "Describe the image.", "test_image": "data/test_img.jpeg"}
	}
	m := map[string]any{"name": "qwen3-vl-2b", "hf_id": "Qwen/Qwen3-VL-2B-Instruct", "bundle": "qwen3-vl-2b.bundle", "family": "qwen_vl",
		"precision": "bf16", "testcases": tcs}
	files := map[string]string{".gitignore": "build/\n"}
	switch layout {
	case layoutOlder:
		m["task_strategy"], m["runtime_strategy"] = "vision_language_generation", "qwen_vl_vision_language"
		files["tests/e2e/models/qwen_vl/MODEL.toml"] = "id = \"qwen_vl\"\nplugin = \"qwen_vl\"\ntest_manifests = [\"manifests/qwen3-vl-2b.json\"]\n"
		files["tests/e2e/models/qwen_vl/test_qwen_vl_e2e.py"] = "# the e2e case (played by the fake pytest)\n"
		files["tests/e2e/models/qwen_vl/manifests/qwen3-vl-2b.json"] = ""
	case layoutNewer:
		m["task"], m["tensor_parallel_size"], m["max_sequence_length"] = "vision_language_generation", 1, 4096
		files["families/qwen_vl/tests/manifests/qwen3-vl-2b.json"] = ""
		files["families/qwen_vl/tests/qualification/qwen3-vl-2b.accuracy.yaml"] = "schema_version: trtmc.qualification/v1\nmodel: qwen3-vl-2b\nkind: accuracy\n"
		files["families/qwen_vl/tests/test_e2e.py"] = "# the newer e2e test (played by the fake pytest)\n"
	}
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	for p, body := range files {
		if strings.HasSuffix(p, "qwen3-vl-2b.json") {
			body = string(data) + "\n"
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "qwen_vl in the " + layout + " layout"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

// writeTRTMCCorpus writes the corpus a release engineer provides
// (trtmc-qual/corpus/v1): the reference images with their questions, and
// one original-size photo-like image (noise, incompressible) that is over
// 1 MiB once encoded as a data URL: trtmc-server's default body limit
// would answer it 413.
func writeTRTMCCorpus(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	var ref struct {
		Entries []map[string]any `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(from, "corpus.json"))), &ref))
	var entries []map[string]any
	for _, e := range ref.Entries {
		f := e["file"].(string)
		require.NoError(t, os.WriteFile(filepath.Join(to, f), []byte(readFile(t, filepath.Join(from, f))), 0o644))
		entries = append(entries, map[string]any{"id": e["id"], "file": f, "mime": e["mime"], "width": e["width"],
			"height": e["height"], "question": e["question"]})
	}
	img := image.NewNRGBA(image.Rect(0, 0, 640, 480))
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.Greater(t, base64.StdEncoding.EncodedLen(buf.Len()), 1<<20, "the photo is over 1 MiB once encoded")
	require.NoError(t, os.WriteFile(filepath.Join(to, "photo.png"), buf.Bytes(), 0o644))
	entries = append(entries, map[string]any{"id": "photo", "file": "photo.png", "mime": "image/png", "width": 640, "height": 480,
		"question": "How many shapes are in the image?"})
	b, err := json.Marshal(map[string]any{"schema": "trtmc-qual/corpus/v1", "source": "trtmc-refserver corpus and one noise photo", "entries": entries})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(to, "corpus.json"), b, 0o644))
}

func (r *trtmcRun) run(t *testing.T, h harness) verdict.Result {
	t.Helper()
	sum, err := fileio.FileSHA256(context.Background(), r.bundle)
	require.NoError(t, err)
	tok := ""
	if r.tokenizerPin != "" {
		tok = ", sha256: " + r.tokenizerPin
	}
	inv := `schema: trtmc-qual/inventory/v1
groups:
  vlm:
    workload:
      endpoint_type: chat
      warmup: 5
      measured: 50
      concurrency: 1
      seed: 42
      request_timeout_s: 60
      dataset: {corpus: ` + r.corpus + `}
      generation: {max_tokens: 32, temperature: 0}
    profiles:
      - id: qwen3-vl-2b
        checkpoint: Qwen/Qwen3-VL-2B-Instruct
        family: qwen_vl
        task: vision_language_generation
        kind: normal
        precision: bf16
        parallelism: {tp: 1}
        bundle: {path: ` + r.bundlePath + `, sha256: ` + sum + `}
        tokenizer: {path: ` + h.tokenizer + tok + `}
        controls: [max_tokens, temperature]
        hardware: [h200]
        status: planned
`
	invPath := filepath.Join(r.dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(invPath, []byte(inv), 0o644))
	// The TRTMC families need a GPU: the fake nvidia-smi plays one H200,
	// on which the served model (trtmc-refserver serve, behind the fake
	// trtmc-server) holds 2 GiB while it lives.
	py, err := exec.LookPath("python3")
	require.NoError(t, err)
	cmd := exec.Command(h.qual, "run", "--group", "vlm", "--out", r.out, "--gpus", r.gpus,
		"--inventory", invPath, "--families", r.familiesFile(h),
		"--aiperf", h.aiperf, "--format", "tsv")
	cmd.Dir = r.dir
	// The wheel's programs first on PATH, or a source build's.
	first, installEnv := r.inst.Bin, r.inst.Env()
	if r.src != nil {
		first, installEnv = r.src.Path(), r.src.Env()
	}
	cmd.Env = append(cleanEnv(),
		"PATH="+first+string(os.PathListSeparator)+filepath.Join(h.root, "qual", "testdata", "bin")+
			string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_NVIDIA_SMI_PYTHON="+py, "FAKE_NVIDIA_SMI_FIXTURE=h200x1", "FAKE_NVIDIA_SMI_SESSION="+r.dir,
		// The native worker the control plane starts holds the GPU.
		"FAKE_GPU_HOLD=2048:_serve-worker",
		// One native worker at a time on the node: the server's, then
		// the native replay's (fake-trtmc-native fails on an overlap).
		"FAKE_TRTMC_EXCLUSIVE="+filepath.Join(r.dir, "gpu.lock"),
		"FAKE_REFSERVER="+h.refserver, "FAKE_PYTEST=ref", "FAKE_CORPUS="+r.refCorpus, "FAKE_TRTMC_LOG="+r.argvLog,
		"TRTMC_REPO="+r.repo, "TRTMC_BUNDLE_DIR=", "TRTMC_WORKER_BINARY=", "TRTMC_PYTHON=")
	cmd.Env = append(cmd.Env, installEnv...)
	cmd.Env = append(cmd.Env, r.env...)
	timer := time.AfterFunc(8*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	r.output = string(out)
	r.code = cmd.ProcessState.ExitCode()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, r.output)
	}
	data, err := os.ReadFile(filepath.Join(r.out, "vlm", "qwen3-vl-2b", reports.ResultFile))
	require.NoError(t, err, r.output)
	var res verdict.Result
	require.NoError(t, json.Unmarshal(data, &res))
	return res
}

func (r *trtmcRun) familiesFile(h harness) string {
	if r.families != "" {
		return r.families
	}
	return filepath.Join(h.root, "families", "trtmc.yaml")
}

// editFamilies writes a copy of the shipped families/trtmc.yaml with old
// replaced by new (every occurrence) and runs with it.
func (r *trtmcRun) editFamilies(t *testing.T, h harness, old, new string) {
	t.Helper()
	data := readFile(t, filepath.Join(h.root, "families", "trtmc.yaml"))
	require.Contains(t, data, old)
	r.families = filepath.Join(r.dir, "families.yaml")
	require.NoError(t, os.WriteFile(r.families, []byte(strings.ReplaceAll(data, old, new)), 0o644))
}

func TestTRTMCFamilyEndToEnd(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	r := tr.run(t, h)
	require.Equal(t, 0, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v\n%s", r.Reasons, tr.output)
	assert.Equal(t, 50, r.RequestsByPhase[verdict.PhaseMeasured].Matched)
	assert.Equal(t, 5, r.RequestsByPhase[verdict.PhaseWarmup].Matched)

	// The family's own programs, started with the family's own argv: the
	// console script once (the server), the native binary twice (the
	// control plane's worker, then the adapter's), the e2e case once; the
	// console script is never asked for _serve-worker.
	byProgram := map[string][][]string{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, tr.argvLog)), "\n") {
		var a []string
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		byProgram[a[0]] = append(byProgram[a[0]], a)
	}
	require.Len(t, byProgram["trtmc-server"], 1, "one server: %v", byProgram)
	server := byProgram["trtmc-server"][0]
	assert.Equal(t, []string{"trtmc-server", tr.bundle, "--model-name", "qwen3-vl-2b"}, server[:4])
	assert.Contains(t, server, "--records")
	assert.Equal(t, "15728640", server[slices.Index(server, "--max-body-bytes")+1], "the body limit the photo needs")
	assert.NotContains(t, server, "_serve-worker")
	require.Len(t, byProgram["pytest"], 1)
	assert.Equal(t, []string{"pytest", "tests/e2e/models/qwen_vl/test_qwen_vl_e2e.py", "--e2e-model", "qwen3-vl-2b"}, byProgram["pytest"][0][:4])
	worker := []string{"trtmc-server(native)", "_serve-worker", tr.bundle, "--runtime-root", tr.inst.RuntimeRoot}
	assert.Equal(t, [][]string{worker, worker}, byProgram["trtmc-server(native)"])

	// Correctness: TRTMC's result.json of every testcase of the profile's
	// manifest, which the adapter read at the checkout's HEAD (a git
	// repository), converted: every gate with its value, operator,
	// threshold and outcome, on the served bundle.
	require.NotNil(t, r.Correctness)
	assert.True(t, r.Correctness.Passed)
	require.Len(t, r.Correctness.Gates, len(qwen3VL2BCases))
	for i, g := range r.Correctness.Gates {
		assert.Equal(t, qwen3VL2BCases[i]+"/reference_check/accuracy", g.Name)
		assert.Equal(t, ">=", g.Op)
		assert.Equal(t, 0.9, g.Threshold)
		assert.True(t, g.Passed)
	}
	assert.NotContains(t, readFile(t, filepath.Join(tr.out, "vlm", "qwen3-vl-2b", "correctness.log")), "cannot be read",
		"the manifest's testcases were read, not guessed")

	// Native: the worker path, the native binary beside the package, by
	// path and sha256; output size the Task's own token counts; the images
	// sent and the preprocessing.
	require.NotNil(t, r.Provenance.Native)
	assert.Equal(t, "worker", r.Provenance.Native.Path)
	assert.Equal(t, "public_task_call_wall", r.Provenance.Native.TimingScope)
	assert.True(t, r.Provenance.Native.TokenCounts)
	assert.Equal(t, 2, r.Provenance.Native.WorkerProtocol)
	assert.Equal(t, tr.inst.Native, r.Provenance.Native.WorkerBinary)
	assert.Equal(t, "package", r.Provenance.Native.WorkerBinarySource)
	nativeSum, err := fileio.FileSHA256(context.Background(), tr.inst.Native)
	require.NoError(t, err)
	assert.Equal(t, nativeSum, r.Provenance.Native.WorkerBinarySHA256)
	require.NotNil(t, r.OutputTokens)
	assert.Positive(t, *r.OutputTokens)
	// Task time is the served request's own: the server's records'
	// model_call_ms (public_task_call_wall), over all 50; the native replay
	// timed the same Task and is compared with it.
	assert.Equal(t, "server", r.LatencyMS.TaskSource)
	assert.Equal(t, "public_task_call_wall", r.LatencyMS.TaskScope)
	assert.Equal(t, 50, r.LatencyMS.Task.Count)
	assert.NotNil(t, r.LatencyMS.Task.P50)
	assert.Equal(t, "server", r.Answers.TaskTime)
	assert.Equal(t, "qwen3-vl-2b", r.Answers.ServedModel)
	require.NotNil(t, r.LatencyMS.TaskAgreement)
	assert.Equal(t, 50, r.LatencyMS.TaskAgreement.Compared)
	assert.Equal(t, "complete", r.Answers.FinishReasonNull)
	n := 0
	for _, s := range r.Provenance.DatasetImageSizes {
		n += s.Count
	}
	assert.Equal(t, 55, n)
	assert.Contains(t, r.Provenance.DatasetImageSizes, verdict.ImageSize{Width: 640, Height: 480, Count: 4},
		"the photo over 1 MiB encoded was sent (and answered) 4 times")
	// The preflight's size of a request is the size of the body AIPerf
	// 0.13.0 really posted (native_requests.jsonl holds those bodies).
	entries, err := aiperf.LoadCorpus(tr.corpus)
	require.NoError(t, err)
	want := map[int]bool{}
	for _, e := range entries {
		b, err := aiperf.RequestBody(endpoint.Chat, e, "qwen3-vl-2b", map[string]any{"max_tokens": 32, "temperature": 0})
		require.NoError(t, err)
		want[len(b)] = true
	}
	var posted []families.NativeRequest
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(tr.out, "vlm", "qwen3-vl-2b", "native_requests.jsonl"))), "\n") {
		var q families.NativeRequest
		require.NoError(t, json.Unmarshal([]byte(l), &q))
		posted = append(posted, q)
	}
	require.Len(t, posted, 55)
	for _, q := range posted {
		assert.True(t, want[len(q.Payload)], "request %s: AIPerf posted %d bytes, which no entry's RequestBody predicts", q.RequestID, len(q.Payload))
	}
	assert.Contains(t, r.Provenance.Preprocessing, "image processor")
	require.NotNil(t, r.Provenance.Tokenizer)
	assert.Equal(t, h.tokenizer, r.Provenance.Tokenizer.Path)
	out := filepath.Join(tr.out, "vlm", "qwen3-vl-2b")
	// Every JSON file the real run wrote matches its shipped schema.
	_, per := validateEvidenceCount(t, loadSchemas(t), tr.out)
	for _, name := range []string{"result", "manifest", "correctness", "joined", "mismatches", "dataset",
		"aiperf-argv", "native-requests", "native-answers", "native-meta", "group-report", "lock"} {
		assert.Positive(t, per[name], "the run wrote a %s document (%v)", name, per)
	}
	assert.FileExists(t, filepath.Join(out, "native_meta.json"))
	for _, c := range qwen3VL2BCases {
		assert.FileExists(t, filepath.Join(out, "correctness", "artifacts", c, "result.json"))
	}
	// The records are the current public server's: no 429 (nothing
	// overlapped), streaming a string, has_system_prompt a bool, the
	// replica <model>-1, generation_config as the request set it.
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(out, "server_records.jsonl"))), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		assert.EqualValues(t, 200, rec["status"], l)
		assert.Equal(t, "none", rec["streaming"], l)
		assert.Equal(t, false, rec["has_system_prompt"], l)
		assert.Equal(t, "qwen3-vl-2b-1", rec["replica"], l)
		assert.Equal(t, map[string]any{"max_new_tokens": 32.0, "temperature": 0.0, "use_chat_template": true}, rec["generation_config"], l)
	}

	// needs_gpu: the served model held memory on the slot's GPU while
	// serving, and every hygiene check passed and is in the row.
	require.Len(t, r.Provenance.GPUs, 1)
	checks := map[string]bool{}
	for _, c := range r.GPUChecks {
		checks[c.Name] = c.Passed
	}
	assert.Equal(t, map[string]bool{verdict.GPUCheckIdle: true, verdict.GPUCheckServing: true, verdict.GPUCheckReleased: true}, checks)

	// The group exports as a public pack: the native worker beside the
	// installed package is named by $TRTMC_PACKAGE, the checkout by
	// $TRTMC_REPO; nothing of this host is left to refuse.
	pack := filepath.Join(t.TempDir(), "vlm.tar.gz")
	export := exec.Command(h.qual, "export", "--from", tr.out, "--group", "vlm", "--output-file", pack)
	export.Env = append(cleanEnv(), "TRTMC_REPO="+tr.repo)
	eout, err := export.CombinedOutput()
	require.NoError(t, err, "%s", eout)
	unpacked := t.TempDir()
	untar, err := exec.Command("tar", "xzf", pack, "-C", unpacked).CombinedOutput()
	require.NoError(t, err, "%s", untar)
	var pub verdict.Result
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(unpacked, "vlm", "vlm", "qwen3-vl-2b", reports.ResultFile))), &pub))
	assert.Equal(t, "$TRTMC_PACKAGE/bin/trtmc-server", pub.Provenance.Native.WorkerBinary)
}

// TestTRTMCFamilyNeedsGPU: a TRTMC family on a host without a GPU is a
// setup error naming the profile (exit 3), never a run on the CPU.
func TestTRTMCFamilyNeedsGPU(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.gpus = "cpu"
	r := tr.run(t, h)
	assert.Equal(t, 3, tr.code, tr.output)
	assert.NotEqual(t, verdict.VerdictQualified, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, verdict.CodeGPURequired, r.Reasons[0].Code, "%+v", r.Reasons)
	assert.Contains(t, tr.output, "qwen3-vl-2b")
	assert.NoFileExists(t, tr.argvLog, "no TRTMC program was started")
}

// Bad input: a clear reason naming the profile and the cause, an error
// row, and the evidence of what did run kept.
func TestTRTMCFamilyBadInput(t *testing.T) {
	h := getHarness(t)
	for name, tt := range map[string]struct {
		edit  func(t *testing.T, tr *trtmcRun)
		stage string
		want  []string
		kept  []string
	}{
		"missing bundle": {
			edit: func(t *testing.T, tr *trtmcRun) {
				tr.bundlePath = filepath.Join(tr.dir, "bundles", "absent", "qwen3-vl-2b.bundle")
			},
			// The checkout holds the profile's manifest: the family's
			// prepare builds the missing bundle from it, and the build is
			// not the pinned bundle.
			stage: "preflight", want: []string{"profile qwen3-vl-2b: bundle", "not the bundle that was qualified"},
			kept: []string{"prepare-bundle.log"},
		},
		"tokenizer that does not match": {
			edit:  func(t *testing.T, tr *trtmcRun) { tr.tokenizerPin = strings.Repeat("0", 64) },
			stage: "preflight", want: []string{"profile qwen3-vl-2b: tokenizer", "does not match its pin", "not the tokenizer of Qwen/Qwen3-VL-2B-Instruct"},
		},
		"worker dies mid-request": {
			edit:  func(t *testing.T, tr *trtmcRun) { tr.env = append(tr.env, "FAKE_WORKER=crash-at:20") },
			stage: "native", want: []string{"profile qwen3-vl-2b", "native worker exited with status 134", "illegal memory access", "19 of 55 requests answered"},
			kept: []string{"native_answers.jsonl", "native_meta.json", "native.log", "server_records.jsonl", "aiperf"},
		},
		"correctness output without metrics": {
			edit:  func(t *testing.T, tr *trtmcRun) { tr.env = append(tr.env, "FAKE_PYTEST=no-metrics") },
			stage: "correctness", want: []string{"profile qwen3-vl-2b: correctness output without metrics"},
			kept: []string{"correctness.log", "correctness/artifacts/qwen3-vl-2b-chart/result.json"},
		},
		// The server version of idx@ddf1735f has no --records: argparse
		// exits 2 on the flag at startup.
		"a server without --records": {
			edit:  func(t *testing.T, tr *trtmcRun) { tr.env = append(tr.env, "FAKE_TRTMC_SERVER_VERSION=ddf1735f") },
			stage: "server", want: []string{"unrecognized arguments: --records"},
			kept: []string{"server.log"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tr := setupTRTMCRun(t, h)
			tt.edit(t, tr)
			r := tr.run(t, h)
			assert.NotEqual(t, 0, tr.code)
			assert.Equal(t, verdict.VerdictError, r.Verdict, "%+v", r.Reasons)
			var msgs []string
			for _, rs := range r.Reasons {
				if rs.Stage == tt.stage {
					msgs = append(msgs, rs.Message)
				}
			}
			require.NotEmpty(t, msgs, "no %s reason in %+v", tt.stage, r.Reasons)
			for _, w := range tt.want {
				assert.Contains(t, strings.Join(msgs, "\n"), w)
			}
			for _, k := range tt.kept {
				assert.FileExists(t, filepath.Join(tr.out, "vlm", "qwen3-vl-2b", k)+map[bool]string{true: "/profile_export.jsonl"}[k == "aiperf"])
			}
			if name == "worker dies mid-request" {
				answers := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(tr.out, "vlm", "qwen3-vl-2b", "native_answers.jsonl"))), "\n")
				assert.Len(t, answers, 20, "19 answers and the error line of the request the worker died on")
			}
		})
	}
}

// Something else sends the served model a request while the run's is in
// flight (here a second client the strict fake plays, overlapping the
// request after the 10th): trtmc-server has no queue and refuses the
// run's request 429 rate_limit_error server_busy with Retry-After: 1. The
// row names the overlap as its own reason (an error: the run was
// disturbed, never a qualification outcome), and the stranger's request
// is the server record no client claims.
func TestTRTMCOverlapIsServerBusy(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.env = append(tr.env, "FAKE_TRTMC_SERVER_INTRUDE=10")
	r := tr.run(t, h)
	assert.NotEqual(t, 0, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictError, r.Verdict, "%+v", r.Reasons)
	// At least the request that met the stranger's in flight; how many
	// more arrive while it is served is the timing of two clients.
	busy := r.Requests.ServerBusy
	assert.Positive(t, busy, "%+v", r.Requests)
	assert.Equal(t, 55-busy, r.Requests.Matched, "%+v", r.Requests)
	assert.Equal(t, 1, r.Unclaimed.ServerRecords)
	assert.Equal(t, []string{"intruder-10"}, r.Unclaimed.Examples)
	var reason *verdict.Reason
	for i := range r.Reasons {
		if r.Reasons[i].Code == verdict.CodeServerBusy {
			reason = &r.Reasons[i]
		}
	}
	require.NotNil(t, reason, "%+v", r.Reasons)
	assert.Equal(t, verdict.ClassBroken, reason.Class)
	assert.Contains(t, reason.Message, "refused 429 server_busy: something else sent a request to the served model at the same time")
	assert.Contains(t, reason.Message, "rate_limit_error", "the first example quotes the server's answer")
	require.Len(t, r.HTTPErrors, 1)
	assert.Equal(t, verdict.HTTPError{Phase: verdict.PhaseMeasured, Status: 429, Type: "rate_limit_error", Code: "server_busy",
		Message: "all model worker replicas are busy", Count: busy}, r.HTTPErrors[0])
}

// The prompt limit (--max-prompt-bytes) is the server's second: a family
// limit below the corpus's longest question refuses the run before
// anything starts, naming the entry, the size and the limit.
func TestTRTMCPromptOverTheLimitIsRefusedBeforeTheServer(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.editFamilies(t, h, "max_prompt_bytes: 15728640", "max_prompt_bytes: 16")
	r := tr.run(t, h)
	assert.Equal(t, 3, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, verdict.CodeRequestTooLarge, r.Reasons[0].Code, "%+v", r.Reasons)
	for _, w := range []string{"profile qwen3-vl-2b", "its prompt is", "bytes of UTF-8 text, over the server's limit of 16 bytes (--max-prompt-bytes)",
		"passes --max-body-bytes 15728640 and --max-prompt-bytes 16"} {
		assert.Contains(t, r.Reasons[0].Message, w)
	}
	assert.NoFileExists(t, tr.argvLog, "no TRTMC program was started")
}

// The other install form: TRTMC built from its checkout, no wheel. The
// shipped family's `trtmc-server` is then build/trtmc-server, the native
// launcher, which starts the control plane (python3 -P -m trtmc_server
// from build/server/python) with itself as the worker; the native replay
// finds that same binary. The row qualifies and names it.
func TestTRTMCSourceBuildQualifies(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.src = trtmctest.NewSourceBuild(t, tr.repo)
	r := tr.run(t, h)
	require.Equal(t, 0, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v\n%s", r.Reasons, tr.output)
	require.NotNil(t, r.Provenance.Native)
	assert.Equal(t, tr.src.Native, r.Provenance.Native.WorkerBinary)
	assert.Equal(t, "launcher", r.Provenance.Native.WorkerBinarySource)
	assert.Equal(t, tr.src.Native, r.Provenance.ServerBinary, "the server command is the launcher")
	var python, controlPlane []string
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, tr.argvLog)), "\n") {
		var a []string
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		switch a[0] {
		case "python3":
			if slices.Contains(a, "trtmc_server") {
				python = a
			}
		case "trtmc-server":
			controlPlane = a
		}
	}
	assert.Equal(t, []string{"python3", "-P", "-m", "trtmc_server", tr.bundle, "--model-name", "qwen3-vl-2b"}, python[:7])
	assert.Equal(t, []string{"--worker-binary", tr.src.Native}, controlPlane[len(controlPlane)-2:])
}

// A checkout in TRTMC's newer layout: the family-owned qualification
// (trtmc-qualify run --kind accuracy) is the correctness case, and its
// report names the bundle it ran, the served one: the row qualifies.
func TestTRTMCNewerLayoutQualifies(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.repo = trtmcCheckout(t, filepath.Join(tr.dir, "TensorRT-Model-Connect-newer"), layoutNewer)
	env := filepath.Join(tr.dir, "qualify-env.yaml")
	require.NoError(t, os.WriteFile(env, []byte("name: gb300\n"), 0o644))
	tr.env = append(tr.env, "TRTMC_QUALIFY_ENVIRONMENT="+env, "FAKE_QUALIFY=bundle", "FAKE_QUALIFY_BUNDLE="+tr.bundle)
	r := tr.run(t, h)
	require.Equal(t, 0, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v\n%s", r.Reasons, tr.output)
	require.NotNil(t, r.Correctness)
	require.Len(t, r.Correctness.Gates, 1)
	assert.Equal(t, "public-vqa-100/vqa/answer_accuracy", r.Correctness.Gates[0].Name)
	assert.NotContains(t, readFile(t, filepath.Join(tr.out, "vlm", "qwen3-vl-2b", "correctness.log")), "cannot be read")
}

// A corpus entry whose encoded request is over the family's server limit
// is refused before anything starts, naming the entry, its size and the
// limit: exit 3, no TRTMC program started.
func TestTRTMCRequestOverTheLimitIsRefusedBeforeTheServer(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.editFamilies(t, h, "max_body_bytes: 15728640", "max_body_bytes: 1048576")
	r := tr.run(t, h)
	assert.Equal(t, 3, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, verdict.CodeRequestTooLarge, r.Reasons[0].Code, "%+v", r.Reasons)
	for _, w := range []string{"profile qwen3-vl-2b", "corpus entry photo (photo.png)", "bytes once encoded", "over the server's limit of 1048576 bytes"} {
		assert.Contains(t, r.Reasons[0].Message, w)
	}
	assert.NoFileExists(t, tr.argvLog, "no TRTMC program was started")
}

// The server keeps its own 1 MiB default when the family does not pass a
// limit: the photo's requests are 413s, which the row counts as errors
// (never green), naming the status.
func TestTRTMCServerDefaultBodyLimit(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.editFamilies(t, h, `"--max-body-bytes", "{max_body_bytes}",
             `, "")
	data := readFile(t, tr.families)
	require.NoError(t, os.WriteFile(tr.families, []byte(strings.ReplaceAll(data, "    max_body_bytes: 15728640\n", "")), 0o644))
	r := tr.run(t, h)
	assert.Equal(t, 1, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictFailed, r.Verdict, "%+v", r.Reasons)
	assert.Equal(t, 4, r.Requests.Errored, "the photo, 4 times")
	assert.Equal(t, 51, r.Requests.Matched)
	var msgs []string
	for _, rs := range r.Reasons {
		msgs = append(msgs, rs.Message)
	}
	assert.Contains(t, strings.Join(msgs, "\n"), "4 × 413 invalid_request_error content_too_large (the request body is over the server's --max-body-bytes)",
		"the reason names the server's answer and the limit")
}

// A server that ignores the incoming X-Request-ID (idx@ddf1735f's policy)
// makes a join by identity impossible: every answer echoes the server's
// own id, which AIPerf's HTTP trace shows (echo_mismatched, warmup and
// measured), and its records are under those ids, unclaimed.
func TestTRTMCServerThatIgnoresRequestIDs(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.env = append(tr.env, "FAKE_TRTMC_SERVER_IDS=ignore")
	r := tr.run(t, h)
	assert.Equal(t, 1, tr.code, tr.output)
	assert.Equal(t, verdict.VerdictFailed, r.Verdict)
	assert.Equal(t, 5, r.RequestsByPhase[verdict.PhaseWarmup].EchoMismatched)
	assert.Equal(t, 50, r.RequestsByPhase[verdict.PhaseMeasured].EchoMismatched)
	assert.Zero(t, r.Requests.EchoProven)
	assert.Equal(t, 55, r.Unclaimed.ServerRecords)
	codes := map[verdict.Code]bool{}
	for _, rs := range r.Reasons {
		codes[rs.Code] = true
	}
	assert.True(t, codes[verdict.CodeEchoMismatched] && codes[verdict.CodeUnclaimedServerRecords], "%+v", r.Reasons)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestTRTMCDetectionEndToEnd: the detection group through the strict fake,
// the shipped family yolo11 unchanged. The public trtmc-server records no
// /v1/infer request, which the family declares: the row qualifies on the
// client <-> native join by identity alone and says so; the boxes are
// compared with the family's detection-parity tolerances (boxes-iou).
func TestTRTMCDetectionEndToEnd(t *testing.T) {
	h := getHarness(t)
	d := t.TempDir()
	inst := trtmctest.New(t)
	bundle, refCorpus, corpus := filepath.Join(d, "bundles", "yolo11n.bundle"), filepath.Join(d, "corpora", "ref-detect"), filepath.Join(d, "corpora", "det")
	require.NoError(t, os.MkdirAll(filepath.Dir(bundle), 0o755))
	for _, argv := range [][]string{
		{"make-bundle", "--family", "ref-detect", "--precision", "fp32", "--out", bundle},
		{"corpus", "--family", "ref-detect", "--out", refCorpus, "--count", "12"},
	} {
		out, err := exec.Command(h.refserver, argv...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	writeTRTMCCorpus(t, refCorpus, corpus)
	repo := filepath.Join(d, "TensorRT-Model-Connect")
	e2e := filepath.Join(repo, "tests", "e2e", "models", "yolo11", "test_yolo11_e2e.py")
	require.NoError(t, os.MkdirAll(filepath.Dir(e2e), 0o755))
	require.NoError(t, os.WriteFile(e2e, []byte("# played by the fake pytest\n"), 0o644))
	sum, err := fileio.FileSHA256(context.Background(), bundle)
	require.NoError(t, err)
	inv := `schema: trtmc-qual/inventory/v1
groups:
  detection:
    workload:
      endpoint_type: image_retrieval
      warmup: 5
      measured: 50
      concurrency: 1
      seed: 42
      request_timeout_s: 60
      dataset: {corpus: ` + corpus + `}
    profiles:
      - id: yolo11n
        checkpoint: Ultralytics/YOLO11
        family: yolo11
        task: object_detection
        kind: normal
        precision: fp16
        parallelism: {tp: 1}
        bundle: {path: ` + bundle + `, sha256: ` + sum + `}
        hardware: [h200]
        status: planned
`
	invPath := filepath.Join(d, "inventory.yaml")
	require.NoError(t, os.WriteFile(invPath, []byte(inv), 0o644))
	py, err := exec.LookPath("python3")
	require.NoError(t, err)
	outDir := filepath.Join(d, "out")
	cmd := exec.Command(h.qual, "run", "--group", "detection", "--out", outDir, "--gpus", "0",
		"--inventory", invPath, "--families", filepath.Join(h.root, "families", "trtmc.yaml"),
		"--aiperf", h.aiperf, "--format", "tsv")
	cmd.Dir = d
	cmd.Env = append(cleanEnv(),
		"PATH="+inst.Bin+string(os.PathListSeparator)+filepath.Join(h.root, "qual", "testdata", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_NVIDIA_SMI_PYTHON="+py, "FAKE_NVIDIA_SMI_FIXTURE=h200x1", "FAKE_NVIDIA_SMI_SESSION="+d, "FAKE_GPU_HOLD=2048:_serve-worker",
		"FAKE_REFSERVER="+h.refserver, "FAKE_PYTEST=ref", "FAKE_CORPUS="+refCorpus,
		"TRTMC_REPO="+repo, "TRTMC_BUNDLE_DIR=", "TRTMC_WORKER_BINARY=", "TRTMC_PYTHON=")
	cmd.Env = append(cmd.Env, inst.Env()...)
	timer := time.AfterFunc(8*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	data, err := os.ReadFile(filepath.Join(outDir, "detection", "yolo11n", reports.ResultFile))
	require.NoError(t, err, string(out))
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "%+v\n%s", r.Reasons, out)
	assert.Equal(t, 55, r.Requests.Matched)
	assert.Equal(t, 0, r.Requests.MissingServerRecord, "the route is declared unrecorded")
	assert.Equal(t, "none", r.Answers.ServerRecords)
	assert.Equal(t, "boxes-iou", r.Answers.Comparator)
	assert.Equal(t, 0.9, r.Answers.MinBoxIoU)
	assert.Equal(t, "native", r.LatencyMS.TaskSource)
	assert.Equal(t, "public_task_call_wall", r.LatencyMS.TaskScope)
	require.NotEmpty(t, r.Notes)
	assert.Contains(t, r.Notes[0], "no server records for /v1/infer in this server version")
	assert.Empty(t, strings.TrimSpace(readFile(t, filepath.Join(outDir, "detection", "yolo11n", "server_records.jsonl"))),
		"the public server wrote no record for /v1/infer")
	md := readFile(t, filepath.Join(outDir, "detection", "results.md"))
	assert.Contains(t, md, "yolo11n: no server records for /v1/infer", "the report says it")
	assert.Contains(t, md, "(native) |", "the Task cell says its source")
}
