package corpus_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
)

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = data
	}
	return out
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, family := range bundle.Families() {
		a, b := t.TempDir(), t.TempDir()
		_, err := corpus.Generate(family, 9, a)
		require.NoError(t, err)
		_, err = corpus.Generate(family, 9, b)
		require.NoError(t, err)
		filesA, filesB := readDir(t, a), readDir(t, b)
		assert.Len(t, filesA, 10)
		assert.Equal(t, filesA, filesB, family)
	}
}

func TestGeneratedCorpusShape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := corpus.Generate(bundle.FamilyVLM, 14, dir)
	require.NoError(t, err)
	c, err := corpus.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, corpus.Schema, c.Schema)
	assert.Equal(t, bundle.FamilyVLM, c.Family)
	require.Len(t, c.Entries, 14)

	mimes, sizes, questions := map[string]bool{}, map[[2]int]bool{}, map[string]bool{}
	for i, e := range c.Entries {
		assert.Equal(t, fmt.Sprintf("img-%04d", i), e.ID)
		assert.True(t, strings.HasPrefix(e.File, e.ID+"."))
		mimes[e.MIME] = true
		sizes[[2]int{e.Width, e.Height}] = true
		questions[strings.SplitN(e.Question, " ", 3)[1]] = true
		assert.NotEmpty(t, e.Answer)
		require.NotEmpty(t, e.Objects)
		for _, o := range e.Objects {
			assert.True(t, 0 <= o.Box[0] && o.Box[0] < o.Box[2] && o.Box[2] <= 1, "%+v", o)
			assert.True(t, 0 <= o.Box[1] && o.Box[1] < o.Box[3] && o.Box[3] <= 1, "%+v", o)
		}
		data, err := c.ReadImage(e)
		require.NoError(t, err)
		img, err := imaging.Decode(e.MIME, data)
		require.NoError(t, err)
		assert.Equal(t, [2]int{e.Width, e.Height}, [2]int{img.Width, img.Height})
	}
	assert.Equal(t, map[string]bool{imaging.MIMEPNG: true, imaging.MIMEJPEG: true}, mimes)
	assert.GreaterOrEqual(t, len(sizes), 4)
	assert.GreaterOrEqual(t, len(questions), 5, "several kinds of question")
	assert.Equal(t, "img-0000.png", c.Entries[0].File)
	assert.Equal(t, "img-0001.jpg", c.Entries[1].File)
}

func TestDetectCorpusHasNoQuestions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := corpus.Generate(bundle.FamilyDetect, 3, dir)
	require.NoError(t, err)
	for _, e := range c.Entries {
		assert.Empty(t, e.Question)
		assert.Empty(t, e.Answer)
	}
	index, err := os.ReadFile(filepath.Join(dir, corpus.IndexFile))
	require.NoError(t, err)
	assert.NotContains(t, string(index), `"question"`)
}

func TestLoadRejectsBadIndexes(t *testing.T) {
	t.Parallel()
	for name, index := range map[string]string{
		"unknown field": `{"schema":"trtmc-ref/corpus/v1","family":"ref-detect","entries":[],"x":1}`,
		"bad schema":    `{"schema":"v0","family":"ref-detect","entries":[]}`,
		"no entries":    `{"schema":"trtmc-ref/corpus/v1","family":"ref-detect","entries":[]}`,
		"path escape":   `{"schema":"trtmc-ref/corpus/v1","family":"ref-detect","entries":[{"id":"a","file":"../a.png","mime":"image/png","width":1,"height":1,"objects":[]}]}`,
		"vlm no answer": `{"schema":"trtmc-ref/corpus/v1","family":"ref-vlm","entries":[{"id":"a","file":"a.png","mime":"image/png","width":1,"height":1,"question":"q","objects":[]}]}`,
		"repeated id":   `{"schema":"trtmc-ref/corpus/v1","family":"ref-detect","entries":[{"id":"a","file":"a.png","mime":"image/png","width":1,"height":1,"objects":[]},{"id":"a","file":"b.png","mime":"image/png","width":1,"height":1,"objects":[]}]}`,
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, corpus.IndexFile), []byte(index), 0o644))
		_, err := corpus.Load(dir)
		assert.ErrorContains(t, err, corpus.IndexFile, name)
	}
}
