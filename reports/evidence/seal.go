package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeebo/blake3"
	"golang.org/x/sync/errgroup"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// A checkpoint's evidence is sealed when the run ends: manifest.json lists
// the digest of every other file of the directory, and carries a digest of
// itself (the seal), computed over its own bytes with the seal's value
// zeroed. Any later change, addition or removal of a file, or any edit of
// the manifest, is then found by VerifySeal. It detects changes; it does
// not authenticate them (whoever can rewrite the evidence can reseal it).

// ManifestFile is the sealed manifest in a checkpoint's evidence directory.
const ManifestFile = "manifest.json"

// Digest algorithms of the seal, recorded in each manifest. Both are trees
// of DigestBlock-sized blocks (the last one shorter; an empty file is one
// empty block): the hash of the concatenated hashes of the blocks, so a
// parser digests a file from the blocks it reads, in parallel, in any order.
const (
	// AlgoBLAKE3Tree is BLAKE3-256 over the BLAKE3-256 of each block: what
	// Seal writes. BLAKE3 is a cryptographic hash about twice as fast as
	// SHA-256 with the CPU's SHA extensions on the machines measured
	// (docs/performance.md), and a rejudge hashes every byte of the
	// evidence.
	AlgoBLAKE3Tree = "blake3-tree-1mib"
	// AlgoSHA256Tree is SHA-256 over the SHA-256 of each block: the seals
	// of earlier versions. Retired: nothing new is sealed with it; it is
	// still verified (a changed file is still found), but a row sealed
	// with it is never trusted as it is stored, only re-judged (Retired).
	AlgoSHA256Tree = "sha256-tree-1mib"
)

// Retired reports whether a manifest's digest algorithm is retired: its
// evidence is verified, but its stored verdict and figures are not
// trusted as they are (reports.ReadRow: seal_legacy).
func Retired(algo string) bool { return algo == AlgoSHA256Tree }

// DigestAlgorithm is the algorithm Seal writes.
const DigestAlgorithm = AlgoBLAKE3Tree

// DigestBlock is the block size of the digest trees.
const DigestBlock = 1 << 20

// Unsealed names are files a checkpoint directory may gain after the seal:
// what `report --rejudge` writes beside the sealed evidence.
var unsealed = []string{ManifestFile, "result.rejudged.json"}

// IsUnsealed reports whether a file (relative to the checkpoint directory)
// is outside the seal by design.
func IsUnsealed(rel string) bool { return slices.Contains(unsealed, filepath.ToSlash(rel)) }

// Digester computes one algorithm's file digests.
type Digester struct {
	name string
	sum  func([]byte) [32]byte
}

// DigesterFor returns the digester of a manifest's algorithm.
func DigesterFor(algo string) (Digester, bool) {
	switch algo {
	case AlgoBLAKE3Tree:
		return Digester{algo, blake3.Sum256}, true
	case AlgoSHA256Tree:
		return Digester{algo, sha256.Sum256}, true
	}
	return Digester{}, false
}

// Default is the digester of DigestAlgorithm.
func Default() Digester {
	d, _ := DigesterFor(DigestAlgorithm)
	return d
}

// Name is the algorithm's name as manifests record it.
func (d Digester) Name() string { return d.name }

// BlockSum is the digest of one block of a file.
func (d Digester) BlockSum(block []byte) [32]byte { return d.sum(block) }

// CombineBlocks is a file's digest from its block digests, in file order:
// the hex hash of their concatenation.
func (d Digester) CombineBlocks(sums [][32]byte) string {
	cat := make([]byte, 0, 32*len(sums))
	for _, s := range sums {
		cat = append(cat, s[:]...)
	}
	sum := d.sum(cat)
	return hex.EncodeToString(sum[:])
}

// Bytes is the digest of a file's content already read (data), as File
// computes it from the file: a reader that checks what it read against the
// seal digests exactly those bytes, with no second read between.
func (d Digester) Bytes(data []byte) string {
	sums := [][32]byte{d.BlockSum(data[:min(len(data), DigestBlock)])}
	for off := DigestBlock; off < len(data); off += DigestBlock {
		sums = append(sums, d.BlockSum(data[off:min(len(data), off+DigestBlock)]))
	}
	return d.CombineBlocks(sums)
}

