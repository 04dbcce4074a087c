// Package bundle defines the reference model bundle: a small canonical JSON file
// holding the family, task, precision, seed and model parameters. The sha256 of
// the file's bytes is the bundle's identity.
package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/internal/rng"
)

// Format is the value of the bundle's "format" field.
const Format = "trtmc-ref-bundle/v1"

// Families served by the reference server.
const (
	FamilyVLM    = "ref-vlm"
	FamilyDetect = "ref-detect"
)

// Precisions a bundle may be built at.
const (
	PrecisionFP32 = "fp32"
	PrecisionFP16 = "fp16"
)

// Families lists the known families in a stable order.
func Families() []string { return []string{FamilyDetect, FamilyVLM} }

// TaskFor returns the TRTMC task strategy of a family.
func TaskFor(family string) (string, error) {
	switch family {
	case FamilyVLM:
		return "vision_language_generation", nil
	case FamilyDetect:
		return "object_detection", nil
	}
	return "", fmt.Errorf("unknown family %q (valid values are %s)", family, strings.Join(Families(), ", "))
}

// Colour is one palette entry: a named reference colour.
type Colour struct {
	Name string `json:"name"`
	RGB  [3]int `json:"rgb"`
}

// Params are the model parameters. Both families share the same perception
// (colour segmentation), so they share one parameter set.
type Params struct {
	// Palette holds the reference colours a pixel is matched against.
	Palette []Colour `json:"palette"`
	// MaxColourDistance is the largest Euclidean RGB distance at which a pixel
	// still matches its nearest palette colour; farther pixels are background.
	MaxColourDistance float64 `json:"max_colour_distance"`
	// MinArea is the smallest connected component, in pixels, kept as a shape.
	MinArea int `json:"min_area"`
	// SquareMinFill is the fill ratio (component area / box area) at or above
	// which a component is a square; below it, a disc.
	SquareMinFill float64 `json:"square_min_fill"`
	// ConfidenceFloor is the confidence of the weakest possible detection.
	ConfidenceFloor float64 `json:"confidence_floor"`
}

// Bundle is a loaded bundle file.
type Bundle struct {
	Format    string `json:"format"`
	Family    string `json:"family"`
	Task      string `json:"task"`
	Precision string `json:"precision"`
	Seed      int64  `json:"seed"`
	Params    Params `json:"params"`

	// Path and SHA256 describe the file the bundle was loaded from.
	Path   string `json:"-"`
	SHA256 string `json:"-"`
}

// BaseColours are the canonical palette colours. The corpus draws with them;
// bundles carry a seed-dependent jitter of them as their "trained" palette.
func BaseColours() []Colour {
	return []Colour{
		{Name: "red", RGB: [3]int{210, 40, 40}},
		{Name: "green", RGB: [3]int{40, 160, 60}},
		{Name: "blue", RGB: [3]int{40, 70, 210}},
		{Name: "yellow", RGB: [3]int{235, 200, 30}},
	}
}

// New builds the bundle for a family, precision and seed. The same arguments
// always give the same bundle.
func New(family, precision string, seed int64) (*Bundle, error) {
	task, err := TaskFor(family)
	if err != nil {
		return nil, err
	}
	if precision != PrecisionFP32 && precision != PrecisionFP16 {
		return nil, fmt.Errorf("unknown precision %q (valid values are fp32, fp16)", precision)
	}
	r := rng.New(uint64(seed))
	jitter := func(span int) int { return r.Range(-span, span) }
	palette := BaseColours()
	for i := range palette {
		for c := range palette[i].RGB {
			palette[i].RGB[c] = clampByte(palette[i].RGB[c] + jitter(3))
		}
	}
	p := Params{
		Palette:           palette,
		MaxColourDistance: float64(100 + jitter(5)),
		MinArea:           12 + jitter(2),
		SquareMinFill:     0.88 + float64(jitter(2))/100,
		ConfidenceFloor:   0.5,
	}
	if precision == PrecisionFP16 {
		p.MaxColourDistance = RoundFP16(p.MaxColourDistance)
		p.SquareMinFill = RoundFP16(p.SquareMinFill)
		p.ConfidenceFloor = RoundFP16(p.ConfidenceFloor)
	}
	return &Bundle{Format: Format, Family: family, Task: task, Precision: precision, Seed: seed, Params: p}, nil
}

// Encode returns the canonical bytes of the bundle: JSON with sorted keys,
// no insignificant whitespace, and a trailing newline.
func (b *Bundle) Encode() ([]byte, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	// Decoding into generic values and encoding again sorts every object's keys.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	return append(out, '\n'), nil
}

// Digest returns the hex sha256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Load reads and validates a bundle file. Errors name the file.
func Load(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	b, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	b.Path = path
	return b, nil
}

// Parse decodes and validates bundle bytes; unknown fields are errors.
func Parse(data []byte) (*Bundle, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("malformed bundle: %w", err)
	}
	if dec.More() {
		return nil, errors.New("malformed bundle: trailing data after the JSON object")
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	b.SHA256 = Digest(data)
	return &b, nil
}

// Validate checks the bundle's fields.
func (b *Bundle) Validate() error {
	if b.Format != Format {
		return fmt.Errorf("format is %q, want %q", b.Format, Format)
	}
	task, err := TaskFor(b.Family)
	if err != nil {
		return err
	}
	if b.Task != task {
		return fmt.Errorf("task is %q, family %s needs %q", b.Task, b.Family, task)
	}
	if b.Precision != PrecisionFP32 && b.Precision != PrecisionFP16 {
		return fmt.Errorf("unknown precision %q (valid values are fp32, fp16)", b.Precision)
	}
	return b.Params.Validate()
}

// Validate checks the model parameters.
func (p *Params) Validate() error {
	if len(p.Palette) == 0 {
		return errors.New("params.palette is empty")
	}
	var names []string
	for i, c := range p.Palette {
		if c.Name == "" {
			return fmt.Errorf("params.palette[%d].name is empty", i)
		}
		if slices.Contains(names, c.Name) {
			return fmt.Errorf("params.palette[%d].name %q is repeated", i, c.Name)
		}
		names = append(names, c.Name)
		for _, v := range c.RGB {
			if v < 0 || v > 255 {
				return fmt.Errorf("params.palette[%d].rgb %v is outside 0..255", i, c.RGB)
			}
		}
	}
	if !(p.MaxColourDistance > 0) {
		return fmt.Errorf("params.max_colour_distance must be positive, got %v", p.MaxColourDistance)
	}
	if p.MinArea < 1 {
		return fmt.Errorf("params.min_area must be at least 1, got %d", p.MinArea)
	}
	if !(p.SquareMinFill > 0 && p.SquareMinFill <= 1) {
		return fmt.Errorf("params.square_min_fill must be in (0, 1], got %v", p.SquareMinFill)
	}
	if !(p.ConfidenceFloor >= 0 && p.ConfidenceFloor < 1) {
		return fmt.Errorf("params.confidence_floor must be in [0, 1), got %v", p.ConfidenceFloor)
	}
	return nil
}

// RoundFP16 rounds v to the nearest value representable as an IEEE 754 half
// precision float (10-bit mantissa), for values in the normal fp16 range.
func RoundFP16(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	frac, exp := math.Frexp(v) // v = frac * 2^exp, 0.5 <= |frac| < 1
	const mantissa = 1 << 11   // 10 stored bits plus the implicit one
	return math.Ldexp(math.RoundToEven(frac*mantissa)/mantissa, exp)
}

func clampByte(v int) int { return max(0, min(255, v)) }
