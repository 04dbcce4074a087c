package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/ci"
	"github.com/trtmc-qual/trtmc-qual/qual/doctor"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/publish/export"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/schemas"
)

// schemaDocs is every JSON document trtmc-qual writes, with the Go type
// that encodes it. A new JSON output gets a line here (and so a shipped
// schema); TestSchemasMatchTypes keeps the files equal to the types.
var schemaDocs = []schemas.Doc{
	{Name: "result", Title: "OUT/<group>/<profile>/result.json (and result.rejudged.json, `report --rejudge`): one profile's result row (" + verdict.ResultSchema + ")", Type: reflect.TypeFor[verdict.Result]()},
	{Name: "group-report", Title: "OUT/<group>/results.json and `report --format json` (" + reports.GroupReportSchema + ")", Type: reflect.TypeFor[reports.GroupReport]()},
	{Name: "manifest", Title: "OUT/<group>/<profile>/manifest.json: the evidence seal (" + evidence.ManifestSchema + ")", Type: reflect.TypeFor[evidence.Manifest]()},
	{Name: "correctness", Title: "OUT/<group>/<profile>/correctness.json: what a family's correctness case writes and trtmc-qual reads", Type: reflect.TypeFor[verdict.CorrectnessDoc](), Input: true},
	{Name: "joined", Title: "OUT/<group>/<profile>/joined.jsonl: one request, joined by request id", Type: reflect.TypeFor[verdict.JoinedLine](), Lines: true},
	{Name: "mismatches", Title: "OUT/<group>/<profile>/mismatches.jsonl: one request whose answers differ, both answers and the diff", Type: reflect.TypeFor[verdict.MismatchLine](), Lines: true},
	{Name: "dataset", Title: "OUT/<group>/<profile>/dataset.jsonl: one AIPerf single_turn request sent", Type: reflect.TypeFor[aiperf.DatasetLine](), Lines: true},
	{Name: "aiperf-argv", Title: "OUT/<group>/<profile>/aiperf/argv.json: the AIPerf command line, secrets redacted", Type: reflect.TypeFor[[]string]()},
	{Name: "native-requests", Title: "OUT/<group>/<profile>/native_requests.jsonl: one payload the native runner answers", Type: reflect.TypeFor[families.NativeRequest](), Lines: true},
	{Name: "native-answers", Title: "OUT/<group>/<profile>/native_answers.jsonl: one native answer (what `adapter native` writes and a family's native runner must write)", Type: reflect.TypeFor[families.NativeAnswer](), Lines: true},
	{Name: "native-meta", Title: "OUT/<group>/<profile>/native_meta.json: which native path answered and what task_ms measures (" + families.NativeMetaSchema + ")", Type: reflect.TypeFor[families.NativeMeta]()},
	{Name: "server-loaded", Title: "OUT/<group>/<profile>/server_loaded.json: every file the server's process group had mapped while it served, with its sha256 (" + verdict.LoadedListSchema + ")", Type: reflect.TypeFor[verdict.LoadedList]()},
	{Name: "lock", Title: "OUT/<group>/.lock: the run that holds the group's evidence directory", Type: reflect.TypeFor[evidence.Holder]()},
	{Name: "corpus", Title: "DIR/corpus.json written by `corpus init` (" + aiperf.CorpusSchemaQual + ")", Type: reflect.TypeFor[aiperf.CorpusFile]()},
	{Name: "bundle-receipt", Title: "BUNDLE.receipt.json written by `adapter bundle` (" + trtmc.ReceiptSchema + ")", Type: reflect.TypeFor[trtmc.Receipt]()},
	{Name: "reconcile", Title: "`inventory reconcile --format json` (" + reconcile.Schema + ")", Type: reflect.TypeFor[reconcile.Report]()},
	{Name: "drift", Title: "`inventory drift --format json` (" + drift.Schema + ")", Type: reflect.TypeFor[drift.Report]()},
	{Name: "ci", Title: "`ci --format json`: the premerge job", Type: reflect.TypeFor[ci.Job]()},
	{Name: "doctor", Title: "`doctor --format json` (" + doctor.Schema + ")", Type: reflect.TypeFor[doctor.Report]()},
	{Name: "status", Title: "`status --format json`: a Slurm submission's tasks", Type: reflect.TypeFor[[]statusRow]()},
	{Name: "slurm-job", Title: "OUT/.slurm/<group>/job.json: a Slurm submission (" + slurm.RecordSchema + ")", Type: reflect.TypeFor[slurm.Record]()},
	{Name: "inventory-profiles", Title: "OUT/<group>/inventory.json and `inventory list --format json`: inventory profiles", Type: reflect.TypeFor[[]*inventory.Profile]()},
	{Name: "inventory-profile", Title: "`inventory show ID --format json`: one inventory profile", Type: reflect.TypeFor[inventory.Profile]()},
	{Name: "inventory-validate", Title: "`inventory validate --format json`", Type: reflect.TypeFor[validateOutput]()},
	{Name: "evidence-pack", Title: "PACK/PACK.json, the index of an evidence pack written by `export` (" + export.IndexSchema + ")", Type: reflect.TypeFor[export.Index]()},
}

