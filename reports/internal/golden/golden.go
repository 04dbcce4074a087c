// Package golden compares test output with files under testdata and
// rewrites them when the test binary runs with -update:
//
//	go test ./reports -update
//
// then review `git diff reports/testdata`.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
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
	path := Path(name)
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
		t.Fatalf("golden: %v (run `go test ./reports -update` to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run `go test ./reports -update` and review the diff)\n%s", path, firstDiff(string(want), string(got)))
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
