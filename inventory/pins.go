package inventory

import (
	"context"
	"path/filepath"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// The inputs the inventory pins, and the one rule of each pin: the sha256
// of one file's bytes. The run's preflight and re-hashes, doctor and
// `inventory set --pin` all take a pin through these functions, so the
// digest pinned is the digest checked.
const (
	// TokenizerFile is the file of a tokenizer directory its pin is of.
	TokenizerFile = "tokenizer.json"
	// CorpusFile is the file of a corpus directory its pin is of.
	CorpusFile = "corpus.json"
)

// BundleSHA256 is a bundle's identity (bundle.sha256): the sha256 of the
// bundle file.
func BundleSHA256(ctx context.Context, bundle string) (string, error) {
	return fileio.FileSHA256(ctx, bundle)
}

// TokenizerSHA256 is a tokenizer directory's identity (tokenizer.sha256):
// the sha256 of its tokenizer.json.
func TokenizerSHA256(ctx context.Context, dir string) (string, error) {
	return fileio.FileSHA256(ctx, filepath.Join(dir, TokenizerFile))
}

// CorpusSHA256 is a corpus directory's identity (workload.dataset.sha256):
// the sha256 of its corpus.json.
func CorpusSHA256(ctx context.Context, dir string) (string, error) {
	return fileio.FileSHA256(ctx, filepath.Join(dir, CorpusFile))
}

// BundlePath is the profile's bundle file, relative paths taken from the
// inventory file's directory.
func (p *Profile) BundlePath() string { return ResolvePath(p.File, p.Bundle.Path) }

// TokenizerPath is the profile's tokenizer directory ("" when it names
// none), relative paths taken from the inventory file's directory.
func (p *Profile) TokenizerPath() string { return ResolvePath(p.File, p.Tokenizer.Path) }

// CorpusPath is the group's corpus directory, relative paths taken from
// the inventory file's directory.
func (g *Group) CorpusPath() string { return ResolvePath(g.File, g.Workload.Dataset.Corpus) }
