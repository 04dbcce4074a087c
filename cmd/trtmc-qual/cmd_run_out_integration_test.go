//go:build integration

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Issue 36: a relative --out left `--input-file out/demo/…` in the
// recorded AIPerf argv (an absolute one gave "$OUT/…" in published text).
// The evidence root is made absolute once, when the configuration is
// resolved: a run into a relative --out and one into an absolute --out
// record the same commands, their own root aside, and publish the same
// reproduce text.
func TestRelativeAndAbsoluteOutRecordTheSameCommands(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	abs := h.run(t, scenario{}, 3*time.Minute)
	// The later --out wins: relative to the run's working directory (the
	// scenario's configuration directory).
	rel := h.run(t, scenario{args: []string{"--out", "rel-out"}}, 3*time.Minute)
	require.Equal(t, 0, abs.code, abs.stderr)
	require.Equal(t, 0, rel.code, rel.stderr)
	relRoot := filepath.Join(rel.config, "rel-out")
	rel.out = relRoot

	port := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	recorded := func(o outcome) []string {
		r := o.result(t, "detection", "ref-detect-small")
		var argv []string
		for _, a := range command(t, r, "aiperf").Argv {
			argv = append(argv, port.ReplaceAllString(strings.ReplaceAll(a, o.out, "$OUT"), "127.0.0.1:PORT"))
		}
		return argv
	}
	absArgv, relArgv := recorded(abs), recorded(rel)
	assert.Equal(t, absArgv, relArgv, "the same AIPerf argv, each under its own root")
	assert.Contains(t, relArgv, "$OUT/detection/ref-detect-small/dataset.jsonl", "--input-file is under the absolute root")
	for _, a := range relArgv {
		assert.NotContains(t, a, "rel-out/", "no path relative to the working directory is recorded")
	}
	r := rel.result(t, "detection", "ref-detect-small")
	assert.Contains(t, r.Command, "--out "+relRoot+" ", "the reproduce command names the absolute root")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)

	published := func(o outcome) string {
		md, err := os.ReadFile(filepath.Join(o.out, "detection", "results.md"))
		require.NoError(t, err)
		_, repro, ok := strings.Cut(string(md), "## Reproduce")
		require.True(t, ok)
		return port.ReplaceAllString(repro, "127.0.0.1:PORT")
	}
	assert.Equal(t, published(abs), published(rel), "the published reproduce text is the same")
	assert.Contains(t, published(rel), `--input-file "$OUT/detection/ref-detect-small/dataset.jsonl"`)
}