// Writer digests the bytes written to it as File digests a file of those
// bytes: a reader that checks a stream against the seal (io.TeeReader)
// digests exactly what it read, with no second read between.
func (d Digester) Writer() *DigestWriter { return &DigestWriter{d: d} }

// DigestWriter is Digester.Writer's: blocks of DigestBlock bytes, each
// digested as it fills.
type DigestWriter struct {
	d    Digester
	buf  []byte
	sums [][32]byte
}

// Write digests p; it never fails.
func (w *DigestWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, DigestBlock)
		}
		k := min(len(p), DigestBlock-len(w.buf))
		w.buf, p = append(w.buf, p[:k]...), p[k:]
		if len(w.buf) == DigestBlock {
			w.sums, w.buf = append(w.sums, w.d.BlockSum(w.buf)), w.buf[:0]
		}
	}
	return n, nil
}

// Sum is the digest of everything written so far.
func (w *DigestWriter) Sum() string {
	sums := w.sums
	if len(w.buf) > 0 || len(sums) == 0 {
		sums = append(slices.Clip(sums), w.d.BlockSum(w.buf))
	}
	return w.d.CombineBlocks(sums)
}

// File is a file's digest.
func (d Digester) File(path string) (string, error) {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, DigestBlock)
	var sums [][32]byte
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 || len(sums) == 0 {
			sums = append(sums, d.BlockSum(buf[:n]))
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("digest %s: %w", path, err)
		}
	}
	return d.CombineBlocks(sums), nil
}

// Digests are file digests computed elsewhere (by a parser that read the
// files), keyed like Manifest.Files, in one algorithm.
type Digests struct {
	Algorithm string
	Files     map[string]string
}

// Manifest is manifest.json.
type Manifest struct {
	Schema string `json:"schema"`
	// Info is provenance recorded for people (harness, AIPerf, host...).
	Info map[string]any `json:"info"`
	// Algorithm is the digest algorithm of Files (DigestAlgorithm when
	// sealed by this version; AlgoSHA256Tree for earlier seals).
	Algorithm string `json:"digest_algorithm"`
	// Files maps every sealed file (slash-separated, relative to the
	// checkpoint directory) to its digest.
	Files map[string]string `json:"files"`
	// Seal is the digest of this file with the seal's value zeroed.
	Seal string `json:"seal"`
}

// ManifestSchema is the manifest's schema id.
const ManifestSchema = "trtmc-qual/manifest/v2"

var (
	zeroSeal = strings.Repeat("0", 64)
	sealRe   = regexp.MustCompile(`"seal": "([0-9a-f]{64})"`)
)

// Seal digests every file under dir (except the unsealed names) and writes
// the sealed manifest.json, atomically, with info as its provenance.
func Seal(dir string, info map[string]any) error {
	files, err := listFiles(dir)
	if err != nil {
		return fmt.Errorf("seal %s: %w", dir, err)
	}
	digests, err := digestAll(Default(), dir, files)
	if err != nil {
		return fmt.Errorf("seal %s: %w", dir, err)
	}
	m := Manifest{Schema: ManifestSchema, Info: info, Algorithm: DigestAlgorithm, Files: digests, Seal: zeroSeal}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("seal %s: %w", dir, err)
	}
	data = append(data, '\n')
	sum := sha256.Sum256(data)
	data = bytes.Replace(data, []byte(`"seal": "`+zeroSeal+`"`), []byte(`"seal": "`+hex.EncodeToString(sum[:])+`"`), 1)
	return fileio.WriteFile(filepath.Join(dir, ManifestFile), data)
}

