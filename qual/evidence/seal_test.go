package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sealedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"result.json":                 `{"verdict":"qualified"}`,
		"aiperf/profile_export.jsonl": strings.Repeat("{}\n", 1000),
		"empty.log":                   "",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	require.NoError(t, Seal(dir, map[string]any{"host": "h"}))
	return dir
}

// TestDigestIsATreeOfBlocks: the digest is sha256 over the sha256 of each
// 1 MiB block, so a parser can compute it from the blocks it reads.
func TestDigestIsATreeOfBlocks(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*DigestBlock+100)/16)
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	got, err := Digest(p)
	require.NoError(t, err)
	var sums [][32]byte
	for i := 0; i < len(data); i += DigestBlock {
		sums = append(sums, sha256.Sum256(data[i:min(i+DigestBlock, len(data))]))
	}
	assert.Equal(t, CombineBlocks(sums), got)
	h := sha256.New()
	for _, s := range sums {
		h.Write(s[:])
	}
	assert.Equal(t, hex.EncodeToString(h.Sum(nil)), got)

	require.NoError(t, os.WriteFile(p, nil, 0o644))
	got, err = Digest(p)
	require.NoError(t, err)
	assert.Equal(t, CombineBlocks([][32]byte{BlockSum(nil)}), got, "an empty file is one empty block")
}

func TestSealVerifies(t *testing.T) {
	dir := sealedDir(t)
	assert.Empty(t, VerifySeal(dir, nil))
	m, f := ReadManifest(dir)
	require.Nil(t, f)
	assert.Len(t, m.Files, 3)
	// result.rejudged.json may be written after the seal.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.rejudged.json"), []byte("{}"), 0o644))
	assert.Empty(t, VerifySeal(dir, nil))
	// A digest computed elsewhere is used as given.
	assert.Equal(t, []Finding{{File: "empty.log", What: "changed", Detail: "digest differs from the sealed one"}},
		VerifySeal(dir, map[string]string{"empty.log": "0000"}))
}

func TestSealFindsEveryChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"a byte changed", func(dir string) {
			p := filepath.Join(dir, "aiperf", "profile_export.jsonl")
			data, _ := os.ReadFile(p)
			data[500] = ' '
			_ = os.WriteFile(p, data, 0o644)
		}, "aiperf/profile_export.jsonl: changed"},
		{"a file removed", func(dir string) { _ = os.Remove(filepath.Join(dir, "empty.log")) }, "empty.log: missing"},
		{"a file added", func(dir string) { _ = os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) }, "x: added"},
		{"a symlink added", func(dir string) { _ = os.Symlink("result.json", filepath.Join(dir, "link")) }, "link: added"},
		{"the manifest edited", func(dir string) {
			p := filepath.Join(dir, ManifestFile)
			data, _ := os.ReadFile(p)
			_ = os.WriteFile(p, bytes.Replace(data, []byte(`"h"`), []byte(`"g"`), 1), 0o644)
		}, "manifest.json: changed (its seal does not match its bytes)"},
		{"a listed digest edited and resealed by hand badly", func(dir string) {
			p := filepath.Join(dir, ManifestFile)
			data, _ := os.ReadFile(p)
			i := bytes.Index(data, []byte(`"empty.log": "`)) + len(`"empty.log": "`)
			data[i] ^= 1
			_ = os.WriteFile(p, data, 0o644)
		}, "manifest.json: changed"},
		{"the manifest removed", func(dir string) { _ = os.Remove(filepath.Join(dir, ManifestFile)) }, "manifest.json: missing"},
		{"two seals", func(dir string) {
			p := filepath.Join(dir, ManifestFile)
			data, _ := os.ReadFile(p)
			_ = os.WriteFile(p, append(data, []byte(`"seal": "`+strings.Repeat("a", 64)+`"`)...), 0o644)
		}, "manifest.json: unsealed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sealedDir(t)
			tc.edit(dir)
			fs := VerifySeal(dir, nil)
			require.NotEmpty(t, fs)
			var got []string
			for _, f := range fs {
				got = append(got, f.String())
			}
			assert.Contains(t, strings.Join(got, "\n"), tc.want)
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":             "''",
		"plain-1.0/x":  "plain-1.0/x",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"$HOME":        "'$HOME'",
		"--gpus=0,1":   "--gpus=0,1",
		"a\nb":         "'a\nb'",
		"[REDACTED]":   "'[REDACTED]'",
		`"$(rm -rf)"`:  `'"$(rm -rf)"'`,
		"tab\there":    "'tab\there'",
		"semi;colon":   "'semi;colon'",
		"glob*":        "'glob*'",
		"~/tilde":      "'~/tilde'",
		"back`tick`":   "'back`tick`'",
		"amp&persand":  "'amp&persand'",
		"pipe|d":       "'pipe|d'",
		"paren(s)":     "'paren(s)'",
		"redirect>out": "'redirect>out'",
	} {
		assert.Equal(t, want, ShellQuote(in), "%q", in)
	}
	assert.Equal(t, "trtmc-qual run --out '/tmp/a b'", ShellJoin([]string{"trtmc-qual", "run", "--out", "/tmp/a b"}))
}
