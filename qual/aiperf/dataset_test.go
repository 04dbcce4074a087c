package aiperf

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

// Small whole images: the dataset writer decodes what it sends.
var (
	pngBytes  = encodeImage(png.Encode, 4, 3)
	jpegBytes = encodeImage(func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }, 5, 2)
)

func encodeImage(enc func(io.Writer, image.Image) error, w, h int) []byte {
	var b bytes.Buffer
	if err := enc(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func corpusDir(t *testing.T) (string, []Entry) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "img-0000.png"), pngBytes, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "img-0001.jpg"), jpegBytes, 0o644))
	corpus := `{"schema":"trtmc-ref/corpus/v1","family":"ref-vlm","entries":[
	  {"id":"img-0000","file":"img-0000.png","mime":"image/png","width":96,"height":64,"question":"How many shapes?","answer":"3","objects":[]},
	  {"id":"img-0001","file":"img-0001.jpg","mime":"image/jpeg","question":"What colour & shape?","objects":[]}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus.json"), []byte(corpus), 0o644))
	entries, err := LoadCorpus(dir)
	require.NoError(t, err)
	return dir, entries
}

func readJSONL(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]string
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestLoadCorpus(t *testing.T) {
	dir, entries := corpusDir(t)
	assert.Equal(t, []Entry{
		{ID: "img-0000", ImagePath: filepath.Join(dir, "img-0000.png"), MIME: "image/png", Question: "How many shapes?"},
		{ID: "img-0001", ImagePath: filepath.Join(dir, "img-0001.jpg"), MIME: "image/jpeg", Question: "What colour & shape?"},
	}, entries)

	bad := []struct{ name, corpus, err string }{
		{"wrong schema", `{"schema":"other/v1","entries":[]}`, `schema: got "other/v1"`},
		{"no entries", `{"schema":"trtmc-ref/corpus/v1","entries":[]}`, "entries: empty"},
		{"no id", `{"schema":"trtmc-ref/corpus/v1","entries":[{"file":"a.png"}]}`, "entries[0].id: missing"},
		{"no file", `{"schema":"trtmc-ref/corpus/v1","entries":[{"id":"a"}]}`, "entries[0].file: missing"},
		{"escaping path", `{"schema":"trtmc-ref/corpus/v1","entries":[{"id":"a","file":"../a.png"}]}`, "entries[0].file: \"../a.png\" is not a path inside the corpus"},
		{"bad json", `{"schema":`, "corpus.json:1: invalid JSON"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(d, "corpus.json"), []byte(tc.corpus), 0o644))
			_, err := LoadCorpus(d)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := LoadCorpus(t.TempDir())
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriteDatasetChat(t *testing.T) {
	_, entries := corpusDir(t)
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	ds, err := WriteDataset(path, endpoint.Chat, entries, 5)
	require.NoError(t, err)

	lines := readJSONL(t, path)
	require.Len(t, lines, 5)
	wantSessions := []Session{
		{"img-0000#0", "img-0000"}, {"img-0001#0", "img-0001"},
		{"img-0000#1", "img-0000"}, {"img-0001#1", "img-0001"},
		{"img-0000#2", "img-0000"},
	}
	assert.Equal(t, wantSessions, ds.Sessions)
	for i, l := range lines {
		assert.Equal(t, wantSessions[i].SessionID, l["session_id"])
		src := pngBytes
		mime := "image/png"
		q := "How many shapes?"
		if i%2 == 1 {
			src, mime, q = jpegBytes, "image/jpeg", "What colour & shape?"
		}
		assert.Equal(t, q, l["text"])
		assert.Equal(t, "data:"+mime+";base64,"+base64.StdEncoding.EncodeToString(src), l["image"], "exact file bytes")
	}

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), ds.SHA256)
	assert.Contains(t, string(data), "colour & shape", "no HTML escaping")
	assert.True(t, strings.HasPrefix(string(data), `{"session_id":"img-0000#0","text":"How many shapes?","image":"data:image/png;base64,`), "fixed key order")

	s, line, ok := ds.Lookup("img-0001#1")
	assert.True(t, ok)
	assert.Equal(t, 4, line)
	assert.Equal(t, "img-0001", s.EntryID)
	id, ok := ds.EntryID("img-0000#2")
	assert.True(t, ok)
	assert.Equal(t, "img-0000", id)
	_, ok = ds.EntryID("session_000000")
	assert.False(t, ok)

	// Deterministic: the same inputs give the same bytes.
	ds2, err := WriteDataset(filepath.Join(t.TempDir(), "again.jsonl"), endpoint.Chat, entries, 5)
	require.NoError(t, err)
	assert.Equal(t, ds.SHA256, ds2.SHA256)
}

func TestWriteDatasetImageRetrieval(t *testing.T) {
	_, entries := corpusDir(t)
	path := filepath.Join(t.TempDir(), "ir.jsonl")
	ds, err := WriteDataset(path, endpoint.ImageRetrieval, entries, 55)
	require.NoError(t, err)
	lines := readJSONL(t, path)
	require.Len(t, lines, 55)
	seen := map[string]bool{}
	for _, l := range lines {
		_, hasText := l["text"]
		assert.False(t, hasText, "image_retrieval lines carry no text")
		assert.False(t, seen[l["session_id"]])
		seen[l["session_id"]] = true
	}
	assert.Equal(t, "img-0000#27", ds.Sessions[54].SessionID)
}

func TestWriteDatasetErrors(t *testing.T) {
	dir, entries := corpusDir(t)
	out := filepath.Join(t.TempDir(), "d.jsonl")
	gif := filepath.Join(dir, "x.png")
	require.NoError(t, os.WriteFile(gif, []byte("GIF89a-not-a-png"), 0o644))
	txt := filepath.Join(dir, "x.txt")
	require.NoError(t, os.WriteFile(txt, []byte("hello"), 0o644))
	empty := filepath.Join(dir, "empty.png")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	cut := filepath.Join(dir, "cut.png")
	require.NoError(t, os.WriteFile(cut, pngBytes[:len(pngBytes)-12], 0o644))
	cases := []struct {
		name     string
		endpoint string
		entries  []Entry
		n        int
		err      string
	}{
		{"bad endpoint", "completions", entries, 1, `unsupported endpoint type "completions"`},
		{"zero lines", endpoint.Chat, entries, 0, "line count 0"},
		{"no entries", endpoint.Chat, nil, 1, "no corpus entries"},
		{"duplicate id", endpoint.Chat, []Entry{entries[0], entries[0]}, 1, `duplicate entry id "img-0000"`},
		{"empty id", endpoint.Chat, []Entry{{ImagePath: entries[0].ImagePath}}, 1, "has no id"},
		{"missing image", endpoint.Chat, []Entry{{ID: "a", ImagePath: filepath.Join(dir, "nope.png"), MIME: "image/png"}}, 1, "no such file"},
		{"mime disagrees with content", endpoint.Chat, []Entry{{ID: "a", ImagePath: gif, MIME: "image/png"}}, 1, `mime "image/png" but content sniffs as image/gif`},
		{"not an image", endpoint.Chat, []Entry{{ID: "a", ImagePath: txt}}, 1, "no mime given and content sniffs as text/plain"},
		{"non-image mime", endpoint.Chat, []Entry{{ID: "a", ImagePath: txt, MIME: "text/plain"}}, 1, `mime "text/plain" is not an image type`},
		{"empty image", endpoint.Chat, []Entry{{ID: "a", ImagePath: empty, MIME: "image/png"}}, 1, "is empty"},
		// A pinned corpus whose image was cut afterwards: what is sent decodes.
		{"truncated image", endpoint.Chat, []Entry{{ID: "a", ImagePath: cut, MIME: "image/png"}}, 1, "cut.png: the png image does not decode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WriteDataset(out, tc.endpoint, tc.entries, tc.n)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			_, statErr := os.Stat(out)
			assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing written on error")
		})
	}
	t.Run("sniffed mime when none given", func(t *testing.T) {
		ds, err := WriteDataset(out, endpoint.ImageRetrieval, []Entry{{ID: "a", ImagePath: entries[1].ImagePath}}, 1)
		require.NoError(t, err)
		assert.Contains(t, readJSONL(t, ds.Path)[0]["image"], "data:image/jpeg;base64,")
	})
}

func TestSessionIDsNeverCollide(t *testing.T) {
	// Ids that look like session ids of other entries still give unique lines.
	dir, _ := corpusDir(t)
	img := filepath.Join(dir, "img-0000.png")
	entries := []Entry{{ID: "a", ImagePath: img}, {ID: "a#1", ImagePath: img}, {ID: "a#0", ImagePath: img}}
	ds, err := WriteDataset(filepath.Join(t.TempDir(), "d.jsonl"), endpoint.ImageRetrieval, entries, 9)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, s := range ds.Sessions {
		assert.False(t, seen[s.SessionID], s.SessionID)
		seen[s.SessionID] = true
	}
}
