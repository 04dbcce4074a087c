package aiperf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Artifact file names in an AIPerf 0.13.0 artifact directory (no
// --profile-export-prefix).
const (
	FileSummary      = "profile_export_aiperf.json"
	FileRecords      = "profile_export.jsonl"
	FileRaw          = "profile_export_raw.jsonl"
	FileOutputs      = "outputs.json"
	FileInputs       = "inputs.json"
	FileReadyMarker  = ".aiperf_results_ready.json"
	FileProcessing   = ".aiperf_results_processing.json"
	DirRawShards     = "raw_records"
	FileLog          = "logs/aiperf.log"
	FileStdout       = "aiperf.stdout.log"
	FileStderr       = "aiperf.stderr.log"
	FilePhaseSummary = "phase_manifest.json"
)

// Problem codes: each is a reason the run cannot be trusted as complete.
const (
	ProblemExitStatus       = "aiperf_exit_status"
	ProblemDeadline         = "deadline_exceeded"
	ProblemInterrupted      = "interrupted"
	ProblemNotReady         = "results_not_ready"
	ProblemPartial          = "results_partial"
	ProblemSummaryMissing   = "summary_missing"
	ProblemSummaryInvalid   = "summary_invalid"
	ProblemSummaryVersion   = "summary_version"
	ProblemSummaryMismatch  = "summary_mismatch"
	ProblemRunCancelled     = "run_cancelled"
	ProblemRecordsMissing   = "records_missing"
	ProblemRecordsInvalid   = "records_invalid"
	ProblemCount            = "count_mismatch"
	ProblemRecordCancelled  = "record_cancelled"
	ProblemDuplicateRequest = "duplicate_request_id"
	ProblemConversation     = "unknown_conversation"
	ProblemDuplicateConv    = "duplicate_conversation"
	ProblemRawUnmerged      = "raw_unmerged"
	ProblemRawMissing       = "raw_missing"
	ProblemRawInvalid       = "raw_invalid"
	ProblemRawMismatch      = "raw_mismatch"
	ProblemAllFailed        = "all_failed"
	ProblemRequestErrors    = "request_errors"
	ProblemAnswerTooLarge   = "answer_too_large"
	ProblemOutputs          = "outputs_invalid"
	ProblemInputs           = "inputs_invalid"
)

// Problem is one named fail-closed finding.
type Problem struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (p Problem) String() string { return p.Code + ": " + p.Detail }

// Request is one request AIPerf sent, joined across the artifacts.
type Request struct {
	RequestID      string `json:"request_id"` // X-Request-ID, metadata.x_request_id
	ConversationID string `json:"conversation_id"`
	// EntryID is the corpus entry the conversation came from (when the
	// dataset is known).
	EntryID   string `json:"entry_id,omitempty"`
	Phase     string `json:"phase"` // PhaseWarmup or PhaseProfiling
	TurnIndex int    `json:"turn_index"`
	// HTTPStatus is the response status; 0 when no response arrived.
	HTTPStatus int `json:"http_status"`
	// LatencyMs is AIPerf's request_latency; nil for failed requests,
	// which AIPerf gives no latency.
	LatencyMs *float64 `json:"latency_ms,omitempty"`
	// StartNs and EndNs are wall-clock request_start_ns/request_end_ns.
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// Payload is the exact JSON body sent (from the raw export).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Response is the response body as received.
	Response Body `json:"response,omitempty"`
	// ResponseText is outputs.json's response_text, when that file exists.
	ResponseText *string       `json:"response_text,omitempty"`
	Error        *RequestError `json:"error,omitempty"`
	OutputTokens *int          `json:"output_tokens,omitempty"`
	Cancelled    bool          `json:"cancelled,omitempty"`
	// Echo is whether the server's answer echoed the X-Request-ID sent
	// (ClassifyEcho over the record's trace_data).
	Echo Echo `json:"echo"`
}

// Body is a response body. It is []byte underneath (pass it wherever a
// []byte is wanted) but marshals as a JSON string, so evidence stays readable.
type Body []byte

// MarshalJSON implements json.Marshaler.
func (b Body) MarshalJSON() ([]byte, error) { return json.Marshal(string(b)) }

// UnmarshalJSON implements json.Unmarshaler.
func (b *Body) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*b = Body(s)
	return nil
}

