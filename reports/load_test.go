package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func TestLoadRowsAndStatuses(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range g.Rows {
		got[r.Profile] = r.Status
	}
	assert.Equal(t, map[string]string{
		"ref-vlm-base":       StatusFailed,
		"ref-vlm-large":      StatusError,
		"ref-vlm-medium":     StatusInterrupted,
		"ref-vlm-small":      StatusQualified,
		"ref-vlm-small-fp16": StatusQualified,
		"ref-vlm-small-l0":   StatusFailed,
		"ref-vlm-tiny":       StatusNotRun,
		"ref-vlm-xl":         StatusExcluded,
	}, got)
	assert.True(t, g.Coverage.InventorySnapshot)
	assert.False(t, g.Coverage.OK)
	assert.Equal(t, 6, g.Coverage.Counted.Total)
	assert.Equal(t, 2, g.Coverage.NotCounted.Total)
	assert.Empty(t, g.Conflicts)

	base := RowOf(t, g, "ref-vlm-base")
	assert.Equal(t, verdict.VerdictFailed, base.Verdict, "the set-aside previous run (verdict error) is ignored")
	assert.Len(t, base.Joined(), 55)
	assert.Equal(t, "vlm/ref-vlm-base", base.Evidence)

	fp16 := RowOf(t, g, "ref-vlm-small-fp16")
	require.NotNil(t, fp16.Reproduce)
	assert.Equal(t, "aiperf", fp16.Reproduce.AIPerfArgv[0], "argv from provenance when aiperf/argv.json is absent")
	assert.Equal(t, "ref-vlm-small", fp16.VariantOf)
	assert.False(t, fp16.Counted)
}

func TestLoadWithoutInventorySnapshot(t *testing.T) {
	g, err := Load([]string{RootA}, "detection")
	require.NoError(t, err)
	assert.False(t, g.Coverage.InventorySnapshot)
	require.Len(t, g.Notes, 1)
	assert.Contains(t, g.Notes[0], "no inventory snapshot")
	assert.Equal(t, StatusExcluded, RowOf(t, g, "ref-detect-large").Status)
	assert.Equal(t, "checkpoint licence does not allow CI redistribution", RowOf(t, g, "ref-detect-large").Note)
	assert.Equal(t, "1 of 1 normal profile qualified; 1 excluded with a reason; 1 variant or partial profile listed separately, not counted; no inventory snapshot, so profiles that never ran cannot be counted", g.Coverage.Summary)
	assert.False(t, g.Coverage.OK, "without the snapshot nothing proves that every profile ran (issue 32 item 1)")

	// The same rows with the snapshot they were run for: OK.
	c, err := Load([]string{RootComplete}, "detection")
	require.NoError(t, err)
	assert.True(t, c.Coverage.InventorySnapshot)
	assert.True(t, c.Coverage.InventorySnapshotSealed)
	assert.Equal(t, "1 of 1 normal profile qualified; 1 excluded with a reason; 1 variant or partial profile listed separately, not counted", c.Coverage.Summary)
	assert.True(t, c.Coverage.OK)
	for _, r := range c.Rows {
		assert.True(t, r.Bound(), r.Profile)
	}
}

func TestLoadMergesRootsLatestWins(t *testing.T) {
	g, err := Load([]string{RootA, RootB}, "vlm")
	require.NoError(t, err)
	assert.Equal(t, verdict.VerdictQualified, RowOf(t, g, "ref-vlm-base").Verdict, "b's later run wins")
	assert.Equal(t, "out/demo", strings.Fields(RowOf(t, g, "ref-vlm-small").Reproduce.Command)[7], "a's later run wins")
	assert.Equal(t, StatusQualified, RowOf(t, g, "ref-vlm-tiny").Status, "a result from b fills a not-run")
	require.Len(t, g.Conflicts, 2)
	assert.Equal(t, "ref-vlm-base", g.Conflicts[0].Profile)
	assert.Equal(t, RootB, g.Conflicts[0].Kept.Root)
	assert.Equal(t, RootA, g.Conflicts[0].Others[0].Root)
	assert.Equal(t, "ref-vlm-small", g.Conflicts[1].Profile)
	assert.Equal(t, RootA, g.Conflicts[1].Kept.Root)

	// Order of roots does not change the outcome.
	g2, err := Load([]string{RootB, RootA}, "vlm")
	require.NoError(t, err)
	for i := range g.Rows {
		assert.Equal(t, g.Rows[i].Verdict, g2.Rows[i].Verdict)
	}
}

