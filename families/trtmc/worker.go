package trtmc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// MaxWorkerLine is the worker protocol's line limit (16 MiB,
// apps/server/native_worker.cpp kMaxLineBytes), plus room for the newline.
const MaxWorkerLine = 16<<20 + 2

// WorkerSpec starts a persistent native worker:
// `trtmc-server _serve-worker BUNDLE [--runtime-root D] ...`.
type WorkerSpec struct {
	Argv []string
	Env  []string
	// Protocol is the protocol_version the ready line must announce.
	Protocol int
	// Capability, when set, must be among the ready line's capabilities.
	Capability string
	// StartupTimeout bounds the bundle load (the ready line);
	// RequestTimeout bounds one reply.
	StartupTimeout time.Duration
	RequestTimeout time.Duration
	// Stderr receives the worker's stderr (its logs).
	Stderr io.Writer
}

// Ready is the worker's first line. It is recorded as is in
// native_meta.json, so its one declaration is the native-meta format's
// (families.NativeWorkerReady).
type Ready = families.NativeWorkerReady

// Reply is one answer line: {"id", "ok": true, "result"} or
// {"id", "ok": false, "error": {"type", "message"}}.
type Reply struct {
	ID     string          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *ReplyError     `json:"error"`
}

// ReplyError is a worker's error reply.
type ReplyError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *ReplyError) Error() string { return e.Type + ": " + e.Message }

// Worker is a started worker that answered ready.
type Worker struct {
	p     proc.Process
	stdin *os.File
	lines chan []byte
	// readErr is set before lines is closed.
	readErr error
	Ready   Ready
	spec    WorkerSpec
}

// WorkerGone reports a worker that can no longer answer: it exited, timed
// out or broke the protocol. The run cannot go on with it.
type WorkerGone struct {
	During string // "startup", or the request id
	Reason string
	Tail   string
}

func (e *WorkerGone) Error() string {
	msg := fmt.Sprintf("native worker %s during %s", e.Reason, e.During)
	if t := strings.TrimSpace(e.Tail); t != "" {
		msg += "; its last stderr lines:\n" + text.Indent(text.LastLines(t, 10))
	}
	return msg
}

// StartWorker starts the worker and waits for its ready line. Its stdin
// and stdout are OS pipes the worker owns directly: no copying goroutine
// stands between it and us, so its exit is seen at once.
func StartWorker(ctx context.Context, r proc.Runner, s WorkerSpec) (*Worker, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p, err := r.Start(ctx, proc.Spec{Name: "native worker", Argv: s.Argv, Env: s.Env, Stdin: inR, Stdout: outW,
		Stderr: s.Stderr, Grace: 10 * time.Second})
	// The child has its own copies of its ends.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	w := &Worker{p: p, stdin: inW, lines: make(chan []byte, 1), spec: s}
	go w.read(outR)
	line, err := w.next(ctx, "startup", s.StartupTimeout)
	if err != nil {
		return nil, err
	}
	var rd Ready
	if err := json.Unmarshal(line, &rd); err != nil || rd.Event != "ready" {
		w.kill()
		return nil, &WorkerGone{During: "startup", Reason: fmt.Sprintf("sent %q instead of its ready line", text.Clip(line, 200)), Tail: p.StderrTail()}
	}
	w.Ready = rd
	if s.Protocol != 0 && rd.ProtocolVersion != s.Protocol {
		w.kill()
		return nil, fmt.Errorf("native worker speaks protocol_version %d, the family is configured for %d (families/trtmc.yaml --worker-protocol)",
			rd.ProtocolVersion, s.Protocol)
	}
	if s.Capability != "" && !slices.Contains(rd.Capabilities, s.Capability) {
		w.kill()
		return nil, fmt.Errorf("native worker capabilities %v lack %q, which this family's native calls need (families/trtmc.yaml --worker-capability)",
			rd.Capabilities, s.Capability)
	}
	return w, nil
}

func (w *Worker) read(r *os.File) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxWorkerLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		w.lines <- bytes.Clone(line)
	}
	w.readErr = sc.Err()
	// Drain whatever the worker still writes so it never blocks on us.
	_, _ = io.Copy(io.Discard, r)
	close(w.lines)
}

