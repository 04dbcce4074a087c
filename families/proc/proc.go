// Package proc runs child processes the way a qualification harness must:
// each child in its own process group, stopped with a signal to the whole
// group, then SIGKILL after a grace period, with its exit status and the tail
// of its stderr kept for error messages.
//
// Everything that starts a process in trtmc-qual goes through a Runner, so
// tests can substitute a fake (proctest.FakeRunner) and the lifecycle rules live in
// one place.
//
// It lives under families/ because what it runs are the programs a family
// declares (servers, native workers, correctness commands) and AIPerf; it is
// a leaf (stdlib and reports/text only), so both the adapters of
// families/trtmc and the pipeline under qual/ import it with every arrow
// pointing down.
//
// Readiness is polled (ready.go). What is Linux-only is split by build
// constraint, each with a file for other systems (macOS, which make lint
// builds and vets):
//
//   - sysproc_linux.go: the parent-death signal of every child;
//   - reaper_linux.go: the child subreaper, the marks every child carries
//     and the sweep that finds and kills what left a child's process group
//     (reaper_other.go does nothing);
//   - listen_linux.go: the addresses a process group listens on
//     (ListenAddrs, from /proc; listen_other.go reports the check
//     unavailable);
//   - maps_linux.go: the files a process group has mapped (MappedFiles,
//     /proc/PID/maps and exe; maps_other.go reports them unavailable).
//
// proc_test.go's re-exec TestHelperProcess checks the real runner's
// semantics.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// DefaultGrace is how long a child gets between its stop signal and SIGKILL.
const DefaultGrace = 10 * time.Second

// tailBytes is how much of a child's stderr an error message carries.
const tailBytes = 4096

// Spec describes one child process.
type Spec struct {
	// Name labels the child in logs and errors ("server", "aiperf").
	Name string
	// Argv is the program and its arguments; never a shell string.
	Argv []string
	// Dir is the working directory; empty means the harness's.
	Dir string
	// Env is added to (and overrides) the harness's environment.
	Env []string
	// Stdin is the child's standard input; nil means none (/dev/null).
	// A persistent worker speaks a line protocol over it.
	Stdin io.Reader
	// Stdout and Stderr receive the child's output; nil discards it.
	// Stderr's last bytes are kept for errors either way.
	Stdout, Stderr io.Writer
	// StopSignal is sent to the process group to stop the child
	// (default SIGTERM; AIPerf wants SIGINT).
	StopSignal syscall.Signal
	// Grace is the wait between StopSignal and SIGKILL (default DefaultGrace).
	Grace time.Duration
}

// Result is what a finished child left behind.
type Result struct {
	Argv     []string      `json:"argv"`
	ExitCode int           `json:"exit_code"` // -1 when killed by a signal
	Signal   string        `json:"signal,omitempty"`
	Stopped  bool          `json:"stopped"` // the harness stopped it (context or Stop)
	Killed   bool          `json:"killed"`  // SIGKILL was needed after the grace period
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	// StderrTail is the last few KiB of stderr.
	StderrTail string `json:"-"`
	// OutputErr is the first error writing the child's output to
	// Spec.Stdout/Stderr (e.g. a full disk). The child kept running: its
	// output is drained and dropped, never left to die of SIGPIPE.
	OutputErr string `json:"output_error,omitempty"`
	// Survivors are the processes of the child's tree that were still
	// alive outside its process group when it ended (they called setsid or
	// setpgid): found by the sweep, killed, and listed here so the caller
	// can break the row that ran them (Linux; see sweep).
	Survivors []Survivor `json:"survivors,omitempty"`
}

// Survivor is a process that outlived the child it descends from.
type Survivor struct {
	Pid int `json:"pid"`
	// Argv is its command line, as /proc shows it (clipped).
	Argv    string `json:"argv"`
	Group   int    `json:"pgid"`
	Session int    `json:"sid"`
	// Why says how it was known to be the child's.
	Why string `json:"why"`
}

func (s Survivor) String() string {
	return fmt.Sprintf("pid %d (%s; process group %d, session %d: %s)", s.Pid, s.Argv, s.Group, s.Session, s.Why)
}

