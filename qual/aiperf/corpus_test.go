package aiperf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

func writeImages(t *testing.T, dir string) {
	t.Helper()
	var a, b bytes.Buffer
	require.NoError(t, png.Encode(&a, image.NewRGBA(image.Rect(0, 0, 640, 427))))
	require.NoError(t, jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 500, 375)), nil))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000000000139.png"), a.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000000000285.jpg"), b.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not an image"), 0o644))
}

// A release engineer's corpus: images (and questions for vision-language)
// become a corpus.json the run reads, sizes read from the images.
func TestInitCorpus(t *testing.T) {
	dir := t.TempDir()
	writeImages(t, dir)
	q := filepath.Join(t.TempDir(), "questions.jsonl")
	require.NoError(t, os.WriteFile(q, []byte(`{"file":"000000000139.png","question":"How many people are there?"}
{"id":"000000000285","question":"What animal is this?"}
`), 0o644))
	c, sum, err := InitCorpus(dir, q, "COCO val2017", false)
	require.NoError(t, err)
	assert.Len(t, sum, 64)
	assert.Equal(t, []CorpusEntry{
		{ID: "000000000139", File: "000000000139.png", MIME: "image/png", Width: 640, Height: 427, Question: "How many people are there?"},
		{ID: "000000000285", File: "000000000285.jpg", MIME: "image/jpeg", Width: 500, Height: 375, Question: "What animal is this?"},
	}, c.Entries)
	entries, err := LoadCorpus(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, "What animal is this?", entries[1].Question)
	sizes, err := ImageSizes(entries, 55)
	require.NoError(t, err)
	assert.Equal(t, []ImageSize{{Width: 500, Height: 375, Count: 27}, {Width: 640, Height: 427, Count: 28}}, sizes)
	var back CorpusFile
	data, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, "COCO val2017", back.Source)

	// Nothing already written is lost.
	_, _, err = InitCorpus(dir, q, "", false)
	assert.ErrorContains(t, err, "exists; pass --force")
	after, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	require.NoError(t, err)
	assert.Equal(t, data, after)

	// Detection corpora take no questions.
	det := t.TempDir()
	writeImages(t, det)
	c, _, err = InitCorpus(det, "", "", false)
	require.NoError(t, err)
	assert.Empty(t, c.Entries[0].Question)
	ds, err := WriteDataset(filepath.Join(t.TempDir(), "d.jsonl"), endpoint.ImageRetrieval, mustLoad(t, det), 3)
	require.NoError(t, err)
	assert.Len(t, ds.Sessions, 3)
	_, err = WriteDataset(filepath.Join(t.TempDir(), "d.jsonl"), endpoint.Chat, mustLoad(t, det), 3)
	assert.ErrorContains(t, err, "has no question: a vision-language corpus needs one question per image")
}

func mustLoad(t *testing.T, dir string) []Entry {
	t.Helper()
	e, err := LoadCorpus(dir)
	require.NoError(t, err)
	return e
}

func TestInitCorpusRefusesIncompleteQuestions(t *testing.T) {
	for name, tt := range map[string]struct{ lines, want string }{
		"missing one":  {`{"file":"000000000139.png","question":"q"}`, "no question for 000000000285.jpg"},
		"unknown file": {`{"file":"nope.png","question":"q"}`, `questions.jsonl:1: no image "nope.png"`},
		"twice":        {`{"file":"000000000139.png","question":"q"}` + "\n" + `{"id":"000000000139","question":"r"}`, "questions.jsonl:2: image 000000000139.png has a second question"},
		"empty":        {`{"file":"000000000139.png","question":" "}`, "questions.jsonl:1: question is empty"},
		"bad field":    {`{"image":"x","question":"q"}`, `questions.jsonl:1: want {"file" or "id", "question"}`},
	} {
		dir := t.TempDir()
		writeImages(t, dir)
		q := filepath.Join(t.TempDir(), "questions.jsonl")
		require.NoError(t, os.WriteFile(q, []byte(tt.lines+"\n"), 0o644))
		_, _, err := InitCorpus(dir, q, "", false)
		assert.ErrorContains(t, err, tt.want, name)
		_, statErr := os.Stat(filepath.Join(dir, "corpus.json"))
		assert.True(t, os.IsNotExist(statErr), "%s: nothing half-written", name)
	}
	_, _, err := InitCorpus(t.TempDir(), "", "", false)
	assert.ErrorContains(t, err, "holds no PNG, JPEG or GIF image")
}

// pngDeclaring is a real 1 × 1 PNG whose header is rewritten to declare
// w × h pixels (its chunk CRC fixed), the pixel data left as it was.
func pngDeclaring(t *testing.T, w, h uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 1, 1))))
	data := b.Bytes()
	require.Equal(t, "IHDR", string(data[12:16]))
	binary.BigEndian.PutUint32(data[16:20], w)
	binary.BigEndian.PutUint32(data[20:24], h)
	binary.BigEndian.PutUint32(data[29:33], crc32.ChecksumIEEE(data[12:29]))
	return data
}

// corpus init decodes every image, within a pixel limit, before it pins
// it (issue 25, item 15): a header alone is not an image.
func TestInitCorpusDecodesBeforePinning(t *testing.T) {
	var goodPNG, goodJPEG, goodGIF bytes.Buffer
	require.NoError(t, png.Encode(&goodPNG, image.NewRGBA(image.Rect(0, 0, 64, 48))))
	noisy := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range noisy.Pix {
		noisy.Pix[i] = byte(i * 7919 % 251)
	}
	require.NoError(t, jpeg.Encode(&goodJPEG, noisy, nil))
	require.NoError(t, gif.Encode(&goodGIF, image.NewPaletted(image.Rect(0, 0, 16, 16), color.Palette{color.Black, color.White}), nil))
	hugeGIF := bytes.Clone(goodGIF.Bytes())
	binary.LittleEndian.PutUint16(hugeGIF[6:8], 65535) // the logical screen, and the image descriptor below
	binary.LittleEndian.PutUint16(hugeGIF[8:10], 65535)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"png cut after its header", goodPNG.Bytes()[:40], "x.png: the png image does not decode (truncated or corrupt)"},
		{"png declaring 100000 × 100000 with bogus data", pngDeclaring(t, 100000, 100000),
			"x.png: the png header declares 100000 × 100000 = 10000000000 pixels, more than the limit of 33554432"},
		{"png whose data is not what its header says", pngDeclaring(t, 64, 64), "x.png: the png image does not decode"},
		{"jpeg cut mid-scan", goodJPEG.Bytes()[:len(goodJPEG.Bytes())*4/5], "x.png: the jpeg image does not decode"},
		{"gif declaring 65535 × 65535", hugeGIF, "x.png: the gif header declares 65535 × 65535"},
		{"a header and nothing else", goodPNG.Bytes()[:8], "x.png: not a readable image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.png"), goodPNG.Bytes(), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x.png"), c.data, 0o644))
			_, _, err := InitCorpus(dir, "", "", false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NoFileExists(t, filepath.Join(dir, "corpus.json"), "nothing is pinned")
		})
	}
	// The good ones still pass.
	dir := t.TempDir()
	for name, data := range map[string][]byte{"a.png": goodPNG.Bytes(), "b.jpg": goodJPEG.Bytes(), "c.gif": goodGIF.Bytes()} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	c, _, err := InitCorpus(dir, "", "", false)
	require.NoError(t, err)
	assert.Len(t, c.Entries, 3)
}
