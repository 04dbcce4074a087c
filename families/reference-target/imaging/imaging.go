// Package imaging decodes the images a request carries (PNG or JPEG, inside a
// base64 data URL) into a plain RGB pixel buffer.
package imaging

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
)

// MIME types the reference models accept.
const (
	MIMEPNG  = "image/png"
	MIMEJPEG = "image/jpeg"
)

// MaxSide is the largest width or height accepted, a guard against
// decompression bombs.
const MaxSide = 4096

// Image is a decoded image: 8-bit RGB, row-major, no padding.
type Image struct {
	Width, Height int
	Pix           []uint8 // len = 3*Width*Height
	MIME          string
	// EncodedBytes is the size of the encoded (PNG/JPEG) image.
	EncodedBytes int
}

// RGB returns the colour of the pixel at (x, y). The detector walks Pix
// in order; RGB is how the tests of imaging and detect read a picture.
func (m *Image) RGB(x, y int) (r, g, b uint8) {
	i := 3 * (y*m.Width + x)
	return m.Pix[i], m.Pix[i+1], m.Pix[i+2]
}

// ParseDataURL splits "data:<mime>;base64,<data>" into its MIME type and the
// decoded bytes. Only image/png and image/jpeg are accepted.
func ParseDataURL(url string) (mime string, data []byte, err error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
			return "", nil, errors.New("image URLs are not supported, send a base64 data URL")
		}
		return "", nil, errors.New("image url is not a data URL")
	}
	header, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, errors.New("data URL has no comma before its data")
	}
	mime, ok = strings.CutSuffix(header, ";base64")
	if !ok {
		return "", nil, errors.New("data URL is not base64 encoded")
	}
	if mime != MIMEPNG && mime != MIMEJPEG {
		return "", nil, fmt.Errorf("unsupported image type %q (valid values are %s, %s)", mime, MIMEPNG, MIMEJPEG)
	}
	data, err = base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, fmt.Errorf("data URL: invalid base64: %w", err)
	}
	if len(data) == 0 {
		return "", nil, errors.New("data URL holds no image data")
	}
	return mime, data, nil
}

// DataURL encodes image bytes as a base64 data URL.
func DataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// Decode decodes PNG or JPEG bytes of the given MIME type. The bytes must be
// of the declared type.
func Decode(mime string, data []byte) (*Image, error) {
	var decodeConfig func([]byte) (image.Config, error)
	var decode func([]byte) (image.Image, error)
	switch mime {
	case MIMEPNG:
		decodeConfig = func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
	case MIMEJPEG:
		decodeConfig = func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }
	default:
		return nil, fmt.Errorf("unsupported image type %q (valid values are %s, %s)", mime, MIMEPNG, MIMEJPEG)
	}
	cfg, err := decodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("image is not a valid %s: %w", mime, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxSide || cfg.Height > MaxSide {
		return nil, fmt.Errorf("image size %dx%d is outside 1x1..%dx%d", cfg.Width, cfg.Height, MaxSide, MaxSide)
	}
	img, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("image is not a valid %s: %w", mime, err)
	}
	out := FromImage(img)
	out.MIME = mime
	out.EncodedBytes = len(data)
	return out, nil
}

// FromImage converts any image to 8-bit RGB; alpha is composited over white.
func FromImage(img image.Image) *Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := &Image{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA() // premultiplied, 16-bit
			white := 0xffff - a
			out.Pix[i] = uint8((r + white) >> 8)
			out.Pix[i+1] = uint8((g + white) >> 8)
			out.Pix[i+2] = uint8((bl + white) >> 8)
			i += 3
		}
	}
	return out
}
