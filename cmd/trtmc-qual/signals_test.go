package main

import (
	"bytes"
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInterruptsFirstSignalCancelsAndPrintsTheNotice(t *testing.T) {
	var errOut bytes.Buffer
	h := newInterrupts(&errOut)
	h.SetNotice("trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)")
	signals := make(chan os.Signal, 1)
	var released atomic.Int32
	ctx, stop := h.start(context.Background(), signals, func() { released.Add(1) })

	signals <- syscall.SIGINT
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the root context")
	}
	stop()
	assert.Equal(t, "trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)\n", errOut.String())
	assert.GreaterOrEqual(t, released.Load(), int32(1), "the signals are given back after the first one")
	stop() // a second stop is harmless
}

func TestInterruptsStopWithoutSignalPrintsNothing(t *testing.T) {
	for _, notice := range []string{"", "trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)"} {
		var errOut bytes.Buffer
		h := newInterrupts(&errOut)
		h.SetNotice(notice)
		var released atomic.Int32
		ctx, stop := h.start(context.Background(), make(chan os.Signal), func() { released.Add(1) })
		stop()
		assert.Error(t, ctx.Err(), "stop cancels the root context")
		assert.Empty(t, errOut.String(), "no signal, no notice")
		assert.Equal(t, int32(1), released.Load())
	}
}

func TestInterruptsWithoutNoticePrintsNothing(t *testing.T) {
	var errOut bytes.Buffer
	h := newInterrupts(&errOut)
	signals := make(chan os.Signal, 1)
	ctx, stop := h.start(context.Background(), signals, func() {})
	signals <- syscall.SIGTERM
	<-ctx.Done()
	stop()
	assert.Empty(t, errOut.String(), "a verb without children leaves the report to its error")
}

// TestRunUnknownGroupNeverSaysInterrupted runs what main runs, with the
// real handler, many times: a run that ends on its own (here: an unknown
// group, exit 2) never prints the interrupt notice. The old handler waited
// on the root context, which main's stop also ends, and printed it in
// about 5 runs of 300.
func TestRunUnknownGroupNeverSaysInterrupted(t *testing.T) {
	args := []string{"run", "--group", "nosuch", "--out", t.TempDir(),
		"--inventory", repoFile("inventory", "reference.yaml"), "--families", repoFile("families", "families.yaml")}
	runs := 300
	if testing.Short() {
		runs = 30
	}
	for i := range runs {
		io, out, errOut := testIO()
		h := newInterrupts(io.ErrOut)
		ctx, stop := h.Start(context.Background())
		code := run(ctx, h, args, io)
		stop()
		require.Equal(t, exitUsage, code, "run %d: %s", i, errOut.String())
		require.NotContains(t, errOut.String(), "interrupted", "run %d", i)
		require.Empty(t, out.String())
		require.NotEmpty(t, h.notice, "run set its notice: the test reaches the verb")
	}
}

// SIGHUP (a closed terminal, a lost ssh session) and SIGQUIT stop a verb
// as SIGINT and SIGTERM do: the real handler catches each, sent to this
// process, and cancels the root context (issue 32 item 15), so every verb
// that writes unwinds: interrupted rows, the redaction pass, staging
// removed.
func TestInterruptsHangupAndQuitStopLikeTerm(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var errOut bytes.Buffer
			h := newInterrupts(&errOut)
			h.SetNotice("notice")
			ctx, stop := h.Start(context.Background())
			defer stop()
			require.NoError(t, syscall.Kill(os.Getpid(), sig))
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not cancel the root context", sig)
			}
			stop()
			assert.Equal(t, "notice\n", errOut.String())
		})
	}
}
