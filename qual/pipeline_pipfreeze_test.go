package qual

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
)

// freezeRunner plays `python -m pip freeze --all`.
type freezeRunner struct {
	out  string
	err  error
	argv []string
}

func (f *freezeRunner) Run(_ context.Context, s proc.Spec) (proc.Result, error) {
	f.argv = s.Argv
	if f.err != nil {
		return proc.Result{Argv: s.Argv}, f.err
	}
	fmt.Fprint(s.Stdout, f.out)
	return proc.Result{Argv: s.Argv}, nil
}

func (f *freezeRunner) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, errors.New("freezeRunner: Start is not used")
}

// fakeVenv makes DIR/bin/aiperf and, when withPython, DIR/bin/python.
func fakeVenv(t *testing.T, withPython bool) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "aiperf"), []byte("#!/bin/sh\n"), 0o755))
	if withPython {
		require.NoError(t, os.WriteFile(filepath.Join(bin, "python"), []byte("#!/bin/sh\n"), 0o755))
	}
	return filepath.Join(bin, "aiperf")
}

func TestPipFreeze(t *testing.T) {
	ctx := context.Background()
	aiperfBin := fakeVenv(t, true)
	r := &freezeRunner{out: "aiperf==0.13.0\nnumpy==2.4.6\n"}
	got, err := pipFreeze(ctx, r, aiperfBin, "")
	require.NoError(t, err)
	assert.Equal(t, "aiperf==0.13.0\nnumpy==2.4.6\n", string(got), "the whole freeze, byte for byte")
	assert.Equal(t, []string{filepath.Join(filepath.Dir(aiperfBin), "python"), "-m", "pip", "freeze", "--all"}, r.argv,
		"the python of AIPerf's own environment")

	// Broken on purpose: each of these records no freeze (and so no digest), with the cause.
	_, err = pipFreeze(ctx, &freezeRunner{out: "x==1\n"}, fakeVenv(t, false), "")
	assert.ErrorContains(t, err, "no python beside")
	_, err = pipFreeze(ctx, &freezeRunner{err: errors.New("pip: exit status 1")}, aiperfBin, "")
	assert.ErrorContains(t, err, "exit status 1")
	_, err = pipFreeze(ctx, &freezeRunner{}, aiperfBin, "")
	assert.ErrorContains(t, err, "printed nothing")
	_, err = pipFreeze(ctx, &freezeRunner{out: "x==1\n"}, filepath.Join(t.TempDir(), "no-such-aiperf"), "")
	assert.Error(t, err)
}
