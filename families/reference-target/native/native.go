// Package native runs the reference Task in-process, without HTTP, over
// recorded request payloads, so its answers can be compared byte for byte
// with what the server answered over HTTP.
package native

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

// MaxLineBytes bounds one request line (payloads carry base64 images).
const MaxLineBytes = 64 << 20

// Request is one input line: the exact JSON body that was (or would be)
// posted to route. Payload may also be a JSON string holding that body.
type Request struct {
	RequestID string          `json:"request_id"`
	Route     string          `json:"route"`
	Payload   json.RawMessage `json:"payload"`
}

// Response is one output line: Answer and TaskMs, or Error when the Task
// rejected the payload. For detection, Answer is exactly the `data` array
// the HTTP route answers; for chat it is {"text", "completion_tokens"}: the
// text the HTTP route puts in message.content and the count it reports in
// usage.completion_tokens.
type Response struct {
	RequestID string          `json:"request_id"`
	Answer    json.RawMessage `json:"answer,omitempty"`
	TaskMs    float64         `json:"task_ms"`
	Error     string          `json:"error,omitempty"`
}

// chatAnswer is a chat Task's native answer.
type chatAnswer struct {
	Text             string `json:"text"`
	CompletionTokens int    `json:"completion_tokens"`
}

// Summary counts what Run did.
type Summary struct {
	Requests, Answered, Rejected int
}

// Run reads request lines from in and writes one response line per request to
// out. inName names the input in errors ("requests.jsonl:3: ..."). A line that
// is not a request, or names a route the bundle's family does not serve, stops
// the run; a payload the Task rejects gives an error line.
func Run(t *task.Task, in io.Reader, inName string, out io.Writer) (Summary, error) {
	var sum Summary
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLineBytes)
	enc := json.NewEncoder(out)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		req, err := parseRequest(raw)
		if err != nil {
			return sum, fmt.Errorf("%s:%d: %w", inName, line, err)
		}
		if seen[req.RequestID] {
			return sum, fmt.Errorf("%s:%d: request_id %q is repeated", inName, line, req.RequestID)
		}
		seen[req.RequestID] = true
		sum.Requests++

		resp := Response{RequestID: req.RequestID}
		res, err := t.Answer(req.Route, req.Payload)
		var reqErr *task.RequestError
		switch {
		case errors.As(err, &reqErr):
			resp.Error = reqErr.Msg
			sum.Rejected++
		case err != nil:
			return sum, fmt.Errorf("%s:%d: %w", inName, line, err)
		default:
			resp.Answer, resp.TaskMs = res.Answer, res.TaskMs
			if req.Route == task.RouteChat {
				resp.Answer, err = json.Marshal(chatAnswer{Text: res.Text, CompletionTokens: res.CompletionTokens})
				if err != nil {
					return sum, fmt.Errorf("%s:%d: encode answer: %w", inName, line, err)
				}
			}
			sum.Answered++
		}
		if err := enc.Encode(resp); err != nil {
			return sum, fmt.Errorf("write native response: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return sum, fmt.Errorf("read %s: %w", inName, err)
	}
	return sum, nil
}

func parseRequest(raw []byte) (Request, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("not a request line: %w", err)
	}
	if dec.More() {
		return req, errors.New("not a request line: trailing data")
	}
	switch {
	case req.RequestID == "":
		return req, errors.New("request_id is missing")
	case req.Route == "":
		return req, errors.New("route is missing")
	case len(req.Payload) == 0 || string(req.Payload) == "null":
		return req, errors.New("payload is missing")
	}
	var body string
	if json.Unmarshal(req.Payload, &body) == nil {
		req.Payload = json.RawMessage(body)
	}
	return req, nil
}
