package reports

import (
	"bytes"
	"path/filepath"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
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
	local := *r
	local.LinkDir = dir
	r = &local
	for _, name := range sortedKeys(files) {
		var buf bytes.Buffer
		if err := Render(&buf, r, files[name]); err != nil {
			return err
		}
		if err := fileio.WriteFileMode(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
