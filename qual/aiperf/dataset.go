package aiperf

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image sizes of corpus images
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Entry is one corpus item as the dataset writer needs it.
type Entry struct {
	// ID names the entry (corpus.json "id"); unique within a corpus.
	ID string
	// ImagePath is the image file; its exact bytes are sent.
	ImagePath string
	// MIME is the image type ("image/png", "image/jpeg"); empty means sniff.
	MIME string
	// Question is the chat prompt (vision-language only).
	Question string
}

// CorpusSchema is the reference server's corpus.json schema.
const CorpusSchema = "trtmc-ref/corpus/v1"

// CorpusSchemaQual is the corpus a release engineer provides (docs/trtmc.md
// "Dataset"): the same entries, without the reference answers.
// `trtmc-qual corpus init` writes it from a directory of images.
const CorpusSchemaQual = "trtmc-qual/corpus/v1"

// LoadCorpus reads DIR/corpus.json (docs/design.md) and returns its entries
// in file order, with image paths resolved inside dir.
func LoadCorpus(dir string) ([]Entry, error) {
	path := filepath.Join(dir, "corpus.json")
	if err := fileio.CheckDir(dir); err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	var c struct {
		Schema  string `json:"schema"`
		Family  string `json:"family"`
		Entries []struct {
			ID       string `json:"id"`
			File     string `json:"file"`
			MIME     string `json:"mime"`
			Question string `json:"question"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, jsonError(path, 0, data, err)
	}
	if c.Schema != CorpusSchema && c.Schema != CorpusSchemaQual {
		return nil, &ParseError{File: path, Field: "schema", Err: fmt.Errorf("got %q, want %q or %q", c.Schema, CorpusSchemaQual, CorpusSchema)}
	}
	if len(c.Entries) == 0 {
		return nil, &ParseError{File: path, Field: "entries", Err: errors.New("empty")}
	}
	out := make([]Entry, 0, len(c.Entries))
	for i, e := range c.Entries {
		field := func(name string) string { return fmt.Sprintf("entries[%d].%s", i, name) }
		switch {
		case e.ID == "":
			return nil, &ParseError{File: path, Field: field("id"), Err: errMissing}
		case e.File == "":
			return nil, &ParseError{File: path, Field: field("file"), Err: errMissing}
		case !filepath.IsLocal(e.File):
			return nil, &ParseError{File: path, Field: field("file"), Err: fmt.Errorf("%q is not a path inside the corpus", e.File)}
		}
		out = append(out, Entry{ID: e.ID, ImagePath: filepath.Join(dir, e.File), MIME: e.MIME, Question: e.Question})
	}
	return out, nil
}

// Session is one line of a written dataset.
type Session struct {
	// SessionID is the line's session_id, which AIPerf reports back as
	// metadata.conversation_id.
	SessionID string `json:"session_id"`
	// EntryID is the corpus entry the line was made from.
	EntryID string `json:"entry_id"`
}

// Dataset describes a written single_turn JSONL file.
type Dataset struct {
	Path         string    `json:"path"`
	SHA256       string    `json:"sha256"`
	EndpointType string    `json:"endpoint_type"`
	Sessions     []Session `json:"sessions"` // in file order
	bySession    map[string]int
}

// Lookup maps a conversation_id back to its line; ok is false when the id is
// not one this dataset wrote.
func (d *Dataset) Lookup(sessionID string) (s Session, line int, ok bool) {
	if d.bySession == nil {
		d.index()
	}
	i, ok := d.bySession[sessionID]
	if !ok {
		return Session{}, 0, false
	}
	return d.Sessions[i], i + 1, true
}

// EntryID maps a conversation_id to the corpus entry id.
func (d *Dataset) EntryID(sessionID string) (string, bool) {
	s, _, ok := d.Lookup(sessionID)
	return s.EntryID, ok
}

func (d *Dataset) index() {
	d.bySession = make(map[string]int, len(d.Sessions))
	for i, s := range d.Sessions {
		d.bySession[s.SessionID] = i
	}
}

// DatasetLine is one line of dataset.jsonl, AIPerf's single_turn format
// (schemas/dataset.schema.json). Field order is fixed so the file is
// deterministic.
type DatasetLine struct {
	SessionID string `json:"session_id"`
	Text      string `json:"text,omitempty"`
	Image     string `json:"image"`
}

// SessionID is the session_id the writer gives the k-th use (from 0) of an
// entry.
func SessionID(entryID string, k int) string { return entryID + "#" + strconv.Itoa(k) }

// WriteDataset writes n single_turn lines to path, cycling through entries
// in order (line i uses entries[i % len(entries)]), each with a unique
// session_id "<entry id>#<k>" where k counts earlier uses of that entry.
// Images are data URLs of the exact file bytes: AIPerf re-encodes local
// paths, and sends data URLs untouched. The line's text is the endpoint
// type's (endpoint.Type.LineText: chat's is the entry's question,
// image_retrieval lines carry none), and every entry is first held to what
// the type needs of it (endpoint.Type.CheckEntry).
//
// With n = warmup + measured requests and AIPerf's sequential sampling,
// every request gets its own line, and its conversation_id names it.
func WriteDataset(path, endpointType string, entries []Entry, n int) (*Dataset, error) {
	typ, ok := endpoint.Lookup(endpointType)
	if !ok {
		return nil, fmt.Errorf("write dataset: unsupported endpoint type %q (want %s)", endpointType, endpoint.OneOf(endpoint.Plain))
	}
	if n <= 0 {
		return nil, fmt.Errorf("write dataset: line count %d, want > 0", n)
	}
	urls, err := entryURLs(entries)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	ds, err := writeDatasetLines(io.MultiWriter(tmp, h), path, typ, entries, urls, n)
	if err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write dataset %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write dataset %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	ds.SHA256 = hex.EncodeToString(h.Sum(nil))
	ds.index()
	if len(ds.bySession) != n {
		// Cannot happen: ids are unique and "#<k>" splits at the last '#'.
		return nil, fmt.Errorf("write dataset: %d distinct session ids for %d lines", len(ds.bySession), n)
	}
	return ds, nil
}

// entryURLs checks the entries' ids (present, unique) and encodes each
// image once, as a data URL; the lines reuse them.
func entryURLs(entries []Entry) ([]string, error) {
	if len(entries) == 0 {
		return nil, errors.New("write dataset: no corpus entries")
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.ID == "" {
			return nil, fmt.Errorf("write dataset: entry with image %q has no id", e.ImagePath)
		}
		if seen[e.ID] {
			return nil, fmt.Errorf("write dataset: duplicate entry id %q", e.ID)
		}
		seen[e.ID] = true
	}
	urls := make([]string, len(entries))
	for i, e := range entries {
		u, err := dataURL(e)
		if err != nil {
			return nil, fmt.Errorf("write dataset: entry %s: %w", e.ID, err)
		}
		urls[i] = u
	}
	return urls, nil
}

// writeDatasetLines writes the n lines to w, each entry first held to what the
// endpoint type needs of it, and returns the dataset they make.
func writeDatasetLines(w io.Writer, path string, typ endpoint.Type, entries []Entry, urls []string, n int) (*Dataset, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	ds := &Dataset{Path: path, EndpointType: typ.Name(), Sessions: make([]Session, 0, n)}
	uses := make([]int, len(entries))
	for _, e := range entries {
		if p := typ.CheckEntry(e.Question); p != nil {
			return nil, fmt.Errorf("write dataset: corpus entry %s %s: %s", e.ID, p.Problem, p.Need)
		}
	}
	for i := range n {
		j := i % len(entries)
		e := entries[j]
		line := DatasetLine{SessionID: SessionID(e.ID, uses[j]), Image: urls[j],
			Text: typ.LineText(endpoint.Request{Image: urls[j], Question: e.Question})}
		uses[j]++
		if err := enc.Encode(line); err != nil {
			return nil, fmt.Errorf("write dataset %s: %w", path, err)
		}
		ds.Sessions = append(ds.Sessions, Session{SessionID: line.SessionID, EntryID: e.ID})
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("write dataset %s: %w", path, err)
	}
	return ds, nil
}

// dataURL returns data:<mime>;base64,<exact file bytes>.
func dataURL(e Entry) (string, error) {
	data, err := fileio.ReadFile(context.Background(), e.ImagePath, fileio.MaxImageBytes)
	if err != nil {
		return "", err
	}
	if len(data) == 0 {
		return "", fmt.Errorf("image %s is empty", e.ImagePath)
	}
	sniffed := http.DetectContentType(data)
	mime := e.MIME
	switch {
	case mime == "" && strings.HasPrefix(sniffed, "image/"):
		mime = sniffed
	case mime == "":
		return "", fmt.Errorf("image %s: no mime given and content sniffs as %s", e.ImagePath, sniffed)
	case !strings.HasPrefix(mime, "image/"):
		return "", fmt.Errorf("image %s: mime %q is not an image type", e.ImagePath, mime)
	case strings.HasPrefix(sniffed, "image/") && sniffed != mime:
		return "", fmt.Errorf("image %s: mime %q but content sniffs as %s", e.ImagePath, mime, sniffed)
	}
	// What is sent decodes, within the pixel limit (as corpus init checks).
	if _, err := DecodeImage("image "+e.ImagePath, data); err != nil {
		return "", err
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

// ImageSize is one distinct image size among the lines of a dataset.
type ImageSize struct {
	Width, Height, Count int
}

// ImageSizes reads each entry's image size from its header and counts the
// sizes over the n lines WriteDataset writes (line i uses entry i % len),
// smallest first. An image whose size cannot be read is an error naming it.
func ImageSizes(entries []Entry, n int) ([]ImageSize, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	type wh struct{ w, h int }
	per := make([]wh, len(entries))
	for i, e := range entries {
		f, err := os.Open(e.ImagePath)
		if err != nil {
			return nil, fmt.Errorf("corpus entry %s: %w", e.ID, err)
		}
		cfg, _, err := image.DecodeConfig(bufio.NewReader(f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("corpus entry %s: cannot read the size of %s (%v): use PNG, JPEG or GIF images", e.ID, e.ImagePath, err)
		}
		per[i] = wh{cfg.Width, cfg.Height}
	}
	counts := map[wh]int{}
	for i := range n {
		counts[per[i%len(entries)]]++
	}
	out := make([]ImageSize, 0, len(counts))
	for k, c := range counts {
		out = append(out, ImageSize{Width: k.w, Height: k.h, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Width != out[j].Width {
			return out[i].Width < out[j].Width
		}
		return out[i].Height < out[j].Height
	})
	return out, nil
}

// RequestBody is the body AIPerf 0.13.0 posts for one corpus entry, as
// its endpoint type writes it (endpoint.Type.Body; docs/aiperf.md, "What
// the installed 0.13.0 does"), the image a data URL of the file's exact
// bytes. Its length is what a server's body limit is held against.
func RequestBody(endpointType string, e Entry, model string, extra map[string]any) ([]byte, error) {
	url, err := dataURL(e)
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", e.ID, err)
	}
	typ, ok := endpoint.Lookup(endpointType)
	if !ok {
		return nil, fmt.Errorf("unsupported endpoint type %q", endpointType)
	}
	return typ.Body(endpoint.Request{Image: url, Question: e.Question}, model, extra)
}

// RequestTooLargeError is a corpus entry whose encoded request is larger
// than the server accepts.
type RequestTooLargeError struct {
	Entry, Image string
	Size, Limit  int64
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("corpus entry %s (%s): its request is %d bytes once encoded (the image as a base64 data URL), over the server's limit of %d bytes (--max-body-bytes): the server would answer 413",
		e.Entry, filepath.Base(e.Image), e.Size, e.Limit)
}