// TestSchemasMatchTypes: the shipped schemas are what the Go types
// generate (`go test ./cmd/trtmc-qual -run Schemas -update` rewrites
// them), and no schema file is left without a document.
func TestSchemasMatchTypes(t *testing.T) {
	dir := repoFile("schemas")
	want := map[string]bool{}
	for _, d := range schemaDocs {
		name := d.Name + ".schema.json"
		want[name] = true
		got, err := schemas.Generate(d)
		require.NoError(t, err)
		// -update (make golden) rewrites the shipped schema.
		golden.AssertFile(t, filepath.Join(dir, name), got)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".schema.json") {
			assert.True(t, want[e.Name()], "%s has no document in schemaDocs", e.Name())
		}
	}
}

// schemaSet compiles the shipped schemas once per test.
type schemaSet map[string]*jsonschema.Schema

func loadSchemas(t *testing.T) schemaSet {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	set := schemaSet{}
	for _, d := range schemaDocs {
		path, err := filepath.Abs(repoFile("schemas", d.Name+".schema.json"))
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		require.NoError(t, err, path)
		id := "https://github.com/trtmc-qual/trtmc-qual/schemas/" + d.Name + ".schema.json"
		require.NoError(t, c.AddResource(id, doc))
		s, err := c.Compile(id)
		require.NoError(t, err, path)
		set[d.Name] = s
	}
	return set
}

// validate checks one JSON document (or, for a JSON Lines schema, each
// line) against the named schema.
func (s schemaSet) validate(t *testing.T, name, where string, data []byte) {
	t.Helper()
	sch := s[name]
	require.NotNil(t, sch, name)
	docs := [][]byte{data}
	if isLines(name) {
		docs = bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(data) == 0 {
			docs = nil // an empty JSON Lines file has no line to check
		}
	}
	for i, d := range docs {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(d))
		if !assert.NoError(t, err, "%s: not JSON", where) {
			continue
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s (line %d) does not match schemas/%s.schema.json: %v", where, i+1, name, err)
		}
	}
}

// isLines says whether the named schema is one line of a JSON Lines file.
func isLines(name string) bool {
	for _, d := range schemaDocs {
		if d.Name == name {
			return d.Lines
		}
	}
	return false
}

// evidenceSchemas names the schema of each file of a checkpoint's
// evidence directory that trtmc-qual writes (or requires, for
// correctness.json and native_answers.jsonl).
var evidenceSchemas = map[string]string{
	"result.json": "result", "result.rejudged.json": "result", "manifest.json": "manifest",
	"correctness.json": "correctness", "joined.jsonl": "joined", "mismatches.jsonl": "mismatches",
	"dataset.jsonl": "dataset", "native_requests.jsonl": "native-requests",
	"native_answers.jsonl": "native-answers", "native_meta.json": "native-meta",
}

// validateEvidence checks every JSON file of an evidence root against its
// schema: each row's files (evidenceSchemas) and aiperf/argv.json, each
// group's results.json, inventory.json and .lock, each Slurm record. It
// returns how many files it checked.
func validateEvidence(t *testing.T, set schemaSet, root string) int {
	n, _ := validateEvidenceCount(t, set, root)
	return n
}