func TestLoadSameRunTwiceIsNoConflict(t *testing.T) {
	g, err := Load([]string{RootA, RootA}, "vlm")
	require.NoError(t, err)
	assert.Empty(t, g.Conflicts)
	assert.Empty(t, g.Notes)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// TestLoadErrors: malformed evidence of a row makes that row an error
// naming file, line and field (never a failed load, never green); a
// malformed inventory snapshot fails the load, naming it.
func TestLoadErrors(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join(RootA, "vlm", "ref-vlm-small", ResultFile))
	require.NoError(t, err)
	cases := []struct {
		name    string
		row     string
		setup   func(dir string)
		wantErr string
	}{
		{"syntax error names the line", "x", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "x", ResultFile), "{\n  \"schema\": \"trtmc-qual/result/v2\",\n  \"profile\": x\n}\n")
		}, "x/result.json:3: invalid character 'x'"},
		{"wrong type names line and field", "x", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "x", ResultFile), "{\n  \"schema\": \"trtmc-qual/result/v2\",\n  \"requests\": {\"sent\": \"many\"}\n}\n")
		}, "x/result.json:3: requests.sent: is string, want int"},
		{"schema", "x", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "x", ResultFile), "{\n  \"schema\": \"trtmc-qual/result/v1\"\n}\n")
		}, `x/result.json:2: schema: is "trtmc-qual/result/v1", want "trtmc-qual/result/v2"`},
		{"profile must match its directory", "other", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "other", ResultFile), string(valid))
		}, `other/result.json:4: profile: is "ref-vlm-small" but the evidence directory is "other"`},
		{"unknown verdict", "ref-vlm-small", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "ref-vlm-small", ResultFile), strings.Replace(string(valid), `"verdict": "qualified"`, `"verdict": "great"`, 1))
		}, `ref-vlm-small/result.json:14: verdict: unknown verdict "great"`},
		{"bad joined line", "ref-vlm-small", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "ref-vlm-small", ResultFile), string(valid))
			writeFile(t, filepath.Join(dir, "vlm", "ref-vlm-small", JoinedFile),
				"{\"request_id\":\"a\",\"phase\":\"measured\",\"status\":\"matched\"}\n{\"request_id\":\"b\",\"phase\":\"measured\",\"status\":\"fine\"}\n")
		}, `ref-vlm-small/joined.jsonl:2: request b: unknown status "fine"`},
		{"bad argv.json", "ref-vlm-small", func(dir string) {
			writeFile(t, filepath.Join(dir, "vlm", "ref-vlm-small", ResultFile), string(valid))
			writeFile(t, filepath.Join(dir, "vlm", "ref-vlm-small", "aiperf", "argv.json"), `"aiperf profile"`)
		}, `ref-vlm-small/aiperf/argv.json: want a JSON list of strings`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "vlm"), 0o755))
			tc.setup(dir)
			g, err := Load([]string{dir}, "vlm")
			require.NoError(t, err)
			row := RowOf(t, g, tc.row)
			require.NotNil(t, row.Result)
			assert.Equal(t, verdict.VerdictError, row.Verdict)
			var msgs []string
			for _, r := range row.Result.Reasons {
				msgs = append(msgs, string(r.Code)+": "+r.Message)
			}
			assert.Contains(t, strings.Join(msgs, "\n"), string(verdict.CodeEvidenceMalformed)+": ")
			assert.Contains(t, strings.Join(msgs, "\n"), tc.wantErr)
			assert.False(t, g.Coverage.OK)
		})
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "vlm", InventoryFile), "[\n{\"id\": \"a\", \"kind\": 3}\n]\n")
	_, err = Load([]string{dir}, "vlm")
	var ee *verdict.EvidenceError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), `vlm/inventory.json:2: kind:`)
}

