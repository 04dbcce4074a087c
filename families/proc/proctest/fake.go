// Package proctest holds the test double of proc.Runner: FakeRunner, which
// matches argv against expectations and fails on what it did not expect,
// and FakeProcess, a started fake child. Tests only; the product never
// imports it. The real runner's semantics are checked by proc's own tests
// (proc_test.go's re-exec TestHelperProcess).
package proctest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
)

// FakeRunner is a proc.Runner for unit tests: each expected call is an argv
// pattern (a regular expression over the argv joined by spaces) with what
// the call does. A call that matches no expectation fails with
// ErrUnexpectedCall, and Verify reports every unexpected call and every
// expectation left unused, so a test sees both what the code ran that it
// should not have and what it should have run but did not:
//
//	f := &proctest.FakeRunner{}
//	f.Expect(`^aiperf --version$`).Stdout("aiperf 0.13.0\n")
//	f.Expect(`^aiperf profile `).Exit(1, "boom")
//	t.Cleanup(func() { require.NoError(t, f.Verify()) })
//
// Expectations are matched in the order they were added; each matches once
// unless Times or Always says otherwise. Safe for concurrent use.
type FakeRunner struct {
	mu         sync.Mutex
	calls      []*FakeCall
	unexpected []string
	// Log is every argv run or started, joined by spaces, in order.
	log []string
}

// ErrUnexpectedCall is the error of a call no expectation matches.
var ErrUnexpectedCall = errors.New("unexpected call")

// FakeCall is one expectation of a FakeRunner.
type FakeCall struct {
	pattern *regexp.Regexp
	times   int // 0: any number
	used    int

	exit   int
	stdout string
	stderr string
	err    error
	do     func(ctx context.Context, s proc.Spec) (proc.Result, error)
	start  func(ctx context.Context, s proc.Spec) (proc.Process, error)
}

// Expect adds an expectation for argv matching pattern; it matches once.
func (f *FakeRunner) Expect(pattern string) *FakeCall {
	c := &FakeCall{pattern: regexp.MustCompile(pattern), times: 1}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return c
}

// Times makes the expectation match n calls (n <= 0: any number, none
// required).
func (c *FakeCall) Times(n int) *FakeCall { c.times = max(n, 0); return c }

// Always makes the expectation match any number of calls.
func (c *FakeCall) Always() *FakeCall { return c.Times(0) }

// Stdout is what the call writes to Spec.Stdout.
func (c *FakeCall) Stdout(s string) *FakeCall { c.stdout = s; return c }

// Exit makes the call exit with code and write stderr (an *ExitError, as
// the OS runner returns for a non-zero exit).
func (c *FakeCall) Exit(code int, stderr string) *FakeCall { c.exit, c.stderr = code, stderr; return c }

// Fail makes the call fail to start with err.
func (c *FakeCall) Fail(err error) *FakeCall { c.err = err; return c }

// Do makes Run call fn instead (it may write files the real program
// would); Exit and Stdout are then ignored.
func (c *FakeCall) Do(fn func(ctx context.Context, s proc.Spec) (proc.Result, error)) *FakeCall {
	c.do = fn
	return c
}

// OnStart makes Start call fn instead of starting a FakeProcess.
func (c *FakeCall) OnStart(fn func(ctx context.Context, s proc.Spec) (proc.Process, error)) *FakeCall {
	c.start = fn
	return c
}

// match finds the expectation for argv, or records an unexpected call.
func (f *FakeRunner) match(s proc.Spec) (*FakeCall, error) {
	line := strings.Join(s.Argv, " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, line)
	for _, c := range f.calls {
		if (c.times == 0 || c.used < c.times) && c.pattern.MatchString(line) {
			c.used++
			return c, nil
		}
	}
	f.unexpected = append(f.unexpected, line)
	return nil, fmt.Errorf("%s: %w: %s", s.Name, ErrUnexpectedCall, line)
}

// Run implements Runner.
func (f *FakeRunner) Run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	c, err := f.match(s)
	if err != nil {
		return proc.Result{Argv: s.Argv}, err
	}
	if c.err != nil {
		return proc.Result{Argv: s.Argv}, c.err
	}
	if c.do != nil {
		return c.do(ctx, s)
	}
	return c.result(s)
}

