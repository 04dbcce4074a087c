package export

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// fixture copies the reports package's hand-made evidence root "a" to a
// directory whose path holds a user-like name, /…/home/alice/out.
func fixture(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "home", "alice", "out")
	golden.CopyTree(t, filepath.Join("..", "..", "testdata", "evidence", "a"), root)
	return root
}

// reseal seals a row directory again with its manifest's provenance, as
// if the run had written what it now holds.
func reseal(t *testing.T, dir string) {
	t.Helper()
	m, f := evidence.ReadManifest(dir)
	require.Nil(t, f)
	require.NoError(t, evidence.Seal(dir, m.Info))
}

func opts(root, out string) Options {
	return Options{Roots: []string{root}, Group: "detection", Output: out, Now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		HarnessVersion: "test", Publish: publish.Publisher{Identity: publish.Identity{Hosts: []string{"gpu-node-17"}, Users: []string{"jdoe"}}}}
}

// readPack reads every file of a pack (path → content), checking that
// no entry carries a user or group name or id.
func readPack(t *testing.T, pack string) map[string]string {
	t.Helper()
	f, err := os.Open(pack)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		assert.Empty(t, h.Uname, "no user name in the archive")
		assert.Empty(t, h.Gname)
		assert.Zero(t, h.Uid)
	}
	return golden.ReadTarGz(t, pack)
}

