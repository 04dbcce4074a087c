package ci

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
)

// The ci summary goes into a pull-request comment: a step's message (an
// error of a manifest, an inventory, a child), the repository, the refs
// and a step's code block come from outside the harness and never become
// markup (issue 32, item 12).
func TestCISummaryForeignTextIsNeverMarkup(t *testing.T) {
	job := func(s string) *Job {
		j := sampleJob()
		j.Repo, j.Base = s, s
		for i := range j.Steps {
			j.Steps[i].Message = s
		}
		j.Steps[2].Markdown = markdown.CodeBlock("", "problems:\n"+s)
		return j
	}
	elements := func(j *Job) string {
		var md bytes.Buffer
		require.NoError(t, j.Markdown(&md))
		var out bytes.Buffer
		gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
		require.NoError(t, gm.Convert(md.Bytes(), &out))
		return strings.Join(regexp.MustCompile(`</?[a-zA-Z][a-zA-Z0-9]*`).FindAllString(out.String(), -1), " ")
	}
	plain := elements(job("plain words"))
	for _, s := range []string{`<img src=x onerror=alert(1)>`, "[x](https://evil.example) `a` | b", "</details></summary><script>x</script>",
		"```\n</details>\n# owned", "- item\n1. item", "https://evil.example www.evil.example"} {
		assert.Equal(t, plain, elements(job(s)), "%q", s)
	}
}