// next waits for the worker's next line.
func (w *Worker) next(ctx context.Context, during string, timeout time.Duration) ([]byte, error) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case line, ok := <-w.lines:
		if ok {
			return line, nil
		}
		if w.readErr != nil {
			w.kill()
			return nil, &WorkerGone{During: during, Reason: "broke the protocol (" + w.readErr.Error() + ")", Tail: w.p.StderrTail()}
		}
		res, _ := w.p.Wait()
		how := fmt.Sprintf("exited with status %d", res.ExitCode)
		if res.Signal != "" {
			how = "was killed by " + res.Signal
		}
		return nil, &WorkerGone{During: during, Reason: how, Tail: w.p.StderrTail()}
	case <-timer:
		w.kill()
		return nil, &WorkerGone{During: during, Reason: fmt.Sprintf("did not answer within %s (stopped)", timeout), Tail: w.p.StderrTail()}
	case <-ctx.Done():
		w.kill()
		return nil, ctx.Err()
	}
}

// Call sends one request and returns the worker's reply. An error reply
// is a *ReplyError (the worker lives on unless it says otherwise); a dead
// or broken worker is a *WorkerGone.
func (w *Worker) Call(ctx context.Context, id string, req map[string]any) (json.RawMessage, error) {
	msg := map[string]any{"id": id}
	for k, v := range req {
		msg[k] = v
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxWorkerLine-1 {
		return nil, &ReplyError{Type: "invalid_request_error", Message: fmt.Sprintf("request of %d bytes exceeds the worker's 16 MiB line limit", len(b))}
	}
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		// The worker is gone; its exit status says how.
		line, nerr := w.next(ctx, id, time.Second)
		if nerr != nil {
			return nil, nerr
		}
		return nil, &WorkerGone{During: id, Reason: fmt.Sprintf("stopped reading requests (%v) after %q", err, text.Clip(line, 200))}
	}
	line, err := w.next(ctx, id, w.spec.RequestTimeout)
	if err != nil {
		return nil, err
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		w.kill()
		return nil, &WorkerGone{During: id, Reason: fmt.Sprintf("answered with a non-protocol line %q", text.Clip(line, 200)), Tail: w.p.StderrTail()}
	}
	if rep.ID != id {
		w.kill()
		return nil, &WorkerGone{During: id, Reason: fmt.Sprintf("answered id %q (protocol out of step)", rep.ID), Tail: w.p.StderrTail()}
	}
	if !rep.OK {
		if rep.Error == nil {
			rep.Error = &ReplyError{Type: "unknown", Message: "ok false without an error"}
		}
		if rep.Error.Type == "runtime_error" {
			// The worker exits after a runtime error (native_worker.cpp:
			// fatal); later requests cannot be answered by it.
			return nil, &WorkerGone{During: id, Reason: "failed with " + rep.Error.Error() + " (a fatal worker error)", Tail: w.p.StderrTail()}
		}
		return nil, rep.Error
	}
	if len(rep.Result) == 0 || string(rep.Result) == "null" {
		return nil, &ReplyError{Type: "protocol", Message: "ok true without a result"}
	}
	return rep.Result, nil
}

// Alive reports whether the worker process is still running.
func (w *Worker) Alive() bool {
	select {
	case <-w.p.Done():
		return false
	default:
		return true
	}
}

// Close asks the worker to shut down ({"op": "shutdown"}), then stops it.
func (w *Worker) Close(ctx context.Context) proc.Result {
	if w.Alive() {
		if b, err := json.Marshal(map[string]string{"id": "shutdown", "op": "shutdown"}); err == nil {
			if _, err := w.stdin.Write(append(b, '\n')); err == nil {
				t := time.NewTimer(10 * time.Second)
				select {
				case <-w.p.Done():
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
	_ = w.stdin.Close()
	res, _ := w.p.Stop()
	return res
}

func (w *Worker) kill() { go func() { _, _ = w.p.Stop() }() }