// TestExportPack: the pack of a group holds every sealed file but logs,
// the join's inputs byte for byte, the rest scrubbed, a new seal per row
// that records the original one, PACK.json, the tables and the summary;
// nothing in it names the evidence's directory or its user; the same
// evidence gives the same archive; it loads and verifies where it is
// extracted.
func TestExportPack(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	// A log that names the host, a path of the run and a private IP: the
	// log is left out by default; with --logs full it is published scrubbed.
	log := "started on gpu-node-17 by jdoe in " + dir + " from 10.1.2.3\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server.log"), []byte(strings.Repeat("noise\n", 5)+log), 0o644))
	reseal(t, dir)
	out := t.TempDir()
	pack := filepath.Join(out, "det-pack.tar.gz")
	res, err := Export(context.Background(), opts(root, pack))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Rows)
	files := readPack(t, pack)
	for name, text := range files {
		assert.True(t, strings.HasPrefix(name, "det-pack/"), name)
		for _, leak := range []string{root, "alice", "gpu-node-17", "jdoe", "10.1.2.3", "/tmp/"} {
			assert.NotContains(t, text, leak, name)
		}
	}
	_, ok := files["det-pack/detection/ref-detect-small/server.log"]
	assert.False(t, ok, "logs are left out by default")
	for _, f := range []string{IndexFile, SummaryFile, "detection/results.md", "detection/results.html",
		"detection/results.json", "detection/results.csv", "detection/ref-detect-small/result.json", "detection/ref-detect-small/manifest.json"} {
		_, ok := files["det-pack/"+f]
		assert.True(t, ok, "the pack holds %s", f)
	}
	_, ok = files["det-pack/detection/inventory.json"]
	assert.False(t, ok, "root a's detection group has no inventory snapshot, and the pack makes none up")
	orig, err := os.ReadFile(filepath.Join(dir, "joined.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(orig), files["det-pack/detection/ref-detect-small/joined.jsonl"])

	var idx Index
	require.NoError(t, json.Unmarshal([]byte(files["det-pack/"+IndexFile]), &idx))
	assert.Equal(t, IndexSchema, idx.Schema)
	assert.Equal(t, LogsNone, idx.Logs)
	m, f := evidence.ReadManifest(dir)
	require.Nil(t, f)
	var small *Row
	for i := range idx.Rows {
		if idx.Rows[i].Profile == "ref-detect-small" {
			small = &idx.Rows[i]
		}
	}
	require.NotNil(t, small)
	assert.Equal(t, m.Seal, small.OriginalSeal, "the pack records the original seal")
	actions := map[string]string{}
	for _, fl := range small.Files {
		actions[fl.Path] = fl.Action
		assert.Equal(t, m.Files[fl.Path], fl.OriginalDigest)
	}
	assert.Equal(t, map[string]string{"server.log": ActionOmitted, "joined.jsonl": ActionScrubbed, "result.json": ActionScrubbed,
		"aiperf/argv.json": ActionScrubbed}, actions)

	// Extracted elsewhere, it loads: every row verifies against the new seal.
	x := t.TempDir()
	golden.ExtractTarGz(t, pack, x)
	rep, err := reports.Load([]string{filepath.Join(x, "det-pack")}, "detection")
	require.NoError(t, err)
	for _, row := range rep.Rows {
		if row.Result != nil {
			for _, p := range row.Result.Problems {
				assert.NotEqual(t, verdict.CodeEvidenceChanged, p.Code, "%s: %s", row.Profile, p.Message)
			}
		}
	}
	pm, pf := evidence.ReadManifest(filepath.Join(x, "det-pack", "detection", "ref-detect-small"))
	require.Nil(t, pf)
	assert.Equal(t, m.Seal, pm.Info["pack"].(map[string]any)["original_seal"])
	assert.Equal(t, pm.Seal, small.Seal)

	// The same evidence, the same archive, byte for byte.
	again := filepath.Join(t.TempDir(), "det-pack.tar.gz")
	o := opts(root, again)
	_, err = Export(context.Background(), o)
	require.NoError(t, err)
	a, _ := os.ReadFile(pack)
	b, _ := os.ReadFile(again)
	assert.True(t, bytes.Equal(a, b), "deterministic")
	assert.Empty(t, idx.Roots, "the fixture's commands are relative: no root is used")

	// Logs on request: the tail only, scrubbed.
	tail := filepath.Join(out, "tail.tgz")
	o = opts(root, tail)
	o.Logs, o.LogTail = LogsTail, 2
	_, err = Export(context.Background(), o)
	require.NoError(t, err)
	got := readPack(t, tail)["tail/detection/ref-detect-small/server.log"]
	assert.Equal(t, "noise\nstarted on [host] by [user] in $OUT/detection/ref-detect-small from [ip]\n", got)
}

// TestExportRefusesLeaks: what remains after scrubbing refuses the pack,
// each thing named with its file and line, and nothing is written: a
// host name, a user name, a private IP and a secret (raw and base64) in a
// file the join reads (published byte for byte), a path outside the
// named roots written with escaped slashes, a credential's shape, a
// forbidden string.
func TestExportRefusesLeaks(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	const token = "s3cr3t-serve-token-0123"
	records := `{"request_id":"r1","note":"answered by gpu-node-17 for jdoe at 10.20.30.40"}` + "\n" +
		`{"request_id":"r2","note":"` + token + `"}` + "\n" +
		`{"request_id":"r3","note":"czNjcjN0LXNlcnZlLXRva2VuLTAxMjM="}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server_records.jsonl"), []byte(records), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "correctness.log"), []byte("ok\n"+
		`{"cache":"\/opt\/cache\/x"}`+"\nAuthorization: Bearer abcdefghijklmnop\nproject Bluebird\n"), 0o644))
	reseal(t, dir)
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	o := opts(root, pack)
	o.Secrets, o.Logs, o.Forbid = []string{token}, LogsFull, []string{"bluebird"}
	_, err := Export(context.Background(), o)
	var leak *LeakError
	require.ErrorAs(t, err, &leak)
	var got []string
	for _, f := range leak.Findings {
		got = append(got, f.File+":"+strconv.Itoa(f.Line)+": "+f.Kind+" "+f.Text)
	}
	assert.Equal(t, []string{
		"detection/ref-detect-small/correctness.log:2: absolute path outside the named roots (JSON-escaped) /opt/cache/x",
		"detection/ref-detect-small/correctness.log:3: credential Authoriz…",
		"detection/ref-detect-small/correctness.log:4: forbidden string (--forbid) Bluebird",
		"detection/ref-detect-small/server_records.jsonl:1: host name gpu-node-17",
		"detection/ref-detect-small/server_records.jsonl:1: user name jdoe",
		"detection/ref-detect-small/server_records.jsonl:1: IP address 10.20.30.40",
		"detection/ref-detect-small/server_records.jsonl:2: secret (the value of a configured secret variable, in one of its encodings) ",
		"detection/ref-detect-small/server_records.jsonl:3: secret (the value of a configured secret variable, in one of its encodings) ",
	}, got)
	assert.NotContains(t, err.Error(), token, "a secret is never shown")
	assert.Contains(t, err.Error(), "nothing was written")
	assertNothingWritten(t, pack)
}

func assertNothingWritten(t *testing.T, pack string) {
	t.Helper()
	_, err := os.Lstat(pack)
	assert.ErrorIs(t, err, os.ErrNotExist, "no pack")
	entries, _ := os.ReadDir(filepath.Dir(pack))
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp-", "no staging left")
	}
}

// TestExportBadInput: no rows, a row whose evidence changed since its
// seal, a target that exists, a target that is not a .tar.gz: a clear
// error, and nothing written (an existing target is left as it was).
func TestExportBadInput(t *testing.T) {
	ctx := context.Background()
	root := fixture(t)
	out := t.TempDir()

	empty := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.MkdirAll(filepath.Join(empty, "detection"), 0o755))
	_, err := Export(ctx, opts(empty, filepath.Join(out, "a.tar.gz")))
	var in *InputError
	require.ErrorAs(t, err, &in)
	assert.Contains(t, err.Error(), "group detection: no rows in")
	assertNothingWritten(t, filepath.Join(out, "a.tar.gz"))

	_, err = Export(ctx, opts(filepath.Join(t.TempDir(), "missing"), filepath.Join(out, "a.tar.gz")))
	assert.ErrorIs(t, err, reports.ErrNoEvidence)

	changed := filepath.Join(root, "detection", "ref-detect-small", "joined.jsonl")
	data, err := os.ReadFile(changed)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(changed, append(data, '\n'), 0o644))
	_, err = Export(ctx, opts(root, filepath.Join(out, "b.tar.gz")))
	var se *SealError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "row ref-detect-small (")
	assert.Contains(t, err.Error(), "joined.jsonl: changed")
	assertNothingWritten(t, filepath.Join(out, "b.tar.gz"))
	require.NoError(t, os.WriteFile(changed, data, 0o644))

	existing := filepath.Join(out, "c.tar.gz")
	require.NoError(t, os.WriteFile(existing, []byte("keep me"), 0o644))
	_, err = Export(ctx, opts(root, existing))
	require.ErrorAs(t, err, &in)
	assert.Contains(t, err.Error(), "c.tar.gz already exists")
	kept, _ := os.ReadFile(existing)
	assert.Equal(t, "keep me", string(kept))

	_, err = Export(ctx, opts(root, filepath.Join(root, "detection", "p.tar.gz")))
	require.ErrorAs(t, err, &in)
	assert.Contains(t, err.Error(), "lies inside the evidence tree "+root)

	_, err = Export(ctx, opts(root, filepath.Join(out, "d.zip")))
	require.ErrorAs(t, err, &in)
	assert.Contains(t, err.Error(), "a pack is a .tar.gz")
}

// TestScrubKeepsJSONValid: a JSON document with a root's path before an
// escaped quote is published valid, the path mapped and the escape kept
// (what the scrubber writes never needs escaping, and it never consumes a
// backslash; export still checks every changed document and line and
// refuses one that would not parse).
func TestScrubKeepsJSONValid(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	doc := `{"a": "` + dir + `\"x"}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.json"), []byte(doc+"\n"), 0o644))
	reseal(t, dir)
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	_, err := Export(context.Background(), opts(root, pack))
	require.NoError(t, err)
	files := readPack(t, pack)
	assert.Equal(t, `{"a": "$OUT/detection/ref-detect-small\"x"}`+"\n", files["p/detection/ref-detect-small/extra.json"])
	var v any
	assert.NoError(t, json.Unmarshal([]byte(files["p/detection/ref-detect-small/extra.json"]), &v))
}