// Finding is one way the evidence differs from its seal.
type Finding struct {
	File string `json:"file"`
	// What is "changed", "missing", "added", "unsealed" or "unreadable".
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

func (f Finding) String() string {
	s := f.File + ": " + f.What
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s
}

// VerifySeal checks dir against its manifest: the manifest's own seal, and
// every file's presence and digest in the manifest's algorithm; files the
// manifest does not list are "added". known holds digests already computed
// (e.g. by a parser that read the file); they are used when they are in the
// manifest's algorithm, and the others are computed here. No finding means
// the evidence is exactly what the run sealed.
func VerifySeal(dir string, known Digests) []Finding {
	mpath := filepath.Join(dir, ManifestFile)
	data, err := fileio.ReadFile(context.Background(), mpath, fileio.MaxDocumentBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return []Finding{{File: ManifestFile, What: "missing", Detail: "the evidence was never sealed or the seal was removed"}}
		}
		return []Finding{{File: ManifestFile, What: "unreadable", Detail: err.Error()}}
	}
	m, f := checkManifest(data)
	if f != nil {
		return []Finding{*f}
	}
	dg, _ := DigesterFor(m.Algorithm) // checkManifest knows it
	if known.Algorithm != m.Algorithm {
		known.Files = nil
	}
	files, err := listFiles(dir)
	if err != nil {
		return []Finding{{File: ".", What: "unreadable", Detail: err.Error()}}
	}
	var out []Finding
	var todo []string
	have := map[string]bool{}
	for _, rel := range files {
		have[rel] = true
		want, listed := m.Files[rel]
		switch {
		case !listed:
			out = append(out, Finding{File: rel, What: "added", Detail: "not in the sealed manifest"})
		case known.Files[rel] != "":
			if known.Files[rel] != want {
				out = append(out, Finding{File: rel, What: "changed", Detail: "digest differs from the sealed one"})
			}
		default:
			todo = append(todo, rel)
		}
	}
	got, err := digestAll(dg, dir, todo)
	if err != nil {
		out = append(out, Finding{File: ".", What: "unreadable", Detail: err.Error()})
	}
	for _, rel := range todo {
		if d, ok := got[rel]; ok && d != m.Files[rel] {
			out = append(out, Finding{File: rel, What: "changed", Detail: "digest differs from the sealed one"})
		}
	}
	for rel := range m.Files {
		if !have[rel] {
			out = append(out, Finding{File: rel, What: "missing", Detail: "sealed but no longer there"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// ReadManifest reads and checks a sealed manifest (nil finding: sound).
func ReadManifest(dir string) (*Manifest, *Finding) {
	data, err := fileio.ReadFile(context.Background(), filepath.Join(dir, ManifestFile), fileio.MaxDocumentBytes)
	if err != nil {
		return nil, &Finding{File: ManifestFile, What: "unreadable", Detail: err.Error()}
	}
	return checkManifest(data)
}

func checkManifest(data []byte) (*Manifest, *Finding) {
	bad := func(detail string) (*Manifest, *Finding) {
		return nil, &Finding{File: ManifestFile, What: "unsealed", Detail: detail}
	}
	locs := sealRe.FindAllSubmatchIndex(data, -1)
	if len(locs) != 1 {
		return bad(fmt.Sprintf("%d seal fields, want exactly 1", len(locs)))
	}
	seal := string(data[locs[0][2]:locs[0][3]])
	zeroed := slices.Clone(data)
	copy(zeroed[locs[0][2]:locs[0][3]], zeroSeal)
	sum := sha256.Sum256(zeroed)
	if hex.EncodeToString(sum[:]) != seal {
		return nil, &Finding{File: ManifestFile, What: "changed", Detail: "its seal does not match its bytes"}
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return bad("not a manifest: " + err.Error())
	}
	if _, ok := DigesterFor(m.Algorithm); m.Schema != ManifestSchema || !ok || m.Files == nil {
		return bad(fmt.Sprintf("schema %q, digest algorithm %q: want %s, %s or %s", m.Schema, m.Algorithm, ManifestSchema, AlgoBLAKE3Tree, AlgoSHA256Tree))
	}
	return &m, nil
}

// listFiles lists the files under dir, relative and slash-separated,
// sorted, without the unsealed names. Anything that is not a regular file
// or a directory (a symlink, a socket) is listed too, so it cannot hide.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !IsUnsealed(rel) {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// digestAll digests files (relative to dir) on a few goroutines (one a
// CPU at most), every file even after one fails; the error is the first.
// A path that is not a regular file gets a digest no file has
// ("not-a-file").
func digestAll(dg Digester, dir string, files []string) (map[string]string, error) {
	out := make(map[string]string, len(files))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(min(runtime.GOMAXPROCS(0), max(len(files), 1)))
	for _, rel := range files {
		g.Go(func() error {
			path := filepath.Join(dir, filepath.FromSlash(rel))
			d := "not-a-file"
			st, err := os.Lstat(path)
			if err == nil && st.Mode().IsRegular() {
				d, err = dg.File(path)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			out[rel] = d
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}
