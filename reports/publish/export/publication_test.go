package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// findings is every finding of a refused export as "file:line: kind text".
func findings(t *testing.T, err error) []string {
	t.Helper()
	var leak *LeakError
	require.ErrorAs(t, err, &leak)
	var got []string
	for _, f := range leak.Findings {
		got = append(got, f.File+":"+strconv.Itoa(f.Line)+": "+f.Kind+" "+f.Text)
	}
	return got
}

// One leak scanner, every encoding, whole input (issue 32 items 7–10): a
// path of 100+ path characters and a URL-encoded path in a file published
// byte for byte, credentials named by their shape in a log published
// whole, and a private key in a log cut to its tail each refuse the pack;
// nothing is written.
func TestExportScansEveryEncodingWhole(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	long := "/home/jdoe/" + strings.Repeat("checkpoints/", 9) + "model.bin"
	records := `{"request_id":"r1","note":"` + long + `"}` + "\n" +
		`{"request_id":"r2","note":"GET /f?p=%2Fhome%2Fjdoe%2Fx.txt"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server_records.jsonl"), []byte(records), 0o644))
	env := "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nWANDB_API_KEY=0123456789abcdef0123\n" +
		"DB_PASSWORD=hunter22\nclone https://bob:pw0rd@git.example/x.git\nX-Api-Key: abcdef123\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server.log"), []byte(env), 0o644))
	key := "-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n", 25) + "-----END PRIVATE KEY-----\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "correctness.log"), []byte("start\n"+key+"done\n"), 0o644))
	reseal(t, dir)

	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	o := opts(root, pack)
	o.Logs, o.LogTail = LogsTail, 20
	got := findings(t, exportErr(o))
	assert.Contains(t, got, "detection/ref-detect-small/server_records.jsonl:1: absolute path outside the named roots "+long)
	assert.Contains(t, got, "detection/ref-detect-small/server_records.jsonl:2: absolute path outside the named roots (URL-encoded) /home/jdoe/x.txt")
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY=…", "WANDB_API_KEY=…", "DB_PASSWORD=…", "https://…", "X-Api-Key=…"} {
		assert.Contains(t, strings.Join(got, "\n"), "server.log:", name)
		assert.Contains(t, strings.Join(got, "\n"), "credential "+name)
	}
	// The tail keeps the last 20 lines: 18 lines of the key's body, its
	// END line and "done"; its BEGIN line is cut, and found all the same.
	assert.Contains(t, got, "detection/ref-detect-small/correctness.log:0: credential (a PEM block: PRIVATE KEY) -----BEGIN PRIVATE KEY-----")
	assert.Contains(t, got, "detection/ref-detect-small/correctness.log:1: credential (the body of a PEM block: PRIVATE KEY) ")
	assert.Contains(t, got, "detection/ref-detect-small/correctness.log:19: credential (the END of a PEM block: PRIVATE KEY) -----END PRIVATE KEY-----")
	err := exportErr(o)
	assert.Contains(t, err.Error(), "correctness.log: credential (a PEM block: PRIVATE KEY) \"-----BEGIN PRIVATE KEY-----\" (line 2 of ")
	assert.Contains(t, err.Error(), "which --logs tail cuts")
	assert.NotContains(t, err.Error(), "wJalrXUtnFEMI")
	assert.NotContains(t, err.Error(), "hunter22")
	assertNothingWritten(t, pack)
}

func exportErr(o Options) error {
	_, err := Export(context.Background(), o)
	return err
}

// A long path in a scrubbed file is mapped like any other (it was
// published raw when 100 path characters were taken for image data).
func TestExportScrubsLongAndEncodedPaths(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	long := "/home/jdoe/" + strings.Repeat("checkpoints/", 9) + "model.bin"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server.log"), []byte("load "+long+"\nGET /f?p=%2Fhome%2Fjdoe%2Fx.txt&y=1\n"), 0o644))
	reseal(t, dir)
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	o := opts(root, pack)
	o.Logs = LogsFull
	_, err := Export(context.Background(), o)
	require.NoError(t, err)
	files := readPack(t, pack)
	assert.Equal(t, "load [private]/model.bin\nGET /f?p=[private]&y=1\n", files["p/detection/ref-detect-small/server.log"])
}

// The pack never holds the run host's listing of / (provenance
// host_top_dirs): the scrubber used it, the pack's text is mapped, and
// published it would fingerprint the host in every pack.
func TestExportDropsTheHostsTopDirs(t *testing.T) {
	root := fixture(t)
	dir := filepath.Join(root, "detection", "ref-detect-small")
	p := filepath.Join(dir, "result.json")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["provenance"].(map[string]any)["host_top_dirs"] = []string{"bin", "check", "farm-secret-mount"}
	m["provenance"].(map[string]any)["bundle_path"] = "/farm-secret-mount/b/x.bundle"
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	reseal(t, dir)
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	_, err = Export(context.Background(), opts(root, pack))
	require.NoError(t, err)
	for name, text := range readPack(t, pack) {
		assert.NotContains(t, text, "farm-secret-mount", name)
		assert.NotContains(t, text, "host_top_dirs", name)
	}
}

// No writer inside an evidence tree: a pack named through a link to a
// row's directory is refused before anything is written (issue 32 item
// 14), naming the path and the tree.
func TestExportRefusesAPackInsideTheEvidence(t *testing.T) {
	root := fixture(t)
	link := filepath.Join(t.TempDir(), "looks-elsewhere")
	require.NoError(t, os.Symlink(filepath.Join(root, "detection", "ref-detect-small"), link))
	before := listTree(t, root)
	_, err := Export(context.Background(), opts(root, filepath.Join(link, "p.tar.gz")))
	var in *InputError
	require.ErrorAs(t, err, &in)
	var inside *fileio.InsideError
	require.ErrorAs(t, err, &inside)
	assert.Contains(t, err.Error(), "lies inside the evidence tree "+root)
	assert.Contains(t, err.Error(), "it resolves to "+filepath.Join(root, "detection", "ref-detect-small", "p.tar.gz"))
	assert.Equal(t, before, listTree(t, root), "nothing written in the evidence")
}

func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	}))
	return out
}

// Staging happens in a private directory outside the publication
// directory, removed when the export ends, refused or not; what a killed
// export left (its process gone) is removed by the next one, and what a
// running one holds is left alone (issue 32 item 11).
func TestExportStagesPrivatelyAndCleansUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	root := fixture(t)
	pub := t.TempDir()
	dead := deadPID(t)
	stale := filepath.Join(tmp, stagingPrefix+strconv.Itoa(dead)+"-x")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "p", "detection"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "p", "detection", "server.log"), []byte("TOKEN=abc123def456\n"), 0o600))
	staleArchive := filepath.Join(pub, archivePrefix+strconv.Itoa(dead)+"-y")
	require.NoError(t, os.WriteFile(staleArchive, []byte("half"), 0o600))
	live := filepath.Join(tmp, stagingPrefix+strconv.Itoa(os.Getppid())+"-z")
	require.NoError(t, os.MkdirAll(live, 0o700))

	_, err := Export(context.Background(), opts(root, filepath.Join(pub, "p.tar.gz")))
	require.NoError(t, err)
	assert.NoDirExists(t, stale, "a killed export's staging is removed")
	assert.NoFileExists(t, staleArchive, "a killed export's archive is removed")
	assert.DirExists(t, live, "a running process's directory is left alone")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the export's own staging is gone")
	entries, err = os.ReadDir(pub)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the publication directory holds the pack only")

	// Staging never happens in the publication directory, even when that
	// is the temporary directory.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err = Export(context.Background(), opts(root, filepath.Join(tmp, "q.tar.gz")))
	require.NoError(t, err)
	entries, err = os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the pack and the live directory, no staging")

	// Interrupted: nothing is left anywhere.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Export(ctx, opts(root, filepath.Join(pub, "r.tar.gz")))
	require.Error(t, err)
	assertNothingWritten(t, filepath.Join(pub, "r.tar.gz"))
	entries, err = os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 2)
}

// deadPID is the id of a process that ran and is gone.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}
