package trtmc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Native paths and the timing scope each gives the row's Task time.
const (
	PathWorker = "worker"
	PathCLI    = "cli"

	// ScopeTaskCall is the worker's model_call_ms: the wall time of one
	// call through the public Task interface (no build, load, warmup).
	ScopeTaskCall = "public_task_call_wall"
	// ScopeRunPrefillDecode is `trtmc run`'s total_ms: prefill + decode of
	// one call in a fresh process (setup and load excluded).
	ScopeRunPrefillDecode = "trtmc_run_prefill_plus_decode"
	// ScopeNone: `trtmc detect` prints no timing; task_ms is null.
	ScopeNone = "none"
)

// Tasks the adapter drives.
const (
	TaskChat   = "chat"
	TaskDetect = "detect"
)

// NativeOptions configure one native run.
type NativeOptions struct {
	Task   string // TaskChat or TaskDetect
	Path   string // PathWorker or PathCLI
	Bundle string
	// In, Out and Meta are the request lines, the answer lines and the
	// run's description (path, timing scope, worker handshake).
	In, Out, Meta string

	// Worker starts the persistent worker. When Worker.Argv is empty the
	// native binary is located (Locate, LocateWorker) and started as
	// `BINARY _serve-worker BUNDLE [--runtime-root ROOT] WorkerArgs...`,
	// the runtime root being the wheel's bin directory when the binary was
	// found there and WorkerArgs name none (as cli.py passes it).
	Worker     WorkerSpec
	Locate     LocateOptions
	WorkerArgs []string
	// WorkerOp is the request's op ("generate" for chat; the detection
	// operation for detect). WorkerImage is how the image travels:
	// "image_path" (a file the worker reads) or "image_base64".
	WorkerOp    string
	WorkerImage string

	CLI CLISpec

	Limits         ChatLimits
	ScoreThreshold *float64
	NIM            NIMOptions

	Runner proc.Runner
	Log    io.Writer
	// TempDir holds decoded images while they are needed.
	TempDir string
}

// RunNative answers every request line. Per-request problems (a payload
// the server would reject, an error reply) become error lines; a worker
// that dies or breaks the protocol stops the run with an error, after
// everything answered so far is written out (and an error line for the
// request it died on).
func RunNative(ctx context.Context, o NativeOptions) (*families.NativeMeta, error) {
	meta := &families.NativeMeta{Schema: families.NativeMetaSchema, Task: o.Task, Path: o.Path}
	reqs, err := readNativeIn(o.In)
	if err != nil {
		return meta, err
	}
	meta.Requests = len(reqs)
	wantRoute := RouteChat
	if o.Task == TaskDetect {
		wantRoute = RouteInfer
	}
	if o.Task != TaskChat && o.Task != TaskDetect {
		return meta, fmt.Errorf("unknown task %q (chat or detect)", o.Task)
	}
	out, err := os.Create(o.Out)
	if err != nil {
		return meta, err
	}
	run := newNativeRun(out, o.Meta, meta)
	ans, closeAns, err := startAnswerer(ctx, o, meta)
	if err != nil {
		return run.finish(err)
	}
	defer closeAns()
	for _, q := range reqs {
		if err := ctx.Err(); err != nil {
			return run.finish(err)
		}
		if err := run.request(ctx, ans, q, wantRoute); err != nil {
			return run.finish(err)
		}
	}
	return run.finish(nil)
}

// nativeRun writes the answer lines of one run and, at its end, its
// metadata.
type nativeRun struct {
	out      *os.File
	bw       *bufio.Writer
	enc      *json.Encoder
	metaPath string
	meta     *families.NativeMeta
}

func newNativeRun(out *os.File, metaPath string, meta *families.NativeMeta) *nativeRun {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &nativeRun{out: out, bw: bw, enc: enc, metaPath: metaPath, meta: meta}
}

// write writes one answer line and counts it.
func (n *nativeRun) write(r families.NativeAnswer) error {
	if r.Error != "" {
		n.meta.Errors++
	} else {
		n.meta.Answered++
	}
	return n.enc.Encode(r)
}

