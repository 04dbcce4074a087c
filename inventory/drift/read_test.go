package drift

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

// TestReadReportRefusesWhatIsNotOne: a saved drift report read back; each
// alteration made on purpose is refused with the file and the line of
// the fault.
func TestReadReportRefusesWhatIsNotOne(t *testing.T) {
	good := Report{Schema: Schema, Groups: []string{"detection"}, Base: "main", BaseCommit: strings.Repeat("a", 40),
		Head: "HEAD", HeadCommit: strings.Repeat("b", 40), Families: []string{"yolo11"},
		Changes:    []Change{{Family: "yolo11", Groups: "detection", Path: "families/yolo11/tests/manifests/m.json", Category: "manifest", Added: 1}},
		ByCategory: map[string]int{"manifest": 1}}
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
	n, by := r.GroupChanges("vlm")
	assert.Equal(t, 0, n)
	assert.Empty(t, by)

	unknown := strings.Replace(text, `"lines_added": 1`, `"lines_added": 1, "colour": "red"`, 1)
	wrongType := strings.Replace(text, `"lines_added": 1`, `"lines_added": "1"`, 1)
	for name, tc := range map[string]struct {
		text, group string
		line        int
		want        string
	}{
		"unknown field": {unknown, "detection", line(unknown, `"colour"`), `changes[0].colour: not the JSON of inventory drift -o json: unknown field "colour"`},
		"wrong type":    {wrongType, "detection", line(wrongType, `"lines_added"`), "changes.lines_added: not the JSON of inventory drift -o json: is string, want int"},
		"another group": {text, "vlm", line(text, `"groups"`), `checked groups ["detection"], not "vlm"`},
		"another schema": {strings.Replace(text, Schema, "trtmc-qual/reconcile/v1", 1), "detection", line(text, `"schema"`),
			`schema is "trtmc-qual/reconcile/v1", want "trtmc-qual/drift/v1"`},
		"a reconcile report": {"{\n  \"schema\": \"trtmc-qual/reconcile/v1\",\n  \"group\": \"detection\"\n}\n", "detection", 2, `schema is "trtmc-qual/reconcile/v1"`},
		"truncated":          {text[:len(text)/2], "detection", strings.Count(strings.TrimRight(text[:len(text)/2], " \n"), "\n") + 1, "not the JSON of inventory drift -o json: unexpected EOF"},
		"trailing garbage":   {text + "garbage\n", "detection", strings.Count(text, "\n") + 1, "trailing data after the JSON value"},
		"no head commit":     {strings.Replace(text, strings.Repeat("b", 40), "", 1), "detection", line(text, `"head_commit"`), "base_commit or head_commit is missing"},
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

	_, err = ReadReport(t.Context(), filepath.Join(dir, "absent.json"), "detection")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
