package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --help prints the exit-status table, and docs/refserver.md names every
// status of it.
func TestHelpIsTheExitStatusTable(t *testing.T) {
	t.Parallel()
	d, out, _ := testDeps(nil)
	require.Equal(t, exitOK, run(context.Background(), []string{"--help"}, d))
	var lines []string
	for _, s := range exitStatuses() {
		lines = append(lines, fmt.Sprintf("  %-4d %s", s.code, s.help))
	}
	assert.Contains(t, out.String(), "Exit status:\n"+strings.Join(lines, "\n")+"\n")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "refserver.md"))
	require.NoError(t, err)
	para := string(doc)[strings.Index(string(doc), "Exit status of every command:"):]
	para = para[:strings.Index(para, "\n\n")]
	for _, s := range exitStatuses() {
		assert.Contains(t, para, fmt.Sprintf("`%d`", s.code), "docs/refserver.md")
	}
	assert.Equal(t, []int{exitOK, exitFailed, exitUsage, exitCrash, exitInterrupted}, func() []int {
		var c []int
		for _, s := range exitStatuses() {
			c = append(c, s.code)
		}
		return c
	}())
}
