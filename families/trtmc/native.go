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
	"os"
	"path/filepath"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
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

	Worker WorkerSpec
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
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	write := func(r families.NativeAnswer) error {
		if r.Error != "" {
			meta.Errors++
		} else {
			meta.Answered++
		}
		return enc.Encode(r)
	}
	finish := func(runErr error) (*families.NativeMeta, error) {
		if runErr != nil {
			meta.Fatal = runErr.Error()
		}
		err := bw.Flush()
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if o.Meta != "" {
			if merr := evidence.WriteJSON(o.Meta, meta); err == nil {
				err = merr
			}
		}
		if runErr != nil {
			return meta, runErr
		}
		return meta, err
	}

	var ans answerer
	switch o.Path {
	case PathWorker:
		meta.TimingScope = ScopeTaskCall
		meta.Argv = o.Worker.Argv
		w, err := StartWorker(ctx, o.Runner, o.Worker)
		if err != nil {
			return finish(fmt.Errorf("start the native worker: %w", err))
		}
		defer w.Close(context.WithoutCancel(ctx))
		rd := w.Ready
		meta.Worker = &rd
		meta.TokenCounts = o.Task == TaskChat
		if o.Limits.DefaultMaxNewTokens == 0 {
			o.Limits.DefaultMaxNewTokens = rd.DefaultMaxNewTokens
		}
		ans = &workerAnswerer{o: o, w: w}
	case PathCLI:
		meta.TimingScope = ScopeRunPrefillDecode
		if o.Task == TaskDetect {
			meta.TimingScope = ScopeNone
		}
		meta.Argv = []string{o.CLI.Trtmc}
		ans = &cliAnswerer{o: o}
	default:
		return finish(fmt.Errorf("unknown native path %q (worker or cli)", o.Path))
	}

	for _, q := range reqs {
		if err := ctx.Err(); err != nil {
			return finish(err)
		}
		r := families.NativeAnswer{RequestID: q.RequestID}
		if q.Route != wantRoute {
			r.Error = fmt.Sprintf("route %s is not this family's route %s", q.Route, wantRoute)
			if err := write(r); err != nil {
				return finish(err)
			}
			continue
		}
		answer, taskMS, err := ans.answer(ctx, q)
		var gone *WorkerGone
		switch {
		case errors.As(err, &gone), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			r.Error = err.Error()
			if werr := write(r); werr != nil {
				return finish(werr)
			}
			return finish(fmt.Errorf("request %s: %w (%d of %d requests answered)", q.RequestID, err, meta.Answered, meta.Requests))
		case err != nil:
			var pe *proc.ExitError
			var re *ReplyError
			if !errors.As(err, &pe) && !errors.As(err, &re) && !errors.As(err, new(*requestError)) {
				// Not the request's fault: the program could not run at all.
				r.Error = err.Error()
				_ = write(r)
				return finish(fmt.Errorf("request %s: %w", q.RequestID, err))
			}
			r.Error = err.Error()
		default:
			r.Answer, r.TaskMS = answer, taskMS
		}
		if err := write(r); err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// requestError is a request the server would reject.
type requestError struct{ err error }

func (e *requestError) Error() string { return "invalid request: " + e.err.Error() }

type answerer interface {
	answer(ctx context.Context, q families.NativeRequest) (json.RawMessage, *float64, error)
}

type workerAnswerer struct {
	o NativeOptions
	w *Worker
}

func (a *workerAnswerer) answer(ctx context.Context, q families.NativeRequest) (json.RawMessage, *float64, error) {
	req := map[string]any{"op": a.o.WorkerOp}
	var im Image
	if a.o.Task == TaskChat {
		call, err := ParseChat(q.Payload, a.o.Limits)
		if err != nil {
			return nil, nil, &requestError{err}
		}
		req["prompt"] = call.Prompt
		req["config"] = call.Config
		im = call.Image
	} else {
		var err error
		if im, err = ParseInfer(q.Payload); err != nil {
			return nil, nil, &requestError{err}
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
			return nil, nil, err
		}
		defer os.Remove(path)
		req["image_path"] = path
	}
	res, err := a.w.Call(ctx, q.RequestID, req)
	if err != nil {
		return nil, nil, err
	}
	if a.o.Task == TaskChat {
		return chatResult(res)
	}
	return detectResult(res, im, a.o.NIM)
}

// chatResult reads a generate result (text, completion_tokens,
// model_call_ms, timing_scope) as the server's extract_result does, and
// answers {"text", "completion_tokens"}.
func chatResult(res json.RawMessage) (json.RawMessage, *float64, error) {
	var r struct {
		Text             *string  `json:"text"`
		CompletionTokens *int64   `json:"completion_tokens"`
		ModelCallMS      *float64 `json:"model_call_ms"`
		TimingScope      string   `json:"timing_scope"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Text == nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: "generate result does not contain text"}
	}
	if r.CompletionTokens == nil || *r.CompletionTokens < 0 {
		return nil, nil, &ReplyError{Type: "protocol", Message: "generate result has no valid completion_tokens"}
	}
	ms, err := taskTime(r.ModelCallMS, r.TimingScope)
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
func detectResult(res json.RawMessage, im Image, nim NIMOptions) (json.RawMessage, *float64, error) {
	d, err := parseDetections(res)
	if err != nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: err.Error()}
	}
	var t struct {
		ModelCallMS *float64 `json:"model_call_ms"`
		TimingScope string   `json:"timing_scope"`
	}
	_ = json.Unmarshal(res, &t)
	ms, err := taskTime(t.ModelCallMS, t.TimingScope)
	if err != nil {
		return nil, nil, err
	}
	answer, err := ToNIM(d, im.Width, im.Height, nim)
	if err != nil {
		return nil, nil, &ReplyError{Type: "protocol", Message: err.Error()}
	}
	return answer, ms, nil
}

func taskTime(ms *float64, scope string) (*float64, error) {
	if ms == nil || *ms < 0 {
		return nil, &ReplyError{Type: "protocol", Message: "result has no valid model_call_ms"}
	}
	if scope != ScopeTaskCall {
		return nil, &ReplyError{Type: "protocol", Message: fmt.Sprintf("result timing_scope is %q, want %s", scope, ScopeTaskCall)}
	}
	return ms, nil
}

type cliAnswerer struct{ o NativeOptions }

func (a *cliAnswerer) answer(ctx context.Context, q families.NativeRequest) (json.RawMessage, *float64, error) {
	if a.o.Task == TaskChat {
		call, err := ParseChat(q.Payload, a.o.Limits)
		if err != nil {
			return nil, nil, &requestError{err}
		}
		res, err := a.o.CLI.RunChat(ctx, a.o.Runner, a.o.Bundle, q.RequestID, call)
		if err != nil {
			return nil, nil, err
		}
		b, err := json.Marshal(struct {
			Text string `json:"text"`
		}{res.Text})
		return b, res.TotalMS, err
	}
	im, err := ParseInfer(q.Payload)
	if err != nil {
		return nil, nil, &requestError{err}
	}
	d, err := a.o.CLI.RunDetect(ctx, a.o.Runner, a.o.Bundle, q.RequestID, im, a.o.ScoreThreshold)
	if err != nil {
		return nil, nil, err
	}
	answer, err := ToNIM(d, im.Width, im.Height, a.o.NIM)
	if err != nil {
		return nil, nil, &ReplyError{Type: "detections", Message: err.Error()}
	}
	return answer, nil, nil
}

// readNativeIn reads the request lines, naming file:line on any problem.
func readNativeIn(path string) ([]families.NativeRequest, error) {
	f, _, err := evidence.OpenRegular(path)
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