// markerEnv is set in every child's environment to the tokens of the
// children it descends from, comma-separated (a child of a child started
// through this package adds its own): what the sweep looks for.
const markerEnv = "TRTMC_QUAL_PROC"

// marks are what tell a child's descendants: its token in markerEnv, and
// the inode of the marker pipe it inherited ("pipe:[N]"; "" where none).
type marks struct {
	token string
	pipe  string
}

var childSeq atomic.Uint64

// hasToken reports whether a markerEnv value lists token.
func hasToken(v, token string) bool {
	for _, t := range strings.Split(v, ",") {
		if t == token {
			return true
		}
	}
	return false
}

// ExitError reports a child that exited unsuccessfully, with what a user
// needs to act on it: which program, how it ended, and its last words.
type ExitError struct {
	Name   string
	Result Result
}

func (e *ExitError) Error() string {
	how := fmt.Sprintf("exited with status %d", e.Result.ExitCode)
	if e.Result.Signal != "" {
		how = "was killed by " + e.Result.Signal
	}
	msg := fmt.Sprintf("%s (%s) %s", e.Name, argv0(e.Result.Argv), how)
	if tail := strings.TrimSpace(e.Result.StderrTail); tail != "" {
		msg += "; last output:\n" + text.Indent(text.LastLines(tail, 15))
	}
	return msg
}

// Process is a started child.
type Process interface {
	// Pid is the child's pid, which is also its process group id.
	Pid() int
	// Done is closed when the child has exited and been reaped.
	Done() <-chan struct{}
	// Wait blocks until the child exits and returns how it ended. A
	// non-zero exit is reported as *ExitError unless the harness stopped it.
	Wait() (Result, error)
	// Stop sends the stop signal to the group, waits up to the grace period,
	// then SIGKILLs the group, and returns how the child ended.
	Stop() (Result, error)
	// StderrTail is the last few KiB the child wrote to stderr so far.
	StderrTail() string
}

// Runner starts children. OS is the real one; tests use proctest.FakeRunner.
type Runner interface {
	// Run starts the child and waits for it. Cancelling ctx stops it.
	Run(ctx context.Context, s Spec) (Result, error)
	// Start starts a long-running child. Cancelling ctx stops it.
	Start(ctx context.Context, s Spec) (Process, error)
}

// OS runs real processes.
type OS struct{}

// Run implements Runner.
func (OS) Run(ctx context.Context, s Spec) (Result, error) {
	p, err := OS{}.Start(ctx, s)
	if err != nil {
		return Result{Argv: s.Argv}, err
	}
	return p.Wait()
}

// Start implements Runner.
func (OS) Start(ctx context.Context, s Spec) (Process, error) {
	if len(s.Argv) == 0 {
		return nil, fmt.Errorf("%s: empty argv", s.Name)
	}
	if s.StopSignal == 0 {
		s.StopSignal = syscall.SIGTERM
	}
	if s.Grace <= 0 {
		s.Grace = DefaultGrace
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Stdin = s.Stdin
	// Every process this child starts, and theirs, carries its marks, and
	// is re-parented to us when its parent dies: when the child ends, the
	// sweep finds whatever of its tree left its process group.
	becomeSubreaper()
	token := fmt.Sprintf("%d.%d", os.Getpid(), childSeq.Add(1))
	if outer := os.Getenv(markerEnv); outer != "" {
		token = outer + "," + token
	}
	m, markerFile, err := childMarks(token[strings.LastIndexByte(token, ',')+1:])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if markerFile != nil {
		defer markerFile.Close() // the child has its own copy
		cmd.ExtraFiles = []*os.File{markerFile}
	}
	cmd.Env = append(append(os.Environ(), s.Env...), markerEnv+"="+token)
	tail := &tailBuffer{max: tailBytes}
	// Output that goes through a pipe (anything but an *os.File) is drained
	// even when writing it fails: a child whose pipe reader stopped would
	// die of SIGPIPE on its next write, for the harness's fault.
	outErr := &firstError{}
	cmd.Stdout = orDiscard(s.Stdout)
	if _, isFile := cmd.Stdout.(*os.File); !isFile {
		cmd.Stdout = &drainWriter{w: cmd.Stdout, err: outErr}
	}
	cmd.Stderr = io.MultiWriter(&drainWriter{w: orDiscard(s.Stderr), err: outErr}, tail)
	// Own process group, so one signal reaches the child and everything it
	// forked; on Linux also a parent-death signal (sysproc_linux.go).
	cmd.SysProcAttr = sysProcAttr()
	// A pipe held open by a grandchild must not block Wait forever.
	cmd.WaitDelay = s.Grace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", s.Name, argv0(s.Argv), err)
	}
	p := &osProcess{spec: s, cmd: cmd, tail: tail, outErr: outErr, start: start, done: make(chan struct{}), marks: m}
	go p.reap()
	go func() {
		select {
		case <-ctx.Done():
			_, _ = p.Stop()
		case <-p.done:
		}
	}()
	return p, nil
}

