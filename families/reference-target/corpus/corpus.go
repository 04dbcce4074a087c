// Package corpus generates and reads the reference families' synthetic image
// corpus: coloured squares and discs on a plain light background, with their
// ground truth (labels and boxes) and, for ref-vlm, questions with answers.
package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/internal/rng"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/vlm"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Schema is the value of corpus.json's "schema" field.
const Schema = "trtmc-ref/corpus/v1"

// IndexFile is the name of the corpus index inside a corpus directory.
const IndexFile = "corpus.json"

// JPEGQuality is the quality corpus JPEG files are written at.
const JPEGQuality = 90

// Object is one ground-truth shape; Box is [x_min, y_min, x_max, y_max]
// normalised to 0..1 from the top left.
type Object struct {
	Label string     `json:"label"`
	Box   [4]float64 `json:"box"`
}

// Entry is one corpus image.
type Entry struct {
	ID       string   `json:"id"`
	File     string   `json:"file"`
	MIME     string   `json:"mime"`
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	Question string   `json:"question,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	Objects  []Object `json:"objects"`
}

// Corpus is the content of corpus.json.
type Corpus struct {
	Schema  string  `json:"schema"`
	Family  string  `json:"family"`
	Entries []Entry `json:"entries"`

	// Dir is the directory the corpus was loaded from or written to.
	Dir string `json:"-"`
}

var sizes = [][2]int{{96, 64}, {128, 96}, {64, 64}, {160, 120}, {200, 150}, {112, 80}}

var backgrounds = []color.NRGBA{
	{255, 255, 255, 255},
	{238, 238, 238, 255},
	{246, 241, 230, 255},
}

// Generate writes count images and corpus.json into dir (created if missing)
// and returns the corpus. The same family and count always give the same bytes.
func Generate(family string, count int, dir string) (*Corpus, error) {
	if _, err := bundle.TaskFor(family); err != nil {
		return nil, err
	}
	if count < 1 {
		return nil, fmt.Errorf("count must be at least 1, got %d", count)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create corpus directory: %w", err)
	}
	c := &Corpus{Schema: Schema, Family: family, Dir: dir}
	for i := range count {
		entry, data, err := generateEntry(family, i)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, entry.File), data, 0o644); err != nil {
			return nil, fmt.Errorf("write corpus image: %w", err)
		}
		c.Entries = append(c.Entries, entry)
	}
	index, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode corpus index: %w", err)
	}
	if err := fileio.WriteFile(filepath.Join(dir, IndexFile), append(index, '\n')); err != nil {
		return nil, fmt.Errorf("write corpus index: %w", err)
	}
	return c, nil
}

// shape is one drawn shape with its exact pixel box and area.
type shape struct {
	colour bundle.Colour
	kind   string
	x0, y0 int // top left of the square or of the disc's bounding square
	size   int // side or diameter
	// Filled in by draw:
	minX, minY, maxX, maxY int
	area                   int
}

func (s *shape) inside(x, y int) bool {
	if s.kind == detect.ShapeSquare {
		return x >= s.x0 && x < s.x0+s.size && y >= s.y0 && y < s.y0+s.size
	}
	r := float64(s.size) / 2
	dx := float64(x) + 0.5 - (float64(s.x0) + r)
	dy := float64(y) + 0.5 - (float64(s.y0) + r)
	return dx*dx+dy*dy <= r*r
}

// generateEntry draws image i of the family and encodes it.
func generateEntry(family string, i int) (Entry, []byte, error) {
	r := rng.New(uint64(i)*7919 + 17)
	size := sizes[i%len(sizes)]
	w, h := size[0], size[1]
	bg := backgrounds[i%len(backgrounds)]
	maxShapes := 4
	if family == bundle.FamilyDetect {
		maxShapes = 5
	}
	var shapes []*shape
	var question, answer string
	// Draw scenes until one gives an unambiguous question; each attempt is
	// deterministic, so the corpus is too.
	for {
		shapes = placeShapes(r, w, h, r.Range(1, maxShapes))
		rasterize(shapes, w, h)
		if family != bundle.FamilyVLM {
			break
		}
		var ok bool
		question, answer, ok = ask(r, i, w, h, shapes)
		if ok {
			break
		}
	}

	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := bg
			for _, s := range shapes {
				if s.inside(x, y) {
					c = color.NRGBA{uint8(s.colour.RGB[0]), uint8(s.colour.RGB[1]), uint8(s.colour.RGB[2]), 255}
					break
				}
			}
			img.SetNRGBA(x, y, c)
		}
	}

	id := fmt.Sprintf("img-%04d", i)
	entry := Entry{ID: id, Width: w, Height: h, Question: question, Answer: answer, Objects: []Object{}}
	var buf bytes.Buffer
	if i%2 == 0 {
		entry.File, entry.MIME = id+".png", imaging.MIMEPNG
		if err := png.Encode(&buf, img); err != nil {
			return Entry{}, nil, fmt.Errorf("encode %s: %w", entry.File, err)
		}
	} else {
		entry.File, entry.MIME = id+".jpg", imaging.MIMEJPEG
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality}); err != nil {
			return Entry{}, nil, fmt.Errorf("encode %s: %w", entry.File, err)
		}
	}
	for _, s := range shapes {
		entry.Objects = append(entry.Objects, Object{
			Label: detect.Label(s.colour.Name, s.kind),
			Box: [4]float64{
				detect.Round4(float64(s.minX) / float64(w)), detect.Round4(float64(s.minY) / float64(h)),
				detect.Round4(float64(s.maxX) / float64(w)), detect.Round4(float64(s.maxY) / float64(h)),
			},
		})
	}
	return entry, buf.Bytes(), nil
}

// placeShapes places up to n non-touching shapes (4 px apart, 2 px from the
// border); at least one always fits.
func placeShapes(r *rng.Source, w, h, n int) []*shape {
	const gap, margin, minSize = 4, 2, 12
	maxSize := max(minSize, min(w, h)*2/5)
	palette := bundle.BaseColours()
	var shapes []*shape
	for attempt := 0; len(shapes) < n && attempt < 200; attempt++ {
		s := &shape{colour: palette[r.IntN(len(palette))], kind: detect.ShapeSquare, size: r.Range(minSize, maxSize)}
		if r.IntN(2) == 1 {
			s.kind = detect.ShapeDisc
		}
		s.x0 = r.Range(margin, w-margin-s.size)
		s.y0 = r.Range(margin, h-margin-s.size)
		clear := true
		for _, o := range shapes {
			if s.x0 < o.x0+o.size+gap && o.x0 < s.x0+s.size+gap && s.y0 < o.y0+o.size+gap && o.y0 < s.y0+s.size+gap {
				clear = false
				break
			}
		}
		if clear {
			shapes = append(shapes, s)
		}
	}
	return shapes
}

// rasterize fills in each shape's exact pixel box and area.
func rasterize(shapes []*shape, w, h int) {
	for _, s := range shapes {
		s.minX, s.minY, s.maxX, s.maxY, s.area = w, h, 0, 0, 0
		for y := s.y0; y < s.y0+s.size; y++ {
			for x := s.x0; x < s.x0+s.size; x++ {
				if s.inside(x, y) {
					s.area++
					s.minX, s.maxX = min(s.minX, x), max(s.maxX, x+1)
					s.minY, s.maxY = min(s.minY, y), max(s.maxY, y+1)
				}
			}
		}
	}
}

// ask picks image i's question and computes its answer from the drawn
// geometry. It reports false when the scene would make the answer fragile
// (near-ties that JPEG noise could flip), so the caller draws another scene.
func ask(r *rng.Source, i, w, h int, shapes []*shape) (question, answer string, ok bool) {
	facts := vlm.Facts{Width: w, Height: h}
	for _, s := range shapes {
		facts.Shapes = append(facts.Shapes, vlm.Shape{Colour: s.colour.Name, Shape: s.kind, Area: s.area, MinX: s.minX, MinY: s.minY})
	}
	palette := bundle.BaseColours()
	switch i % 7 {
	case 0:
		question = vlm.QuestionCount
	case 1:
		question = vlm.QuestionDominant
		areas := map[string]int{}
		for _, s := range shapes {
			areas[s.colour.Name] += s.area
		}
		if !clearWinner(areas) {
			return "", "", false
		}
	case 2:
		question = vlm.QuestionSize
	case 3:
		question = vlm.QuestionLargest
		areas := map[string]int{}
		for k, s := range shapes {
			areas[fmt.Sprint(k)] = s.area
		}
		if !clearWinner(areas) {
			return "", "", false
		}
	case 4:
		question = vlm.QuestionColourCount(palette[r.IntN(len(palette))].Name)
	case 5:
		colour, kind := palette[r.IntN(len(palette))].Name, detect.ShapeSquare
		if r.IntN(2) == 1 {
			kind = detect.ShapeDisc
		}
		if r.IntN(2) == 1 { // ask about a shape that is there half of the time
			s := shapes[r.IntN(len(shapes))]
			colour, kind = s.colour.Name, s.kind
		}
		question = vlm.QuestionHas(colour, kind)
	case 6:
		question = vlm.QuestionDescribe
		for a := range shapes {
			for b := range a {
				if abs(shapes[a].minX-shapes[b].minX) < 3 {
					return "", "", false
				}
			}
		}
	}
	return question, vlm.Answer(question, facts), true
}

// clearWinner reports whether the largest value beats every other by 30%.
func clearWinner(values map[string]int) bool {
	first, second := 0, 0
	for _, v := range values {
		switch {
		case v > first:
			first, second = v, first
		case v > second:
			second = v
		}
	}
	return float64(first) >= 1.3*float64(second)
}

func abs(v int) int { return max(v, -v) }

var reEntryFile = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads and validates DIR/corpus.json.
func Load(dir string) (*Corpus, error) {
	path := filepath.Join(dir, IndexFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read corpus index: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Corpus
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("corpus %s: malformed: %w", path, err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	c.Dir = dir
	return &c, nil
}

func (c *Corpus) validate() error {
	if c.Schema != Schema {
		return fmt.Errorf("schema is %q, want %q", c.Schema, Schema)
	}
	if _, err := bundle.TaskFor(c.Family); err != nil {
		return err
	}
	if len(c.Entries) == 0 {
		return errors.New("no entries")
	}
	ids := map[string]bool{}
	for i, e := range c.Entries {
		switch {
		case e.ID == "" || ids[e.ID]:
			return fmt.Errorf("entries[%d]: id %q is empty or repeated", i, e.ID)
		case !reEntryFile.MatchString(e.File):
			return fmt.Errorf("entries[%d]: file %q is not a plain file name", i, e.File)
		case e.MIME != imaging.MIMEPNG && e.MIME != imaging.MIMEJPEG:
			return fmt.Errorf("entries[%d]: unsupported mime %q", i, e.MIME)
		case c.Family == bundle.FamilyVLM && (e.Question == "" || e.Answer == ""):
			return fmt.Errorf("entries[%d]: a ref-vlm entry needs a question and an answer", i)
		}
		ids[e.ID] = true
	}
	return nil
}

// ReadImage returns the encoded bytes of an entry's image.
func (c *Corpus) ReadImage(e Entry) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir, e.File))
	if err != nil {
		return nil, fmt.Errorf("read corpus image %s: %w", e.ID, err)
	}
	return data, nil
}
