package qual

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
)

// The two limits of trtmc-server, each held to the request AIPerf posts:
// the body (--max-body-bytes) and the prompt's UTF-8 bytes
// (--max-prompt-bytes); the largest request is the one doctor --probe
// sends.
func TestCheckRequestLimits(t *testing.T) {
	dir := t.TempDir()
	entry := func(id string, side int, question string) aiperf.Entry {
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, side, side))))
		p := filepath.Join(dir, id+".png")
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		return aiperf.Entry{ID: id, ImagePath: p, MIME: "image/png", Question: question}
	}
	entries := []aiperf.Entry{entry("small", 4, strings.Repeat("é", 30)), entry("large", 400, "Short?")}
	f := &families.Family{MaxBodyBytes: 1 << 20, MaxPromptBytes: 1 << 10}
	s, err := CheckRequestLimits(f, endpoint.Chat, entries, "m", nil)
	require.NoError(t, err)
	assert.Equal(t, "large", s.Largest.ID)
	assert.EqualValues(t, 60, s.LargestPrompt, "UTF-8 bytes, not characters")
	assert.Equal(t, "small", s.LargestPromptEntry)
	assert.Contains(t, s.String(), "limit 1048576 (--max-body-bytes)")
	assert.Contains(t, s.String(), "the largest prompt is 60 bytes (entry small), limit 1024 (--max-prompt-bytes)")

	f.MaxPromptBytes = 59
	_, err = CheckRequestLimits(f, endpoint.Chat, entries, "m", nil)
	var pe *PromptTooLargeError
	require.ErrorAs(t, err, &pe)
	assert.True(t, IsOverLimit(err))
	assert.Contains(t, err.Error(), "corpus entry small (small.png): its prompt is 60 bytes of UTF-8 text, over the server's limit of 59 bytes (--max-prompt-bytes)")

	f.MaxPromptBytes, f.MaxBodyBytes = 0, s.LargestBody-1
	_, err = CheckRequestLimits(f, endpoint.Chat, entries, "m", nil)
	var be *aiperf.RequestTooLargeError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "large", be.Entry)
	assert.True(t, IsOverLimit(err))
	assert.False(t, IsOverLimit(errors.New("other")))
}