type osProcess struct {
	spec   Spec
	cmd    *exec.Cmd
	tail   *tailBuffer
	outErr *firstError
	start  time.Time
	done   chan struct{}
	marks  marks

	mu        sync.Mutex
	survivors []Survivor
	stopped   bool
	killed    bool
	waitErr   error
	stopOne   sync.Once
}

func (p *osProcess) Pid() int              { return p.cmd.Process.Pid }
func (p *osProcess) Done() <-chan struct{} { return p.done }
func (p *osProcess) StderrTail() string    { return p.tail.String() }

func (p *osProcess) reap() {
	err := p.cmd.Wait()
	// The leader is gone; kill anything it left in its group, then sweep
	// what left the group.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	survivors := sweep(p.cmd.Process.Pid, p.marks)
	p.mu.Lock()
	p.waitErr = err
	p.survivors = survivors
	p.mu.Unlock()
	close(p.done)
}

func (p *osProcess) Stop() (Result, error) {
	p.stopOne.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, p.spec.StopSignal)
		select {
		case <-p.done:
		case <-time.After(p.spec.Grace):
			p.mu.Lock()
			p.killed = true
			p.mu.Unlock()
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	})
	<-p.done
	return p.Wait()
}

func (p *osProcess) Wait() (Result, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Result{
		Argv:       p.spec.Argv,
		Start:      p.start,
		Duration:   time.Since(p.start),
		Stopped:    p.stopped,
		Killed:     p.killed,
		StderrTail: p.tail.String(),
		OutputErr:  p.outErr.String(),
		Survivors:  p.survivors,
	}
	if st := p.cmd.ProcessState; st != nil {
		r.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal().String()
		}
	}
	if p.waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(p.waitErr, &ee) && !errors.Is(p.waitErr, exec.ErrWaitDelay) {
			return r, fmt.Errorf("%s: wait: %w", p.spec.Name, p.waitErr)
		}
	}
	if r.ExitCode != 0 && !p.stopped {
		return r, &ExitError{Name: p.spec.Name, Result: r}
	}
	return r, nil
}

// GroupAlive reports whether a process of the process group pgid is still
// alive: a member that runs, not a zombie. The harness uses it to confirm,
// not assume, that a child's group is gone. A zombie is dead, but it keeps
// its group in existence until its parent reaps it: a server wrapper that
// SIGKILLs its child and exits at once leaves one, re-parented to this
// process (the subreaper). So the check reaps the group's zombies that are
// its own children, and waits up to reapWait for a member that is dying
// (its SIGKILL delivered, its zombie not yet made) before it calls the
// group alive (issue 32 item 17).
func GroupAlive(pgid int) bool { return groupAlive(pgid, reapWait) }

// reapWait bounds how long GroupAlive waits for a dying group.
const reapWait = 2 * time.Second

// signalable reports whether the process group pgid exists (zombies
// included): what kill(-pgid, 0) says.
func signalable(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func argv0(argv []string) string {
	if len(argv) == 0 {
		return "<empty>"
	}
	return argv[0]
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// drainWriter passes writes on to w until one fails, then keeps accepting
// (and dropping) them, recording the first error.
type drainWriter struct {
	w   io.Writer
	err *firstError
}

func (d *drainWriter) Write(b []byte) (int, error) {
	if d.err.String() == "" {
		if _, err := d.w.Write(b); err != nil {
			d.err.set(err)
		}
	}
	return len(b), nil
}

// firstError keeps the first error it is given.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		return ""
	}
	return f.err.Error()
}
