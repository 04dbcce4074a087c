package qual

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

// Phases and join statuses are part of joined.jsonl's schema, which
// reports owns; every request the client reported gets exactly one status.
const (
	PhaseWarmup   = reports.PhaseWarmup
	PhaseMeasured = reports.PhaseMeasured

	StatusMatched             = reports.JoinMatched
	StatusMismatched          = reports.JoinMismatched
	StatusErrored             = reports.JoinErrored
	StatusMissingNative       = reports.JoinMissingNative
	StatusMissingHTTP         = reports.JoinMissingHTTP
	StatusMissingServerRecord = reports.JoinMissingServerRecord
	StatusDuplicate           = reports.JoinDuplicate
	StatusMeaningless         = reports.JoinMeaningless
)

// ClientRequest is one request as the HTTP client (AIPerf) reported it.
type ClientRequest struct {
	RequestID      string
	ConversationID string
	Phase          string // PhaseWarmup or PhaseMeasured
	HTTPStatus     int
	LatencyMS      *float64
	StartNs        int64
	Body           []byte // the full response body
	Error          string // the client's error, if any
}

// NativeAnswer is one line of the native runner's output.
type NativeAnswer struct {
	RequestID string          `json:"request_id"`
	Answer    json.RawMessage `json:"answer"`
	TaskMS    *float64        `json:"task_ms"`
	Error     string          `json:"error"`
}

// ServerRecord is one line of the server's request records.
type ServerRecord struct {
	RequestID   string   `json:"request_id"`
	Route       string   `json:"route"`
	Status      int      `json:"status"`
	HandlerMS   *float64 `json:"handler_ms"`
	TaskMS      *float64 `json:"task_ms"`
	ImageBytes  int      `json:"image_bytes"`
	ImageWidth  int      `json:"image_width"`
	ImageHeight int      `json:"image_height"`
}

// JoinInput is everything the join needs; it reads no files itself.
type JoinInput struct {
	Family    *families.Family
	Extractor families.Extractor
	Compare   families.Comparator
	Requests  []ClientRequest
	// EntryOf maps a conversation id to its dataset entry; ok=false when unknown.
	EntryOf  func(conversationID string) (string, bool)
	Native   []NativeAnswer
	Records  []ServerRecord
	Expected map[string]int // per phase
}

// JoinedLine is one line of joined.jsonl; its schema belongs to reports.
type JoinedLine = reports.JoinedLine

// JoinOutput is the per-request verdicts and what they add up to.
type JoinOutput struct {
	Lines   []JoinedLine
	ByPhase map[string]reports.Counts
	// MeasuredHTTP and MeasuredTask are latencies of measured requests
	// that have them, in request start order.
	MeasuredTask []float64
	OutputTokens int
	Boxes        int
	ImageSizes   []reports.ImageSize
	// Orphans are server records no client request claims.
	Orphans []string
}

