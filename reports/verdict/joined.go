package verdict

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Phases of a run's requests.
const (
	PhaseWarmup   = "warmup"
	PhaseMeasured = "measured"
)

// Join statuses of one request in joined.jsonl.
const (
	JoinMatched             = "matched"
	JoinMismatched          = "mismatched"
	JoinErrored             = "errored"
	JoinMissingNative       = "missing_native"
	JoinMissingHTTP         = "missing_http"
	JoinMissingServerRecord = "missing_server_record"
	JoinDuplicate           = "duplicate"
	JoinMeaningless         = "meaningless"
	JoinUnknownConversation = "unknown_conversation"
	JoinInconsistent        = "inconsistent"
	// JoinServerBusy: the server refused the request 429 server_busy (a
	// replica busy with another request: an overlap).
	JoinServerBusy = "server_busy"
	// JoinEchoMissing: nothing shows the server answered this request's
	// id: its answer carries no X-Request-ID, or AIPerf's records hold no
	// HTTP trace of it (--export-http-trace).
	JoinEchoMissing = "echo_missing"
	// JoinEchoMismatched: the server's answer echoes another X-Request-ID
	// than the one sent.
	JoinEchoMismatched = "echo_mismatched"
)

// Echo values of a joined line: what AIPerf's HTTP trace shows of the
// server's X-Request-ID echo (qual/aiperf's ClassifyEcho).
const (
	EchoMatch   = "match"
	EchoNoTrace = "no_trace"
	EchoMissing = "missing"
	EchoDiffers = "differs"
)

// JoinedLine is one request of OUT/<group>/<profile>/joined.jsonl: the HTTP
// answer, the native answer and the server record joined by request id.
type JoinedLine struct {
	RequestID string   `json:"request_id"`
	EntryID   string   `json:"entry_id"`
	Phase     string   `json:"phase"`
	HTTPMS    *float64 `json:"http_ms"`
	TaskMS    *float64 `json:"task_ms"`
	Status    string   `json:"status"`
	StartNS   int64    `json:"start_ns"`
	// Echo is what AIPerf's HTTP trace shows of the server's X-Request-ID
	// echo: match, missing, differs or no_trace ("" in joined files of
	// earlier versions).
	Echo string `json:"echo,omitempty"`
	// SendingMS, WaitingMS and ReceivingMS split the HTTP exchange at the
	// trace's timestamps (sending includes a new connection's set-up;
	// waiting ends at the answer's first byte); ClientMS is HTTPMS minus
	// the three: AIPerf's own time before the first byte was sent. Absent
	// when the trace lacks a timestamp (or the latency is missing), and in
	// joined files of earlier versions.
	SendingMS   *float64 `json:"sending_ms,omitempty"`
	WaitingMS   *float64 `json:"waiting_ms,omitempty"`
	ReceivingMS *float64 `json:"receiving_ms,omitempty"`
	ClientMS    *float64 `json:"client_ms,omitempty"`
	// Diff is set when Status is mismatched: how the answers differ.
	Diff    string `json:"diff,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// MismatchLine is one line of OUT/<group>/<profile>/mismatches.jsonl: a
// request whose answers differ, with both full canonical answers and the
// comparator's diff.
type MismatchLine struct {
	RequestID string          `json:"request_id"`
	Phase     string          `json:"phase"`
	Diff      string          `json:"diff"`
	HTTP      json.RawMessage `json:"http_answer"`
	Native    json.RawMessage `json:"native_answer"`
}

// ReadJoined reads a joined.jsonl file. A missing file is not an error: it
// returns (nil, nil) and the caller says "no per-request evidence".
func ReadJoined(path string) ([]JoinedLine, error) {
	f, _, err := fileio.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, fileio.ErrNotRegular) {
		return nil, &EvidenceError{File: path, Err: errors.New(fileio.ReadProblem("it", path, err))}
	}
	if err != nil {
		return nil, fmt.Errorf("read joined requests: %w", err)
	}
	defer f.Close()
	lines, err := DecodeJoined(f)
	var ee *EvidenceError
	if errors.As(err, &ee) {
		ee.File = path
	}
	return lines, err
}

// DecodeJoined reads joined lines. Errors are *EvidenceError with the line
// number set and the file name left for the caller.
func DecodeJoined(r io.Reader) ([]JoinedLine, error) {
	lr := fileio.NewLineReader(context.Background(), "", r, fileio.MaxLineBytes)
	var out []JoinedLine
	for {
		line, n, _, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			var tl *fileio.TooLargeError
			if errors.As(err, &tl) {
				err = fmt.Errorf("line is longer than %d bytes, the limit for one line (fileio.MaxLineBytes)", tl.Limit)
			}
			return nil, &EvidenceError{Line: n, Err: err}
		}
		b := bytes.TrimSpace(line)
		if len(b) == 0 {
			continue
		}
		var l JoinedLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, &EvidenceError{Line: n, Err: err}
		}
		if err := l.validate(); err != nil {
			return nil, &EvidenceError{Line: n, Err: err}
		}
		out = append(out, l)
	}
}

func (l JoinedLine) validate() error {
	if l.RequestID == "" {
		return errors.New("missing request_id")
	}
	switch l.Phase {
	case PhaseWarmup, PhaseMeasured:
	default:
		return fmt.Errorf("request %s: phase %q is not warmup or measured", l.RequestID, l.Phase)
	}
	switch l.Status {
	case JoinMatched, JoinMismatched, JoinErrored, JoinMissingNative, JoinMissingHTTP,
		JoinMissingServerRecord, JoinDuplicate, JoinMeaningless, JoinUnknownConversation, JoinInconsistent,
		JoinEchoMissing, JoinEchoMismatched, JoinServerBusy:
	default:
		return fmt.Errorf("request %s: unknown status %q", l.RequestID, l.Status)
	}
	return nil
}
