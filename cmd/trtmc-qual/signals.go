package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts is trtmc-qual's one signal handler, started once in main for
// every verb. The first SIGINT, SIGTERM, SIGHUP (a closed terminal, a lost
// ssh session) or SIGQUIT cancels the root context (so the defers that
// stop servers, AIPerf and Slurm tasks, write the interrupted rows, redact
// the evidence and remove staging and temporary directories run), prints
// the notice of the verb that runs children, and gives the signals back to
// their default action, so that a second Ctrl-C kills the process at once.
//
// Only a signal prints the notice: ending the handler (stop) without one
// prints nothing, whatever the context's state.
type interrupts struct {
	errOut io.Writer

	mu     sync.Mutex
	notice string
}

// newInterrupts returns a handler that prints to errOut.
func newInterrupts(errOut io.Writer) *interrupts { return &interrupts{errOut: errOut} }

// SetNotice sets the line printed on the first signal; verbs that run
// children set it before they start any ("" prints nothing: the verb's
// error then reports the interruption).
func (h *interrupts) SetNotice(line string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.notice = line
	h.mu.Unlock()
}

// stopSignals are the signals that stop a verb the way Ctrl-C does.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// Start listens for stopSignals until stop is called, and returns the root
// context that the first one cancels.
func (h *interrupts) Start(parent context.Context) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	return h.start(parent, ch, func() { signal.Stop(ch) })
}

// start is Start over any source of signals; release gives the signals
// back to their default action.
func (h *interrupts) start(parent context.Context, signals <-chan os.Signal, release func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-signals:
		case <-done:
			return
		}
		release()
		h.mu.Lock()
		notice := h.notice
		h.mu.Unlock()
		if notice != "" {
			fmt.Fprintln(h.errOut, notice)
		}
		cancel()
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(done)
			<-finished
			release()
			cancel()
		})
	}
	return ctx, stop
}