// ReadyMarker is .aiperf_results_ready.json.
type ReadyMarker struct {
	Ready           bool     `json:"ready"`
	WasCancelled    bool     `json:"was_cancelled"`
	Partial         bool     `json:"partial"`
	TerminalPhase   string   `json:"terminal_phase,omitempty"`
	TerminalError   string   `json:"terminal_error,omitempty"`
	FailedExporters []string `json:"failed_exporters,omitempty"`
}

// Run is everything one AIPerf run produced, checked.
type Run struct {
	Argv    []string `json:"argv"` // as executed, API key redacted
	Version string   `json:"version"`
	// VersionMismatchAllowed records that Version differs from the
	// expected one and the run went ahead because that was allowed.
	VersionMismatchAllowed bool   `json:"version_mismatch_allowed,omitempty"`
	ExpectedVersion        string `json:"expected_version"`
	ExitCode               int    `json:"exit_code"`
	// ProcessDuration is how long the aiperf process itself ran (the
	// driver's own work before and after is not in it).
	ProcessDuration time.Duration `json:"process_duration_ns"`
	// Survivors are processes of AIPerf's tree that outlived it outside
	// its process group (proc.Result.Survivors): killed, and named here.
	Survivors   []proc.Survivor `json:"survivors,omitempty"`
	ArtifactDir string          `json:"artifact_dir"`

	Ready    *ReadyMarker `json:"ready_marker,omitempty"`
	Summary  *Summary     `json:"summary,omitempty"`
	Requests []Request    `json:"requests"`
	Outputs  *Outputs     `json:"-"`
	// Problems are the fail-closed findings; empty means complete.
	Problems []Problem `json:"problems"`
}

// IncompleteError lists why a run is not trusted.
type IncompleteError struct {
	Dir      string
	Problems []Problem
}

func (e *IncompleteError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("aiperf run in %s is incomplete: %s", e.Dir, strings.Join(parts, "; "))
}

// Expect is what a run must contain.
type Expect struct {
	Warmup, Measured int
	// Version, when set, must equal the summary's aiperf_version.
	Version string
	// Dataset, when set: every conversation_id must be one of its lines,
	// and inputs.json must list its sessions in order.
	Dataset *Dataset
	// OutputsJSON requires outputs.json.
	OutputsJSON bool
}

// maxExamples bounds how many ids a problem lists.
const maxExamples = 3

// Collect reads the artifacts in dir and applies the fail-closed checks.
// The error is only for failures of the harness itself (an unreadable
// directory); everything wrong with the artifacts is a Problem.
func Collect(dir string, exp Expect) (*Run, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("collect aiperf artifacts: %w", err)
	}
	c := &collector{dir: dir, exp: exp, run: &Run{ArtifactDir: dir}, byID: map[string]int{}}
	c.readyMarker()
	c.rawShards()
	c.summary()
	c.records()
	c.raw()
	c.outputs()
	c.inputs()
	c.checkRequests()
	c.checkSummary()
	sortRequests(c.run.Requests)
	return c.run, nil
}

type collector struct {
	dir  string
	exp  Expect
	run  *Run
	byID map[string]int // request id -> index in run.Requests
	// recordsOK is false when the records file is missing or unparseable,
	// so counts from it prove nothing.
	recordsOK bool
}

func (c *collector) path(name string) string { return filepath.Join(c.dir, name) }

func (c *collector) problem(code, format string, args ...any) {
	c.run.Problems = append(c.run.Problems, Problem{Code: code, Detail: fmt.Sprintf(format, args...)})
}

