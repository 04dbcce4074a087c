package qual

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// pristine is a good, sealed evidence directory (a synthetic row of 5 + 50
// requests that qualifies), held in memory: path -> bytes.
var pristine struct {
	once  sync.Once
	files map[string][]byte
	names []string
	err   error
}

func pristineEvidence(tb testing.TB) (map[string][]byte, []string) {
	tb.Helper()
	pristine.once.Do(func() {
		dir, err := os.MkdirTemp("", "rejudge-fuzz-")
		if err != nil {
			pristine.err = err
			return
		}
		defer os.RemoveAll(dir)
		row := filepath.Join(dir, "g", "p")
		exp, err := synth.Write(row, synth.Config{Requests: 55, Seed: 11, NoFaults: true, ImageMin: 16, ImageMax: 32})
		if err == nil {
			err = synth.Seal(row, "g", "p", exp)
		}
		if err != nil {
			pristine.err = err
			return
		}
		pristine.files = map[string][]byte{}
		pristine.err = filepath.WalkDir(row, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(row, p)
			data, err := os.ReadFile(p)
			pristine.files[rel] = data
			pristine.names = append(pristine.names, rel)
			return err
		})
		slices.Sort(pristine.names)
	})
	if pristine.err != nil {
		tb.Fatal(pristine.err)
	}
	return pristine.files, pristine.names
}

func writeTree(tb testing.TB, root string, files map[string][]byte) {
	tb.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestPristineEvidenceQualifies is the fuzz target's premise: unchanged,
// the evidence rejudges as qualified.
func TestPristineEvidenceQualifies(t *testing.T) {
	files, _ := pristineEvidence(t)
	root := t.TempDir()
	writeTree(t, filepath.Join(root, "g", "p"), files)
	r := rejudgeRow(context.Background(), filepath.Join(root, "g", "p"), "g", "p", shippedJudge(t))
	if r.Verdict != verdict.VerdictQualified {
		t.Fatalf("pristine evidence rejudges as %s: %+v", r.Verdict, r.Reasons)
	}
}

// FuzzRejudgeTamper applies one random edit to a good evidence directory —
// overwrite, insert or delete bytes anywhere in any file (result.json and
// manifest.json included), truncate a file, remove it, or add one — and
// asserts that `report --rejudge` never returns qualified for evidence that
// changed, and never panics.
func FuzzRejudgeTamper(f *testing.F) {
	f.Add(uint8(0), uint32(100), uint8(0), []byte("x"))
	f.Add(uint8(1), uint32(0), uint8(1), []byte(" "))
	f.Add(uint8(2), uint32(5000), uint8(2), []byte("ab"))
	f.Add(uint8(3), uint32(10), uint8(3), []byte{})
	f.Add(uint8(4), uint32(0), uint8(4), []byte{})
	f.Add(uint8(5), uint32(0), uint8(5), []byte("{}\n"))
	f.Add(uint8(6), uint32(77), uint8(0), []byte("9"))
	f.Fuzz(func(t *testing.T, fileIdx uint8, off uint32, op uint8, data []byte) {
		orig, names := pristineEvidence(t)
		files := make(map[string][]byte, len(orig))
		for k, v := range orig {
			files[k] = v
		}
		name := names[int(fileIdx)%len(names)]
		b := slices.Clone(files[name])
		at := 0
		if len(b) > 0 {
			at = int(off) % (len(b) + 1)
		}
		switch op % 6 {
		case 0: // overwrite
			end := min(at+len(data), len(b))
			copy(b[at:end], data)
			files[name] = b
		case 1: // insert
			files[name] = slices.Insert(b, at, data...)
		case 2: // delete
			files[name] = slices.Delete(b, at, min(at+len(data)+1, len(b)))
		case 3: // truncate
			files[name] = b[:at]
		case 4: // remove
			delete(files, name)
		case 5: // add
			files[filepath.Join("aiperf", "extra"+string(rune('a'+int(fileIdx)%26))+".json")] = data
		}
		changed := len(files) != len(orig)
		for k, v := range files {
			if w, ok := orig[k]; !ok || !bytes.Equal(v, w) {
				changed = true
			}
		}
		root := t.TempDir()
		dir := filepath.Join(root, "g", "p")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeTree(t, dir, files)
		r := rejudgeRow(context.Background(), dir, "g", "p", shippedJudge(t))
		if changed && r.Verdict == verdict.VerdictQualified {
			t.Fatalf("%s edited (op %d at %d, %q): rejudge still qualifies", name, op%6, at, data)
		}
		if !changed && r.Verdict != verdict.VerdictQualified {
			t.Fatalf("unchanged evidence rejudges as %s: %+v", r.Verdict, r.Reasons)
		}
	})
}

// shippedJudge judges by the shipped family configuration, as `report
// --rejudge` does without --families.
func shippedJudge(t testing.TB) judgeBy {
	t.Helper()
	fams, err := families.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	return judgeBy{families: fams, reg: families.DefaultRegistry()}
}
