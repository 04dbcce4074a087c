// Package golden is the one golden-file helper of the module, for tests
// only: it compares test output with files under testdata and rewrites them
// when the test binary runs with -update (make golden):
//
//	go test ./reports -run Golden -update
//
// then review `git diff`. A package whose tests import it must not define
// its own -update flag. CopyTree copies a testdata tree into a scratch
// directory; ReadTarGz and ExtractTarGz read an archive (evidence packs).
package golden

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update is the one piece of package state: the -update test flag.
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Path is where a golden file lives: testdata/<name>.golden.
func Path(name string) string { return filepath.Join("testdata", name+".golden") }

// Assert compares got with testdata/<name>.golden, or rewrites that file
// under -update.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	AssertFile(t, Path(name), got)
}

// AssertFile compares got with the file at path, or rewrites that file
// under -update.
func AssertFile(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (run the test with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run the test with -update and review the diff)\n%s", path, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	line := 1
	start := 0
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i] != got[i] {
			return "line " + strconv.Itoa(line) + ":\nwant: " + lineAt(want, start) + "\ngot:  " + lineAt(got, start)
		}
		if want[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return "line " + strconv.Itoa(line) + ": one text is a prefix of the other (want " + strconv.Itoa(len(want)) + " bytes, got " + strconv.Itoa(len(got)) + ")"
}

func lineAt(s string, start int) string {
	end := start
	for end < len(s) && s[end] != '\n' {
		end++
	}
	return s[start:end]
}

// Updating reports whether the test binary runs with -update, for fixtures
// that are rewritten by a test rather than compared.
func Updating() bool { return *update }

// CopyTree copies the files and directories under from into to (created
// when missing), as files 0644 and directories 0755, failing the test on
// an error.
func CopyTree(t testing.TB, from, to string) {
	t.Helper()
	if err := Copy(from, to); err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
}

// Copy is CopyTree for code that reports errors itself (a fake child
// writing a fixture's files).
func Copy(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// ReadTarGz reads every regular file of a .tar.gz: entry name → content.
// Entries must be regular files or directories.
func ReadTarGz(t testing.TB, pack string) map[string]string {
	t.Helper()
	out := map[string]string{}
	walkTarGz(t, pack, func(h *tar.Header, data []byte) {
		if h.Typeflag == tar.TypeReg {
			out[h.Name] = string(data)
		}
	})
	return out
}

// ExtractTarGz extracts a .tar.gz into dir, as `tar xzf PACK -C DIR`,
// refusing an entry that would land outside dir.
func ExtractTarGz(t testing.TB, pack, dir string) {
	t.Helper()
	walkTarGz(t, pack, func(h *tar.Header, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			t.Fatalf("golden: %s: entry %s lands outside %s", pack, h.Name, dir)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatalf("golden: %v", err)
			}
			return
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
	})
}

func walkTarGz(t testing.TB, pack string, fn func(*tar.Header, []byte)) {
	t.Helper()
	f, err := os.Open(pack)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("golden: %s: %v", pack, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("golden: %s: %v", pack, err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
			t.Fatalf("golden: %s: entry %s is neither a file nor a directory", pack, h.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("golden: %s: %v", pack, err)
		}
		fn(h, data)
	}
}
