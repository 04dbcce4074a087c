package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func TestMain(m *testing.M) {
	code := m.Run()
	trtmctest.Cleanup()
	os.Exit(code)
}

type fakeGPUs struct {
	gpus []verdict.GPU
	busy string
	err  error
}

// List reports the busy GPU 97% utilised, as nvidia-smi would.
func (f fakeGPUs) List(context.Context) ([]verdict.GPU, error) {
	out := make([]verdict.GPU, len(f.gpus))
	for i, g := range f.gpus {
		if g.Index == f.busy {
			u := 97
			g.UtilizationPct = &u
		}
		out[i] = g
	}
	return out, f.err
}
func (f fakeGPUs) Apps(context.Context) ([]qual.ComputeApp, error) { return nil, f.err }

// aiperfRunner answers `aiperf --version` with version and runs the rest.
type aiperfRunner struct{ version string }

func (r aiperfRunner) Run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	if filepath.Base(s.Argv[0]) == "aiperf" {
		if s.Stdout != nil {
			fmt.Fprintln(s.Stdout, r.version)
		}
		return proc.Result{Argv: s.Argv}, nil
	}
	return proc.OS{}.Run(ctx, s)
}

func (r aiperfRunner) Start(ctx context.Context, s proc.Spec) (proc.Process, error) {
	return proc.OS{}.Start(ctx, s)
}

type host struct {
	dir, repo, bundle, tokenizer string
	opts                         Options
	inst                         *trtmctest.Install
}

