package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc/proctest"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// TestSchemasValidateDoctorOutput: what `doctor --format json` prints on a
// host where nothing is ready (every program fails, no GPU, a TRTMC
// checkout that is not a git repository) matches its schema, and so does a
// report with passing checks.
func TestSchemasValidateDoctorOutput(t *testing.T) {
	set := loadSchemas(t)
	inv := repoFile("inventory", "reference.yaml")
	fams := repoFile("families", "families.yaml")
	for _, tc := range []struct {
		name  string
		fake  func(r *proctest.FakeRunner)
		ready bool
	}{
		{"nothing works", func(r *proctest.FakeRunner) {
			r.Expect(`.*`).Always().Exit(127, "not found")
		}, false},
		{"programs answer", func(r *proctest.FakeRunner) {
			r.Expect(`aiperf --version$`).Always().Stdout("aiperf 0.13.0\n")
			r.Expect(`^git `).Always().Exit(128, "fatal: not a git repository")
			r.Expect(`.*`).Always().Stdout("v1.0\n")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &proctest.FakeRunner{}
			tc.fake(r)
			io, stdout, stderr := testIO()
			f := newFactory(io, nil)
			env := map[string]string{"TRTMC_QUAL_OUT": t.TempDir()}
			f.Getenv = func(k string) string { return env[k] }
			f.Runner = r
			code := execute(context.Background(), f, []string{"doctor", "--inventory", inv, "--families", fams,
				"--repo", t.TempDir(), "--min-free-gib", "0", "--format", "json"})
			out, errOut := stdout.String(), stderr.String()
			assert.Equal(t, exitSetup, code, errOut)
			require.NotEmpty(t, out, errOut)
			var rep struct {
				Ready  bool `json:"ready"`
				Checks []struct {
					Status string `json:"status"`
				} `json:"checks"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			assert.Equal(t, tc.ready, rep.Ready)
			assert.NotEmpty(t, rep.Checks)
			set.validate(t, "doctor", "doctor --format json ("+tc.name+")", []byte(out))
		})
	}
}

// TestSchemasValidateWriters runs the code that writes each evidence and
// corpus file on unit fixtures and validates what it wrote: corpus init's
// corpus.json, the dataset.jsonl made from it, the join's joined.jsonl and
// mismatches.jsonl over a synthetic checkpoint with planted faults,
// report --rejudge's result.rejudged.json, and a group's .lock.
func TestSchemasValidateWriters(t *testing.T) {
	set := loadSchemas(t)
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	require.NoError(t, err)

	// corpus init, then the dataset AIPerf is given.
	corpus := t.TempDir()
	for _, name := range []string{"a.png", "b.png"} {
		require.NoError(t, os.WriteFile(filepath.Join(corpus, name), png, 0o644))
	}
	questions := filepath.Join(t.TempDir(), "q.jsonl")
	require.NoError(t, os.WriteFile(questions, []byte(`{"file":"a.png","question":"What is it?"}`+"\n"+`{"id":"b","question":"And this?"}`+"\n"), 0o644))
	code, _, errOut := runCLI(t, nil, "corpus", "init", corpus, "--questions", questions, "--source", "two pixels")
	require.Equal(t, exitOK, code, errOut)
	data, err := os.ReadFile(filepath.Join(corpus, "corpus.json"))
	require.NoError(t, err)
	set.validate(t, "corpus", "corpus init", data)
	entries, err := aiperf.LoadCorpus(corpus)
	require.NoError(t, err)
	for _, ep := range []string{endpoint.Chat, endpoint.ImageRetrieval} {
		path := filepath.Join(t.TempDir(), "dataset.jsonl")
		_, err := aiperf.WriteDataset(path, ep, entries, 5)
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, 5, bytes.Count(data, []byte("\n")))
		set.validate(t, "dataset", path, data)
	}

	// The join over synthetic checkpoints: with every fault the generator
	// plants (each join status), and a clean one with one native answer
	// changed (a mismatch).
	join := func(dir, family string, n int) (*streamjoin.Result, []byte, []byte) {
		t.Helper()
		cfg, err := families.Load(repoFile("families", "families.yaml"))
		require.NoError(t, err)
		fam := cfg.Families[family]
		require.NotNil(t, fam, family)
		reg := families.DefaultRegistry()
		var joined, mism bytes.Buffer
		res, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(dir), streamjoin.Options{
			Semantics: &fam.Semantics, Route: fam.Route, Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator],
			Expected: map[string]int{verdict.PhaseWarmup: 5, verdict.PhaseMeasured: n - 5}, Joined: &joined, Mismatches: &mism})
		require.NoError(t, err)
		set.validate(t, "joined", family+" joined.jsonl", joined.Bytes())
		set.validate(t, "mismatches", family+" mismatches.jsonl", mism.Bytes())
		return res, joined.Bytes(), mism.Bytes()
	}
	for _, family := range []string{synth.FamilyVLM, synth.FamilyDetect} {
		dir := t.TempDir()
		_, err := synth.Write(dir, synth.Config{Requests: 2000, Family: family, Seed: 5, ImageMin: 64, ImageMax: 128})
		require.NoError(t, err)
		res, joined, _ := join(dir, family, 2000)
		assert.Less(t, res.ByPhase[verdict.PhaseMeasured].Matched, 1995, "faults were planted")
		assert.Equal(t, 2000, bytes.Count(joined, []byte("\n")))
	}
	dir := t.TempDir()
	_, err = synth.Write(dir, synth.Config{Requests: 55, Seed: 3, NoFaults: true, ImageMin: 64, ImageMax: 128})
	require.NoError(t, err)
	native := filepath.Join(dir, "native_answers.jsonl")
	data, err = os.ReadFile(native)
	require.NoError(t, err)
	changed := bytes.Replace(data, []byte(`"confidence":0.9`), []byte(`"confidence":0.1`), 1)
	require.NotEqual(t, data, changed)
	require.NoError(t, os.WriteFile(native, changed, 0o644))
	res, _, mism := join(dir, synth.FamilyDetect, 55)
	mismatched := res.ByPhase[verdict.PhaseWarmup].Mismatched + res.ByPhase[verdict.PhaseMeasured].Mismatched
	assert.Equal(t, 1, mismatched)
	assert.Equal(t, 1, bytes.Count(mism, []byte("\n")))

	// report --rejudge writes result.rejudged.json beside each row.
	root := t.TempDir()
	dir = filepath.Join(root, "bench", "synth")
	exp, err := synth.Write(dir, synth.Config{Requests: 55, Seed: 3, NoFaults: true, ImageMin: 64, ImageMax: 128})
	require.NoError(t, err)
	require.NoError(t, synth.Seal(dir, "bench", "synth", exp))
	code, _, errOut = runCLI(t, nil, "report", "--from", root, "--group", "bench", "--rejudge", "--format", "json")
	require.Equal(t, exitOK, code, errOut)
	data, err = os.ReadFile(filepath.Join(dir, reports.RejudgedFile))
	require.NoError(t, err)
	set.validate(t, "result", reports.RejudgedFile, data)

	// A group's lock file names its holder.
	gdir := t.TempDir()
	lock, err := evidence.LockDir(gdir, evidence.ThisProcess(time.Now()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Unlock() })
	data, err = os.ReadFile(filepath.Join(gdir, evidence.LockFile))
	require.NoError(t, err)
	set.validate(t, "lock", evidence.LockFile, data)
}

// TestSchemasValidateAdapterOutputs: the files the TRTMC adapter verbs
// write (against the fake trtmc programs) match their schemas:
// native_answers.jsonl and native_meta.json of a run that answers and of
// one whose worker dies (error lines, a fatal meta), correctness.json of a
// passing and a failing case, and the bundle receipt.
func TestSchemasValidateAdapterOutputs(t *testing.T) {
	set := loadSchemas(t)
	trtmctest.OnPath(t)
	d := t.TempDir()
	bundle := filepath.Join(d, "m.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("b"), 0o644))
	in := filepath.Join(d, "native_requests.jsonl")
	var lines bytes.Buffer
	for _, id := range []string{"r1", "r2"} {
		lines.WriteString(`{"request_id":"` + id + `","route":"/v1/infer","payload":{"input":[{"type":"image_url","url":"data:image/png;base64,` + onePixelPNG + `"}]}}` + "\n")
	}
	require.NoError(t, os.WriteFile(in, lines.Bytes(), 0o644))
	data, err := os.ReadFile(in)
	require.NoError(t, err)
	set.validate(t, "native-requests", in, data)

	for _, tc := range []struct {
		worker string
		want   exitCode
	}{{"", exitOK}, {"crash:r2", exitFailed}} {
		t.Setenv("FAKE_WORKER", tc.worker)
		out, meta := filepath.Join(t.TempDir(), "native_answers.jsonl"), filepath.Join(t.TempDir(), "native_meta.json")
		code, _, errOut := runCLI(t, nil, "adapter", "native", "--task", "detect", "--worker-op", "detect", "--bundle", bundle,
			"--requests", in, "--out", out, "--meta", meta)
		require.Equal(t, tc.want, code, errOut)
		for file, schema := range map[string]string{out: "native-answers", meta: "native-meta"} {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NotEmpty(t, data, file)
			set.validate(t, schema, "adapter native (worker "+tc.worker+") "+filepath.Base(file), data)
		}
	}
	t.Setenv("FAKE_WORKER", "")

	for _, pytest := range []string{"", "fail"} {
		t.Setenv("FAKE_PYTEST", pytest)
		dir := t.TempDir()
		code, _, errOut := runCLI(t, map[string]string{"TRTMC_REPO": d}, "adapter", "correctness", "--profile", "m", "--bundle", bundle,
			"--engine-dir", filepath.Join(dir, "e"), "--artifacts-dir", filepath.Join(dir, "a"), "--out", filepath.Join(dir, "c.json"), "--",
			"pytest", "t.py", "--e2e-model", "m", "--engine-dir", filepath.Join(dir, "e"), "--e2e-artifacts-dir", filepath.Join(dir, "a"))
		require.Contains(t, []exitCode{exitOK, exitFailed}, code, errOut)
		data, err := os.ReadFile(filepath.Join(dir, "c.json"))
		require.NoError(t, err)
		set.validate(t, "correctness", "adapter correctness (pytest "+pytest+")", data)
	}

	code, _, errOut := runCLI(t, nil, "adapter", "bundle", "--profile", "m", "--bundle", bundle)
	require.Equal(t, exitOK, code, errOut)
	data, err = os.ReadFile(bundle + ".receipt.json")
	require.NoError(t, err)
	set.validate(t, "bundle-receipt", "adapter bundle", data)
}
