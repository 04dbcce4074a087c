package verdict

import (
	"fmt"
	"strings"
)

// HTTPError counts the requests of one phase that the server answered
// with one error: its HTTP status and, where the body is trtmc-server's
// error envelope {"error": {"message", "type", "param", "code"}} (app.py
// error_response, idx@a9ed5f69), its type and code; FastAPI's own
// {"detail": ...} (an unknown route, a wrong method) has type "detail".
type HTTPError struct {
	Phase  string `json:"phase"`
	Status int    `json:"status"`
	Type   string `json:"type,omitempty"`
	Code   string `json:"code,omitempty"`
	// Message is the server's message (clipped), which tells trtmc-server's
	// two 413s apart.
	Message string `json:"message,omitempty"`
	Count   int    `json:"count"`
}

// Error types of trtmc-server (error_response): server_error for a status
// of 500 and above, rate_limit_error for 429, invalid_request_error for
// the rest.
const (
	ErrTypeServer    = "server_error"
	ErrTypeRateLimit = "rate_limit_error"
	ErrTypeInvalid   = "invalid_request_error"
)

// Messages of trtmc-server's two 413s (app.py idx@a9ed5f69).
const (
	MsgBodyTooLarge   = "request body exceeds limit"
	MsgPromptTooLarge = "prompt exceeds the server limit"
)

// ServerErrorMeaning says what trtmc-server means by an error answer, from
// its status, type, code and message (app.py execute and error_response,
// errors.py, idx@a9ed5f69), naming the server setting involved; "" for an
// answer it does not know.
func ServerErrorMeaning(status int, typ, code, message string) string {
	switch code {
	case "server_busy":
		return "the server's replica was busy with another request sent at the same time: trtmc-server has no queue, so something else (a second client, a correctness case, a native replay, doctor --probe) overlapped this request"
	case "content_too_large":
		switch {
		case strings.Contains(message, MsgPromptTooLarge):
			return "the prompt and system text are over the server's --max-prompt-bytes"
		case strings.Contains(message, MsgBodyTooLarge):
			return "the request body is over the server's --max-body-bytes"
		}
		return "the request is over a size limit of the server (--max-body-bytes or --max-prompt-bytes)"
	case "request_too_large":
		return "the request is over the native worker's 16 MiB line limit"
	case "max_tokens_exceeded":
		return "max_tokens is above the server's --max-new-tokens"
	case "model_not_found":
		return "the request names a model the server does not serve (its --model-name)"
	case "server_draining":
		return "the server was closing or had no healthy replica left"
	case "worker_crashed":
		return "the native worker crashed"
	case "worker_timeout":
		return "the native worker took longer than the server's --request-timeout"
	case "worker_protocol_error":
		return "the native worker answered out of protocol"
	case "worker_operation_failed":
		return "the native worker refused or failed the operation"
	case "unsupported_parameter", "invalid_request":
		return "the server refused the request as invalid"
	}
	switch {
	case typ == "detail" && status == 404:
		return "the route does not exist on this server"
	case typ == ErrTypeServer || status >= 500:
		return "the server failed"
	}
	return ""
}

// String is "2 × 413 invalid_request_error content_too_large (the prompt
// ... --max-prompt-bytes)".
func (e HTTPError) String() string {
	s := fmt.Sprintf("%d × %d", e.Count, e.Status)
	for _, p := range []string{e.Type, e.Code} {
		if p != "" {
			s += " " + p
		}
	}
	if m := ServerErrorMeaning(e.Status, e.Type, e.Code, e.Message); m != "" {
		s += " (" + m + ")"
	}
	return s
}