// readyHost is a GB300-like host for one TRTMC vlm profile: everything in
// place. Tests break one thing each.
func readyHost(t *testing.T) *host {
	t.Helper()
	inst := trtmctest.New(t)
	bin := inst.Bin
	t.Setenv("FAKE_TRTMC_SITE_PACKAGES", inst.SitePackages)
	d := t.TempDir()
	// One native worker at a time on this node: the probe's server's and
	// the probe's own never overlap (fake-trtmc-native fails otherwise).
	t.Setenv("FAKE_TRTMC_EXCLUSIVE", filepath.Join(d, "gpu.lock"))
	h := &host{inst: inst, dir: d, repo: filepath.Join(d, "TensorRT-Model-Connect"), bundle: filepath.Join(d, "bundles", "qwen3-vl-2b.bundle"),
		tokenizer: filepath.Join(d, "tokenizers", "qwen3-vl-2b")}
	for _, dir := range []string{filepath.Dir(h.bundle), h.tokenizer, filepath.Join(d, "corpora", "vlm"), h.repo} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	require.NoError(t, os.WriteFile(h.bundle, []byte("engine"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(h.tokenizer, "tokenizer.json"), []byte(`{"model":{}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(h.tokenizer, "tokenizer_config.json"), []byte(`{"name_or_path":"Qwen/Qwen3-VL-2B-Instruct"}`), 0o644))
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 640, 427))))
	require.NoError(t, os.WriteFile(filepath.Join(d, "corpora", "vlm", "car.png"), buf.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(d, "corpora", "vlm", "corpus.json"),
		[]byte(`{"schema":"trtmc-qual/corpus/v1","entries":[{"id":"car","file":"car.png","question":"What colour is the car?"}]}`), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", append([]string{"-C", h.repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "conftest.py"), []byte("# x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(h.repo, "apps", "server", "python", "trtmc_server"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "apps", "server", "python", "trtmc_server", "cli.py"), []byte("# x\n"), 0o644))
	git(t, h.repo, "add", "conftest.py", "apps")
	git(t, h.repo, "commit", "-q", "-m", "conftest")
	inv := fmt.Sprintf(`schema: trtmc-qual/inventory/v1
groups:
  vlm:
    workload: {endpoint_type: chat, warmup: 5, measured: 50, concurrency: 1, dataset: {corpus: corpora/vlm}}
    profiles:
      - id: qwen3-vl-2b
        checkpoint: Qwen/Qwen3-VL-2B-Instruct
        family: qwen_vl
        task: vision_language_generation
        kind: normal
        precision: bf16
        parallelism: {tp: 1}
        bundle: {path: bundles/qwen3-vl-2b.bundle, sha256: %s}
        tokenizer: {path: tokenizers/qwen3-vl-2b}
        hardware: [gb300]
        status: planned
      - id: qwen3-vl-2b-l0
        checkpoint: Qwen/Qwen3-VL-2B-Instruct
        family: qwen_vl
        task: vision_language_generation
        kind: partial
        precision: bf16
        bundle: {path: bundles/none.bundle}
        status: planned
        exclusion: {reason: an L0 repro}
`, fileio.SHA256([]byte("engine")))
	invPath := filepath.Join(d, "inventory.yaml")
	require.NoError(t, os.WriteFile(invPath, []byte(inv), 0o644))
	fams, err := families.Load("../../families/trtmc.yaml")
	require.NoError(t, err)
	loaded, err := inventory.Load([]string{invPath}, fams.Has)
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h.opts = Options{Inventory: loaded, Families: fams, Groups: []string{"vlm"}, Repo: h.repo,
		Out: filepath.Join(d, "out"), MinFreeBytes: 1 << 30, AIPerfBin: "aiperf", AIPerfVersion: "0.13.0",
		Self: "/usr/local/bin/trtmc-qual", Runner: aiperfRunner{version: "0.13.0"},
		GPUs:     fakeGPUs{gpus: []verdict.GPU{{Index: "0", Name: "NVIDIA GB300", UUID: "GPU-0", Driver: "580.65"}}},
		LookPath: func(n string) (string, error) { return exec.LookPath(n) }, Getenv: func(string) string { return "" },
		FreeBytes: func(string) (uint64, error) { return 500 << 30, nil }}
	h.opts.LookPath = func(n string) (string, error) {
		if n == h.opts.Self {
			return n, nil
		}
		return exec.LookPath(n)
	}
	return h
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

func byArea(r *Report, area, subject string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Area == area && (subject == "" || r.Checks[i].Subject == subject) {
			return &r.Checks[i]
		}
	}
	return nil
}

func TestReadyHost(t *testing.T) {
	h := readyHost(t)
	r := Run(context.Background(), h.opts)
	for _, c := range r.Checks {
		assert.NotEqual(t, StatusFail, c.Status, "%+v", c)
	}
	assert.True(t, r.Ready)
	assert.Contains(t, byArea(r, "gpu", "count").Detail, "1 x NVIDIA GB300, driver 580.65")
	assert.Contains(t, byArea(r, "executable", "trtmc").Detail, "trtmc 0.0.0-fake")
	assert.Contains(t, byArea(r, "executable", "pytest").Detail, "pytest 8.3.5")
	assert.Equal(t, StatusOK, byArea(r, "executable", "trtmc-server").Status)
	assert.Contains(t, byArea(r, "executable", "python3").Detail, "tensorrt-model-connect 0.0.0-fake")
	assert.Equal(t, "aiperf 0.13.0", byArea(r, "aiperf", "").Detail)
	assert.Contains(t, byArea(r, "repo", "").Detail, ", clean")
	assert.Contains(t, byArea(r, "bundle", "qwen3-vl-2b").Detail, "= pin")
	assert.Equal(t, StatusOK, byArea(r, "tokenizer", "qwen3-vl-2b").Status)
	assert.Contains(t, byArea(r, "corpus", "").Detail, "1 images, 1 distinct sizes over 55 requests")
	assert.Equal(t, StatusSkip, byArea(r, "profile", "qwen3-vl-2b-l0").Status)
	assert.Nil(t, byArea(r, "bundle", "qwen3-vl-2b-l0"), "excluded profiles are not checked")
	// The TRTMC contract, without a GPU: the console script and its flags,
	// the native worker, the interpreter, the server at the commit.
	assert.Contains(t, byArea(r, "trtmc", "trtmc-server").Detail, "the console script of /bin/sh); its --help lists every flag the families pass")
	assert.Contains(t, byArea(r, "trtmc", "native worker").Detail, h.inst.Native+" (package)")
	assert.Contains(t, byArea(r, "trtmc", "interpreter").Detail, "Python 3.12.3, tensorrt_model_connect at "+h.inst.Package)
	assert.Equal(t, StatusOK, byArea(r, "trtmc", "server at commit").Status)
	// Both size limits named.
	assert.Contains(t, byArea(r, "corpus", "vlm corpus for qwen_vl").Detail, "bytes (entry car), limit 15728640 (--max-body-bytes); the largest prompt is 23 bytes (entry car), limit 15728640 (--max-prompt-bytes)")
	assert.Equal(t, "doctor: ready for vlm: 18 ok, 0 warning(s), 0 problem(s), 1 skipped", r.Summary())
}

// Each broken thing makes the host not ready, names what and says how to
// fix it.
func TestEachProblemIsNamedWithItsFix(t *testing.T) {
	for name, tt := range map[string]struct {
		breakIt       func(t *testing.T, h *host)
		area, subject string
		detail, fix   string
	}{
		"no gpu": {func(t *testing.T, h *host) { h.opts.GPUs = fakeGPUs{} }, "gpu", "count", "no NVIDIA GPU found", "run on a GPU node"},
		"busy gpu": {func(t *testing.T, h *host) {
			g := h.opts.GPUs.(fakeGPUs)
			g.busy = "0"
			h.opts.GPUs = g
		}, "gpu", "gpu 0", "97% utilised", "choose idle GPUs"},
		"no nvidia-smi": {func(t *testing.T, h *host) {
			h.opts.GPUs = fakeGPUs{err: errors.New("nvidia-smi: exited with status 9")}
		}, "gpu", "nvidia-smi", "status 9", "NVIDIA driver"},
		"no trtmc-server": {func(t *testing.T, h *host) {
			h.opts.LookPath = func(n string) (string, error) {
				if n == "trtmc-server" {
					return "", exec.ErrNotFound
				}
				return exec.LookPath(n)
			}
		}, "executable", "trtmc-server", "not found (needed by qwen_vl)", "pip install '.[serve]': TRTMC is not on the public package index"},
		"bundle changed": {func(t *testing.T, h *host) { require.NoError(t, os.WriteFile(h.bundle, []byte("rebuilt"), 0o644)) },
			"bundle", "qwen3-vl-2b", "not the bundle that was qualified", "restore the pinned bundle"},
		"tokenizer missing": {func(t *testing.T, h *host) { require.NoError(t, os.RemoveAll(h.tokenizer)) },
			"tokenizer", "qwen3-vl-2b", "profile qwen3-vl-2b: tokenizer directory", "export the checkpoint's tokenizer"},
		"another model's tokenizer": {func(t *testing.T, h *host) {
			require.NoError(t, os.WriteFile(filepath.Join(h.tokenizer, "tokenizer_config.json"), []byte(`{"name_or_path":"Qwen/Qwen2.5-VL-3B-Instruct"}`), 0o644))
		}, "tokenizer", "qwen3-vl-2b", "is Qwen/Qwen2.5-VL-3B-Instruct's", "export the checkpoint's tokenizer"},
		"aiperf version": {func(t *testing.T, h *host) { h.opts.Runner = aiperfRunner{version: "0.12.1"} }, "aiperf", "", "is 0.12.1, want 0.13.0", "pip install aiperf==0.13.0"},
		"disk":           {func(t *testing.T, h *host) { h.opts.FreeBytes = func(string) (uint64, error) { return 1 << 20, nil } }, "disk", "", "0.0 GiB free", "free space"},
		"dirty checkout": {func(t *testing.T, h *host) {
			require.NoError(t, os.WriteFile(filepath.Join(h.repo, "conftest.py"), []byte("# edited\n"), 0o644))
		}, "repo", "", "dirty: 1 tracked file(s) differ", "commit or stash"},
		"no checkout":    {func(t *testing.T, h *host) { h.opts.Repo = "" }, "repo", "", "unknown: the families' correctness cases run in a TRTMC checkout", "TRTMC_REPO"},
		"not a checkout": {func(t *testing.T, h *host) { h.opts.Repo = t.TempDir() }, "repo", "", "not a git checkout", "clone"},
		"question missing": {func(t *testing.T, h *host) {
			require.NoError(t, os.WriteFile(filepath.Join(h.dir, "corpora", "vlm", "corpus.json"),
				[]byte(`{"schema":"trtmc-qual/corpus/v1","entries":[{"id":"car","file":"car.png"}]}`), 0o644))
		}, "corpus", "", "entry car has no question", "its question"},
		"corpus missing": {func(t *testing.T, h *host) { require.NoError(t, os.RemoveAll(filepath.Join(h.dir, "corpora"))) },
			"corpus", "", "no such file", "trtmc-qual corpus init"},
	} {
		t.Run(name, func(t *testing.T) {
			h := readyHost(t)
			tt.breakIt(t, h)
			r := Run(context.Background(), h.opts)
			assert.False(t, r.Ready)
			c := byArea(r, tt.area, tt.subject)
			require.NotNil(t, c, "no %s check", tt.area)
			assert.Equal(t, StatusFail, c.Status, "%+v", c)
			assert.Contains(t, c.Detail, tt.detail)
			assert.Contains(t, c.Fix, tt.fix)
			assert.Contains(t, r.Summary(), "NOT ready")
		})
	}
}

// Warnings leave the host ready: an unpinned bundle, a variant wider than
// the host.
func TestWarningsDoNotBlock(t *testing.T) {
	h := readyHost(t)
	p := h.opts.Inventory.Groups["vlm"].Profiles[0]
	p.Bundle.SHA256 = ""
	p.Parallelism.TP = 4
	r := Run(context.Background(), h.opts)
	assert.True(t, r.Ready)
	b := byArea(r, "bundle", "qwen3-vl-2b")
	assert.Equal(t, StatusWarn, b.Status)
	assert.Contains(t, b.Fix, "sha256: "+fileio.SHA256([]byte("engine")))
	g := byArea(r, "gpu", "parallelism")
	require.NotNil(t, g)
	assert.Contains(t, g.Detail, "qwen3-vl-2b (4) need more GPUs than the 1 here")
}

// The TRTMC contract, checked without a GPU: each break names what and how
// to fix it.
func TestTRTMCContractWithoutAGPU(t *testing.T) {
	for name, tt := range map[string]struct {
		breakIt         func(t *testing.T, h *host)
		subject, status string
		detail, fix     string
	}{
		"a server without --records": {func(t *testing.T, h *host) { t.Setenv("FAKE_TRTMC_SERVER_VERSION", "ddf1735f") },
			"trtmc-server", StatusFail, "its --help lists no --records (passed by qwen_vl)", "cannot write request records"},
		"no native worker": {func(t *testing.T, h *host) { require.NoError(t, os.Remove(h.inst.Native)) },
			"native worker", StatusFail, "lacks trtmc-server", "pip install '.[serve]'"},
		"Python 3.11": {func(t *testing.T, h *host) { t.Setenv("FAKE_PYTHON_VERSION", "3.11.9") },
			"interpreter", StatusFail, "is Python 3.11.9; TRTMC requires >= 3.12", "Python 3.12 environment"},
		"TRTMC not installed": {func(t *testing.T, h *host) { t.Setenv("FAKE_TRTMC_SITE_PACKAGES", "") },
			"interpreter", StatusFail, "does not import tensorrt_model_connect", "not on the public package index"},
		"a request over the limit": {func(t *testing.T, h *host) { h.opts.Families.Families["qwen_vl"].MaxBodyBytes = 1000 },
			"", StatusFail, "", ""},
		"a prompt over the limit": {func(t *testing.T, h *host) { h.opts.Families.Families["qwen_vl"].MaxPromptBytes = 10 },
			"", StatusFail, "", ""},
		"a commit before PR #1292": {func(t *testing.T, h *host) {
			git(t, h.repo, "rm", "-q", "-r", "apps")
			git(t, h.repo, "commit", "-q", "-m", "before the server")
		}, "server at commit", StatusWarn, "has no apps/server/python/trtmc_server: TRTMC's server arrives with PR #1292", "at or after the merge of PR #1292"},
	} {
		t.Run(name, func(t *testing.T) {
			h := readyHost(t)
			tt.breakIt(t, h)
			r := Run(context.Background(), h.opts)
			if tt.subject == "" {
				c := byArea(r, "corpus", "vlm corpus for qwen_vl")
				require.NotNil(t, c)
				assert.Equal(t, StatusFail, c.Status)
				if name == "a prompt over the limit" {
					assert.Contains(t, c.Detail, "corpus entry car (car.png): its prompt is 23 bytes of UTF-8 text, over the server's limit of 10 bytes (--max-prompt-bytes)")
				} else {
					assert.Contains(t, c.Detail, "corpus entry car (car.png): its request is")
					assert.Contains(t, c.Detail, "over the server's limit of 1000 bytes (--max-body-bytes)")
				}
				assert.Contains(t, c.Fix, "raise family qwen_vl's max_body_bytes / max_prompt_bytes")
				assert.False(t, r.Ready)
				return
			}
			c := byArea(r, "trtmc", tt.subject)
			require.NotNil(t, c, "no trtmc %s check: %+v", tt.subject, r.Checks)
			assert.Equal(t, tt.status, c.Status, "%+v", c)
			assert.Contains(t, c.Detail, tt.detail)
			assert.Contains(t, c.Fix, tt.fix)
			assert.Equal(t, tt.status != StatusFail, r.Ready)
		})
	}
}

// sourceBuild turns the ready host into the other install form: TRTMC
// built from its checkout (build/trtmc-server, the launcher and its own
// worker; build/server/python/trtmc_server) and no wheel: PATH has the
// build first and the environment's python3, no console script.
func sourceBuild(t *testing.T, h *host) *trtmctest.SourceBuild {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, ".gitignore"), []byte("build/\n"), 0o644))
	git(t, h.repo, "add", ".gitignore")
	git(t, h.repo, "commit", "-q", "-m", "ignore the build")
	sb := trtmctest.NewSourceBuild(t, h.repo)
	path := strings.Replace(os.Getenv("PATH"), h.inst.Bin+string(os.PathListSeparator), "", 1)
	t.Setenv("PATH", sb.Path()+string(os.PathListSeparator)+path)
	for _, kv := range sb.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return sb
}

// Both install forms are a ready host: doctor names which one
// trtmc-server on PATH is, finds the worker that server uses, and the
// probe serves through it.
func TestTRTMCSourceBuild(t *testing.T) {
	h := readyHost(t)
	sb := sourceBuild(t, h)
	r := Run(context.Background(), h.opts)
	assert.True(t, r.Ready, "%+v", r.Checks)
	c := byArea(r, "trtmc", "trtmc-server")
	require.NotNil(t, c)
	assert.Equal(t, StatusOK, c.Status, "%+v", c)
	assert.Contains(t, c.Detail, sb.Native+" (a source build's launcher")
	c = byArea(r, "trtmc", "native worker")
	require.NotNil(t, c)
	assert.Equal(t, StatusOK, c.Status, "%+v", c)
	assert.Contains(t, c.Detail, sb.Native+" (launcher)")

	cs := Probe(context.Background(), h.opts, "qwen3-vl-2b")
	for _, s := range []string{"server", "request id", "answer", "record", "worker"} {
		c := probeCheck(cs, s)
		require.NotNil(t, c, "no probe %s check: %+v", s, cs)
		assert.Equal(t, StatusOK, c.Status, "%+v", c)
	}
	assert.Contains(t, probeCheck(cs, "worker").Detail, sb.Native+" ready")

	// A launcher whose build lacks server/python: its --help fails, named.
	require.NoError(t, os.RemoveAll(filepath.Join(sb.Build, "server")))
	r = Run(context.Background(), h.opts)
	c = byArea(r, "trtmc", "trtmc-server")
	require.NotNil(t, c)
	assert.Equal(t, StatusFail, c.Status)
	assert.Contains(t, c.Detail, "a native binary without server/python beside it")
}

func probeCheck(cs []Check, subject string) *Check {
	for i := range cs {
		if strings.HasSuffix(cs[i].Subject, ": "+subject) {
			return &cs[i]
		}
	}
	return nil
}

// doctor --probe proves the contract on the node with the strict fake
// TRTMC: the server of the family's own argv, one request with a chosen
// X-Request-ID (echo, an answer naming the served model, a record with the
// public fields), and the native worker's handshake. Each break names its
// fix.
func TestProbe(t *testing.T) {
	h := readyHost(t)
	cs := Probe(context.Background(), h.opts, "qwen3-vl-2b")
	for _, s := range []string{"server", "request id", "answer", "record", "worker"} {
		c := probeCheck(cs, s)
		require.NotNil(t, c, "no probe %s check: %+v", s, cs)
		assert.Equal(t, StatusOK, c.Status, "%+v", c)
	}
	assert.Contains(t, probeCheck(cs, "worker").Detail, "protocol_version 2")
	assert.Contains(t, probeCheck(cs, "server").Detail, "--max-body-bytes 15728640")

	for name, tt := range map[string]struct {
		env             []string
		subject, detail string
		fix             string
	}{
		"a server that ignores X-Request-ID": {[]string{"FAKE_TRTMC_SERVER_IDS=ignore"}, "request id",
			"it does not honour the client's id", "records.py RequestPolicy"},
		"a server without --records": {[]string{"FAKE_TRTMC_SERVER_VERSION=ddf1735f"}, "server",
			"did not become ready", "trtmc-server --help"},
		"answers naming another model": {[]string{"FAKE_TRTMC_SERVER_MODEL=internvl3-2b"}, "answer",
			`names model "internvl3-2b", not the served --model-name "qwen3-vl-2b"`, "serve the profile's model"},
		"a protocol-1 worker": {[]string{"FAKE_WORKER=protocol:1"}, "worker",
			"announces protocol_version 1", "protocol 2"},
		"a text-only worker": {[]string{"FAKE_WORKER=textonly"}, "worker",
			`not "image_text_generation"`, "--path cli"},
		"a record of another timing scope": {[]string{"FAKE_WORKER=scope:server_handler_wall"}, "record",
			`timing_scope "server_handler_wall", not public_task_call_wall`, "protocol-2 native worker"},
	} {
		t.Run(name, func(t *testing.T) {
			h := readyHost(t)
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			cs := Probe(context.Background(), h.opts, "qwen3-vl-2b")
			c := probeCheck(cs, tt.subject)
			require.NotNil(t, c, "no probe %s check: %+v", tt.subject, cs)
			assert.Equal(t, StatusFail, c.Status, "%+v", c)
			assert.Contains(t, c.Detail, tt.detail)
			assert.Contains(t, c.Fix, tt.fix)
		})
	}
}

// The probe sends the corpus's largest request, not its first: here the
// first entry is a tiny image and the second the 640x427 one. A server
// that counts the image into --max-prompt-bytes (whether the seeds' does
// is not public) refuses the largest: the probe names that limit, which
// the preflight, counting the question alone, could not.
func TestProbeSendsTheLargestRequest(t *testing.T) {
	h := readyHost(t)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 8, 8))))
	dir := filepath.Join(h.dir, "corpora", "vlm")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dot.png"), buf.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus.json"), []byte(`{"schema":"trtmc-qual/corpus/v1","entries":[`+
		`{"id":"dot","file":"dot.png","question":"What is this?"},{"id":"car","file":"car.png","question":"What colour is the car?"}]}`), 0o644))
	h.opts.Families.Families["qwen_vl"].MaxPromptBytes = 1500
	r := Run(context.Background(), h.opts)
	assert.Equal(t, StatusOK, byArea(r, "corpus", "vlm corpus for qwen_vl").Status, "the questions are within the limit")
	assert.Contains(t, byArea(r, "corpus", "vlm corpus for qwen_vl").Detail, "if the server counts the image into the prompt, entry car's")

	cs := Probe(context.Background(), h.opts, "qwen3-vl-2b")
	c := probeCheck(cs, "request")
	require.NotNil(t, c, "%+v", cs)
	assert.Equal(t, StatusOK, c.Status, "%+v", c)
	assert.Contains(t, c.Detail, "entry car, the corpus's largest request")

	t.Setenv("FAKE_TRTMC_SERVER_PROMPT_IMAGE", "count")
	cs = Probe(context.Background(), h.opts, "qwen3-vl-2b")
	c = probeCheck(cs, "request")
	require.NotNil(t, c, "%+v", cs)
	assert.Equal(t, StatusFail, c.Status, "%+v", c)
	assert.Contains(t, c.Detail, "entry car, the corpus's largest request")
	assert.Contains(t, c.Detail, "answered 413 (the prompt and system text are over the server's --max-prompt-bytes)")
	assert.Contains(t, c.Fix, "raise the family's max_prompt_bytes (passed as --max-prompt-bytes)")
}

// hostileConfig gives a checkout configuration that runs a command at
// every chance git gives it: an fsmonitor, a clean filter on every file,
// hooks, an external diff, a pager. Each command would create a file
// PWNED-<what> in dir.
func hostileConfig(t *testing.T, repo, dir string) {
	t.Helper()
	touch := func(what string) string { return "sh -c 'touch " + filepath.Join(dir, "PWNED-"+what) + "; cat'" }
	hooks := filepath.Join(dir, "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"post-index-change", "reference-transaction", "post-checkout", "pre-commit"} {
		require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\ntouch "+filepath.Join(dir, "PWNED-hook-"+h)+"\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("* filter=evil diff=evil\n"), 0o644))
	git(t, repo, "add", ".gitattributes")
	git(t, repo, "commit", "-q", "-m", "attributes")
	for k, v := range map[string]string{"core.fsmonitor": touch("fsmonitor"), "filter.evil.clean": touch("clean"),
		"filter.evil.smudge": touch("smudge"), "filter.evil.process": touch("process"), "diff.evil.textconv": touch("textconv"),
		"diff.external": touch("external-diff"), "core.pager": touch("pager"), "core.hooksPath": hooks} {
		git(t, repo, "config", k, v)
	}
	// Every file's stat data changes, so status must look at contents.
	past := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, string(filepath.Separator)+".git"+string(filepath.Separator)) {
			err = os.Chtimes(p, past, past)
		}
		return err
	}))
}

// doctor --repo runs git with the checkout's hooks and configuration
// disabled (issue 25, item 14): core.fsmonitor set to a command that would
// create a file used to run it. The checkout is still judged: clean here.
func TestDoctorRunsNoCommandOfTheCheckout(t *testing.T) {
	h := readyHost(t)
	pwned := t.TempDir()
	hostileConfig(t, h.repo, pwned)
	h.opts.Runner = aiperfRunner{version: "0.13.0"}
	r := Run(context.Background(), h.opts)
	c := byArea(r, "repo", "")
	require.NotNil(t, c)
	assert.Equal(t, StatusOK, c.Status, "%+v", c)
	assert.Contains(t, c.Detail, "clean")
	left, err := filepath.Glob(filepath.Join(pwned, "PWNED-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "a command of the checkout ran")

	// And an edit is still seen.
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "conftest.py"), []byte("# edited\n"), 0o644))
	r = Run(context.Background(), h.opts)
	assert.Contains(t, byArea(r, "repo", "").Detail, "dirty: 1 tracked file(s) differ")
	left, _ = filepath.Glob(filepath.Join(pwned, "PWNED-*"))
	assert.Empty(t, left)
}