// TestLoadFindsChangedEvidence: plain report checks each row against the
// seal its run wrote; a changed, added or removed file makes the row an
// error (evidence_changed), never qualified.
func TestLoadFindsChangedEvidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"joined line edited", func(dir string) {
			data, err := os.ReadFile(filepath.Join(dir, JoinedFile))
			require.NoError(t, err)
			writeFile(t, filepath.Join(dir, JoinedFile), strings.Replace(string(data), "matched", "mismatched", 1))
		}, "joined.jsonl: changed"},
		{"result.json edited", func(dir string) {
			data, err := os.ReadFile(filepath.Join(dir, ResultFile))
			require.NoError(t, err)
			writeFile(t, filepath.Join(dir, ResultFile), strings.Replace(string(data), `"host": "qual-host-1"`, `"host": "qual-host-2"`, 1))
		}, "result.json: changed"},
		{"file added", func(dir string) { writeFile(t, filepath.Join(dir, "extra.txt"), "x") }, "extra.txt: added"},
		{"file removed", func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, JoinedFile))) }, "joined.jsonl: missing"},
		{"manifest removed", func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "manifest.json"))) }, "manifest.json: missing"},
		{"manifest edited", func(dir string) {
			data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			require.NoError(t, err)
			writeFile(t, filepath.Join(dir, "manifest.json"), strings.Replace(string(data), "fixture", "fixturE", 1))
		}, "manifest.json: changed (its seal does not match its bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := CopyTree(t, RootA)
			tc.edit(filepath.Join(root, "vlm", "ref-vlm-small"))
			g, err := Load([]string{root}, "vlm")
			require.NoError(t, err)
			row := RowOf(t, g, "ref-vlm-small")
			assert.Equal(t, verdict.VerdictError, row.Verdict)
			require.NotEmpty(t, row.Result.Reasons)
			assert.Equal(t, verdict.CodeEvidenceChanged, row.Result.Reasons[0].Code)
			assert.Contains(t, row.Result.Reasons[0].Message, tc.want)
		})
	}
}

func TestLoadMissingEvidence(t *testing.T) {
	_, err := Load([]string{t.TempDir()}, "vlm")
	require.ErrorIs(t, err, ErrNoEvidence)
	_, err = Load([]string{filepath.Join(t.TempDir(), "nope")}, "vlm")
	require.ErrorIs(t, err, ErrNoEvidence)
	_, err = Load(nil, "vlm")
	require.Error(t, err)
	_, err = Load([]string{RootA}, "../a")
	require.Error(t, err)
}

// A directory without result.json is an error row, never skipped (issue
// 25): a run that did not finish, or a result moved away (e.g. renamed
// result.rejudged.json), must not vanish from the report.
func TestLoadDirectoryWithoutResultIsAnErrorRow(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vlm", "half-done", "aiperf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vlm", "half-done", RejudgedFile), []byte(`{"verdict":"qualified"}`), 0o644))
	g, err := Load([]string{dir}, "vlm")
	require.NoError(t, err)
	require.Len(t, g.Rows, 1)
	row := g.Rows[0]
	assert.Equal(t, "half-done", row.Profile)
	assert.Equal(t, verdict.VerdictError, row.Verdict)
	require.NotEmpty(t, row.Result.Reasons)
	assert.Equal(t, verdict.CodeResultMissing, row.Result.Reasons[0].Code)
	assert.Contains(t, row.Result.Reasons[0].Message, "half-done has no result.json")
	assert.False(t, row.Result.Measured(), "nothing in the directory is shown")
	assert.False(t, g.Coverage.OK)
}

func TestIsSetAside(t *testing.T) {
	for name, want := range map[string]bool{
		"ref-vlm-small.20261130T081500Z": true,
		"qwen2.5-vl-3b":                  false,
		"qwen2.5-vl-3b.20261130T081500Z": true,
		"x.20261130T081500":              false,
		"x.2026113OT081500Z":             false,
		".20261130T081500Z":              false,
	} {
		assert.Equal(t, want, IsSetAside(name), name)
	}
}

// A link where a profile's directory belongs is an error row: never
// followed, never skipped (issue 25).
func TestLoadLinkedProfileDirectoryIsAnErrorRow(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "good")
	require.NoError(t, os.MkdirAll(elsewhere, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vlm"), 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(dir, "vlm", "p")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vlm", "results.md"), []byte("x"), 0o644))
	g, err := Load([]string{dir}, "vlm")
	require.NoError(t, err)
	require.Len(t, g.Rows, 1, "a link to a directory is a row; a plain file is not")
	assert.Equal(t, verdict.VerdictError, g.Rows[0].Verdict)
	assert.Contains(t, g.Rows[0].Result.Reasons[0].Message, "is a symbolic link, not an evidence directory a run wrote")
}
