package imaging_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
)

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestDataURLRoundTrip(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	img.SetNRGBA(1, 1, color.NRGBA{200, 10, 20, 255})
	img.SetNRGBA(2, 0, color.NRGBA{0, 0, 0, 0}) // transparent: white
	data := encodePNG(t, img)

	mime, got, err := imaging.ParseDataURL(imaging.DataURL(imaging.MIMEPNG, data))
	require.NoError(t, err)
	assert.Equal(t, imaging.MIMEPNG, mime)
	assert.Equal(t, data, got)

	m, err := imaging.Decode(mime, got)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Width)
	assert.Equal(t, 2, m.Height)
	assert.Equal(t, len(data), m.EncodedBytes)
	r, g, b := m.RGB(1, 1)
	assert.Equal(t, [3]uint8{200, 10, 20}, [3]uint8{r, g, b})
	r, g, b = m.RGB(2, 0)
	assert.Equal(t, [3]uint8{255, 255, 255}, [3]uint8{r, g, b})
}

func TestParseDataURLErrors(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"https://x/y.png":             "send a base64 data URL",
		"file:///x.png":               "not a data URL",
		"data:image/png;base64":       "no comma",
		"data:image/png,abc":          "not base64 encoded",
		"data:image/webp;base64,AAAA": `unsupported image type "image/webp"`,
		"data:image/png;base64,!!":    "invalid base64",
		"data:image/png;base64,":      "no image data",
	} {
		_, _, err := imaging.ParseDataURL(url)
		assert.ErrorContains(t, err, want, url)
	}
}

func TestDecodeChecksTypeAndSize(t *testing.T) {
	t.Parallel()
	small := image.NewGray(image.Rect(0, 0, 4, 4))
	var jpg bytes.Buffer
	require.NoError(t, jpeg.Encode(&jpg, small, nil))
	_, err := imaging.Decode(imaging.MIMEPNG, jpg.Bytes())
	assert.ErrorContains(t, err, "not a valid image/png")
	m, err := imaging.Decode(imaging.MIMEJPEG, jpg.Bytes())
	require.NoError(t, err)
	assert.Equal(t, imaging.MIMEJPEG, m.MIME)

	huge := encodePNG(t, image.NewGray(image.Rect(0, 0, imaging.MaxSide+1, 1)))
	_, err = imaging.Decode(imaging.MIMEPNG, huge)
	assert.ErrorContains(t, err, "outside 1x1")
	_, err = imaging.Decode("image/gif", huge)
	assert.ErrorContains(t, err, "unsupported image type")
}