// finish makes the answers durable and writes the metadata (with the
// run's fatal error, if any); runErr wins over an error of its own.
func (n *nativeRun) finish(runErr error) (*families.NativeMeta, error) {
	if runErr != nil {
		n.meta.Fatal = runErr.Error()
	}
	err := n.bw.Flush()
	if err == nil {
		err = n.out.Sync()
	}
	if cerr := n.out.Close(); err == nil {
		err = cerr
	}
	if n.metaPath != "" {
		if merr := fileio.WriteJSON(n.metaPath, n.meta); err == nil {
			err = merr
		}
	}
	if runErr != nil {
		return n.meta, runErr
	}
	return n.meta, err
}

// startAnswerer starts what answers the requests on the options' path: the
// native worker (located as the control plane finds it unless its argv is
// given; stopped by the returned func) or `trtmc run` per request. It
// records in meta what it started and the timing scope of its replies.
func startAnswerer(ctx context.Context, o NativeOptions, meta *families.NativeMeta) (answerer, func(), error) {
	switch o.Path {
	case PathWorker:
		meta.TimingScope = ScopeTaskCall
		if len(o.Worker.Argv) == 0 {
			bin, err := LocateWorker(ctx, o.Locate)
			if err != nil {
				return nil, nil, fmt.Errorf("locate the native worker: %w", err)
			}
			meta.WorkerBinary = bin
			o.Worker.Argv = WorkerArgv(bin, o.Bundle, o.WorkerArgs)
		}
		meta.Argv = o.Worker.Argv
		w, err := StartWorker(ctx, o.Runner, o.Worker)
		if err != nil {
			return nil, nil, fmt.Errorf("start the native worker: %w", err)
		}
		rd := w.Ready
		meta.Worker = &rd
		meta.TokenCounts = o.Task == TaskChat
		if o.Limits.DefaultMaxNewTokens == 0 {
			o.Limits.DefaultMaxNewTokens = rd.DefaultMaxNewTokens
		}
		return &workerAnswerer{o: o, w: w}, func() { w.Close(context.WithoutCancel(ctx)) }, nil
	case PathCLI:
		meta.TimingScope = ScopeRunPrefillDecode
		if o.Task == TaskDetect {
			meta.TimingScope = ScopeNone
		}
		meta.Argv = []string{o.CLI.Trtmc}
		return &cliAnswerer{o: o}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown native path %q (worker or cli)", o.Path)
}

// request answers one request line and writes its answer or error line.
// A problem of the request (another route, a payload the server rejects,
// an error reply) is its error line; the error returned ends the run: the
// worker gone or the context ended (after the request's error line), or a
// program that cannot run at all.
func (n *nativeRun) request(ctx context.Context, ans answerer, q families.NativeRequest, wantRoute string) error {
	r := families.NativeAnswer{RequestID: q.RequestID}
	if q.Route != wantRoute {
		r.Error = fmt.Sprintf("route %s is not this family's route %s", q.Route, wantRoute)
		return n.write(r)
	}
	answer, taskMS, wallMS, err := ans.answer(ctx, q)
	var gone *WorkerGone
	switch {
	case errors.As(err, &gone), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		r.Error = err.Error()
		if werr := n.write(r); werr != nil {
			return werr
		}
		return fmt.Errorf("request %s: %w (%d of %d requests answered)", q.RequestID, err, n.meta.Answered, n.meta.Requests)
	case err != nil:
		r.Error = err.Error()
		var pe *proc.ExitError
		var re *ReplyError
		if !errors.As(err, &pe) && !errors.As(err, &re) && !errors.As(err, new(*requestError)) {
			// Not the request's fault: the program could not run at all.
			_ = n.write(r)
			return fmt.Errorf("request %s: %w", q.RequestID, err)
		}
	default:
		r.Answer, r.TaskMS, r.WallMS = answer, taskMS, wallMS
	}
	return n.write(r)
}

// WorkerArgv is the native worker's command line, as the control plane
// starts it (worker.py WorkerLoadOptions; main.cpp worker_main).
func WorkerArgv(bin *WorkerBinary, bundle string, extra []string) []string {
	argv := []string{bin.Path, "_serve-worker", bundle}
	if bin.RuntimeRoot != "" && !slices.Contains(extra, "--runtime-root") {
		argv = append(argv, "--runtime-root", bin.RuntimeRoot)
	}
	return append(argv, extra...)
}

// requestError is a request the server would reject.
type requestError struct{ err error }

func (e *requestError) Error() string { return "invalid request: " + e.err.Error() }

// An answerer answers one request: the answer, the Task time it
// reports, and the wall time the adapter measured for the call.
type answerer interface {
	answer(ctx context.Context, q families.NativeRequest) (answer json.RawMessage, taskMS, wallMS *float64, err error)
}

type workerAnswerer struct {
	o NativeOptions
	w *Worker
}

func (a *workerAnswerer) answer(ctx context.Context, q families.NativeRequest) (json.RawMessage, *float64, *float64, error) {
	req := map[string]any{"op": a.o.WorkerOp}
	var im Image
	if a.o.Task == TaskChat {
		call, err := ParseChat(q.Payload, a.o.Limits)
		if err != nil {
			return nil, nil, nil, &requestError{err}
		}
		req["prompt"] = call.Prompt
		req["config"] = call.Config
		im = call.Image
	} else {
		var err error
		if im, err = ParseInfer(q.Payload); err != nil {
			return nil, nil, nil, &requestError{err}
		}
		cfg := map[string]any{}
		if a.o.ScoreThreshold != nil {
			cfg["score_threshold"] = *a.o.ScoreThreshold
		}
		req["config"] = cfg
	}
	switch a.o.WorkerImage {
	case "image_base64":
		req["image_base64"] = base64.StdEncoding.EncodeToString(im.Data)
	default:
		path, err := a.o.CLI.writeImage(q.RequestID, im)
		if err != nil {
			return nil, nil, nil, err
		}
		defer os.Remove(path)
		req["image_path"] = path
	}
	// The adapter's own clock around the call: the worker's model_call_ms
	// is measured inside it, so it can never be longer.
	started := time.Now()
	res, err := a.w.Call(ctx, q.RequestID, req)
	wall := msSince(started)
	if err != nil {
		return nil, nil, nil, err
	}
	var answer json.RawMessage
	var ms *float64
	if a.o.Task == TaskChat {
		answer, ms, err = chatResult(res, wall)
	} else {
		answer, ms, err = detectResult(res, im, a.o.NIM, wall)
	}
	return answer, ms, &wall, err
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

// chatResult reads a generate result (text, completion_tokens,
// model_call_ms, timing_scope) as the server's extract_result does, and
// answers {"text", "completion_tokens"}. wallMS is what the adapter
// measured for the call.
func chatResult(res json.RawMessage, wallMS float64) (json.RawMessage, *float64, error) {
	var r struct {
		Text             *string  `json:"text"`
		CompletionTokens *int64   `json:"completion_tokens"`
		ModelCallMS      *float64 `json:"model_call_ms"`
		TimingScope      *string  `json:"timing_scope"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Text == nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: "generate result does not contain text"}
	}
	if r.CompletionTokens == nil || *r.CompletionTokens < 0 {
		return nil, nil, &ReplyError{Type: "protocol", Message: "generate result has no valid completion_tokens"}
	}
	ms, err := taskTime(r.ModelCallMS, r.TimingScope, wallMS)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(struct {
		Text             string `json:"text"`
		CompletionTokens int64  `json:"completion_tokens"`
	}{*r.Text, *r.CompletionTokens})
	return b, ms, err
}

// detectResult reads a detection result ({scores, classes, boxes} plus
// model_call_ms and timing_scope) and converts it to the NIM shape.
func detectResult(res json.RawMessage, im Image, nim NIMOptions, wallMS float64) (json.RawMessage, *float64, error) {
	d, err := parseDetections(res)
	if err != nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: err.Error()}
	}
	var t struct {
		ModelCallMS *float64 `json:"model_call_ms"`
		TimingScope *string  `json:"timing_scope"`
	}
	_ = json.Unmarshal(res, &t)
	ms, err := taskTime(t.ModelCallMS, t.TimingScope, wallMS)
	if err != nil {
		return nil, nil, err
	}
	answer, err := ToNIM(d, im.Width, im.Height, nim)
	if err != nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: err.Error()}
	}
	return answer, ms, nil
}

// TimingError is a reply or a CLI timing line whose Task time is outside
// its domain: another scope, absent, negative, not finite, longer than the
// call the adapter timed, or contradicted by its own parts.
const TimingError = "timing"

// wallSlack allows for the rounding of the two clocks (the worker's and
// the adapter's) around one call.
func wallSlack(wall float64) float64 { return 0.05 + wall*1e-3 }

// taskTime is the worker's Task time, in its domain: timing_scope
// public_task_call_wall, model_call_ms a finite non-negative number no
// longer than the adapter's own wall time of the call (wallMS).
func taskTime(ms *float64, scope *string, wallMS float64) (*float64, error) {
	switch {
	case scope == nil && ms == nil:
		return nil, &ReplyError{Type: TimingError, Message: "the worker's reply has neither model_call_ms nor timing_scope (a protocol-1 worker? apps/server/native_worker.cpp idx@ddf1735f): no Task time"}
	case scope == nil || *scope != ScopeTaskCall:
		got := "no timing_scope"
		if scope != nil {
			got = fmt.Sprintf("timing_scope %q", *scope)
		}
		return nil, &ReplyError{Type: TimingError, Message: fmt.Sprintf("the worker's reply has %s, not %s: its model_call_ms does not time the public Task call", got, ScopeTaskCall)}
	case ms == nil:
		return nil, &ReplyError{Type: TimingError, Message: "the worker's reply has no model_call_ms"}
	case math.IsNaN(*ms) || math.IsInf(*ms, 0) || *ms < 0:
		return nil, &ReplyError{Type: TimingError, Message: fmt.Sprintf("the worker's model_call_ms %g is not a time (negative or not finite)", *ms)}
	case *ms > wallMS+wallSlack(wallMS):
		return nil, &ReplyError{Type: TimingError, Message: fmt.Sprintf("the worker's model_call_ms %g exceeds the %.3f ms the adapter measured for the whole call: not a possible Task time", *ms, wallMS)}
	}
	return ms, nil
}

type cliAnswerer struct{ o NativeOptions }

func (a *cliAnswerer) answer(ctx context.Context, q families.NativeRequest) (json.RawMessage, *float64, *float64, error) {
	if a.o.Task == TaskChat {
		call, err := ParseChat(q.Payload, a.o.Limits)
		if err != nil {
			return nil, nil, nil, &requestError{err}
		}
		started := time.Now()
		res, err := a.o.CLI.RunChat(ctx, a.o.Runner, a.o.Bundle, q.RequestID, call)
		wall := msSince(started)
		if err != nil {
			return nil, nil, nil, err
		}
		if res.TotalMS != nil && *res.TotalMS > wall+wallSlack(wall) {
			return nil, nil, nil, &ReplyError{Type: TimingError, Message: fmt.Sprintf("trtmc run's total_ms %g exceeds the %.3f ms its whole process took (measured by the adapter): not a possible Task time", *res.TotalMS, wall)}
		}
		b, err := json.Marshal(struct {
			Text string `json:"text"`
		}{res.Text})
		return b, res.TotalMS, &wall, err
	}
	im, err := ParseInfer(q.Payload)
	if err != nil {
		return nil, nil, nil, &requestError{err}
	}
	started := time.Now()
	d, err := a.o.CLI.RunDetect(ctx, a.o.Runner, a.o.Bundle, q.RequestID, im, a.o.ScoreThreshold)
	wall := msSince(started)
	if err != nil {
		return nil, nil, nil, err
	}
	answer, err := ToNIM(d, im.Width, im.Height, a.o.NIM)
	if err != nil {
		return nil, nil, nil, &ReplyError{Type: "detections", Message: err.Error()}
	}
	return answer, nil, &wall, nil
}

// readNativeIn reads the request lines, naming file:line on any problem.
func readNativeIn(path string) ([]families.NativeRequest, error) {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var out []families.NativeRequest
	seen := map[string]bool{}
	name := filepath.Base(path)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q families.NativeRequest
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("%s:%d: not a {request_id, route, payload} line: %w", name, n, err)
		}
		switch {
		case q.RequestID == "":
			return nil, fmt.Errorf("%s:%d: request_id is missing", name, n)
		case seen[q.RequestID]:
			return nil, fmt.Errorf("%s:%d: request_id %q is repeated", name, n, q.RequestID)
		case len(q.Payload) == 0 || string(q.Payload) == "null":
			return nil, fmt.Errorf("%s:%d: payload is missing", name, n)
		}
		seen[q.RequestID] = true
		// A payload may be given as a JSON string holding the body.
		var body string
		if json.Unmarshal(q.Payload, &body) == nil {
			q.Payload = json.RawMessage(body)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// CLIStartTimeout is a default for one fallback process.
const CLIStartTimeout = 30 * time.Minute
