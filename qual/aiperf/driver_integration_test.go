//go:build integration

package aiperf

// The real-AIPerf tier: drives the project venv's aiperf 0.13.0 against
// trtmc-refserver for both endpoint types. Run with
//
//	go test -tags integration -run Integration ./qual/aiperf
//
// With -regen-fixtures it also copies the artifacts of the runs into
// testdata/ (see scripts/regen-aiperf-fixtures.sh).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

var regenFixtures = flag.Bool("regen-fixtures", false, "copy the integration runs' artifacts into testdata/")

const (
	itWarmup      = 5
	itMeasured    = 50
	itConcurrency = 4
	itSeed        = 1
	// Small corpus: the dataset cycles it (each entry is used ~18 times), and
	// the committed fixtures stay small.
	itCorpusCount = 3
)

type env struct {
	root, aiperf, tokenizer, refserver string
}

// itTemp holds what itEnv builds (refserver binary, tokenizer); TestMain
// removes it.
var itTemp string

func TestMain(m *testing.M) {
	code := m.Run()
	if itTemp != "" {
		_ = os.RemoveAll(itTemp)
	}
	os.Exit(code)
}

var (
	envOnce sync.Once
	envVal  env
	envErr  error
	envSkip string
)

// itEnv finds the venv's aiperf and the tokenizer and builds trtmc-refserver
// once per test binary. A missing AIPerf skips locally but fails under CI.
func itEnv(t *testing.T) env {
	t.Helper()
	envOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			envErr = err
			return
		}
		if itTemp, err = os.MkdirTemp("", "trtmc-aiperf-it-"); err != nil {
			envErr = err
			return
		}
		bin := os.Getenv("TRTMC_QUAL_AIPERF")
		if bin == "" {
			bin = filepath.Join(root, ".venv", "bin", "aiperf")
		}
		if _, err := os.Stat(bin); err != nil {
			envSkip = fmt.Sprintf("aiperf not found at %s (run scripts/setup-venv.sh or set TRTMC_QUAL_AIPERF): %v", bin, err)
			return
		}
		tok := os.Getenv("TRTMC_QUAL_TOKENIZER")
		if tok == "" {
			tok = filepath.Join(root, ".venv", "tokenizer")
		}
		if _, err := os.Stat(filepath.Join(tok, "tokenizer.json")); err != nil {
			// Build it next to the binary's temp files with the venv python.
			tok = filepath.Join(itTemp, "tokenizer")
			py := filepath.Join(filepath.Dir(bin), "python")
			out, err := exec.Command(py, filepath.Join(root, "scripts", "build-tokenizer.py"), "--out", tok).CombinedOutput()
			if err != nil {
				envErr = fmt.Errorf("build tokenizer: %v\n%s", err, out)
				return
			}
		}
		refBin := filepath.Join(itTemp, "trtmc-refserver")
		cmd := exec.Command("go", "build", "-o", refBin, "./cmd/trtmc-refserver")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			envErr = fmt.Errorf("go build ./cmd/trtmc-refserver: %v\n%s", err, out)
			return
		}
		envVal = env{root: root, aiperf: bin, tokenizer: tok, refserver: refBin}
	})
	if envSkip != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the real-AIPerf tier cannot run: %s", envSkip)
		}
		t.Skip(envSkip)
	}
	require.NoError(t, envErr)
	return envVal
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// refTarget is a running trtmc-refserver.
type refTarget struct {
	url, model, records, corpus string
}

var families = map[string]struct{ family, endpoint string }{
	endpoint.Chat:           {"ref-vlm", endpoint.Chat},
	endpoint.ImageRetrieval: {"ref-detect", endpoint.ImageRetrieval},
}

// startRefserver makes a bundle and corpus for the endpoint's family and
// serves it on a free loopback port until the test ends.
func startRefserver(t *testing.T, e env, ep, fault string) refTarget {
	t.Helper()
	return startRefserverEnv(t, e, ep, fault, nil)
}

