package qual

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

func tokenizerProfile(t *testing.T) (*inventory.Profile, string) {
	t.Helper()
	d := t.TempDir()
	dir := filepath.Join(d, "tokenizers", "qwen3-vl-2b")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{"type":"BPE"}}`), 0o644))
	p := &inventory.Profile{ID: "qwen3-vl-2b", Checkpoint: "Qwen/Qwen3-VL-2B-Instruct", File: filepath.Join(d, "inventory.yaml"),
		Tokenizer: inventory.Tokenizer{Path: "tokenizers/qwen3-vl-2b"}}
	return p, dir
}

// The profile's tokenizer is used, checked, and identified in the row.
func TestCheckTokenizer(t *testing.T) {
	p, dir := tokenizerProfile(t)
	id, err := CheckTokenizer(p, "/the/run's/--tokenizer")
	require.NoError(t, err)
	assert.Equal(t, dir, id.Path)
	assert.Equal(t, fileio.SHA256([]byte(`{"model":{"type":"BPE"}}`)), id.SHA256)

	p.Tokenizer.SHA256 = id.SHA256
	_, err = CheckTokenizer(p, "")
	require.NoError(t, err, "equal to its pin")

	// Without its own, the run's --tokenizer.
	fallback := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fallback, "tokenizer_config.json"), []byte(`{}`), 0o644))
	id, err = CheckTokenizer(&inventory.Profile{ID: "x", Checkpoint: "a/b"}, fallback)
	require.NoError(t, err)
	assert.Equal(t, fallback, id.Path)
	assert.Empty(t, id.SHA256)
}

// A tokenizer that does not match is refused, naming the profile and why.
func TestCheckTokenizerRefusesAMismatch(t *testing.T) {
	for name, tt := range map[string]struct {
		edit func(p *inventory.Profile, dir string)
		want string
	}{
		"pin differs": {func(p *inventory.Profile, _ string) { p.Tokenizer.SHA256 = strings.Repeat("a", 64) },
			"does not match its pin"},
		"pinned but no tokenizer.json": {func(p *inventory.Profile, dir string) {
			p.Tokenizer.SHA256 = strings.Repeat("a", 64)
			_ = os.Remove(filepath.Join(dir, "tokenizer.json"))
			_ = os.WriteFile(filepath.Join(dir, "tokenizer.model"), []byte("sp"), 0o644)
		}, "tokenizer.json sha256 absent"},
		"another checkpoint's": {func(_ *inventory.Profile, dir string) {
			_ = os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"name_or_path":"microsoft/Phi-4-multimodal-instruct"}`), 0o644)
		}, "is microsoft/Phi-4-multimodal-instruct's (tokenizer_config.json name_or_path), not Qwen/Qwen3-VL-2B-Instruct's"},
		"missing": {func(_ *inventory.Profile, dir string) { _ = os.RemoveAll(dir) }, "does not exist"},
		"empty":   {func(_ *inventory.Profile, dir string) { _ = os.Remove(filepath.Join(dir, "tokenizer.json")) }, "holds no tokenizer.json"},
		"none at all": {func(p *inventory.Profile, _ string) { p.Tokenizer.Path = "" },
			"no tokenizer for AIPerf chat"},
	} {
		p, dir := tokenizerProfile(t)
		tt.edit(p, dir)
		_, err := CheckTokenizer(p, "")
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "profile qwen3-vl-2b: ", name)
		assert.Contains(t, err.Error(), tt.want, name)
	}

	// A local path in name_or_path says nothing about the checkpoint.
	p, dir := tokenizerProfile(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"name_or_path":"/models/qwen"}`), 0o644))
	_, err := CheckTokenizer(p, "")
	assert.NoError(t, err)
}
