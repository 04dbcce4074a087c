//go:build integration

package main

// End-to-end runs of a TRTMC-family profile (test tier iv): the real
// bin/trtmc-qual and the real AIPerf qualify a vision-language profile of
// the shipped families/trtmc.yaml family qwen_vl, unchanged. Its argv starts
// `trtmc-server BUNDLE --model-name ... --records ...`, `trtmc-qual adapter
// native` (the JSONL worker `trtmc-server _serve-worker BUNDLE`) and
// `trtmc-qual adapter correctness -- pytest ...`; the fake trtmc-server and
// pytest of families/trtmc/testdata (a test fixture) put the reference
// server, the reference Task and the reference correctness check behind
// exactly those programs and formats. Then bad input, one kind at a time.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

type trtmcRun struct {
	dir, bundle, corpus, argvLog, out string
	// tokenizerPin and bundlePath edit the inventory entry.
	tokenizerPin, bundlePath string
	env                      []string
	// gpus is the run's --gpus: "0" on the fake H200 (the default), "cpu"
	// for a host without a GPU.
	gpus   string
	output string
	code   int
}

// setupTRTMCRun prepares a reference bundle and corpus for the profile.
func setupTRTMCRun(t *testing.T, h harness) *trtmcRun {
	t.Helper()
	d := t.TempDir()
	r := &trtmcRun{dir: d, bundle: filepath.Join(d, "bundles", "qwen3-vl-2b.bundle"), corpus: filepath.Join(d, "corpora", "vlm"),
		argvLog: filepath.Join(d, "argv.log"), out: filepath.Join(d, "out")}
	r.bundlePath = r.bundle
	r.gpus = "0"
	require.NoError(t, os.MkdirAll(filepath.Dir(r.bundle), 0o755))
	for _, argv := range [][]string{
		{"make-bundle", "--family", "ref-vlm", "--precision", "fp32", "--out", r.bundle},
		{"corpus", "--family", "ref-vlm", "--out", r.corpus, "--count", "12"},
	} {
		out, err := exec.Command(h.refserver, argv...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(d, "TensorRT-Model-Connect"), 0o755))
	return r
}

func (r *trtmcRun) run(t *testing.T, h harness) reports.Result {
	t.Helper()
	sum, err := evidence.FileSHA256(context.Background(), r.bundle)
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
		"--inventory", invPath, "--families", filepath.Join(h.root, "families", "trtmc.yaml"),
		"--aiperf", h.aiperf, "--format", "tsv")
	cmd.Dir = r.dir
	cmd.Env = append(cleanEnv(),
		"PATH="+trtmctest.Bin(t)+string(os.PathListSeparator)+filepath.Join(h.root, "qual", "testdata", "bin")+
			string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_NVIDIA_SMI_PYTHON="+py, "FAKE_NVIDIA_SMI_FIXTURE=h200x1", "FAKE_NVIDIA_SMI_SESSION="+r.dir,
		"FAKE_GPU_HOLD=2048:refserver serve",
		"FAKE_REFSERVER="+h.refserver, "FAKE_PYTEST=ref", "FAKE_CORPUS="+r.corpus, "FAKE_TRTMC_LOG="+r.argvLog,
		"TRTMC_REPO="+filepath.Join(r.dir, "TensorRT-Model-Connect"), "TRTMC_BUNDLE_DIR=")
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
	var res reports.Result
	require.NoError(t, json.Unmarshal(data, &res))
	return res
}

