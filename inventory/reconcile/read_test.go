package reconcile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// TestReadReportRefusesWhatIsNotOne: a saved reconciliation read back;
// each alteration made on purpose is refused with the file and the line
// of the fault.
func TestReadReportRefusesWhatIsNotOne(t *testing.T) {
	good := Report{Schema: Schema, Group: "detection", Ref: "main", Commit: strings.Repeat("a", 40),
		Rows:    []Row{{Profile: "p", Family: "yolo11", State: "ok"}},
		Summary: Summary{Normal: 1, OK: 1}, InventoryHasGroup: true}
	data, err := json.MarshalIndent(good, "", "  ")
	require.NoError(t, err)
	text := string(data) + "\n"
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	line := func(s, sub string) int { return strings.Count(s[:strings.Index(s, sub)], "\n") + 1 }

	r, err := ReadReport(t.Context(), write("good.json", text), "detection")
	require.NoError(t, err)
	assert.Equal(t, good, *r)

	unknown := strings.Replace(text, `"need_action": 0`, `"need_action": 0, "needs_review": 3`, 1)
	wrongType := strings.Replace(text, `"normal": 1`, `"normal": "one"`, 1)
	trunc := text[:len(text)/2]
	for name, tc := range map[string]struct {
		text, group string
		line        int
		want        string
	}{
		"unknown field": {unknown, "detection", line(unknown, `"needs_review"`), `summary.needs_review: not the JSON of inventory reconcile -o json: unknown field "needs_review"`},
		"wrong type":    {wrongType, "detection", line(wrongType, `"normal"`), "summary.normal: not the JSON of inventory reconcile -o json: is string, want int"},
		"another group": {text, "vlm", line(text, `"group"`), `group is "detection", want "vlm"`},
		"a drift report": {"{\n  \"schema\": \"trtmc-qual/drift/v1\",\n  \"groups\": [\"detection\"]\n}\n", "detection", 2,
			`schema is "trtmc-qual/drift/v1", want "trtmc-qual/reconcile/v1"`},
		"truncated":        {trunc, "detection", strings.Count(strings.TrimRight(trunc, " \n"), "\n") + 1, "not the JSON of inventory reconcile -o json: unexpected EOF"},
		"trailing garbage": {text + "{}\n", "detection", strings.Count(text, "\n") + 1, "trailing data after the JSON value"},
		"no commit":        {strings.Replace(text, strings.Repeat("a", 40), "", 1), "detection", line(text, `"commit"`), "commit is missing"},
	} {
		file := write(strings.ReplaceAll(name, " ", "-")+".json", tc.text)
		_, err := ReadReport(t.Context(), file, tc.group)
		require.Error(t, err, name)
		var je *fileio.JSONError
		require.True(t, errors.As(err, &je), "%s: %T", name, err)
		assert.Equal(t, tc.line, je.Line, "%s: %v", name, err)
		assert.Contains(t, err.Error(), file+":", name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}
