package detect_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
)

func iou(a, b [4]float64) float64 {
	iw := min(a[2], b[2]) - max(a[0], b[0])
	ih := min(a[3], b[3]) - max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

// reencode decodes corpus bytes and encodes them again as JPEG, as a client
// such as AIPerf may do before sending.
func reencode(t *testing.T, mime string, data []byte, quality int) []byte {
	t.Helper()
	m, err := imaging.Decode(mime, data)
	require.NoError(t, err)
	img := image.NewNRGBA(image.Rect(0, 0, m.Width, m.Height))
	for y := range m.Height {
		for x := range m.Width {
			r, g, b := m.RGB(x, y)
			img.SetNRGBA(x, y, color.NRGBA{r, g, b, 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}))
	return buf.Bytes()
}

func TestDetectorFindsGroundTruth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := corpus.Generate(bundle.FamilyDetect, 24, dir)
	require.NoError(t, err)
	for _, precision := range []string{bundle.PrecisionFP32, bundle.PrecisionFP16} {
		b, err := bundle.New(bundle.FamilyDetect, precision, 7)
		require.NoError(t, err)
		d := detect.New(b)
		for _, e := range c.Entries {
			data, err := os.ReadFile(filepath.Join(dir, e.File))
			require.NoError(t, err)
			variants := map[string][]byte{"corpus": data, "jpeg-q75": reencode(t, e.MIME, data, 75)}
			for name, raw := range variants {
				mime := e.MIME
				if name != "corpus" {
					mime = imaging.MIMEJPEG
				}
				img, err := imaging.Decode(mime, raw)
				require.NoError(t, err)
				dets := d.Detect(img)
				require.Len(t, dets, len(e.Objects), "%s %s %s", precision, e.ID, name)
				for _, o := range e.Objects {
					best := 0.0
					for label, boxes := range detect.Boxes(dets, img.Width, img.Height) {
						for _, bx := range boxes {
							if label == o.Label {
								best = max(best, iou(o.Box, [4]float64{bx.XMin, bx.YMin, bx.XMax, bx.YMax}))
							}
							assert.True(t, bx.Confidence > 0.5 && bx.Confidence <= 1, "confidence %v", bx.Confidence)
							if precision == bundle.PrecisionFP16 {
								assert.Equal(t, bundle.RoundFP16(bx.Confidence), bx.Confidence)
							}
						}
					}
					floor := 0.7
					if e.MIME == imaging.MIMEPNG && name == "corpus" {
						floor = 1 // lossless: exact boxes
					}
					assert.GreaterOrEqual(t, best, floor, "%s %s %s %s", precision, e.ID, name, o.Label)
				}
			}
		}
	}
}

func TestBoxesAreGroupedAndOrdered(t *testing.T) {
	t.Parallel()
	dets := []detect.Detection{
		{Label: "red_square", MinX: 0, MinY: 0, MaxX: 10, MaxY: 10, Confidence: 0.8},
		{Label: "blue_disc", MinX: 20, MinY: 0, MaxX: 30, MaxY: 10, Confidence: 0.9},
		{Label: "red_square", MinX: 40, MinY: 20, MaxX: 50, MaxY: 30, Confidence: 0.95},
	}
	got := detect.Boxes(dets, 100, 50)
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"blue_disc", "red_square"}, keys)
	require.Len(t, got["red_square"], 2)
	assert.Equal(t, detect.Box{XMin: 0.4, YMin: 0.4, XMax: 0.5, YMax: 0.6, Confidence: 0.95}, got["red_square"][0])
	assert.Equal(t, 0.8, got["red_square"][1].Confidence)
}

func TestEmptyImageHasNoDetections(t *testing.T) {
	t.Parallel()
	b, err := bundle.New(bundle.FamilyDetect, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	img := &imaging.Image{Width: 8, Height: 8, Pix: bytes.Repeat([]byte{250}, 3*64)}
	assert.Empty(t, detect.New(b).Detect(img))
}