// startRefserverEnv is startRefserver with extra environment for the
// server (TRTMC_SERVE_TOKEN makes it require a bearer token).
func startRefserverEnv(t *testing.T, e env, ep, fault string, serverEnv []string) refTarget {
	t.Helper()
	fam := families[ep].family
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.json")
	corpus := filepath.Join(dir, "corpus")
	records := filepath.Join(dir, "server-records.jsonl")
	run := func(args ...string) {
		out, err := exec.Command(e.refserver, args...).CombinedOutput()
		require.NoError(t, err, "trtmc-refserver %s:\n%s", strings.Join(args, " "), out)
	}
	run("make-bundle", "--family", fam, "--out", bundle)
	run("corpus", "--family", fam, "--out", corpus, "--count", fmt.Sprint(itCorpusCount))

	ready := newReadyWatcher()
	argv := []string{e.refserver, "serve", bundle, "--model-name", fam, "--host", "127.0.0.1", "--port", "0", "--records", records}
	if fault != "" {
		argv = append(argv, "--fault", fault)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := proc.OS{}.Start(ctx, proc.Spec{Name: "trtmc-refserver", Argv: argv, Env: serverEnv, Stderr: ready, Grace: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		_, _ = p.Stop()
	})
	var port int
	select {
	case port = <-ready.port:
	case <-p.Done():
		_, werr := p.Wait()
		t.Fatalf("trtmc-refserver exited during startup: %v", werr)
	case <-time.After(30 * time.Second):
		t.Fatalf("trtmc-refserver: no server_ready within 30s; stderr:\n%s", p.StderrTail())
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	_, err = proc.WaitReady(ctx, p, url+"/health/ready", 30*time.Second)
	require.NoError(t, err)
	return refTarget{url: url, model: fam, records: records, corpus: corpus}
}

// readyWatcher scans the server's JSON-lines stderr for server_ready.
type readyWatcher struct {
	mu   sync.Mutex
	buf  []byte
	port chan int
	sent bool
}

func newReadyWatcher() *readyWatcher { return &readyWatcher{port: make(chan int, 1)} }

func (w *readyWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		var ev struct {
			Event string `json:"event"`
			Port  int    `json:"port"`
		}
		if !w.sent && json.Unmarshal(line, &ev) == nil && ev.Event == "server_ready" {
			w.port <- ev.Port
			w.sent = true
		}
	}
	return len(p), nil
}

// serverRecord is one line of trtmc-refserver's --records file.
type serverRecord struct {
	RequestID  string `json:"request_id"`
	Route      string `json:"route"`
	Status     int    `json:"status"`
	ImageBytes int    `json:"image_bytes"`
}

func readServerRecords(t *testing.T, path string) []serverRecord {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []serverRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r serverRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

func itConfig(e env, tgt refTarget, ep, inputFile, artifactDir string, ds *Dataset) Config {
	c := Config{
		Bin:            e.aiperf,
		EndpointType:   ep,
		URL:            tgt.url,
		Model:          tgt.model,
		InputFile:      inputFile,
		ArtifactDir:    artifactDir,
		Warmup:         itWarmup,
		Measured:       itMeasured,
		Concurrency:    itConcurrency,
		Seed:           itSeed,
		RequestTimeout: 60 * time.Second,
		Deadline:       3 * time.Minute,
		Grace:          30 * time.Second,
		Dataset:        ds,
	}
	if ep == endpoint.Chat {
		c.Tokenizer = e.tokenizer
		c.ExtraInputs = map[string]any{"max_tokens": 16, "temperature": 0}
		c.OutputsJSON = true // cover outputs.json on one endpoint type
	}
	return c
}

func TestIntegrationProfile(t *testing.T) {
	e := itEnv(t)
	for _, ep := range []string{endpoint.Chat, endpoint.ImageRetrieval} {
		t.Run(ep, func(t *testing.T) {
			t.Parallel()
			tgt := startRefserver(t, e, ep, "")
			entries, err := LoadCorpus(tgt.corpus)
			require.NoError(t, err)
			work := t.TempDir()
			ds, err := WriteDataset(filepath.Join(work, "dataset.jsonl"), ep, entries, itWarmup+itMeasured)
			require.NoError(t, err)
			cfg := itConfig(e, tgt, ep, ds.Path, filepath.Join(work, "artifacts"), ds)

			d := &Driver{Runner: proc.OS{}, Stderr: testWriter{t}}
			start := time.Now()
			run, err := d.Run(context.Background(), cfg)
			require.NoError(t, err)
			t.Logf("aiperf %s run took %s", ep, time.Since(start).Round(time.Millisecond))
			require.Empty(t, run.Problems, "fail-closed problems")
			assert.Equal(t, 0, run.ExitCode)
			assert.Equal(t, DefaultVersion, run.Version)
			assert.Equal(t, Argv(cfg), run.Argv, "the exact argv is recorded")
			if ep == endpoint.ImageRetrieval {
				assert.NotContains(t, run.Argv, "--tokenizer")
			}

			// Exactly 5 warmup and 50 profiling records.
			assert.Len(t, run.Phase(PhaseWarmup), itWarmup)
			assert.Len(t, run.Phase(PhaseProfiling), itMeasured)

			// Every x_request_id appears exactly once in the server's records,
			// and the server saw nothing else.
			srv := readServerRecords(t, tgt.records)
			seen := map[string]int{}
			for _, r := range srv {
				seen[r.RequestID]++
			}
			assert.Len(t, srv, itWarmup+itMeasured, "server records")
			imageBytes := map[string]int{}
			for _, r := range srv {
				imageBytes[r.RequestID] = r.ImageBytes
				assert.Equal(t, 200, r.Status)
			}
			fileSize := map[string]int{}
			for _, en := range entries {
				st, err := os.Stat(en.ImagePath)
				require.NoError(t, err)
				fileSize[en.ID] = int(st.Size())
			}

			// Every conversation_id maps to its dataset entry, each line once.
			convs := map[string]bool{}
			var lat []float64
			for _, q := range run.Requests {
				assert.Equal(t, 1, seen[q.RequestID], "x_request_id %s in server records", q.RequestID)
				s, line, ok := ds.Lookup(q.ConversationID)
				require.True(t, ok, "conversation %s not in the dataset", q.ConversationID)
				assert.Equal(t, s.EntryID, q.EntryID)
				assert.False(t, convs[q.ConversationID], "conversation %s sent twice", q.ConversationID)
				convs[q.ConversationID] = true
				// Sequential sampling: warmup takes lines 1-5, profiling 6-55.
				if q.Phase == PhaseWarmup {
					assert.LessOrEqual(t, line, itWarmup, "warmup request on line %d", line)
				} else {
					assert.Greater(t, line, itWarmup, "profiling request on line %d", line)
				}
				// The exact image file bytes were sent.
				assert.Equal(t, fileSize[q.EntryID], imageBytes[q.RequestID], "image bytes of %s", q.RequestID)
				assert.Equal(t, fileSize[q.EntryID], len(payloadImage(t, q.Payload)), "payload image of %s", q.RequestID)
				assert.Equal(t, 200, q.HTTPStatus)
				assert.NotEmpty(t, q.Response)
				// --export-http-trace: the server's X-Request-ID echo is in
				// the record, warmup included.
				assert.Equal(t, EchoMatch, q.Echo, "echo of %s (%s)", q.RequestID, q.Phase)
				if q.Phase == PhaseProfiling {
					require.NotNil(t, q.LatencyMs)
					lat = append(lat, *q.LatencyMs)
				}
			}
			assert.Len(t, convs, itWarmup+itMeasured)

			// The parsed p50/p95 equal the summary's, bit for bit.
			m, ok := run.Summary.Metric("request_latency")
			require.True(t, ok)
			got := LatencyPercentilesMs(lat, 50, 95)
			require.NotNil(t, m.P50)
			require.NotNil(t, m.P95)
			assert.Equal(t, *m.P50, got[0], "p50")
			assert.Equal(t, *m.P95, got[1], "p95")

			for _, name := range []string{FileStdout, FileStderr, FileLog} {
				_, err := os.Stat(filepath.Join(cfg.ArtifactDir, name))
				assert.NoError(t, err, "%s kept", name)
			}
			if ep == endpoint.Chat {
				for _, q := range run.Phase(PhaseProfiling) {
					assert.NotNil(t, q.ResponseText, "outputs.json response_text for %s", q.RequestID)
				}
			}
			if *regenFixtures {
				saveFixture(t, e, cfg.ArtifactDir, ep, ds, run, cfg)
			}
		})
	}
}

// payloadImage decodes the one data URL in a chat or /v1/infer payload.
func payloadImage(t *testing.T, payload json.RawMessage) []byte {
	t.Helper()
	var body struct {
		Messages []struct {
			Content []struct {
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
		Input []struct {
			URL string `json:"url"`
		} `json:"input"`
	}
	require.NoError(t, json.Unmarshal(payload, &body))
	var url string
	for _, m := range body.Messages {
		for _, c := range m.Content {
			if c.ImageURL.URL != "" {
				url = c.ImageURL.URL
			}
		}
	}
	if len(body.Input) == 1 {
		url = body.Input[0].URL
	}
	_, b64, ok := strings.Cut(url, ";base64,")
	require.True(t, ok, "payload image is not a base64 data URL")
	data, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return data
}

// TestIntegrationAllFailed: every request answers 500. AIPerf exits 1,
// writes no summary and leaves raw_records/ unmerged; the driver names it.
func TestIntegrationAllFailed(t *testing.T) {
	e := itEnv(t)
	t.Parallel()
	tgt := startRefserver(t, e, endpoint.ImageRetrieval, "http-500-every=1")
	entries, err := LoadCorpus(tgt.corpus)
	require.NoError(t, err)
	work := t.TempDir()
	ds, err := WriteDataset(filepath.Join(work, "dataset.jsonl"), endpoint.ImageRetrieval, entries, itWarmup+itMeasured)
	require.NoError(t, err)
	cfg := itConfig(e, tgt, endpoint.ImageRetrieval, ds.Path, filepath.Join(work, "artifacts"), ds)
	run, err := (&Driver{Runner: proc.OS{}, Stderr: testWriter{t}}).Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 1, run.ExitCode)
	for _, code := range []string{ProblemExitStatus, ProblemAllFailed, ProblemSummaryMissing, ProblemNotReady} {
		assert.True(t, run.HasProblem(code), "problem %s in %v", code, run.Problems)
	}
	assert.Error(t, run.Err())
	assert.Len(t, run.Requests, itWarmup+itMeasured)
	for _, q := range run.Requests {
		assert.Equal(t, 500, q.HTTPStatus)
		require.NotNil(t, q.Error)
	}
	if *regenFixtures {
		saveFixture(t, e, cfg.ArtifactDir, "all_failed", ds, run, cfg)
	}
}

// TestIntegrationDeadline: a slow server and a short deadline. The driver
// sends SIGINT; AIPerf still writes its results, marked cancelled and short.
func TestIntegrationDeadline(t *testing.T) {
	e := itEnv(t)
	t.Parallel()
	tgt := startRefserver(t, e, endpoint.ImageRetrieval, "slow-ms=300")
	entries, err := LoadCorpus(tgt.corpus)
	require.NoError(t, err)
	work := t.TempDir()
	ds, err := WriteDataset(filepath.Join(work, "dataset.jsonl"), endpoint.ImageRetrieval, entries, itWarmup+itMeasured)
	require.NoError(t, err)
	cfg := itConfig(e, tgt, endpoint.ImageRetrieval, ds.Path, filepath.Join(work, "artifacts"), ds)
	cfg.Concurrency = 1
	cfg.Deadline = 12 * time.Second
	start := time.Now()
	run, err := (&Driver{Runner: proc.OS{}, Stderr: testWriter{t}}).Run(context.Background(), cfg)
	require.NoError(t, err)
	t.Logf("stopped run took %s", time.Since(start).Round(time.Millisecond))
	assert.Less(t, time.Since(start), cfg.Deadline+cfg.Grace+DefaultFinalizeWait)
	assert.True(t, run.HasProblem(ProblemDeadline), "%v", run.Problems)
	assert.False(t, run.Complete())
	// AIPerf gets SIGINT first. Usually it stops at once and writes a
	// cancelled summary with a short count. Under load its graceful stop
	// can also never finish (seen in CI: "Press Ctrl+C again" and nothing
	// more for 30 s); then the group is SIGKILLed after the grace period and
	// the missing exports are named. Either way the run is never complete.
	if run.Summary != nil {
		assert.True(t, run.Summary.WasCancelled)
		assert.True(t, run.HasProblem(ProblemRunCancelled), "%v", run.Problems)
		assert.True(t, run.HasProblem(ProblemCount), "%v", run.Problems)
	} else {
		assert.True(t, run.HasProblem(ProblemSummaryMissing), "%v", run.Problems)
		assert.True(t, run.HasProblem(ProblemExitStatus), "SIGKILL is reported: %v", run.Problems)
	}
}

// TestIntegrationVersion checks the real `aiperf --version`.
func TestIntegrationVersion(t *testing.T) {
	e := itEnv(t)
	d := &Driver{Runner: proc.OS{}}
	vc, err := d.CheckVersion(context.Background(), e.aiperf, DefaultVersion, false)
	require.NoError(t, err)
	assert.Equal(t, DefaultVersion, vc.Got)

	_, err = d.CheckVersion(context.Background(), e.aiperf, "0.12.0", false)
	var se *SetupError
	require.ErrorAs(t, err, &se)

	vc, err = d.CheckVersion(context.Background(), e.aiperf, "0.12.0", true)
	require.NoError(t, err)
	assert.True(t, vc.MismatchAllowed)

	_, err = d.CheckVersion(context.Background(), filepath.Join(t.TempDir(), "no-aiperf"), DefaultVersion, false)
	require.ErrorAs(t, err, &se)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fixtureFiles are the artifacts committed as parser fixtures.
var fixtureFiles = []string{
	FileReadyMarker, FileSummary, FileRecords, FileRaw, FileOutputs, FileInputs, FilePhaseSummary,
}

// saveFixture copies a real run's artifacts to testdata/<name>/, with the
// dataset description and the argv that produced them. The JSONL exports and
// inputs/outputs.json (base64 images, repeated) are stored gzipped; the
// fixture loader of the unit tests restores the exact bytes.
func saveFixture(t *testing.T, e env, artifactDir, name string, ds *Dataset, run *Run, cfg Config) {
	t.Helper()
	dst := filepath.Join(e.root, "qual", "aiperf", "testdata", name)
	require.NoError(t, os.RemoveAll(dst))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	copyFile := func(rel string) {
		data, err := os.ReadFile(filepath.Join(artifactDir, rel))
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		require.NoError(t, err)
		out := filepath.Join(dst, rel)
		if strings.HasSuffix(rel, ".jsonl") || rel == FileInputs || rel == FileOutputs {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b) // no name, zero mtime: deterministic
			_, err = zw.Write(data)
			require.NoError(t, err)
			require.NoError(t, zw.Close())
			data, out = b.Bytes(), out+".gz"
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, data, 0o644))
	}
	for _, f := range fixtureFiles {
		copyFile(f)
	}
	shards, _ := filepath.Glob(filepath.Join(artifactDir, DirRawShards, "*"))
	for _, s := range shards {
		copyFile(filepath.Join(DirRawShards, filepath.Base(s)))
	}
	meta := fixtureMeta{
		Argv:     run.Argv,
		Version:  run.Version,
		ExitCode: run.ExitCode,
		Warmup:   cfg.Warmup,
		Measured: cfg.Measured,
		Dataset:  *ds,
	}
	meta.Dataset.Path = filepath.Base(ds.Path)
	b, err := json.MarshalIndent(meta, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "fixture.json"), append(b, '\n'), 0o644))
	t.Logf("wrote fixture %s", dst)
}

