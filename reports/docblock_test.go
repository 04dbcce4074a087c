package reports

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = `# Results

Intro text stays.

<!-- trtmc-qual:vlm:begin -->
old table
<!-- trtmc-qual:vlm:end -->

<!-- trtmc-qual:detection:begin -->
detection stays
<!-- trtmc-qual:detection:end -->
Tail stays, without a final newline.`

func TestUpdateBlockReplacesOnlyTheBlock(t *testing.T) {
	got, changed, err := UpdateBlock([]byte(page), "p.md", "vlm", []byte("| a |\n|---|\n| 1 |"))
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, strings.Replace(page, "old table\n", "| a |\n|---|\n| 1 |\n", 1), string(got),
		"everything outside the block byte for byte; a final newline added to the content")

	again, changed, err := UpdateBlock(got, "p.md", "vlm", []byte("| a |\n|---|\n| 1 |"))
	require.NoError(t, err)
	assert.False(t, changed, "idempotent")
	assert.Equal(t, string(got), string(again))

	// An empty block, markers indented, CRLF pages keep CRLF.
	crlf := "x\r\n  <!-- trtmc-qual:vlm:begin -->\r\n  <!-- trtmc-qual:vlm:end -->\r\ny\r\n"
	got, _, err = UpdateBlock([]byte(crlf), "p.md", "vlm", []byte("a\nb\n"))
	require.NoError(t, err)
	assert.Equal(t, "x\r\n  <!-- trtmc-qual:vlm:begin -->\r\na\r\nb\r\n  <!-- trtmc-qual:vlm:end -->\r\ny\r\n", string(got))

	// Markers inside a fenced example are documentation, not markers.
	doc := "```md\n<!-- trtmc-qual:vlm:begin -->\n<!-- trtmc-qual:vlm:end -->\n```\n" + page
	got, _, err = UpdateBlock([]byte(doc), "p.md", "vlm", []byte("new\n"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "```md\n<!-- trtmc-qual:vlm:begin -->\n<!-- trtmc-qual:vlm:end -->\n```\n"))
	assert.Contains(t, string(got), "<!-- trtmc-qual:vlm:begin -->\nnew\n<!-- trtmc-qual:vlm:end -->\n\n<!-- trtmc-qual:detection")
}

// TestUpdateBlockRejectsBrokenMarkers breaks the markers on purpose: each
// is an error naming the file and, where there is one, the line.
func TestUpdateBlockRejectsBrokenMarkers(t *testing.T) {
	b, e := BlockMarkers("vlm")
	for name, tc := range map[string]struct{ doc, want string }{
		"missing both":    {"# page\n", "p.md: no " + b + " ... " + e + " block"},
		"missing end":     {"a\n" + b + "\nx\n", "p.md:2: " + b + " without " + e + " after it"},
		"missing begin":   {"a\nb\n" + e + "\n", "p.md:3: " + e + " comes before any " + b},
		"doubled begin":   {b + "\n" + b + "\n" + e + "\n", "p.md:2: second " + b + " (the first is on line 1)"},
		"doubled end":     {b + "\n" + e + "\n" + e + "\n", "p.md:3: second " + e + " (the first is on line 2)"},
		"doubled block":   {b + "\n" + e + "\n" + b + "\n" + e + "\n", "p.md:3: second " + b},
		"end first":       {e + "\n" + b + "\n", "p.md:1: " + e + " comes before any " + b},
		"only in a fence": {"```\n" + b + "\n" + e + "\n```\n", "p.md: no "},
		"other group":     {"<!-- trtmc-qual:detection:begin -->\n<!-- trtmc-qual:detection:end -->\n", "p.md: no "},
	} {
		_, _, err := UpdateBlock([]byte(tc.doc), "p.md", "vlm", []byte("x\n"))
		var be *BlockError
		if assert.ErrorAs(t, err, &be, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	assert.Equal(t, "", UnifiedDiff("a", "b", []byte("x\n"), []byte("x\n")))
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"
	assert.Equal(t, `--- a
+++ b
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
@@ -13,3 +13,4 @@
 13
 14
 15
+16
`, UnifiedDiff("a", "b", []byte(a), []byte(b)))
}

// TestUnifiedDiffAgreesWithDiff compares with diffutils' `diff -u` on
// random edits (the headers aside), where diff is installed.
func TestUnifiedDiffAgreesWithDiff(t *testing.T) {
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("diff not installed")
	}
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for n := range 40 {
		var a, b []string
		for i := range 5 + rng.Intn(40) {
			line := fmt.Sprintf("line %d\n", i)
			a = append(a, line)
			switch rng.Intn(8) {
			case 0: // deleted
			case 1:
				b = append(b, "changed "+line)
			case 2:
				b = append(b, line, "inserted\n")
			default:
				b = append(b, line)
			}
		}
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		require.NoError(t, os.WriteFile(pa, []byte(strings.Join(a, "")), 0o644))
		require.NoError(t, os.WriteFile(pb, []byte(strings.Join(b, "")), 0o644))
		out, _ := exec.Command(diff, "-u", "--label", "a", "--label", "b", pa, pb).Output()
		assert.Equal(t, string(out), UnifiedDiff("a", "b", []byte(strings.Join(a, "")), []byte(strings.Join(b, ""))), "case %d", n)
	}
}
