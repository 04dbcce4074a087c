package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trtmc-qual/trtmc-qual/qual/evidence"
)

// GroupFiles maps each file WriteGroupFiles writes to its format.
func GroupFiles() map[string]string {
	return map[string]string{
		"results.md":   FormatMarkdown,
		"results.csv":  FormatCSV,
		"results.json": FormatJSON,
		"results.html": FormatHTML,
	}
}

// WriteGroupFiles renders r as results.md, results.csv, results.json and
// results.html into dir (OUT/<group>), each atomically. `run` calls it at
// the end with the report Load builds from the same evidence, so
// `report --from OUT --group G --format md` prints exactly results.md.
func WriteGroupFiles(dir string, r *GroupReport) error {
	files := GroupFiles()
	for _, name := range sortedKeys(files) {
		var buf bytes.Buffer
		if err := Render(&buf, r, files[name]); err != nil {
			return err
		}
		if err := evidence.WriteFileMode(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// RejudgeEvidence re-applies the verdict rules to every current result of
// group under each root (previous runs set aside are left alone) and writes
// the re-judged result as result.rejudged.json beside result.json, which is
// never modified. It returns the files written, in order. Load the report
// with LoadOptions{Rejudged: true} to use them.
func RejudgeEvidence(roots []string, group string, at time.Time, harnessVersion string) ([]string, error) {
	var written []string
	for _, root := range roots {
		gdir := filepath.Join(root, group)
		entries, err := os.ReadDir(gdir)
		if errors.Is(err, os.ErrNotExist) {
			return written, fmt.Errorf("%w for group %q under %s (no directory %s)", ErrNoEvidence, group, root, gdir)
		}
		if err != nil {
			return written, fmt.Errorf("rejudge: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() || isSetAside(e.Name()) {
				continue
			}
			dir := filepath.Join(gdir, e.Name())
			res, err := readResult(dir, group, e.Name(), false)
			if err != nil {
				return written, err
			}
			if res == nil {
				continue
			}
			joined, err := ReadJoined(filepath.Join(dir, JoinedFile))
			if err != nil {
				return written, err
			}
			n := RejudgeResult(*res, joined, at, harnessVersion)
			data, err := json.MarshalIndent(n, "", "  ")
			if err != nil {
				return written, fmt.Errorf("rejudge %s: %w", dir, err)
			}
			out := filepath.Join(dir, RejudgedFile)
			if err := evidence.WriteFileMode(out, append(data, '\n'), 0o644); err != nil {
				return written, err
			}
			written = append(written, out)
		}
	}
	return written, nil
}
