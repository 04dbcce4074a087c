package ci

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
)

func sampleJob() *Job {
	return &Job{
		Name: "trtmc-qual ci", Repo: "fixture", Base: "main", BaseCommit: "1949a1aae5413ce1fd4b1ef040cb738c7cfaf19a",
		Head: "feature", HeadCommit: "57fa17d0bd67f0eadc9005bab1c9b43cced6a8b7",
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Steps: []Step{
			{Name: "validate-inventory", Status: StepPassed, Message: "2 groups, 8 profiles", Duration: 12 * time.Millisecond},
			{Name: "validate-families", Status: StepError, Code: 2, Message: "families.yaml: unknown key \"x\"",
				Output: "families.yaml:3: unknown key \"x\"\x00", Duration: time.Millisecond},
			{Name: "reconcile-vlm", Status: StepFailed, Code: 1, Message: "vlm @ 1949a1a: 1 need action",
				Output: "legacy-vl\tmissing <not in the inventory> & more", Markdown: "**vlm**: 1 need | action\n",
				Duration: 250 * time.Millisecond},
			{Name: "smoke-vlm", Status: StepSkipped, Message: "not asked (--smoke)"},
		},
	}
}

func TestJobExitCodeAndCounts(t *testing.T) {
	j := sampleJob()
	assert.Equal(t, 2, j.ExitCode())
	p, f, e, s := j.Counts()
	assert.Equal(t, []int{1, 1, 1, 1}, []int{p, f, e, s})
	j.Steps = append(j.Steps, Step{Name: "drift-vlm", Status: StepError, Code: 3})
	assert.Equal(t, 3, j.ExitCode())
	assert.Equal(t, 0, (&Job{}).ExitCode())
}

func TestJobJUnitGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, sampleJob().JUnit(&b))
	golden.AssertFile(t, filepath.Join("testdata", "golden", "ci-junit.xml"), b.Bytes())

	// It is well-formed XML with one test case per step.
	var doc junit.Document
	require.NoError(t, xml.Unmarshal(b.Bytes(), &doc))
	require.Len(t, doc.Suites, 1)
	assert.Len(t, doc.Suites[0].Cases, 4)
	assert.Equal(t, 1, doc.Failures)
	assert.Equal(t, 1, doc.Errors)
	assert.Equal(t, 1, doc.Skipped)
	assert.Equal(t, "configuration-error", doc.Suites[0].Cases[1].Error.Type)
}

func TestJobMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, sampleJob().Markdown(&b))
	golden.AssertFile(t, filepath.Join("testdata", "golden", "ci-summary.md"), b.Bytes())
}