func TestTRTMCFamilyEndToEnd(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	r := tr.run(t, h)
	require.Equal(t, 0, tr.code, tr.output)
	assert.Equal(t, reports.VerdictQualified, r.Verdict, "reasons: %+v\n%s", r.Reasons, tr.output)
	assert.Equal(t, 50, r.RequestsByPhase[reports.PhaseMeasured].Matched)
	assert.Equal(t, 5, r.RequestsByPhase[reports.PhaseWarmup].Matched)

	// The family's own programs, started with the family's own argv.
	var argv [][]string
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, tr.argvLog)), "\n") {
		var a []string
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		argv = append(argv, a)
	}
	require.Len(t, argv, 3, "one server, one worker, one e2e case")
	assert.Equal(t, []string{"trtmc-server", tr.bundle, "--model-name", "qwen3-vl-2b"}, argv[0][:4])
	assert.Contains(t, argv[0], "--records")
	assert.Equal(t, []string{"pytest", "tests/e2e/models/qwen_vl/test_qwen_vl_e2e.py", "--e2e-model", "qwen3-vl-2b"}, argv[1][:4])
	assert.Equal(t, []string{"trtmc-server", "_serve-worker", tr.bundle}, argv[2])

	// Correctness: TRTMC's result.json converted, every gate with its value,
	// operator, threshold and outcome, on the served bundle.
	require.NotNil(t, r.Correctness)
	assert.True(t, r.Correctness.Passed)
	require.Len(t, r.Correctness.Gates, 1)
	g := r.Correctness.Gates[0]
	assert.Equal(t, "qwen3-vl-2b/reference_check/accuracy", g.Name)
	assert.Equal(t, ">=", g.Op)
	assert.Equal(t, 0.9, g.Threshold)
	assert.True(t, g.Passed)

	// Native: the worker path, Task time public_task_call_wall; output size
	// the Task's own token counts; the images sent and the preprocessing.
	require.NotNil(t, r.Provenance.Native)
	assert.Equal(t, "worker", r.Provenance.Native.Path)
	assert.Equal(t, "public_task_call_wall", r.Provenance.Native.TimingScope)
	assert.True(t, r.Provenance.Native.TokenCounts)
	assert.Equal(t, 2, r.Provenance.Native.WorkerProtocol)
	require.NotNil(t, r.OutputTokens)
	assert.Positive(t, *r.OutputTokens)
	// Task time is the native answers' (task_time: native), over all 50.
	assert.Equal(t, "native", r.LatencyMS.TaskSource)
	assert.Equal(t, "public_task_call_wall", r.LatencyMS.TaskScope)
	assert.Equal(t, 50, r.LatencyMS.Task.Count)
	assert.NotNil(t, r.LatencyMS.Task.P50)
	assert.Equal(t, "native", r.Answers.TaskTime)
	assert.Equal(t, "complete", r.Answers.FinishReasonNull)
	n := 0
	for _, s := range r.Provenance.DatasetImageSizes {
		n += s.Count
	}
	assert.Equal(t, 55, n)
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
	assert.FileExists(t, filepath.Join(out, "correctness", "artifacts", "qwen3-vl-2b", "result.json"))

	// needs_gpu: the served model held memory on the slot's GPU while
	// serving, and every hygiene check passed and is in the row.
	require.Len(t, r.Provenance.GPUs, 1)
	checks := map[string]bool{}
	for _, c := range r.GPUChecks {
		checks[c.Name] = c.Passed
	}
	assert.Equal(t, map[string]bool{reports.GPUCheckIdle: true, reports.GPUCheckServing: true, reports.GPUCheckReleased: true}, checks)
}

// TestTRTMCFamilyNeedsGPU: a TRTMC family on a host without a GPU is a
// setup error naming the profile (exit 3), never a run on the CPU.
func TestTRTMCFamilyNeedsGPU(t *testing.T) {
	h := getHarness(t)
	tr := setupTRTMCRun(t, h)
	tr.gpus = "cpu"
	r := tr.run(t, h)
	assert.Equal(t, 3, tr.code, tr.output)
	assert.NotEqual(t, reports.VerdictQualified, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, reports.CodeGPURequired, r.Reasons[0].Code, "%+v", r.Reasons)
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
			stage: "preflight", want: []string{"profile qwen3-vl-2b: bundle", "is missing and its manifest cannot be read"},
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
			kept: []string{"correctness.log", "correctness/artifacts/qwen3-vl-2b/result.json"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tr := setupTRTMCRun(t, h)
			tt.edit(t, tr)
			r := tr.run(t, h)
			assert.NotEqual(t, 0, tr.code)
			assert.Equal(t, reports.VerdictError, r.Verdict, "%+v", r.Reasons)
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

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
