package proctest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
)

// The fakes are what they stand in for.
var (
	_ proc.Runner  = (*FakeRunner)(nil)
	_ proc.Process = (*FakeProcess)(nil)
)

func TestFakeRunnerMatchesArgvAndReportsWhatItDidNotExpect(t *testing.T) {
	f := &FakeRunner{}
	f.Expect(`^aiperf --version$`).Stdout("aiperf 0.13.0\n")
	f.Expect(`^aiperf profile .*--concurrency 4`).Exit(2, "bad flag")
	f.Expect(`^never-run$`)

	var out strings.Builder
	res, err := f.Run(context.Background(), proc.Spec{Name: "aiperf", Argv: []string{"aiperf", "--version"}, Stdout: &out})
	require.NoError(t, err)
	assert.Equal(t, "aiperf 0.13.0\n", out.String())
	assert.Equal(t, 0, res.ExitCode)

	res, err = f.Run(context.Background(), proc.Spec{Name: "aiperf", Argv: []string{"aiperf", "profile", "--concurrency", "4"}})
	var ee *proc.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, err.Error(), "bad flag")

	_, err = f.Run(context.Background(), proc.Spec{Name: "aiperf", Argv: []string{"aiperf", "--version"}})
	require.ErrorIs(t, err, ErrUnexpectedCall, "each expectation matches once")

	verr := f.Verify()
	require.Error(t, verr)
	assert.Contains(t, verr.Error(), "unexpected call: aiperf --version")
	assert.Contains(t, verr.Error(), `expected 1 call(s) matching "^never-run$", got 0`)
	assert.Equal(t, []string{"aiperf --version", "aiperf profile --concurrency 4", "aiperf --version"}, f.Calls())
}

func TestFakeRunnerVerifiesClean(t *testing.T) {
	f := &FakeRunner{}
	f.Expect(`^git `).Always()
	f.Expect(`^nvidia-smi$`).Times(2)
	for _, argv := range [][]string{{"git", "a"}, {"nvidia-smi"}, {"git", "b"}, {"nvidia-smi"}} {
		_, err := f.Run(context.Background(), proc.Spec{Argv: argv})
		require.NoError(t, err)
	}
	require.NoError(t, f.Verify())
}

func TestFakeProcessLifecycle(t *testing.T) {
	f := &FakeRunner{}
	f.Expect(`^server$`)
	f.Expect(`^crasher$`).OnStart(func(_ context.Context, s proc.Spec) (proc.Process, error) {
		p := NewFakeProcess(s)
		p.Exit(1, "segfault")
		return p, nil
	})
	f.Expect(`^missing$`).Fail(errors.New("exec: no such file"))

	ctx, cancel := context.WithCancel(context.Background())
	p, err := f.Start(ctx, proc.Spec{Name: "server", Argv: []string{"server"}})
	require.NoError(t, err)
	select {
	case <-p.Done():
		t.Fatal("a fake server runs until stopped")
	default:
	}
	cancel()
	<-p.Done()
	res, err := p.Wait()
	require.NoError(t, err)
	assert.True(t, res.Stopped)

	c, err := f.Start(context.Background(), proc.Spec{Name: "crasher", Argv: []string{"crasher"}})
	require.NoError(t, err)
	_, err = c.Wait()
	var ee *proc.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "segfault", c.StderrTail())

	_, err = f.Start(context.Background(), proc.Spec{Name: "missing", Argv: []string{"missing"}})
	require.EqualError(t, err, "exec: no such file")
	require.NoError(t, f.Verify())
}
