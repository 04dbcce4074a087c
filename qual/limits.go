package qual

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
)

// A family's server has two size limits (trtmc-server, app.py
// idx@a9ed5f69): the body of a request on the completion routes
// (--max-body-bytes, family max_body_bytes; _BodyLimitMiddleware) and the
// prompt plus system text in UTF-8 (--max-prompt-bytes, family
// max_prompt_bytes; execute). Each is a 413 content_too_large. Both are
// checked before any server starts, on the bodies AIPerf 0.13.0 will post
// (aiperf.RequestBody: one user message of the entry's question and its
// image, no system message). Whether the seeds' image chat counts the
// image into the prompt is not public: doctor --probe sends the largest
// request (RequestSizes.Largest) to prove the node accepts it.

// RequestSizes is what the corpus asks of the server's limits.
type RequestSizes struct {
	// Largest is the entry whose request body is the largest.
	Largest                aiperf.Entry
	LargestBody            int64
	LargestPrompt          int64
	LargestPromptEntry     string
	BodyLimit, PromptLimit int64
}

// PromptBytes is an entry's prompt and system text as trtmc-server counts
// it: the UTF-8 bytes of the user message's text parts (the question; AIPerf
// 0.13.0 adds no system message).
func PromptBytes(e aiperf.Entry) int64 { return int64(len(e.Question)) }

// PromptTooLargeError is a corpus entry whose prompt is over the server's
// --max-prompt-bytes.
type PromptTooLargeError struct {
	Entry, Image string
	Size, Limit  int64
}

func (e *PromptTooLargeError) Error() string {
	return fmt.Sprintf("corpus entry %s (%s): its prompt is %d bytes of UTF-8 text, over the server's limit of %d bytes (--max-prompt-bytes): "+
		"the server would answer 413 \"prompt exceeds the server limit\"", e.Entry, filepath.Base(e.Image), e.Size, e.Limit)
}

// CheckRequestLimits holds every entry's request to the family's two
// limits (a limit the family does not declare is not checked) and says
// which request is the largest. The error is an *aiperf.RequestTooLargeError
// (the body), a *PromptTooLargeError (the prompt), or a corpus error.
func CheckRequestLimits(f *families.Family, endpointType string, entries []aiperf.Entry, model string, extra map[string]any) (RequestSizes, error) {
	s := RequestSizes{BodyLimit: f.MaxBodyBytes, PromptLimit: f.MaxPromptBytes}
	for _, e := range entries {
		b, err := aiperf.RequestBody(endpointType, e, model, extra)
		if err != nil {
			return s, err
		}
		if n := int64(len(b)); n > s.LargestBody || s.Largest.ID == "" {
			s.Largest, s.LargestBody = e, n
		}
		if n := PromptBytes(e); n > s.LargestPrompt {
			s.LargestPrompt, s.LargestPromptEntry = n, e.ID
		}
		if s.BodyLimit > 0 && int64(len(b)) > s.BodyLimit {
			return s, &aiperf.RequestTooLargeError{Entry: e.ID, Image: e.ImagePath, Size: int64(len(b)), Limit: s.BodyLimit}
		}
		if s.PromptLimit > 0 && PromptBytes(e) > s.PromptLimit {
			return s, &PromptTooLargeError{Entry: e.ID, Image: e.ImagePath, Size: PromptBytes(e), Limit: s.PromptLimit}
		}
	}
	return s, nil
}

// IsOverLimit reports whether err is a request over one of the limits.
func IsOverLimit(err error) bool {
	var body *aiperf.RequestTooLargeError
	var prompt *PromptTooLargeError
	return errors.As(err, &body) || errors.As(err, &prompt)
}

// String names both limits and where the corpus stands against each.
func (s RequestSizes) String() string {
	limit := func(n int64, flag string) string {
		if n <= 0 {
			return "the server's own " + flag
		}
		return fmt.Sprintf("%d (%s)", n, flag)
	}
	out := fmt.Sprintf("the largest request is %d bytes (entry %s), limit %s; the largest prompt is %d bytes",
		s.LargestBody, s.Largest.ID, limit(s.BodyLimit, "--max-body-bytes"), s.LargestPrompt)
	if s.LargestPromptEntry != "" {
		out += " (entry " + s.LargestPromptEntry + ")"
	}
	out += ", limit " + limit(s.PromptLimit, "--max-prompt-bytes")
	if s.PromptLimit > 0 && s.PromptLimit < s.LargestBody {
		out += fmt.Sprintf("; if the server counts the image into the prompt, entry %s's %d bytes are over it: doctor --probe sends that request", s.Largest.ID, s.LargestBody)
	}
	return out
}
