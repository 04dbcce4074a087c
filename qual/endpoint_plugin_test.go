package qual

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/proc/proctest"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
)

// toyCaption is an endpoint type of this test alone: a captioner asked to
// describe an image, with its own dataset text, AIPerf flag, request body
// and corpus rule. Nothing of the product knows it; registering it is all
// it takes for the inventory, families.yaml, the preflight, the AIPerf
// stage and the join's counts to carry it.
type toyCaption struct{}

const toyName = "toy_caption"

func (toyCaption) Name() string          { return toyName }
func (toyCaption) NeedsTokenizer() bool  { return false }
func (toyCaption) TakesGeneration() bool { return false }
func (toyCaption) CheckEntry(q string) *endpoint.EntryProblem {
	if q == "" {
		return &endpoint.EntryProblem{Problem: "has no caption prompt", Need: "a caption corpus needs one prompt per image", Fix: "give each image a prompt"}
	}
	return nil
}
func (toyCaption) LineText(r endpoint.Request) string { return "caption: " + r.Question }
func (toyCaption) Argv(tokenizer string) []string     { return []string{"--toy-mode", "caption"} }
func (toyCaption) Body(r endpoint.Request, model string, _ map[string]any) ([]byte, error) {
	return endpoint.CompactJSON(map[string]any{"model": model, "prompt": r.Question, "image": r.Image})
}
func (toyCaption) DefaultExtractor() string { return "openai-chat-text" }
func (toyCaption) Counts() endpoint.Count   { return endpoint.Tokens }

const toyInventory = `schema: trtmc-qual/inventory/v1
groups:
  toys:
    workload:
      endpoint_type: toy_caption
      warmup: 5
      measured: 50
      concurrency: 4
      seed: 1
      dataset: {corpus: corpus}
    profiles:
      - id: toy-small
        checkpoint: toy/small
        family: toy
        task: captioning
        kind: normal
        precision: fp32
        parallelism: {tp: 1}
        bundle: {path: toy.bundle, sha256: BUNDLE_SHA}
        hardware: [cpu]
        status: implemented
`

const toyFamilies = `schema: trtmc-qual/families/v1
families:
  toy:
    task: captioning
    endpoint_type: toy_caption
    route: /v1/caption
    server: ["toy-server", "{bundle}", "--port", "{port}", "--max-body-bytes", "{max_body_bytes}"]
    readiness: "http://{host}:{port}/ready"
    native: ["toy-native", "{native_in}", "{native_out}"]
    extractor: openai-chat-text
    comparator: exact
    max_body_bytes: 1048576
`

// TestAThirdEndpointTypeRunsThroughThePipeline registers a third endpoint
// type from the test and runs a checkpoint of it through the unit tier of
// the pipeline: the inventory and families.yaml accept it (and list it
// where they name the types), the real preflight holds the corpus to the
// type's body limit with the type's own bodies, the real AIPerf stage
// writes the type's dataset lines and passes its argv extras to AIPerf
// (a FakeRunner playing a recorded AIPerf run), and the join counts what
// the type says it counts.
func TestAThirdEndpointTypeRunsThroughThePipeline(t *testing.T) {
	t.Cleanup(endpoint.Register(toyCaption{}))
	dir := t.TempDir()
	invPath, famPath := filepath.Join(dir, "inventory.yaml"), filepath.Join(dir, "families.yaml")
	bundle := []byte("toy weights")
	invText := strings.Replace(toyInventory, "BUNDLE_SHA", fmt.Sprintf("%x", sha256.Sum256(bundle)), 1)
	require.NoError(t, os.WriteFile(invPath, []byte(invText), 0o644))
	require.NoError(t, os.WriteFile(famPath, []byte(toyFamilies), 0o644))
	fams, err := families.Load(famPath)
	require.NoError(t, err, "families.yaml takes the registered type")
	inv, err := inventory.Load([]string{invPath}, func(string) bool { return true })
	require.NoError(t, err, "the inventory takes the registered type")
	bad, probs := inventory.Parse(invPath, []byte(strings.Replace(invText, "endpoint_type: toy_caption", "endpoint_type: toy", 1)))
	require.Empty(t, probs)
	assert.Contains(t, inventory.Validate(bad, nil).Error(), `inventory.yaml:5: groups.toys.workload.endpoint_type: must be "chat", "image_retrieval" or "toy_caption", got "toy"`,
		"the message names every registered type, the test's too")

	// The corpus of the recorded AIPerf run (three images, 5 + 50 lines)
	// with a prompt each, and a bundle.
	corpus := filepath.Join(dir, "corpus")
	entries := writeToyCorpus(t, corpus, "img-0000", "img-0001", "img-0002")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "toy.bundle"), bundle, 0o644))

	runner := &proctest.FakeRunner{}
	var lines []aiperf.DatasetLine
	runner.Expect(`^aiperf profile --endpoint-type toy_caption `).Do(func(_ context.Context, s proc.Spec) (proc.Result, error) {
		assert.Equal(t, []string{"--toy-mode", "caption"}, argAfter(s.Argv, "--toy-mode", 2), "the type's argv extras reach AIPerf")
		assert.NotContains(t, s.Argv, "--tokenizer", "the type needs no tokenizer")
		lines = readDataset(t, argAfter(s.Argv, "--input-file", 2)[1])
		playRecordedRun(t, argAfter(s.Argv, "--artifact-dir", 2)[1])
		return proc.Result{}, nil
	})
	t.Cleanup(func() { assert.NoError(t, runner.Verify()) })

	server := stageDef{name: "server", run: func(cr *checkpointRun, _ context.Context) error {
		cr.port = 9
		cr.server = proctest.NewFakeProcess(proc.Spec{Name: "toy-server"})
		return nil
	}}
	var log bytes.Buffer
	g := inv.Groups["toys"]
	e := &groupRun{opts: Options{Inventory: inv, Families: fams, Out: filepath.Join(dir, "out"), Now: time.Now, Log: &log,
		Runner: runner, AIPerf: AIPerfOptions{Bin: "aiperf", Version: "0.13.0"}, Security: SecurityOptions{Host: "127.0.0.1"},
		Provenance: ProvenanceOptions{HarnessVersion: "test", HarnessCommit: "test"}},
		group: g, driver: &aiperf.Driver{Runner: runner}, aiperf: aiperf.VersionCheck{Got: "0.13.0", Want: "0.13.0"},
		stages: []stageDef{{name: "preflight", run: (*checkpointRun).preflight}, server, {name: "aiperf", run: (*checkpointRun).aiperf}}}
	res := e.checkpoint(context.Background(), g.Profiles[0], Slot{Name: "cpu0"}, placement{})

	assert.Equal(t, []string{"preflight ok", "server ok", "aiperf ok"}, statuses(res), "%+v", res.Reasons)
	assert.Equal(t, toyName, res.Endpoint)
	assert.Equal(t, toyName, res.Answers.EndpointType)

	// The preflight measured the type's own bodies against the limit.
	var largest int
	for _, en := range entries {
		b, err := aiperf.RequestBody(toyName, en, "toy-small", nil)
		require.NoError(t, err)
		require.True(t, json.Valid(b))
		largest = max(largest, len(b))
	}
	assert.Contains(t, log.String(), "the largest request is "+strconv.Itoa(largest)+" bytes")

	// The dataset AIPerf read is the type's: one line per request, the
	// type's text, the image a data URL.
	require.Len(t, lines, 55)
	assert.Equal(t, "img-0001#0", lines[1].SessionID)
	assert.Equal(t, "caption: what is in image img-0001?", lines[1].Text)
	assert.True(t, strings.HasPrefix(lines[1].Image, "data:image/png;base64,"))

	// The join counts what the type counts: tokens, not boxes.
	jr := streamjoin.Result{OutputTokens: 17, Boxes: 4}
	jr.Apply(res)
	require.NotNil(t, res.OutputTokens)
	assert.Equal(t, 17, *res.OutputTokens)
	assert.Nil(t, res.Boxes)

	// Without the type, the same inventory names the types there are.
	_, err = aiperf.RequestBody("toy_other", entries[0], "m", nil)
	assert.ErrorContains(t, err, `unsupported endpoint type "toy_other"`)
}

