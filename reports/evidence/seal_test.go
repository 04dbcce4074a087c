package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
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

// TestDigestIsATreeOfBlocks: each algorithm's digest is its hash over its
// hash of each 1 MiB block, so a parser can compute it from the blocks it
// reads. The values are pinned against independent implementations
// (Python's hashlib and the blake3 package, as scripts/baseline_rejudge.py
// computes them).
func TestDigestIsATreeOfBlocks(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*DigestBlock+100)/16)
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, tc := range []struct {
		algo       string
		sum        func([]byte) [32]byte
		want, none string
	}{
		{AlgoBLAKE3Tree, blake3.Sum256,
			"5b5754e43295c63280af8175546a66efe34c446bea5c9565562e5e1f150e2d87",
			"82878ed8a480ee41775636820e05a934ca5c747223ca64306658ee5982e6c227"},
		{AlgoSHA256Tree, sha256.Sum256,
			"99dc2d9c42ca44e9b4d434f89ba86e3d2ef6ae8c18ffd64eeca61d8d2ef1eb61",
			"5df6e0e2761359d30a8275058e299fcc0381534545f55cf43e41983f5d4c9456"},
	} {
		d, ok := DigesterFor(tc.algo)
		require.True(t, ok)
		assert.Equal(t, tc.algo, d.Name())
		got, err := d.File(p)
		require.NoError(t, err)
		var cat []byte
		for i := 0; i < len(data); i += DigestBlock {
			s := tc.sum(data[i:min(i+DigestBlock, len(data))])
			cat = append(cat, s[:]...)
		}
		whole := tc.sum(cat)
		assert.Equal(t, hex.EncodeToString(whole[:]), got, tc.algo)
		assert.Equal(t, tc.want, got, "%s: the value Python computes", tc.algo)
		assert.Equal(t, tc.want, d.Bytes(data), "%s: the digest of bytes already read is the file's", tc.algo)
		got, err = d.File(empty)
		require.NoError(t, err)
		one := tc.sum(nil)
		whole = tc.sum(one[:])
		assert.Equal(t, hex.EncodeToString(whole[:]), got, "%s: an empty file is one empty block", tc.algo)
		assert.Equal(t, tc.none, got, "%s: the value Python computes", tc.algo)
		assert.Equal(t, tc.none, d.Bytes(nil), "%s: no bytes are one empty block", tc.algo)
		assert.NotEqual(t, tc.want, d.Bytes(data[:len(data)-1]), "%s: one byte less is another digest", tc.algo)
		for _, chunk := range []int{1 << 10, DigestBlock, DigestBlock + 7, len(data)} {
			w := d.Writer()
			for off := 0; off < len(data); off += chunk {
				_, _ = w.Write(data[off:min(off+chunk, len(data))])
			}
			assert.Equal(t, tc.want, w.Sum(), "%s: written in pieces of %d, the file's digest", tc.algo, chunk)
		}
		assert.Equal(t, tc.none, d.Writer().Sum(), "%s: nothing written is one empty block", tc.algo)
		w := d.Writer()
		_, _ = w.Write(data[:len(data)-1])
		assert.NotEqual(t, tc.want, w.Sum(), "%s: one byte less written is another digest", tc.algo)
	}
	got, err := Default().File(p)
	require.NoError(t, err)
	b3, _ := DigesterFor(AlgoBLAKE3Tree)
	want, _ := b3.File(p)
	assert.Equal(t, want, got, "Seal writes BLAKE3 trees")
	_, ok := DigesterFor("md5-tree-1mib")
	assert.False(t, ok)
}

// TestEarlierSealsStillVerify: evidence sealed with SHA-256 trees (earlier
// versions) verifies, and a change in it is still found.
func TestEarlierSealsStillVerify(t *testing.T) {
	dir := sealedDir(t)
	// Reseal the manifest as an earlier version wrote it.
	m, f := ReadManifest(dir)
	require.Nil(t, f)
	old, _ := DigesterFor(AlgoSHA256Tree)
	files := map[string]string{}
	for rel := range m.Files {
		d, err := old.File(filepath.Join(dir, rel))
		require.NoError(t, err)
		files[rel] = d
	}
	m.Algorithm, m.Files, m.Seal = AlgoSHA256Tree, files, zeroSeal
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	data = append(data, '\n')
	sum := sha256.Sum256(data)
	data = bytes.Replace(data, []byte(zeroSeal), []byte(hex.EncodeToString(sum[:])), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644))
	assert.Empty(t, VerifySeal(dir, Digests{}))
	// Digests in another algorithm than the manifest's are not used.
	b3, _ := DigesterFor(AlgoBLAKE3Tree)
	d, err := b3.File(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	assert.Empty(t, VerifySeal(dir, Digests{Algorithm: AlgoBLAKE3Tree, Files: map[string]string{"result.json": d}}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"verdict":"failed"}`), 0o644))
	assert.Equal(t, []Finding{{File: "result.json", What: "changed", Detail: "digest differs from the sealed one"}}, VerifySeal(dir, Digests{}))
}

func TestSealVerifies(t *testing.T) {
	dir := sealedDir(t)
	assert.Empty(t, VerifySeal(dir, Digests{}))
	m, f := ReadManifest(dir)
	require.Nil(t, f)
	assert.Len(t, m.Files, 3)
	assert.Equal(t, AlgoBLAKE3Tree, m.Algorithm)
	// result.rejudged.json may be written after the seal.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.rejudged.json"), []byte("{}"), 0o644))
	assert.Empty(t, VerifySeal(dir, Digests{}))
	// A digest computed elsewhere is used as given.
	assert.Equal(t, []Finding{{File: "empty.log", What: "changed", Detail: "digest differs from the sealed one"}},
		VerifySeal(dir, Digests{Algorithm: AlgoBLAKE3Tree, Files: map[string]string{"empty.log": "0000"}}))
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
			fs := VerifySeal(dir, Digests{})
			require.NotEmpty(t, fs)
			var got []string
			for _, f := range fs {
				got = append(got, f.String())
			}
			assert.Contains(t, strings.Join(got, "\n"), tc.want)
		})
	}
}

// BenchmarkBlockSum compares the seal's block digests in one run, one
// 1 MiB block at a time as the join hashes them (docs/performance.md):
//
//	go test -run '^$' -bench BlockSum -count 10 -cpu 1 ./reports/evidence/ | benchstat -
func BenchmarkBlockSum(b *testing.B) {
	block := bytes.Repeat([]byte(`{"metadata":{"x_request_id":"16e4ecbf-9b70-45ae-814c-8a96497644ed"},"payload":"iVBORw0KGgo"}`+"\n"), DigestBlock/100)
	for _, algo := range []string{AlgoBLAKE3Tree, AlgoSHA256Tree} {
		d, _ := DigesterFor(algo)
		b.Run(algo, func(b *testing.B) {
			b.SetBytes(int64(len(block)))
			for b.Loop() {
				d.BlockSum(block)
			}
		})
	}
}