func (c *collector) readyMarker() {
	data, err := fileio.ReadFile(context.Background(), c.path(FileReadyMarker), fileio.MaxDocumentBytes)
	if err != nil {
		detail := FileReadyMarker + " is missing"
		if _, perr := os.Stat(c.path(FileProcessing)); perr == nil {
			detail += " and " + FileProcessing + " is present (export still in progress or crashed)"
		}
		c.problem(ProblemNotReady, "%s", detail)
		return
	}
	var m ReadyMarker
	if err := json.Unmarshal(data, &m); err != nil {
		c.problem(ProblemNotReady, "%v", jsonError(c.path(FileReadyMarker), 0, data, err))
		return
	}
	c.run.Ready = &m
	switch {
	case !m.Ready:
		c.problem(ProblemNotReady, "%s says ready=false", FileReadyMarker)
	case m.Partial:
		c.problem(ProblemPartial, "%s says partial (failed exporters: %s)", FileReadyMarker, strings.Join(m.FailedExporters, ", "))
	}
	if m.WasCancelled {
		c.problem(ProblemRunCancelled, "%s says was_cancelled", FileReadyMarker)
	}
}

func (c *collector) rawShards() {
	entries, err := os.ReadDir(c.path(DirRawShards))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.problem(ProblemRawUnmerged, "%s/ exists but cannot be read: %v", DirRawShards, err)
		return
	}
	c.problem(ProblemRawUnmerged, "%s/ still holds %d shard file(s): AIPerf did not merge the raw records into %s", DirRawShards, len(entries), FileRaw)
}

func (c *collector) summary() {
	s, err := ParseSummary(c.path(FileSummary))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.problem(ProblemSummaryMissing, "%s is missing", FileSummary)
		return
	case err != nil:
		c.problem(ProblemSummaryInvalid, "%v", err)
		return
	}
	c.run.Summary = s
	if c.exp.Version != "" && s.AIPerfVersion != c.exp.Version {
		c.problem(ProblemSummaryVersion, "%s: aiperf_version %q, want %q", FileSummary, s.AIPerfVersion, c.exp.Version)
	}
	if s.WasCancelled {
		c.problem(ProblemRunCancelled, "%s: was_cancelled is true", FileSummary)
	}
	if s.IsComplete != nil && !*s.IsComplete {
		c.problem(ProblemRunCancelled, "%s: is_complete is false", FileSummary)
	}
}