// TestIntegrationGPUTelemetry runs the real AIPerf with its NVML collector
// on. Without an NVIDIA GPU (CI, laptops) the run must still complete and
// report no GPU; with one, the summary's telemetry_data holds GPU 0's
// utilisation, memory and power over the profiling phase.
func TestIntegrationGPUTelemetry(t *testing.T) {
	e := itEnv(t)
	t.Parallel()
	ep := endpoint.ImageRetrieval
	tgt := startRefserver(t, e, ep, "")
	entries, err := LoadCorpus(tgt.corpus)
	require.NoError(t, err)
	work := t.TempDir()
	ds, err := WriteDataset(filepath.Join(work, "dataset.jsonl"), ep, entries, itWarmup+itMeasured)
	require.NoError(t, err)
	cfg := itConfig(e, tgt, ep, ds.Path, filepath.Join(work, "artifacts"), ds)
	cfg.GPUTelemetry = GPUTelemetryPyNVML
	run, err := (&Driver{Runner: proc.OS{}, Stderr: testWriter{t}}).Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Empty(t, run.Problems)
	assert.Contains(t, strings.Join(run.Argv, " "), "--gpu-telemetry pynvml")
	assert.NotContains(t, run.Argv, "--no-gpu-telemetry")
	assert.Len(t, run.Phase(PhaseProfiling), itMeasured, "telemetry changes nothing of the measurement")
	raw, err := os.ReadFile(filepath.Join(cfg.ArtifactDir, FileSummary))
	require.NoError(t, err)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &top))
	t.Logf("telemetry_data: %.600s", top["telemetry_data"])
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		_, ok := run.Summary.Telemetry.GPU("", 0)
		assert.False(t, ok, "no GPU on this host, none reported")
		return
	}
	g, ok := run.Summary.Telemetry.GPU("", 0)
	require.True(t, ok, "GPU 0 in telemetry_data")
	for _, k := range []string{"nvidia_gpu_utilization", "nvidia_memory_used", "nvidia_power_usage"} {
		m, ok := g.Metrics[k]
		if assert.True(t, ok, k) {
			assert.NotNil(t, m.Avg, k)
		}
	}
}