// validateEvidenceCount is validateEvidence with the count per schema.
func validateEvidenceCount(t *testing.T, set schemaSet, root string) (int, map[string]int) {
	t.Helper()
	n, per := 0, map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		var name string
		switch {
		case len(parts) == 1 && parts[0] == export.IndexFile:
			name = "evidence-pack"
		case len(parts) == 2 && parts[1] == "results.json":
			name = "group-report"
		case len(parts) == 2 && parts[1] == "inventory.json":
			name = "inventory-profiles"
		case len(parts) == 2 && parts[1] == evidence.LockFile:
			name = "lock"
		case len(parts) == 3 && parts[0] == ".slurm" && parts[2] == "job.json":
			name = "slurm-job"
		case len(parts) == 3 && parts[0] != ".slurm":
			name = evidenceSchemas[parts[2]]
		case len(parts) == 4 && parts[0] != ".slurm" && parts[2] == "aiperf" && parts[3] == "argv.json":
			name = "aiperf-argv"
		}
		if name == "" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		set.validate(t, name, path, data)
		n++
		per[name]++
		return nil
	})
	require.NoError(t, err)
	return n, per
}

// TestSchemasValidateFixtures validates the stored evidence fixtures, the
// group reports rendered from them and the CLI's JSON outputs.
func TestSchemasValidateFixtures(t *testing.T) {
	set := loadSchemas(t)
	seen := map[string]int{}
	for _, root := range []string{"a", "b", "baseline", "gpu"} {
		n, per := validateEvidenceCount(t, set, evidenceRoot(root))
		assert.Positive(t, n, root)
		for k, v := range per {
			seen[k] += v
		}
	}
	for _, name := range []string{"result", "manifest", "joined", "aiperf-argv", "inventory-profiles"} {
		assert.Positive(t, seen[name], "the fixtures hold a %s document", name)
	}
	// The evidence of the real GPU runs kept in docs/evidence (docs/gpu.md):
	// each results.json marks a group folder, its parent an evidence root.
	var kept []string
	for _, pat := range []string{"*/*/*/results.json", "*/*/*/*/results.json"} {
		m, err := filepath.Glob(repoFile("docs", "evidence", filepath.FromSlash(pat)))
		require.NoError(t, err)
		kept = append(kept, m...)
	}
	require.NotEmpty(t, kept, "docs/evidence holds the H200 runs")
	for _, r := range kept {
		assert.Positive(t, validateEvidence(t, set, filepath.Dir(filepath.Dir(r))), r)
	}
	goldens, err := filepath.Glob(repoFile("reports", "testdata", "*.json.golden"))
	require.NoError(t, err)
	require.NotEmpty(t, goldens)
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		require.NoError(t, err)
		set.validate(t, "group-report", g, data)
	}

	inv := repoFile("inventory", "reference.yaml")
	fams := repoFile("families", "families.yaml")
	for _, c := range []struct {
		schema string
		args   []string
	}{
		{"inventory-profiles", []string{"inventory", "list", "--inventory", inv, "--families", fams, "--format", "json"}},
		{"inventory-profile", []string{"inventory", "show", "ref-vlm-small", "--inventory", inv, "--families", fams, "--format", "json"}},
		{"inventory-validate", []string{"inventory", "validate", inv, "--families", fams, "--format", "json"}},
		{"group-report", []string{"report", "--from", evidenceRoot("a"), "--group", "vlm", "--format", "json"}},
	} {
		_, out, errOut := runCLI(t, nil, c.args...)
		require.NotEmpty(t, out, "%v: %s", c.args, errOut)
		set.validate(t, c.schema, strings.Join(c.args[:2], " "), []byte(out))
	}
}

// TestSchemasCatchDrift: a document with a field the type does not have,
// or without a required one, fails validation.
func TestSchemasCatchDrift(t *testing.T) {
	set := loadSchemas(t)
	data, err := os.ReadFile(filepath.Join(evidenceRoot("a"), "vlm", "ref-vlm-small", "result.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	doc["surprise"] = 1
	extra, _ := json.Marshal(doc)
	delete(doc, "surprise")
	delete(doc, "verdict")
	missing, _ := json.Marshal(doc)
	for name, bad := range map[string][]byte{"extra field": extra, "missing verdict": missing} {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
		require.NoError(t, err)
		assert.Error(t, set["result"].Validate(v), name)
	}
}