func (c *collector) records() {
	path := c.path(FileRecords)
	var dups []string
	err := ScanRecords(path, func(_ int, r *RecordLine) error {
		m := &r.Metadata
		if _, dup := c.byID[m.XRequestID]; dup {
			// Run.Requests keeps the first copy (its payload is what the
			// native runner answers); the problem is recorded, and the
			// join (qual/streamjoin), which reads this file itself, counts
			// the request and every copy as duplicate, whatever the copy
			// holds, so the row cannot qualify.
			dups = append(dups, m.XRequestID)
			return nil
		}
		q := Request{
			RequestID:      m.XRequestID,
			ConversationID: m.ConversationID,
			Phase:          m.BenchmarkPhase,
			Error:          r.Error,
			Cancelled:      m.Cancelled(),
		}
		q.Echo, _ = r.Echo()
		if m.TurnIndex != nil {
			q.TurnIndex = *m.TurnIndex
		}
		if m.RequestStartNs != nil {
			q.StartNs = *m.RequestStartNs
		}
		if m.RequestEndNs != nil {
			q.EndNs = *m.RequestEndNs
		}
		if v, ok := r.Metric("request_latency"); ok {
			q.LatencyMs = &v
		}
		if v, ok := r.Metric("output_token_count"); ok {
			n := int(v)
			q.OutputTokens = &n
		}
		if r.Error != nil && r.Error.Code != nil && *r.Error.Code >= 100 && *r.Error.Code <= 599 {
			q.HTTPStatus = *r.Error.Code
		}
		c.byID[q.RequestID] = len(c.run.Requests)
		c.run.Requests = append(c.run.Requests, q)
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.problem(ProblemRecordsMissing, "%s is missing", FileRecords)
		return
	case err != nil:
		c.problem(ProblemRecordsInvalid, "%v", err)
		return
	}
	c.recordsOK = true
	if len(dups) > 0 {
		c.problem(ProblemDuplicateRequest, "%s: %d x_request_id(s) appear more than once, e.g. %s", FileRecords, len(dups), examples(dups))
	}
}

func (c *collector) raw() {
	paths, name := c.rawPaths()
	sc := &rawScan{seen: make(map[string]bool, len(c.run.Requests))}
	var err error
	for _, path := range paths {
		err = ScanRaw(path, func(_ int, r *RawLine) error {
			c.rawLine(sc, r)
			return nil
		})
		if err != nil {
			break
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.problem(ProblemRawMissing, "%s is missing", FileRaw)
		return
	case err != nil:
		c.problem(ProblemRawInvalid, "%v", err)
		return
	}
	if len(sc.tooLarge) > 0 {
		c.problem(ProblemAnswerTooLarge, "%d answer(s) over the %d MiB limit for one answer (fileio.MaxAnswerBytes), not kept, e.g. %s",
			len(sc.tooLarge), fileio.MaxAnswerBytes>>20, examples(sc.tooLarge))
	}
	if !c.recordsOK {
		return // without the full record set, coverage proves nothing
	}
	c.rawCoverage(name, sc)
}

// rawPaths are the raw export's files: the merged export or, if AIPerf
// left only its per-processor shards (raw_unmerged is already named),
// those, so failed runs still show what was sent; name is how problems
// name them.
func (c *collector) rawPaths() (paths []string, name string) {
	paths, name = []string{c.path(FileRaw)}, FileRaw
	if _, err := os.Stat(paths[0]); errors.Is(err, fs.ErrNotExist) {
		if shards, _ := filepath.Glob(filepath.Join(c.dir, DirRawShards, "raw_records_*.jsonl")); len(shards) > 0 {
			sort.Strings(shards)
			paths, name = shards, DirRawShards+"/"
		}
	}
	return paths, name
}

// rawScan is what reading the raw export found: the ids seen, and those
// seen twice, unknown to the records, disagreeing with them, or whose
// answer was too large to keep.
type rawScan struct {
	seen                            map[string]bool
	dups, unknown, differ, tooLarge []string
}

// rawLine joins one raw record to its request: the payload sent, the
// answer (unless too large to keep) and the HTTP status.
func (c *collector) rawLine(sc *rawScan, r *RawLine) {
	id := r.Metadata.XRequestID
	if sc.seen[id] {
		sc.dups = append(sc.dups, id)
		return
	}
	sc.seen[id] = true
	i, ok := c.byID[id]
	if !ok {
		sc.unknown = append(sc.unknown, id)
		return
	}
	q := &c.run.Requests[i]
	if r.Metadata.ConversationID != q.ConversationID || r.Metadata.BenchmarkPhase != q.Phase {
		sc.differ = append(sc.differ, id)
	}
	q.Payload = r.Payload
	if n := r.BodyLen(); n > fileio.MaxAnswerBytes {
		// Not kept: memory must not grow with the largest answer.
		// The request is an error, so the row cannot qualify.
		q.Error = &RequestError{Type: "answer_too_large", Message: fmt.Sprintf(
			"the answer is %d bytes, over the %d MiB limit for one answer (fileio.MaxAnswerBytes); not kept", n, fileio.MaxAnswerBytes>>20)}
		sc.tooLarge = append(sc.tooLarge, id)
	} else {
		q.Response = r.Body()
	}
	if r.Status != nil {
		q.HTTPStatus = *r.Status
	}
}

// rawCoverage holds the raw export to the records: every record once, no
// other, agreeing on conversation and phase.
func (c *collector) rawCoverage(name string, sc *rawScan) {
	var missing []string
	for _, q := range c.run.Requests {
		if !sc.seen[q.RequestID] {
			missing = append(missing, q.RequestID)
		}
	}
	if len(missing) > 0 {
		c.problem(ProblemRawMismatch, "%s lacks %d of %d records, e.g. %s", name, len(missing), len(c.run.Requests), examples(missing))
	}
	if len(sc.dups) > 0 {
		c.problem(ProblemRawMismatch, "%s: %d x_request_id(s) appear more than once, e.g. %s", name, len(sc.dups), examples(sc.dups))
	}
	if len(sc.unknown) > 0 {
		c.problem(ProblemRawMismatch, "%s has %d record(s) not in %s, e.g. %s", name, len(sc.unknown), FileRecords, examples(sc.unknown))
	}
	if len(sc.differ) > 0 {
		c.problem(ProblemRawMismatch, "%s and %s disagree on conversation or phase for %d record(s), e.g. %s", name, FileRecords, len(sc.differ), examples(sc.differ))
	}
}

func (c *collector) outputs() {
	path := c.path(FileOutputs)
	o, err := ParseOutputs(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c.exp.OutputsJSON {
			c.problem(ProblemOutputs, "%s is missing", FileOutputs)
		}
		return
	case err != nil:
		c.problem(ProblemOutputs, "%v", err)
		return
	}
	c.run.Outputs = o
	var unknown, wrongPhase []string
	n := 0
	apply := func(entries []OutputEntry, phase string) {
		for _, e := range entries {
			i, ok := c.byID[e.XRequestID]
			if !ok {
				unknown = append(unknown, e.XRequestID)
				continue
			}
			q := &c.run.Requests[i]
			if q.Phase != phase || (e.BenchmarkPhase != "" && e.BenchmarkPhase != phase) || e.ConversationID != q.ConversationID {
				wrongPhase = append(wrongPhase, e.XRequestID)
			}
			q.ResponseText = e.ResponseText
			n++
		}
	}
	apply(o.Data, PhaseProfiling)
	apply(o.Warmup, PhaseWarmup)
	if !c.recordsOK {
		return
	}
	if len(unknown) > 0 {
		c.problem(ProblemOutputs, "%s has %d entries not in %s, e.g. %s", FileOutputs, len(unknown), FileRecords, examples(unknown))
	}
	if len(wrongPhase) > 0 {
		c.problem(ProblemOutputs, "%s disagrees with %s on phase or conversation for %d entries, e.g. %s", FileOutputs, FileRecords, len(wrongPhase), examples(wrongPhase))
	}
	// Schema 1.0 holds profiling records only; 1.1 adds warmup.
	want := c.countPhase(PhaseProfiling)
	if o.SchemaVersion != "1.0" {
		want += c.countPhase(PhaseWarmup)
	}
	if c.recordsOK && n != want {
		c.problem(ProblemOutputs, "%s has %d entries for %d records", FileOutputs, n, want)
	}
}

func (c *collector) inputs() {
	path := c.path(FileInputs)
	var got []string
	err := ScanInputs(path, func(_ int, e *InputEntry) error {
		got = append(got, e.SessionID)
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c.exp.Dataset != nil {
			c.problem(ProblemInputs, "%s is missing", FileInputs)
		}
		return
	case err != nil:
		c.problem(ProblemInputs, "%v", err)
		return
	}
	if c.exp.Dataset == nil {
		return
	}
	want := c.exp.Dataset.Sessions
	if len(got) != len(want) {
		c.problem(ProblemInputs, "%s has %d conversations, the dataset %d lines", FileInputs, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i].SessionID {
			c.problem(ProblemInputs, "%s conversation %d is %q, dataset line %d has session_id %q", FileInputs, i, got[i], i+1, want[i].SessionID)
			return
		}
	}
}

func (c *collector) countPhase(phase string) int {
	n := 0
	for _, q := range c.run.Requests {
		if q.Phase == phase {
			n++
		}
	}
	return n
}

func (c *collector) checkRequests() {
	if !c.recordsOK {
		return
	}
	if got := c.countPhase(PhaseWarmup); got != c.exp.Warmup {
		c.problem(ProblemCount, "%s has %d warmup records, want %d", FileRecords, got, c.exp.Warmup)
	}
	if got := c.countPhase(PhaseProfiling); got != c.exp.Measured {
		c.problem(ProblemCount, "%s has %d profiling records, want %d", FileRecords, got, c.exp.Measured)
	}
	var cancelled, failed, unknownConv, dupConv []string
	var firstErr *RequestError
	convs := map[string]bool{}
	for i := range c.run.Requests {
		q := &c.run.Requests[i]
		if q.Cancelled {
			cancelled = append(cancelled, q.RequestID)
		}
		if q.Error != nil {
			if firstErr == nil {
				firstErr = q.Error
			}
			failed = append(failed, q.RequestID)
		}
		if convs[q.ConversationID] {
			dupConv = append(dupConv, q.ConversationID)
		}
		convs[q.ConversationID] = true
		if c.exp.Dataset != nil {
			if id, ok := c.exp.Dataset.EntryID(q.ConversationID); ok {
				q.EntryID = id
			} else {
				unknownConv = append(unknownConv, q.ConversationID)
			}
		}
	}
	if len(cancelled) > 0 {
		c.problem(ProblemRecordCancelled, "%d record(s) were cancelled, e.g. %s", len(cancelled), examples(cancelled))
	}
	switch {
	case len(failed) > 0 && len(failed) == len(c.run.Requests):
		c.problem(ProblemAllFailed, "all %d requests failed, first: %s", len(failed), firstErr)
	case len(failed) > 0:
		c.problem(ProblemRequestErrors, "%d of %d requests failed, first: %s", len(failed), len(c.run.Requests), firstErr)
	case len(c.run.Requests) == 0:
		c.problem(ProblemCount, "%s holds no records", FileRecords)
	}
	if len(unknownConv) > 0 {
		c.problem(ProblemConversation, "%d record(s) have a conversation_id the dataset did not write, e.g. %s", len(unknownConv), examples(unknownConv))
	}
	if len(dupConv) > 0 {
		c.problem(ProblemDuplicateConv, "%d conversation_id(s) were sent more than once (sampling was not sequential over enough lines), e.g. %s", len(dupConv), examples(dupConv))
	}
}

// checkSummary cross-checks the summary against the records it was computed
// from: request counts, and request_latency statistics recomputed with
// AIPerf's own method (they must match bit for bit).
func (c *collector) checkSummary() {
	s := c.run.Summary
	if s == nil || !c.recordsOK {
		return
	}
	var lat []float64
	ok, failed := 0, 0
	for _, q := range c.run.Requests {
		if q.Phase != PhaseProfiling {
			continue
		}
		if q.Error != nil {
			failed++
			continue
		}
		ok++
		if q.LatencyMs != nil {
			lat = append(lat, *q.LatencyMs)
		}
	}
	// AIPerf's request_count counts successful requests only, and it omits
	// error_request_count when there were none.
	if got, has := s.count("request_count"); !has && ok > 0 {
		c.problem(ProblemSummaryMismatch, "%s has no request_count for %d successful requests", FileSummary, ok)
	} else if has && got != int64(ok) {
		c.problem(ProblemSummaryMismatch, "%s: request_count %d, but %s has %d successful profiling records", FileSummary, got, FileRecords, ok)
	}
	if got, _ := s.count("error_request_count"); got != int64(failed) {
		c.problem(ProblemSummaryMismatch, "%s: error_request_count %d, but %s has %d failed profiling records", FileSummary, got, FileRecords, failed)
	}
	m, has := s.Metric("request_latency")
	if len(lat) == 0 {
		return
	}
	if !has {
		c.problem(ProblemSummaryMismatch, "%s has no request_latency for %d latencies", FileSummary, len(lat))
		return
	}
	if m.Count == nil || *m.Count != int64(len(lat)) {
		c.problem(ProblemSummaryMismatch, "%s: request_latency count %s, %s has %d latencies", FileSummary, ptrString(m.Count), FileRecords, len(lat))
	}
	want := LatencyPercentilesMs(lat, SummaryQuantiles...)
	var differ []string
	for i, q := range SummaryQuantiles {
		got, ok := m.Percentile(q)
		if !ok || got != want[i] {
			differ = append(differ, fmt.Sprintf("p%d is %s, records give %v", q, ptrString(ptrIf(got, ok)), want[i]))
		}
	}
	if len(differ) > 0 {
		c.problem(ProblemSummaryMismatch, "%s: request_latency %s", FileSummary, strings.Join(differ, ", "))
	}
}

func sortRequests(qs []Request) {
	rank := func(p string) int {
		if p == PhaseWarmup {
			return 0
		}
		return 1
	}
	sort.SliceStable(qs, func(i, j int) bool {
		a, b := &qs[i], &qs[j]
		if ra, rb := rank(a.Phase), rank(b.Phase); ra != rb {
			return ra < rb
		}
		if a.StartNs != b.StartNs {
			return a.StartNs < b.StartNs
		}
		return a.RequestID < b.RequestID
	})
}

func examples(ids []string) string {
	if len(ids) > maxExamples {
		return strings.Join(ids[:maxExamples], ", ") + ", ..."
	}
	return strings.Join(ids, ", ")
}

func ptrIf[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}