// result writes the call's output and returns how it ended.
func (c *FakeCall) result(s proc.Spec) (proc.Result, error) {
	if c.stdout != "" && s.Stdout != nil {
		_, _ = io.WriteString(s.Stdout, c.stdout)
	}
	if c.stderr != "" && s.Stderr != nil {
		_, _ = io.WriteString(s.Stderr, c.stderr)
	}
	r := proc.Result{Argv: s.Argv, ExitCode: c.exit, Start: time.Now(), StderrTail: c.stderr}
	if c.exit != 0 {
		return r, &proc.ExitError{Name: s.Name, Result: r}
	}
	return r, nil
}

// Start implements Runner: a FakeProcess that runs until it is stopped or
// ctx ends (then it ends with the call's exit code), unless OnStart says
// otherwise.
func (f *FakeRunner) Start(ctx context.Context, s proc.Spec) (proc.Process, error) {
	c, err := f.match(s)
	if err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.start != nil {
		return c.start(ctx, s)
	}
	p := NewFakeProcess(s)
	if c.stdout != "" && s.Stdout != nil {
		_, _ = io.WriteString(s.Stdout, c.stdout)
	}
	go func() {
		select {
		case <-ctx.Done():
			_, _ = p.Stop()
		case <-p.Done():
		}
	}()
	return p, nil
}

// Calls is every argv run or started so far, joined by spaces, in order.
func (f *FakeRunner) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// Verify reports the calls no expectation matched and the expectations
// that matched fewer calls than they required.
func (f *FakeRunner) Verify() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, u := range f.unexpected {
		errs = append(errs, fmt.Errorf("%w: %s", ErrUnexpectedCall, u))
	}
	for _, c := range f.calls {
		if c.times > 0 && c.used < c.times {
			errs = append(errs, fmt.Errorf("expected %d call(s) matching %q, got %d", c.times, c.pattern, c.used))
		}
	}
	return errors.Join(errs...)
}

// FakeProcess is a started fake child: it runs until Stop or Exit.
type FakeProcess struct {
	spec  proc.Spec
	start time.Time
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	result  proc.Result
	stopped bool
}

// NewFakeProcess returns a running fake child of s.
func NewFakeProcess(s proc.Spec) *FakeProcess {
	return &FakeProcess{spec: s, start: time.Now(), done: make(chan struct{})}
}

// Exit ends the process on its own with code (as a crash does when code
// is not 0).
func (p *FakeProcess) Exit(code int, stderr string) {
	p.once.Do(func() {
		p.mu.Lock()
		p.result = proc.Result{Argv: p.spec.Argv, ExitCode: code, Start: p.start, Duration: time.Since(p.start), StderrTail: stderr}
		p.mu.Unlock()
		close(p.done)
	})
}

// Pid implements Process; a fake has none.
func (p *FakeProcess) Pid() int { return 0 }

// Done implements Process.
func (p *FakeProcess) Done() <-chan struct{} { return p.done }

// StderrTail implements Process.
func (p *FakeProcess) StderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result.StderrTail
}

// Stop implements Process: the fake ends at once, stopped.
func (p *FakeProcess) Stop() (proc.Result, error) {
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		p.stopped = true
	}
	p.mu.Unlock()
	p.Exit(0, "")
	return p.Wait()
}

// Wait implements Process.
func (p *FakeProcess) Wait() (proc.Result, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	r.Stopped = p.stopped
	if r.ExitCode != 0 && !p.stopped {
		return r, &proc.ExitError{Name: p.spec.Name, Result: r}
	}
	return r, nil
}
