package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCorpusInitOptions: the argument and flags reach the options (runF),
// and the logic runs on options alone: it pins the corpus on stdout, and
// keeps an existing corpus.json unless forced (a usage error).
func TestCorpusInitOptions(t *testing.T) {
	io, _, _ := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	root := newRootCmd(f)
	corpus := mustFind(t, root.Commands(), "corpus")
	corpus.RemoveCommand(mustFind(t, corpus.Commands(), "init"))
	var got *corpusInitOptions
	corpus.AddCommand(newCorpusInitCmd(f, func(o *corpusInitOptions) error { got = o; return nil }))
	code := executeTree(context.Background(), f, root, []string{"corpus", "init", "imgs", "--questions", "q.jsonl", "--source", "COCO", "--force"})
	require.Equal(t, exitOK, code)
	assert.Equal(t, corpusInitOptions{IO: got.IO, Dir: "imgs", Questions: "q.jsonl", Source: "COCO", Force: true}, *got)

	dir := t.TempDir()
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.png"), png, 0o644))
	io, out, errOut := testIO()
	opts := &corpusInitOptions{IO: io, Dir: dir, Source: "one pixel"}
	require.NoError(t, runCorpusInit(context.Background(), opts))
	assert.Regexp(t, `^[0-9a-f]{64}  `+regexp.QuoteMeta(dir+"/corpus.json")+`\n$`, out.String())
	assert.Contains(t, errOut.String(), "corpus init: 1 image(s)")
	err = runCorpusInit(context.Background(), opts)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.ErrorContains(t, err, "exists; pass --force to replace it")
	opts.Force = true
	assert.NoError(t, runCorpusInit(context.Background(), opts))
}
