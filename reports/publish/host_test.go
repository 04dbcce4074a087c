package publish

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestHostRoots: the roots this host's configuration names — the checkout
// above the configuration file, $TRTMC_REPO, each $TRTMC_BUNDLE_DIR, the
// aiperf's virtual environment — and nothing for what is unset or not a
// directory one may name (/).
func TestHostRoots(t *testing.T) {
	checkout := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module github.com/trtmc-qual/trtmc-qual\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(checkout, "conf"), 0o755))
	env := map[string]string{"TRTMC_REPO": "/src/trtmc", "TRTMC_BUNDLE_DIR": "/b1:/:/b2"}
	roots := HostRoots(filepath.Join(checkout, "conf", "trtmc-qual.yaml"), "/venvs/ai/bin/aiperf", func(k string) string { return env[k] })
	assert.Equal(t, []verdict.Root{{Name: RootHarness, Path: checkout}, {Name: RootTRTMC, Path: "/src/trtmc"},
		{Name: RootBundles, Path: "/b1"}, {Name: RootBundles, Path: "/b2"}, {Name: RootAIPerfVenv, Path: "/venvs/ai"}}, roots)

	none := HostRoots("", "aiperf", func(string) string { return "" })
	for _, r := range none {
		assert.Equal(t, RootHarness, r.Name, "only the checkout of the test binary may be found: %+v", r)
	}
}

// TestForHostDeclaredFirst: declared roots come first, then this host's,
// each also under the path its links resolve to.
func TestForHostDeclaredFirst(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Symlink(real, link))
	p := ForHost("", "", func(string) string { return "" }, []verdict.Root{{Name: "DATA", Path: link}})
	require.GreaterOrEqual(t, len(p.Roots), 2)
	assert.Equal(t, verdict.Root{Name: "DATA", Path: link}, p.Roots[0])
	resolved, err := filepath.EvalSymlinks(link)
	require.NoError(t, err)
	assert.Contains(t, p.Roots, verdict.Root{Name: "DATA", Path: resolved})
	assert.NotEmpty(t, p.Identity.TopDirs, "this host's entries of /")
}
