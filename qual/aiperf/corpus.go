package aiperf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// CorpusEntry is one entry of a trtmc-qual/corpus/v1 corpus.json.
type CorpusEntry struct {
	ID       string `json:"id"`
	File     string `json:"file"`
	MIME     string `json:"mime"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Question string `json:"question,omitempty"`
}

// CorpusFile is a trtmc-qual/corpus/v1 corpus.json.
type CorpusFile struct {
	Schema string `json:"schema"`
	// Source says where the images (and questions) come from.
	Source  string        `json:"source,omitempty"`
	Entries []CorpusEntry `json:"entries"`
}

// imageExts are the image files InitCorpus takes (sizes readable by Go's
// standard decoders).
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true}

// InitCorpus writes dir/corpus.json for the images in dir, in file-name
// order, each with its type and size read from its bytes. questions (a
// JSONL file of {"file" or "id", "question"}; "" for detection) gives every
// image its question: an image without one, or a question for no image, is
// an error naming it. An existing corpus.json is kept unless force.
func InitCorpus(dir, questions, source string, force bool) (*CorpusFile, string, error) {
	out := filepath.Join(dir, "corpus.json")
	if _, err := os.Stat(out); err == nil && !force {
		return nil, "", fmt.Errorf("%s exists; pass --force to replace it", out)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	c := &CorpusFile{Schema: CorpusSchemaQual, Source: source, Entries: []CorpusEntry{}}
	seen := map[string]string{}
	for _, d := range names {
		ext := strings.ToLower(filepath.Ext(d.Name()))
		if d.IsDir() || !imageExts[ext] {
			continue
		}
		id := strings.TrimSuffix(d.Name(), filepath.Ext(d.Name()))
		if prev, dup := seen[id]; dup {
			return nil, "", fmt.Errorf("%s and %s would both be entry %q: rename one", prev, d.Name(), id)
		}
		seen[id] = d.Name()
		data, err := fileio.ReadFile(context.Background(), filepath.Join(dir, d.Name()), fileio.MaxImageBytes)
		if err != nil {
			return nil, "", err
		}
		cfg, err := DecodeImage(d.Name(), data)
		if err != nil {
			return nil, "", err
		}
		mime := http.DetectContentType(data)
		if !strings.HasPrefix(mime, "image/") {
			return nil, "", fmt.Errorf("%s: content is %s, not an image", d.Name(), mime)
		}
		c.Entries = append(c.Entries, CorpusEntry{ID: id, File: d.Name(), MIME: mime, Width: cfg.Width, Height: cfg.Height})
	}
	if len(c.Entries) == 0 {
		return nil, "", fmt.Errorf("%s holds no PNG, JPEG or GIF image", dir)
	}
	sort.Slice(c.Entries, func(i, j int) bool { return c.Entries[i].File < c.Entries[j].File })
	if questions != "" {
		if err := addQuestions(c, questions); err != nil {
			return nil, "", err
		}
	}
	if err := fileio.WriteJSON(out, c); err != nil {
		return nil, "", err
	}
	sum, err := fileio.FileSHA256(context.Background(), out)
	return c, sum, err
}

// MaxImagePixels is the most pixels (width × height) a corpus image may
// declare: 2^25 (e.g. 8192 × 4096; a 24-megapixel photograph fits). Its
// full decode takes at most 128 MiB (RGBA), one image at a time.
const MaxImagePixels = 1 << 25

// DecodeImage is the one check of a corpus image (`corpus init` before it
// pins an image, and the dataset writer before it sends one): the header
// read first (image.DecodeConfig) and its size checked against
// MaxImagePixels, so a small file declaring 100000 × 100000 pixels is
// refused before anything is allocated for it; then the whole image
// decoded, so data cut after the header, or corrupt, is refused too. An
// error names the file.
func DecodeImage(name string, data []byte) (image.Config, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return cfg, fmt.Errorf("%s: not a readable image: %w", name, err)
	}
	switch px := int64(cfg.Width) * int64(cfg.Height); {
	case cfg.Width <= 0 || cfg.Height <= 0:
		return cfg, fmt.Errorf("%s: the %s header declares %d × %d pixels", name, format, cfg.Width, cfg.Height)
	case px > MaxImagePixels:
		return cfg, fmt.Errorf("%s: the %s header declares %d × %d = %d pixels, more than the limit of %d: refused before decoding",
			name, format, cfg.Width, cfg.Height, px, MaxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return cfg, fmt.Errorf("%s: the %s image does not decode (truncated or corrupt): %w", name, format, err)
	}
	if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return cfg, fmt.Errorf("%s: the %s image decodes to %d × %d pixels, its header says %d × %d", name, format, b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	return cfg, nil
}

func addQuestions(c *CorpusFile, path string) error {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	byKey := map[string]*CorpusEntry{}
	for i := range c.Entries {
		byKey[c.Entries[i].File] = &c.Entries[i]
		byKey[c.Entries[i].ID] = &c.Entries[i]
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	name := filepath.Base(path)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q struct {
			File     string `json:"file"`
			ID       string `json:"id"`
			Question string `json:"question"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			return fmt.Errorf("%s:%d: want {\"file\" or \"id\", \"question\"}: %w", name, n, err)
		}
		key := q.File
		if key == "" {
			key = q.ID
		}
		e, ok := byKey[key]
		switch {
		case key == "":
			return fmt.Errorf("%s:%d: file (or id) is missing", name, n)
		case strings.TrimSpace(q.Question) == "":
			return fmt.Errorf("%s:%d: question is empty", name, n)
		case !ok:
			return fmt.Errorf("%s:%d: no image %q in the corpus directory", name, n, key)
		case e.Question != "":
			return fmt.Errorf("%s:%d: image %s has a second question", name, n, e.File)
		}
		e.Question = q.Question
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	var missing []string
	for _, e := range c.Entries {
		if e.Question == "" {
			missing = append(missing, e.File)
		}
	}
	if len(missing) > 0 {
		return errors.New("no question for " + strings.Join(missing, ", ") + " in " + name + ": a vision-language corpus needs one per image")
	}
	return nil
}
