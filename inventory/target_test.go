package inventory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DefiningFile finds the one file that defines the target; none or
// several is a TargetError naming what was looked for and where.
func TestDefiningFile(t *testing.T) {
	ctx := context.Background()
	valid, err := os.ReadFile(filepath.Join("testdata", "valid.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(a, valid, 0o644))
	require.NoError(t, os.WriteFile(b, []byte("groups: {}\n"), 0o644))

	got, err := DefiningFile(ctx, []string{b, a}, Target{Profile: "qwen3-vl-2b"})
	require.NoError(t, err)
	assert.Equal(t, a, got)
	got, err = DefiningFile(ctx, []string{b, a}, Target{Group: "vlm"})
	require.NoError(t, err)
	assert.Equal(t, a, got)

	var te *TargetError
	_, err = DefiningFile(ctx, []string{a, b}, Target{Profile: "qwen3-vl-2", Group: "vlm"})
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Equal(t, `no profile "qwen3-vl-2" of group "vlm" in the inventory (`+a+", "+b+`); did you mean "qwen3-vl-2b"?`, err.Error())
	_, err = DefiningFile(ctx, []string{a}, Target{Profile: "qwen3-vl-2b", Group: "detection"})
	require.True(t, errors.As(err, &te), "%v", err)
	_, err = DefiningFile(ctx, []string{a}, Target{Group: "vml"})
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Contains(t, err.Error(), `no group "vml" in the inventory (`+a+`); did you mean "vlm"?`)

	c := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(c, valid, 0o644))
	_, err = DefiningFile(ctx, []string{a, c}, Target{Profile: "qwen3-vl-2b"})
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Equal(t, `profile "qwen3-vl-2b" is defined in `+a+" and "+c+": give the one file to edit (--inventory FILE)", err.Error())

	var probs Problems
	_, err = DefiningFile(ctx, []string{filepath.Join(dir, "missing.yaml")}, Target{Profile: "qwen3-vl-2b"})
	require.True(t, errors.As(err, &probs), "%v", err)
}

// The inventory shipped with the harness is the one in its own checkout's
// inventory/ directory; a copy in a directory named inventory elsewhere is
// not.
func TestShippedCheckout(t *testing.T) {
	assert.NotEmpty(t, ShippedCheckout("reference.yaml"))
	copied := filepath.Join(t.TempDir(), "inventory", "reference.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(copied), 0o755))
	require.NoError(t, os.WriteFile(copied, []byte("groups: {}\n"), 0o644))
	assert.Empty(t, ShippedCheckout(copied))
}
