package reports_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestJUnitOneCasePerProfile: the vlm evidence holds every kind of row;
// each profile is one test case and only a qualified row passes.
func TestJUnitOneCasePerProfile(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, g.JUnit(&b))
	golden.Assert(t, "vlm.junit.xml", b.Bytes())

	var doc junit.Document
	require.NoError(t, xml.Unmarshal(b.Bytes(), &doc))
	require.Len(t, doc.Suites, 1)
	cases := doc.Suites[0].Cases
	require.Len(t, cases, len(g.Rows), "one test case per profile")
	for i, row := range g.Rows {
		c := cases[i]
		assert.Equal(t, row.Profile, c.Name)
		passed := c.Failure == nil && c.Error == nil && c.Skipped == nil
		qualified := row.Result != nil && row.Result.Verdict == verdict.VerdictQualified
		assert.Equal(t, qualified, passed, "%s: only a qualified row passes (verdict %s)", row.Profile, row.Verdict)
		if row.Result != nil && (row.Result.Verdict == verdict.VerdictFailed || row.Result.Verdict == verdict.VerdictError) {
			problem := c.Failure
			if problem == nil {
				problem = c.Error
			}
			require.NotNil(t, problem, row.Profile)
			for _, r := range row.Result.Reasons {
				assert.Contains(t, problem.Message, r.Message, "%s: the failure message is the row's reasons", row.Profile)
			}
		}
		if row.Status == StatusExcluded {
			require.NotNil(t, c.Skipped, row.Profile)
			assert.NotEmpty(t, strings.TrimPrefix(c.Skipped.Message, "excluded"), "%s: skipped with its reason", row.Profile)
		}
	}
}

// TestJUnitNeverPassesWhatDidNotQualify breaks rows on purpose: a result
// with any verdict but qualified, or none at all, never becomes a pass.
func TestJUnitNeverPassesWhatDidNotQualify(t *testing.T) {
	for _, v := range []string{verdict.VerdictFailed, verdict.VerdictError, verdict.VerdictInterrupted, verdict.VerdictExcluded, verdict.VerdictSkipped, "", "QUALIFIED", "bogus"} {
		g := &GroupReport{Publisher: publish.Publisher{}, Group: "g", Rows: []Row{{Profile: "p", Kind: "normal", Result: &verdict.Result{Verdict: v}}}}
		var b bytes.Buffer
		require.NoError(t, g.JUnit(&b))
		var doc junit.Document
		require.NoError(t, xml.Unmarshal(b.Bytes(), &doc))
		c := doc.Suites[0].Cases[0]
		assert.False(t, c.Failure == nil && c.Error == nil && c.Skipped == nil, "verdict %q passed", v)
		if c.Failure != nil || c.Error != nil {
			assert.Contains(t, b.String(), "no reason recorded", "verdict %q", v)
		}
	}
	g := &GroupReport{Publisher: publish.Publisher{}, Group: "g", Rows: []Row{{Profile: "p", Status: StatusNotRun, Note: "no result.json"}}}
	var b bytes.Buffer
	require.NoError(t, g.JUnit(&b))
	var doc junit.Document
	require.NoError(t, xml.Unmarshal(b.Bytes(), &doc))
	require.NotNil(t, doc.Suites[0].Cases[0].Skipped)
	assert.Equal(t, "not-run: no result.json", doc.Suites[0].Cases[0].Skipped.Message)
}