// TestAThirdEndpointTypesCorpusRule: the dataset writer holds every entry
// to the type's own rule before writing a line.
func TestAThirdEndpointTypesCorpusRule(t *testing.T) {
	t.Cleanup(endpoint.Register(toyCaption{}))
	dir := t.TempDir()
	entries := writeToyCorpus(t, filepath.Join(dir, "corpus"), "a", "b")
	entries[1].Question = ""
	_, err := aiperf.WriteDataset(filepath.Join(dir, "d.jsonl"), toyName, entries, 2)
	assert.EqualError(t, err, "write dataset: corpus entry b has no caption prompt: a caption corpus needs one prompt per image")
	assert.NoFileExists(t, filepath.Join(dir, "d.jsonl"))
}

// writeToyCorpus writes a qual corpus of one small PNG per id, each with
// the prompt "what is in image ID?".
func writeToyCorpus(t *testing.T, dir string, ids ...string) []aiperf.Entry {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	type entry struct {
		ID       string `json:"id"`
		File     string `json:"file"`
		MIME     string `json:"mime"`
		Question string `json:"question"`
	}
	doc := struct {
		Schema  string  `json:"schema"`
		Entries []entry `json:"entries"`
	}{Schema: aiperf.CorpusSchemaQual}
	for i, id := range ids {
		img := image.NewRGBA(image.Rect(0, 0, 8+i, 8))
		img.Set(1, 1, color.RGBA{R: uint8(40 * i), A: 255})
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, img))
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".png"), b.Bytes(), 0o644))
		doc.Entries = append(doc.Entries, entry{ID: id, File: id + ".png", MIME: "image/png", Question: "what is in image " + id + "?"})
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus.json"), data, 0o644))
	entries, err := aiperf.LoadCorpus(dir)
	require.NoError(t, err)
	return entries
}

// argAfter returns n arguments of argv starting at the flag.
func argAfter(argv []string, flag string, n int) []string {
	i := slices.Index(argv, flag)
	if i < 0 || i+n > len(argv) {
		return nil
	}
	return argv[i : i+n]
}

func readDataset(t *testing.T, path string) []aiperf.DatasetLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []aiperf.DatasetLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l aiperf.DatasetLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// playRecordedRun writes the artifacts of a real AIPerf 0.13.0 run
// (qual/aiperf/testdata/image_retrieval: three entries img-0000..2, 5
// warmup and 50 measured requests, the same session ids the dataset
// writer gives) into dir, as AIPerf leaves them.
func playRecordedRun(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join("aiperf", "testdata", "image_retrieval")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "fixture.json" {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if name, ok := strings.CutSuffix(rel, ".gz"); ok {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			if data, err = io.ReadAll(zr); err != nil {
				return err
			}
			rel = name
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	require.NoError(t, err)
}
