package trtmc

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // decoders for image.DecodeConfig
	_ "image/jpeg" // (sizes only: pixels are the Task's business)
	_ "image/png"
	"net/http"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Image is one decoded data-URL image: its exact bytes, type and size.
type Image struct {
	MIME   string
	Data   []byte
	Width  int
	Height int
}

// Ext is a file extension for the image's type (TRTMC's CLI reads files).
func (im Image) Ext() string {
	switch im.MIME {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/bmp":
		return ".bmp"
	}
	return ".img"
}

// DecodeDataURL decodes "data:<image mime>;base64,<bytes>" and reads the
// image's size from its header. The bytes are kept exactly as sent.
func DecodeDataURL(url string) (Image, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "file:") {
			return Image{}, fmt.Errorf("image URL %q is not a data URL: the native path never fetches", text.Clip(url, 60))
		}
		return Image{}, fmt.Errorf("image URL is not a data URL (starts %q)", text.Clip(url, 30))
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return Image{}, errors.New("data URL has no ',' before its data")
	}
	mime, params, _ := strings.Cut(meta, ";")
	if !strings.EqualFold(params, "base64") {
		return Image{}, fmt.Errorf("data URL is not base64 (%q)", meta)
	}
	mime = strings.ToLower(strings.TrimSpace(mime))
	if !strings.HasPrefix(mime, "image/") {
		return Image{}, fmt.Errorf("data URL type %q is not an image type", mime)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return Image{}, fmt.Errorf("data URL base64: %w", err)
	}
	if len(data) == 0 {
		return Image{}, errors.New("data URL holds no bytes")
	}
	if sniffed := http.DetectContentType(data); strings.HasPrefix(sniffed, "image/") && sniffed != mime {
		return Image{}, fmt.Errorf("data URL says %s but the bytes are %s", mime, sniffed)
	}
	im := Image{MIME: mime, Data: data}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("read %s image size: %w", mime, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Image{}, fmt.Errorf("%s image has size %dx%d", mime, cfg.Width, cfg.Height)
	}
	im.Width, im.Height = cfg.Width, cfg.Height
	return im, nil
}
