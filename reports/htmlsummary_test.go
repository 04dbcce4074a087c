package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPresentEvidence(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"result.json", "server.log", "aiperf/profile_export.jsonl", "joined.jsonl"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "native.log"), 0o755)) // not a regular file
	var got []string
	for _, l := range presentEvidence(dir) {
		got = append(got, l.Group+":"+l.Path)
	}
	assert.Equal(t, []string{"result:result.json", "logs:server.log", "aiperf:aiperf/profile_export.jsonl", "joined:joined.jsonl"}, got)
}

// TestGroupChartPlotsEveryMeasuredProfile: one HTTP and one Task bar pair
// per measured profile, and an images/s bar; none for unmeasured rows.
func TestGroupChartPlotsEveryMeasuredProfile(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	measured, httpP50, taskP95, rate := 0, 0, 0, 0
	for _, r := range g.Rows {
		if r.Result != nil && r.Result.Measured() {
			measured++
			l := r.Result.LatencyMS
			httpP50 += btoi(l.HTTP.P50 != nil)
			taskP95 += btoi(l.Task.P95 != nil)
			rate += btoi(r.Result.ImagesPerSec != nil)
		}
	}
	require.Positive(t, httpP50)
	svg := groupCharts(g.Rows)
	assert.Equal(t, 2*measured, strings.Count(svg, `class="row-label"`), "a row per measured profile in each chart")
	assert.Equal(t, httpP50, strings.Count(svg, `class="bar p50 http"`))
	assert.Equal(t, taskP95, strings.Count(svg, `class="bar p95 task"`))
	assert.Equal(t, rate, strings.Count(svg, `class="bar rate"`))
	assert.NotContains(t, svg, "<script")
	assert.Empty(t, groupCharts(nil))
}