// Join matches every client request with its dataset entry, its server
// record and its native answer by request identity, and judges it. Nothing
// is dropped: every request lands in exactly one status, per phase.
func Join(in JoinInput) JoinOutput {
	out := JoinOutput{ByPhase: map[string]reports.Counts{}}
	for phase, n := range in.Expected {
		c := out.ByPhase[phase]
		c.Expected = n
		out.ByPhase[phase] = c
	}
	records := map[string][]ServerRecord{}
	for _, r := range in.Records {
		records[r.RequestID] = append(records[r.RequestID], r)
	}
	natives := map[string][]NativeAnswer{}
	for _, n := range in.Native {
		natives[n.RequestID] = append(natives[n.RequestID], n)
	}
	seen := map[string]int{}
	for _, r := range in.Requests {
		seen[r.RequestID]++
	}
	sizes := map[[2]int]int{}
	claimed := map[string]bool{}

	reqs := append([]ClientRequest(nil), in.Requests...)
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].StartNs < reqs[j].StartNs })
	for _, r := range reqs {
		line := JoinedLine{RequestID: r.RequestID, Phase: r.Phase, HTTPMS: r.LatencyMS, StartNS: r.StartNs}
		entry, entryOK := "", false
		if in.EntryOf != nil {
			entry, entryOK = in.EntryOf(r.ConversationID)
		}
		line.EntryID = entry
		recs := records[r.RequestID]
		claimed[r.RequestID] = true
		if len(recs) == 1 {
			line.TaskMS = recs[0].TaskMS
		}
		line.Status, line.Problem, line.Diff = judge(in, r, entryOK, recs, natives[r.RequestID], seen[r.RequestID], &out)
		if r.Phase == PhaseMeasured && line.Status == StatusMatched {
			if line.TaskMS != nil {
				out.MeasuredTask = append(out.MeasuredTask, *line.TaskMS)
			}
			if len(recs) == 1 && recs[0].ImageWidth > 0 {
				sizes[[2]int{recs[0].ImageWidth, recs[0].ImageHeight}]++
			}
		}
		c := out.ByPhase[r.Phase]
		c.Sent++
		bump(&c, line.Status)
		out.ByPhase[r.Phase] = c
		out.Lines = append(out.Lines, line)
	}
	for id := range records {
		if !claimed[id] {
			out.Orphans = append(out.Orphans, id)
		}
	}
	sort.Strings(out.Orphans)
	for k, n := range sizes {
		out.ImageSizes = append(out.ImageSizes, reports.ImageSize{Width: k[0], Height: k[1], Count: n})
	}
	sort.Slice(out.ImageSizes, func(i, j int) bool {
		a, b := out.ImageSizes[i], out.ImageSizes[j]
		if a.Width != b.Width {
			return a.Width < b.Width
		}
		return a.Height < b.Height
	})
	return out
}

// judge decides one request's status, in a fixed order of precedence.
func judge(in JoinInput, r ClientRequest, entryOK bool, recs []ServerRecord, nat []NativeAnswer, copies int, out *JoinOutput) (status, problem, diff string) {
	switch {
	case copies > 1:
		return StatusDuplicate, fmt.Sprintf("x_request_id reported %d times by the client", copies), ""
	case len(recs) > 1:
		return StatusDuplicate, fmt.Sprintf("server recorded this request id %d times", len(recs)), ""
	case len(nat) > 1:
		return StatusDuplicate, fmt.Sprintf("native runner answered this request id %d times", len(nat)), ""
	case r.Error != "":
		return StatusErrored, r.Error, ""
	case r.HTTPStatus < 200 || r.HTTPStatus > 299:
		return StatusErrored, fmt.Sprintf("HTTP %d %s", r.HTTPStatus, http.StatusText(r.HTTPStatus)), ""
	case !entryOK:
		return StatusMissingHTTP, fmt.Sprintf("conversation_id %q is not an entry of the dataset", r.ConversationID), ""
	}
	httpAns, err := in.Extractor.FromHTTP(r.Body)
	if err != nil {
		return StatusMissingHTTP, "http answer: " + err.Error(), ""
	}
	if why := in.Extractor.Meaningful(httpAns, in.Family); why != "" {
		return StatusMeaningless, "http answer: " + why, ""
	}
	if len(recs) == 0 {
		return StatusMissingServerRecord, "the server has no record of this request id", ""
	}
	if len(nat) == 0 {
		return StatusMissingNative, "the native runner returned no answer for this request id", ""
	}
	if nat[0].Error != "" {
		return StatusMissingNative, "native runner: " + nat[0].Error, ""
	}
	natAns, err := in.Extractor.FromNative(nat[0].Answer)
	if err != nil {
		return StatusMissingNative, "native answer: " + err.Error(), ""
	}
	if d := in.Compare.Compare(httpAns, natAns, in.Family); d != "" {
		return StatusMismatched, "http answer differs from the native answer", d
	}
	if r.Phase == PhaseMeasured {
		out.OutputTokens += natAns.Tokens
		out.Boxes += natAns.Boxes
	}
	return StatusMatched, "", ""
}

func bump(c *reports.Counts, status string) {
	switch status {
	case StatusMatched:
		c.Matched++
	case StatusMismatched:
		c.Mismatched++
	case StatusErrored:
		c.Errored++
	case StatusMissingNative:
		c.MissingNative++
	case StatusMissingHTTP:
		c.MissingHTTP++
	case StatusMissingServerRecord:
		c.MissingServerRecord++
	case StatusDuplicate:
		c.Duplicates++
	case StatusMeaningless:
		c.Meaningless++
	}
}
