// Package streamjoin is trtmc-qual's one join. It reads a checkpoint's
// artifacts straight from disk — the dataset AIPerf was given
// (dataset.jsonl), AIPerf's records and raw exports, the server's request
// records and the native runner's answers — joins them by request identity
// and accounts for every request id of every source exactly once: each
// request the client reported gets exactly one status per phase, and every
// id another source holds that no client record claims is counted as
// unclaimed. The `join` stage of `trtmc-qual run` and `trtmc-qual report
// --rejudge` both call Join, and both turn its Result into the row with
// Result.Apply.
//
// Memory does not grow with payload or answer sizes: each request id keeps
// a 112-byte index entry and an 8-byte table slot holding its phase, HTTP
// status, start time, latencies, image size, counts per source, flags and
// a 128-bit keyed hash of its canonical native answer, never the bytes.
// Base64 images in the raw export and the dataset are skipped, not
// decoded. Files are parsed in parallel chunks (one worker per CPU) and
// merged in file order. docs/performance.md has the measurements.
package streamjoin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Phases, counts and image sizes are the row model's (reports owns them).
const (
	PhaseWarmup   = verdict.PhaseWarmup
	PhaseMeasured = verdict.PhaseMeasured
)

// Counts are per-phase join counts.
type Counts = verdict.Counts

// ImageSize counts measured, matched requests per image size.
type ImageSize = verdict.ImageSize

// Evidence file names in a checkpoint's directory that the join reads and
// writes.
const (
	FileDataset       = "dataset.jsonl"
	FileServerRecords = "server_records.jsonl"
	FileNative        = "native_answers.jsonl"
	FileJoined        = reports.JoinedFile
	FileMismatches    = reports.MismatchesFile
)

// Files are the five artifacts of one checkpoint.
type Files struct {
	Dataset       string // dataset.jsonl: session_id -> the corpus entry
	Records       string // AIPerf profile_export.jsonl
	Raw           string // AIPerf profile_export_raw.jsonl
	ServerRecords string // the server's request records
	Native        string // the native runner's answers
	// Foreign are the records exports of the other trials of a row of
	// repeated trials, which share the server's records and the native
	// answers with this one: the ids they claim are theirs (neither
	// joined here nor unclaimed); an id both claim is inconsistent.
	Foreign []string
}

// CheckpointFiles names the artifacts in a checkpoint's evidence directory
// as the pipeline lays it out.
func CheckpointFiles(dir string) Files {
	return Files{
		Dataset:       filepath.Join(dir, FileDataset),
		Records:       filepath.Join(dir, "aiperf", aiperf.FileRecords),
		Raw:           filepath.Join(dir, "aiperf", aiperf.FileRaw),
		ServerRecords: filepath.Join(dir, FileServerRecords),
		Native:        filepath.Join(dir, FileNative),
	}
}

// TrialFiles names the artifacts of trial k of a row of repeated trials
// (of those in trials, each joined on its own): the dataset, the server's
// records and the native answers are the row's; the AIPerf exports are
// the trial's (verdict.TrialDir), and the other trials' records exports
// are Foreign.
func TrialFiles(dir string, k int, trials []int) Files {
	f := CheckpointFiles(dir)
	f.Records = filepath.Join(dir, verdict.TrialDir(k), aiperf.FileRecords)
	f.Raw = filepath.Join(dir, verdict.TrialDir(k), aiperf.FileRaw)
	for _, o := range trials {
		if o != k {
			f.Foreign = append(f.Foreign, filepath.Join(dir, verdict.TrialDir(o), aiperf.FileRecords))
		}
	}
	return f
}

// Options are the join's semantics and where its per-request evidence goes.
type Options struct {
	// Semantics are the family's, as the row records them (the extractor
	// and comparator read them); Route is the route the requests were
	// posted to (the row's).
	Semantics *verdict.Semantics
	Route     string
	// Extractor and Comparator must be safe for concurrent use (the
	// registered ones are stateless).
	Extractor  families.Extractor
	Comparator families.Comparator
	Expected   map[string]int // per phase
	// Workers parse in parallel (default GOMAXPROCS).
	Workers int
	// NoMemo extracts every answer, even one whose exact bytes were
	// extracted before (for measurements; the result is the same).
	NoMemo bool
	// Joined, when set, receives joined.jsonl: one line per request id a
	// client record claims, with its status.
	Joined io.Writer
	// Mismatches, when set, receives mismatches.jsonl: one line per
	// request whose answers differ, with both full canonical answers and
	// the comparator's diff.
	Mismatches io.Writer
	// Digests computes the evidence digest of every file read
	// (Result.Digests), while it is parsed, in DigestAlgorithm (default
	// evidence.DigestAlgorithm; a rejudge passes the manifest's).
	Digests         bool
	DigestAlgorithm string
	// TaskTime is the source of Task latency, verdict.TaskTimeServer
	// (the server's request records; the default) or
	// verdict.TaskTimeNative (the native answers). The other source's
	// task_ms is not read.
	TaskTime string
	// TaskScope is what the source's task_ms times (Result.TaskScope).
	// For the server's records it is replaced by what the records carry:
	// model_call_ms with timing_scope public_task_call_wall (the public
	// trtmc-server) is scope public_task_call_wall.
	TaskScope string
	// ServedModel is the --model-name the server was started with; a chat
	// answer naming another model (or none) is inconsistent ("" checks
	// nothing).
	ServedModel string
	// NoServerRecords says the family's route gets no server records in
	// the server version it runs (families.yaml `server_records: none`):
	// a request without one is then not missing anything, and every
	// request still has to be accounted for by the client <-> native join.
	NoServerRecords bool
	// Agreement is the tolerance within which the server's and the native
	// answers' Task times of one request agree (when the Task source is
	// the server's records and the native answers time it too).
	Agreement verdict.Tolerance
	// NativeWallMS bounds every native task_ms: the wall time the harness
	// measured for the whole native stage (0: unknown).
	NativeWallMS float64
}

// Result is what the join adds up to.
type Result struct {
	ByPhase map[string]Counts `json:"by_phase"`
	// MeasuredHTTP and MeasuredTask are the HTTP (the client's
	// request_latency) and Task (task_ms of Options.TaskTime's source)
	// latencies of one set: the measured requests that matched
	// (MeasuredMatched of them). A matched request without a latency is
	// missing from its series: Apply then withholds that series'
	// percentiles and Judge refuses the row.
	MeasuredHTTP    []float64 `json:"-"`
	MeasuredTask    []float64 `json:"-"`
	MeasuredMatched int       `json:"-"`
	// MeasuredHTTPStart and MeasuredTaskStart are the start (Unix ns) of
	// each value's request, for the drift check's order.
	MeasuredHTTPStart, MeasuredTaskStart []int64 `json:"-"`
	// CycleStart and CycleMS are every measured request the client timed,
	// whatever its status: its start (Unix ns) and its request_latency,
	// the cycles images/s is estimated from.
	CycleStart []int64   `json:"-"`
	CycleMS    []float64 `json:"-"`
	// HTTPMissing and TaskMissing are a matched measured request without
	// that latency, when there is one.
	HTTPMissing, TaskMissing string `json:"-"`
	// Split holds, for the same set, each request's HTTP time split at
	// AIPerf's trace (SplitMissing: the first request without one).
	Split        SplitSeries `json:"-"`
	SplitMissing string      `json:"-"`
	// TaskSource and TaskScope are Options.TaskTime and the scope of
	// its values (Options.TaskScope, or what the server's records carry).
	TaskSource, TaskScope string `json:"-"`
	// Agreement compares the server's and the native Task times of the
	// measured matched requests (nil when not both were there).
	Agreement *verdict.TaskAgreement `json:"-"`
	// Notes are what a reader of the row must know about its evidence
	// (a route without server records, Task times that disagree).
	Notes []string `json:"-"`
	// OutputTokens and Boxes are summed over the measured matched
	// requests from the HTTP answers: usage.completion_tokens (which the
	// chat extractor requires) and the boxes of /v1/infer's data.
	OutputTokens int `json:"output_tokens"`
	Boxes        int `json:"boxes"`
	ImageSizes   []ImageSize
	Unclaimed    verdict.Unclaimed `json:"unclaimed"`
	// Examples are the first request of each phase and status that is
	// not matched, with what was wrong with it.
	Examples []verdict.RequestExample `json:"examples"`
	// HTTPErrors count the failed requests by the server's answer.
	HTTPErrors []verdict.HTTPError `json:"http_errors,omitempty"`
	// Mismatches is how many lines went to Options.Mismatches.
	Mismatches int   `json:"mismatches"`
	Stats      Stats `json:"stats"`
	// Digests maps each file read to its evidence digest (Options.Digests)
	// in DigestAlgorithm.
	Digests         map[string]string `json:"-"`
	DigestAlgorithm string            `json:"-"`
}

// SplitSeries are the parts of the measured matched requests' HTTP time,
// one value per request that has a split (aiperf.HTTPSplit), in ms.
type SplitSeries struct {
	Client, Sending, Waiting, Receiving []float64
	// OutsideTask is waiting minus the request's Task time (only where
	// both are there).
	OutsideTask []float64
}

// Stats describe the input.
type Stats struct {
	ClientRecords int   `json:"client_records"`
	RequestIDs    int   `json:"request_ids"`
	Bytes         int64 `json:"bytes"`
}

// maxExamples bounds Unclaimed.Examples.
const maxExamples = 10

type joiner struct {
	opts     Options
	dg       evidence.Digester
	files    Files
	h        hasher
	x        *index
	sessions *Sessions
	workers  []*worker
	// dupPhases are the phases of the second and later client records of
	// an id (each is counted: the client reported it).
	dupPhases []uint8
	// ids holds the request ids that are not canonical UUIDs (the index
	// keeps UUIDs exactly, other ids only hashed); in AIPerf runs, none.
	ids      map[reqKey]string
	native   *os.File // for re-reading native answers by offset
	lineBuf  []byte
	exact    bool
	mism     *bufio.Writer
	examples []string
	// notes say more about a few requests than the index can: what the
	// client reported for a failed one, the first line of a diff.
	notes map[reqKey]string
	// agree keeps the two Task times of a few requests whose server and
	// native values disagree (for the row's example).
	agree map[reqKey][2]float64
	// echoNotes say what was wrong with a few requests' X-Request-ID echo.
	echoNotes map[reqKey]string
	// srvKind is what the server's records time: 0 nothing yet,
	// kindTaskMS, kindCallMS.
	srvKind uint8
	// httpErrs counts the failed requests by the server's answer (at most
	// maxHTTPErrorKinds kinds, the rest under the last).
	httpErrs map[httpErrKey]int
	res      *Result
}

// httpErrKey is one kind of server answer to a failed request.
type httpErrKey struct {
	phase  uint8
	status int32
	srv    serverError
}

// maxHTTPErrorKinds bounds the kinds of server answers a row lists.
const maxHTTPErrorKinds = 16

// countHTTPError counts one failed request's server answer.
func (j *joiner) countHTTPError(phase uint8, status int32, srv serverError) {
	k := httpErrKey{phase, status, srv}
	if _, ok := j.httpErrs[k]; !ok && len(j.httpErrs) >= maxHTTPErrorKinds {
		k.srv = serverError{typ: "other", message: "(more kinds of error than the row lists)"}
	}
	j.httpErrs[k]++
}

// httpErrors are the counts in a stable order: phase, status, type, code.
func (j *joiner) httpErrors() []verdict.HTTPError {
	var out []verdict.HTTPError
	for k, n := range j.httpErrs {
		out = append(out, verdict.HTTPError{Phase: phaseString(k.phase), Status: int(k.status), Type: k.srv.typ, Code: k.srv.code,
			Message: k.srv.message, Count: n})
	}
	slices.SortFunc(out, func(a, b verdict.HTTPError) int {
		return cmp.Or(cmp.Compare(b.Phase, a.Phase), cmp.Compare(a.Status, b.Status), cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
	return out
}

// What the server's records time.
const (
	kindTaskMS uint8 = 1 + iota // task_ms (the reference server)
	kindCallMS                  // model_call_ms, timing_scope public_task_call_wall (trtmc-server)
)

// Join reads files and joins them (see the package comment). The error is
// for an unreadable or malformed file, as *aiperf.ParseError naming file,
// line and field where there is one; everything else is a count.
func Join(ctx context.Context, files Files, opts Options) (*Result, error) {
	if opts.Extractor == nil || opts.Comparator == nil {
		return nil, errors.New("streamjoin: extractor and comparator are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.DigestAlgorithm == "" {
		opts.DigestAlgorithm = evidence.DigestAlgorithm
	}
	dg, ok := evidence.DigesterFor(opts.DigestAlgorithm)
	if !ok {
		return nil, fmt.Errorf("streamjoin: unknown digest algorithm %q", opts.DigestAlgorithm)
	}
	switch opts.TaskTime {
	case "":
		opts.TaskTime = verdict.TaskTimeServer
	case verdict.TaskTimeServer, verdict.TaskTimeNative:
	default:
		return nil, fmt.Errorf("streamjoin: unknown Task time source %q", opts.TaskTime)
	}
	j := &joiner{opts: opts, files: files, h: newHasher(), ids: map[reqKey]string{}, notes: map[reqKey]string{}, agree: map[reqKey][2]float64{},
		echoNotes: map[reqKey]string{}, httpErrs: map[httpErrKey]int{}, dg: dg,
		res: &Result{ByPhase: map[string]Counts{}, Digests: map[string]string{}, DigestAlgorithm: dg.Name(),
			TaskSource: opts.TaskTime, TaskScope: opts.TaskScope}}
	j.exact = opts.Comparator == families.DefaultRegistry().Comparators["exact"]
	if opts.Mismatches != nil {
		j.mism = bufio.NewWriterSize(opts.Mismatches, 64<<10)
	}
	for range opts.Workers {
		j.workers = append(j.workers, newWorker(j.h, opts.Extractor, opts.Semantics, !opts.NoMemo, opts.ServedModel))
	}
	// The dataset first (the sessions the records are checked against),
	// then native answers and server records, so that when a raw line is
	// read its answer can be compared at once.
	if err := j.readDataset(ctx); err != nil {
		return nil, err
	}
	nf, _, err := fileio.OpenRegular(files.Native)
	if err != nil {
		return nil, fileError(files.Native, err)
	}
	defer nf.Close()
	j.native = nf
	j.x = newIndex(j.sessions.Len())
	for _, w := range j.workers {
		w.sessions = j.sessions
	}
	for _, step := range []func(context.Context) error{j.readNative, j.readServer, j.readForeign, j.readRecords, j.readRaw} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	if j.mism != nil {
		if err := j.mism.Flush(); err != nil {
			return nil, fmt.Errorf("write %s: %w", FileMismatches, err)
		}
	}
	if err := j.finish(); err != nil {
		return nil, err
	}
	if j.res.Unclaimed.ServerRecords+j.res.Unclaimed.NativeAnswers > 0 {
		if err := j.unclaimedExamples(ctx); err != nil {
			return nil, err
		}
	}
	slices.Sort(j.examples)
	j.res.Unclaimed.Examples = j.examples[:min(len(j.examples), maxExamples)]
	j.res.HTTPErrors = j.httpErrors()
	return j.res, nil
}

// scan runs scanFile over one of the join's files, adding its bytes and
// (when asked) its digest to the result.
func scan[T any](ctx context.Context, j *joiner, path string, parse lineParser[T], merge lineMerger[T], pre linePrefetcher[T]) error {
	var digest *string
	var d string
	if j.opts.Digests {
		digest = &d
	}
	n, err := scanFile(ctx, path, j.opts.Workers, j.workers, parse, merge, pre, j.dg, digest)
	j.res.Stats.Bytes += n
	var pe *aiperf.ParseError
	if err != nil && !errors.As(err, &pe) && ctx.Err() == nil {
		err = fileError(path, err)
	}
	if err == nil && digest != nil {
		j.res.Digests[path] = d
	}
	return err
}

// fileError names the file of an I/O error once.
func fileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &aiperf.ParseError{File: path, Err: err}
}

func (j *joiner) readDataset(ctx context.Context) error {
	s := newSessions()
	j.sessions = s
	byEntry := map[string]uint32{}
	type line struct {
		hash  uint64
		entry []byte
	}
	s.lines = make([]int32, len(s.keys)) // the first line of each session, while reading
	defer func() { s.lines = nil }()
	return scan(ctx, j, j.files.Dataset,
		func(_ *worker, b []byte, out *line) error {
			sid, err := readSessionID(b)
			if err != nil {
				return err
			}
			out.hash = s.hash(sid)
			// AIPerf reports session_id as conversation_id; the pipeline
			// writes "<entry id>#<k>" (aiperf.SessionID).
			out.entry = sid
			if k := bytes.LastIndexByte(sid, '#'); k > 0 {
				out.entry = sid[:k]
			}
			return nil
		},
		func(lineNo int, _ int64, v *line) error {
			if prev := s.slot(v.hash); prev >= 0 {
				return &fieldError{"session_id", fmt.Errorf("duplicate of line %d", s.lines[prev])}
			}
			e, ok := byEntry[string(v.entry)]
			if !ok {
				e = uint32(len(s.entries))
				s.entries = append(s.entries, string(v.entry))
				byEntry[string(v.entry)] = e
			}
			s.lines[s.add(v.hash, e)] = int32(lineNo)
			return nil
		},
		func(lines []line) { // as touchLines: the slots the merge will probe
			var sink uint64
			for i := range lines {
				at := lines[i].hash & s.mask
				sink += s.keys[at] + uint64(s.vals[at]) + uint64(s.lines[at])
			}
			s.sink = sink
		})
}

// readSessionID reads a dataset line's session_id, skipping every other
// value (the image is a data URL of the whole image).
func readSessionID(b []byte) ([]byte, error) {
	i, empty, err := objectOpen(b, 0)
	if err != nil {
		return nil, err
	}
	var sid []byte
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return nil, err
		}
		if string(key) == "session_id" {
			var isnull bool
			sid, i, isnull, err = readString(nil, b, i)
			if err == nil && isnull {
				sid = nil
			}
		} else {
			i, err = skipValue(b, i)
		}
		if err != nil {
			return nil, inField(string(key), err)
		}
		if i, more, err = objectNext(b, i); err != nil {
			return nil, err
		}
	}
	if err := lineEnd(b, i); err != nil {
		return nil, err
	}
	if len(sid) == 0 {
		return nil, &fieldError{"session_id", errMissing}
	}
	return sid, nil
}

func (j *joiner) readNative(ctx context.Context) error {
	return scan(ctx, j, j.files.Native, parseNativeLine,
		func(_ int, off int64, v *nativeLine) error {
			e := j.x.get(v.key)
			bump8(&e.nats)
			if e.nats != 1 {
				return nil
			}
			e.natOff = off
			// An error line's task_ms times nothing (it is never a
			// figure): only an answer's is held to its domain.
			if !math.IsNaN(v.taskMS) && !v.failed {
				if why := j.nativeDomain(v.taskMS, v.wallMS); why != "" {
					e.flags |= fTaskDomain
					j.note(v.key, why)
				} else {
					// The native Task time: the row's, or the one the
					// server's will be compared with.
					e.taskMS = v.taskMS
					if j.opts.TaskTime != verdict.TaskTimeNative {
						e.flags |= fNatTask
					}
				}
			}
			switch {
			case v.failed:
				e.flags |= fNatFailed
				if len(v.errText) > 0 {
					j.note(v.key, "the native runner answered with an error: "+text.Clip(v.errText, 300))
				}
			case v.ans.outcome != ansOK:
				e.flags |= fNatBad
			default:
				e.natHash, e.natTokens = v.ans.hash, v.ans.tokens
			}
			return nil
		}, touchLines[nativeLine](j.x))
}

func (j *joiner) readServer(ctx context.Context) error {
	if j.opts.NoServerRecords {
		if _, err := os.Lstat(j.files.ServerRecords); errors.Is(err, fs.ErrNotExist) {
			return nil // the route is not recorded: no file is no finding
		}
	}
	return scan(ctx, j, j.files.ServerRecords, parseServerLine,
		func(_ int, off int64, v *serverLine) error {
			e := j.x.get(v.key)
			bump8(&e.recs)
			if e.recs == 1 {
				if j.opts.TaskTime == verdict.TaskTimeServer {
					j.serverTask(e, v)
				}
				e.imgW, e.imgH, e.srvTokens = v.w, v.h, v.tokens
				if e.natOff < 0 {
					// No native answer: remember where the id is written,
					// should no client claim it.
					e.natOff = off
					e.flags |= fSrvOff
				}
			}
			return nil
		}, touchLines[serverLine](j.x))
}

// nativeDomain says why a native task_ms is not a possible Task time: it
// is not above zero, or longer than the call the runner timed (wall_ms) or
// the whole native stage the harness timed. "" when it is in its domain.
func (j *joiner) nativeDomain(ms, wall float64) string {
	switch {
	case !(ms > 0) || math.IsInf(ms, 0):
		return fmt.Sprintf("%s: task_ms %g is not a time (zero, negative or not finite)", FileNative, ms)
	case !math.IsNaN(wall) && ms > wall+wallSlack(wall):
		return fmt.Sprintf("%s: task_ms %g is longer than the %g ms the native runner measured for the call (wall_ms): not a possible Task time", FileNative, ms, wall)
	case j.opts.NativeWallMS > 0 && ms > j.opts.NativeWallMS:
		return fmt.Sprintf("%s: task_ms %g is longer than the whole native stage (%.0f ms, measured by the harness): not a possible Task time", FileNative, ms, j.opts.NativeWallMS)
	}
	return ""
}

// wallSlack allows for the rounding of two clocks around one call.
func wallSlack(wall float64) float64 { return 0.05 + wall*1e-3 }

// outsideEnvelope says why a record's Task time val (of field) cannot be
// inside the timings of the same record that enclose the Task call: the
// handler's (handler_ms) and the worker round trip's (worker_roundtrip_ms).
// An absent enclosing timing bounds nothing. "" when it is inside both.
func (v *serverLine) outsideEnvelope(val float64, field string) string {
	for _, b := range [...]struct {
		name string
		ms   float64
	}{{"handler_ms", v.handlerMS}, {"worker_roundtrip_ms", v.roundtripMS}} {
		if !math.IsNaN(b.ms) && !(val <= b.ms+wallSlack(b.ms)) {
			return fmt.Sprintf("%s: %s %g is longer than the same record's %s %g, which encloses the Task call: not a possible Task time",
				FileServerRecords, field, val, b.name, b.ms)
		}
	}
	return ""
}

// serverTask takes a request's Task time from its first server record:
// task_ms (the reference server) or model_call_ms whose timing_scope is
// public_task_call_wall (trtmc-server records.py idx@a9ed5f69), in its
// domain; it compares it with the native answer's when there is one.
func (j *joiner) serverTask(e *entry, v *serverLine) {
	nat := math.NaN()
	if e.flags&fNatTask != 0 {
		nat = e.taskMS
	}
	e.flags &^= fNatTask
	e.taskMS = math.NaN()
	val, kind, field := v.taskMS, kindTaskMS, "task_ms"
	if math.IsNaN(val) && !math.IsNaN(v.callMS) {
		val, kind, field = v.callMS, kindCallMS, "model_call_ms"
		if v.scope != scopeTaskCall {
			scope := "no timing_scope"
			if v.scope == scopeOther {
				scope = fmt.Sprintf("timing_scope %q", v.scopeText)
			}
			e.flags |= fTaskDomain
			j.note(e.key, fmt.Sprintf("%s: the record's model_call_ms has %s, not %s: it does not time the public Task call", FileServerRecords, scope, ScopeTaskCall))
			return
		}
	}
	if math.IsNaN(val) {
		return
	}
	if j.srvKind == 0 {
		j.srvKind = kind
	}
	switch {
	case kind != j.srvKind:
		e.flags |= fTaskDomain
		j.note(e.key, FileServerRecords+": the records mix task_ms and model_call_ms: their Task times are not of one kind")
		return
	case !(val > 0) || math.IsInf(val, 0):
		e.flags |= fTaskDomain
		j.note(e.key, fmt.Sprintf("%s: %s %g is not a time (zero, negative or not finite)", FileServerRecords, field, val))
		return
	}
	if why := v.outsideEnvelope(val, field); why != "" {
		e.flags |= fTaskDomain
		j.note(e.key, why)
		return
	}
	e.taskMS = val
	if !math.IsNaN(nat) {
		e.flags |= fTaskCompared
		if !j.opts.Agreement.Within(val, nat) {
			e.flags |= fTaskDisagree
			if len(j.agree) < maxNotes {
				j.agree[e.key] = [2]float64{val, nat}
			}
		}
	}
}

// readForeign marks the ids the other trials' records claim (Files.Foreign).
func (j *joiner) readForeign(ctx context.Context) error {
	for _, path := range j.files.Foreign {
		err := scan(ctx, j, path, parseRecordLine, func(_ int, _ int64, v *clientLine) error {
			j.x.get(v.key).flags |= fForeign
			return nil
		}, touchLines[clientLine](j.x))
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *joiner) readRecords(ctx context.Context) error {
	return scan(ctx, j, j.files.Records, parseRecordLine,
		func(_ int, _ int64, v *clientLine) error {
			j.res.Stats.ClientRecords++
			e := j.x.get(v.key)
			bump8(&e.copies)
			if e.copies > 1 {
				j.dupPhases = append(j.dupPhases, v.phase)
				return nil
			}
			var k reqKey
			if !parseUUID(&k, v.id) {
				j.ids[v.key] = string(v.id)
			}
			e.flags |= fClient
			if e.flags&fForeign != 0 {
				e.flags |= fInconsistent // another trial's client reported it too
			}
			e.phase, e.startNs, e.status, e.httpMS = v.phase, v.startNs, v.status, v.latencyMS
			e.convHash, e.session = v.convHash, -1
			if v.hasConv {
				e.session = j.sessions.slot(v.convHash)
			}
			if v.failed {
				e.flags |= fFailed
				j.note(v.key, v.errText)
				if v.status != 0 {
					j.countHTTPError(v.phase, v.status, v.srvErr)
				}
				if v.status == 429 && v.srvErr.code == "server_busy" {
					e.flags |= fBusy
				}
			}
			e.echo = echoCode(v.echo)
			if v.echoText != "" && len(j.echoNotes) < maxNotes {
				j.echoNotes[v.key] = v.echoText
			}
			if v.splitOK {
				e.sendMS, e.waitMS, e.recvMS = float32(v.split.SendingMS), float32(v.split.WaitingMS), float32(v.split.ReceivingMS)
			}
			if e.session >= 0 && j.sessions.claim(e.session) {
				e.flags |= fConvDup
			}
			return nil
		}, j.touchRecords)
}

// touchRecords is touchLines for the records, and also loads the
// session slots the merge will look the conversations up in.
func (j *joiner) touchRecords(lines []clientLine) {
	touchLines[clientLine](j.x)(lines)
	var sink uint64
	s := j.sessions
	for i := range lines {
		if at := lines[i].convHash & s.mask; lines[i].hasConv {
			sink += s.keys[at] + uint64(s.vals[at])
			if s.used[at] {
				sink++
			}
		}
	}
	s.sink = sink
}

func (j *joiner) readRaw(ctx context.Context) error {
	return scan(ctx, j, j.files.Raw, parseRawLine,
		func(_ int, _ int64, v *rawLine) error {
			e := j.x.lookup(v.key)
			if e == nil || e.flags&fClient == 0 {
				j.res.Unclaimed.RawRecords++
				j.example(string(v.id))
				return nil
			}
			bump8(&e.raws)
			if e.raws > 1 {
				return nil // a duplicate: the request's status says so
			}
			e.flags |= fRawSeen
			if v.phase != e.phase || v.convHash != e.convHash {
				e.flags |= fInconsistent
			}
			if v.hasStatus {
				e.status = v.status
			}
			e.ans = v.ans.outcome
			if e.ans == ansWrongModel {
				j.note(v.key, fmt.Sprintf("the HTTP answer names model %q, not the served --model-name %q", v.ans.model, j.opts.ServedModel))
			}
			if e.ans != ansOK {
				return nil
			}
			// The HTTP answer's counts are the row's output size; the
			// server's record, when it counted, must agree.
			e.httpTokens, e.httpBoxes = v.ans.tokens, v.ans.boxes
			if e.srvTokens > 0 && e.httpTokens > 0 && e.srvTokens != e.httpTokens {
				e.flags |= fTokensDisagree
				j.note(v.key, fmt.Sprintf("the server's record counts %d completion tokens, the HTTP answer's usage %d", e.srvTokens, e.httpTokens))
			}
			if e.nats == 0 || e.flags&(fNatFailed|fNatBad) != 0 {
				return nil
			}
			// Equal canonical answers match, unless both sides counted the
			// tokens and the counts differ: the comparator then says so.
			if v.ans.hash == e.natHash && (e.natTokens == 0 || e.httpTokens == 0 || e.natTokens == e.httpTokens) {
				return nil
			}
			httpAns := families.Answer{Canonical: v.ans.canon, Tokens: int(v.ans.tokens), Boxes: int(v.ans.boxes)}
			if j.exact && j.mism == nil {
				e.flags |= fMismatch
				return nil
			}
			// Compare the real answers: a tolerant comparator may accept
			// them, and a mismatch keeps both answers and the diff.
			nat, err := j.nativeAt(e.natOff)
			if err != nil {
				return err
			}
			diff := j.opts.Comparator.Compare(httpAns, nat, j.opts.Semantics)
			if diff == "" && j.exact {
				diff = "the canonical answers differ"
			}
			if diff == "" {
				return nil
			}
			e.flags |= fMismatch
			j.note(v.key, text.FirstLine(diff))
			return j.writeMismatch(string(v.id), e.phase, httpAns.Canonical, nat.Canonical, diff)
		}, touchLines[rawLine](j.x))
}

// maxNotes bounds the notes kept: the reasons quote the first request of
// each status and phase only.
const maxNotes = 64

func (j *joiner) note(k reqKey, text string) {
	if len(j.notes) < maxNotes && text != "" {
		j.notes[k] = text
	}
}

func (j *joiner) writeMismatch(id string, phase uint8, httpAns, natAns []byte, diff string) error {
	j.res.Mismatches++
	if j.mism == nil {
		return nil
	}
	b, err := json.Marshal(verdict.MismatchLine{RequestID: id, Phase: phaseString(phase), Diff: diff, HTTP: httpAns, Native: natAns})
	if err != nil {
		return err
	}
	j.mism.Write(b)
	return j.mism.WriteByte('\n')
}

// nativeAt re-reads the native answer line at off and extracts its answer.
func (j *joiner) nativeAt(off int64) (families.Answer, error) {
	line, err := j.lineAt(j.native, off)
	if err != nil {
		return families.Answer{}, err
	}
	_, answer, _, _, err := readNativeLine(line)
	if err != nil {
		return families.Answer{}, fmt.Errorf("native answer at offset %d: %w", off, err)
	}
	return j.opts.Extractor.FromNative(bytes.Clone(answer))
}

// lineAt reads the line that starts at off.
func (j *joiner) lineAt(f *os.File, off int64) ([]byte, error) {
	if j.lineBuf == nil {
		j.lineBuf = make([]byte, 64<<10)
	}
	for {
		n, err := f.ReadAt(j.lineBuf, off)
		line := j.lineBuf[:n]
		if k := bytes.IndexByte(line, '\n'); k >= 0 {
			return line[:k], nil
		}
		if n < len(j.lineBuf) {
			if err == nil || errors.Is(err, io.EOF) {
				return line, nil
			}
			return nil, fmt.Errorf("%s at offset %d: %w", f.Name(), off, err)
		}
		j.lineBuf = make([]byte, 2*len(j.lineBuf))
	}
}

// requestStatus decides one client request's status, in a fixed order of
// precedence, and says why when it is not matched.
func (j *joiner) requestStatus(e *entry) (status, problem string) {
	switch {
	case e.copies > 1:
		return verdict.JoinDuplicate, fmt.Sprintf("x_request_id reported %d times by the client", e.copies)
	case e.raws > 1:
		return verdict.JoinDuplicate, fmt.Sprintf("the raw export holds this request id %d times", e.raws)
	case e.recs > 1:
		return verdict.JoinDuplicate, fmt.Sprintf("the server recorded this request id %d times", e.recs)
	case e.nats > 1:
		return verdict.JoinDuplicate, fmt.Sprintf("the native runner answered this request id %d times", e.nats)
	case e.flags&fConvDup != 0:
		return verdict.JoinDuplicate, "an earlier request used the same dataset line (conversation_id)"
	case e.session < 0:
		return verdict.JoinUnknownConversation, "the conversation_id is not a session_id of " + FileDataset
	case e.flags&fInconsistent != 0:
		return verdict.JoinInconsistent, "the records and raw exports disagree on this request's phase or conversation"
	case e.flags&fFailed != 0:
		return j.clientFailure(e)
	case e.flags&fRawSeen == 0:
		return verdict.JoinMissingHTTP, "the raw export has no record of this request: no HTTP answer"
	case e.status < 200 || e.status > 299:
		return verdict.JoinErrored, fmt.Sprintf("HTTP status %d", e.status)
	case e.echo != echoMatch:
		return j.echoStatus(e)
	case e.ans != ansOK || e.flags&fTokensDisagree != 0:
		return j.answerStatus(e)
	case e.flags&fTaskDomain != 0:
		if n, ok := j.notes[e.key]; ok {
			return verdict.JoinInconsistent, n
		}
		return verdict.JoinInconsistent, "a Task time of this request is outside its domain (not above zero, of another timing scope, or longer than a timing that encloses it)"
	case e.recs == 0 && !j.opts.NoServerRecords:
		return verdict.JoinMissingServerRecord, "the server has no record of this request id"
	case e.nats == 0:
		return verdict.JoinMissingNative, "the native runner returned no answer for this request id"
	case e.flags&fNatFailed != 0:
		if n, ok := j.notes[e.key]; ok {
			return verdict.JoinMissingNative, n
		}
		return verdict.JoinMissingNative, "the native runner answered with an error"
	case e.flags&fNatBad != 0:
		return verdict.JoinMissingNative, "the native answer does not extract with the family's extractor"
	case e.flags&fMismatch != 0:
		if n, ok := j.notes[e.key]; ok {
			return verdict.JoinMismatched, n
		}
		return verdict.JoinMismatched, "the HTTP answer differs from the native answer (" + FileMismatches + " has both and the diff)"
	}
	return verdict.JoinMatched, ""
}

// clientFailure is the status of a request the client reported failed: a
// 429 server_busy (an overlap) is its own, anything else errored.
func (j *joiner) clientFailure(e *entry) (status, problem string) {
	if e.flags&fBusy != 0 {
		return verdict.JoinServerBusy, "429 server_busy: the replica was busy with another request sent at the same time (" + j.notes[e.key] + ")"
	}
	if n, ok := j.notes[e.key]; ok {
		return verdict.JoinErrored, n
	}
	return verdict.JoinErrored, "the client reported an error or a cancellation (see the records export)"
}

// answerStatus is the status of a request whose HTTP answer is not usable
// as it is: too large, not extractable, meaningless, naming another model,
// or counting other tokens than the server's record.
func (j *joiner) answerStatus(e *entry) (status, problem string) {
	note := func(status, fallback string) (string, string) {
		if n, ok := j.notes[e.key]; ok {
			return status, n
		}
		return status, fallback
	}
	switch e.ans {
	case ansTooLarge:
		return verdict.JoinErrored, fmt.Sprintf("the HTTP answer is over the %d MiB limit for one answer (fileio.MaxAnswerBytes); not extracted", fileio.MaxAnswerBytes>>20)
	case ansBad:
		return verdict.JoinMissingHTTP, "the HTTP answer does not extract with the family's extractor"
	case ansMeaningless:
		return verdict.JoinMeaningless, "the HTTP answer is incomplete or meaningless"
	case ansWrongModel:
		return note(verdict.JoinInconsistent, "the HTTP answer names another model than the served --model-name")
	}
	return note(verdict.JoinInconsistent, "the server's record and the HTTP answer count different completion tokens")
}

// echoStatus is the status of a request whose answer does not prove its
// identity: no X-Request-ID echo (or no trace at all), or another id.
func (j *joiner) echoStatus(e *entry) (status, problem string) {
	status, problem = verdict.JoinEchoMissing, "nothing in AIPerf's HTTP trace shows the server answered this request's X-Request-ID"
	if e.echo == echoDiffers {
		status, problem = verdict.JoinEchoMismatched, "the server's answer echoes another X-Request-ID than the one sent"
	}
	if n, ok := j.echoNotes[e.key]; ok {
		problem = n
	}
	return status, problem
}

func phaseString(p uint8) string {
	if p == phaseWarmup {
		return PhaseWarmup
	}
	return PhaseMeasured
}

func bump(c *Counts, status string) {
	switch status {
	case verdict.JoinMatched:
		c.Matched++
	case verdict.JoinMismatched:
		c.Mismatched++
	case verdict.JoinErrored:
		c.Errored++
	case verdict.JoinMissingNative:
		c.MissingNative++
	case verdict.JoinMissingHTTP:
		c.MissingHTTP++
	case verdict.JoinMissingServerRecord:
		c.MissingServerRecord++
	case verdict.JoinDuplicate:
		c.Duplicates++
	case verdict.JoinMeaningless:
		c.Meaningless++
	case verdict.JoinUnknownConversation:
		c.UnknownConversation++
	case verdict.JoinInconsistent:
		c.Inconsistent++
	case verdict.JoinEchoMissing:
		c.EchoMissing++
	case verdict.JoinEchoMismatched:
		c.EchoMismatched++
	case verdict.JoinServerBusy:
		c.ServerBusy++
	}
}

// requestID is the id of a client entry's key.
func (j *joiner) requestID(k reqKey) string {
	if id, ok := j.ids[k]; ok {
		return id
	}
	var b [36]byte
	hex.Encode(b[0:8], k[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], k[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], k[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], k[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], k[10:16])
	return string(b[:])
}

// finish decides every client request's status in index order, writes
// joined.jsonl, and adds up the result: counts per phase, the measured
// requests' times, tokens, boxes and image sizes, the Task agreement, the
// first example of each status, and the notes the row carries.
func (j *joiner) finish() error {
	var t tally
	sizes := map[[2]int32]int{}
	var jw *bufio.Writer
	if j.opts.Joined != nil {
		jw = bufio.NewWriterSize(j.opts.Joined, 256<<10)
	}
	var line []byte
	for i := uint32(0); i < j.x.n; i++ {
		e := j.x.at(i)
		if e.flags&fClient == 0 {
			if e.flags&fForeign == 0 {
				j.unclaimed(e)
			}
			continue
		}
		j.checkTaskDomain(e)
		status, problem := j.requestStatus(e)
		j.account(&t, e, status, problem)
		if jw != nil {
			line = j.joinedLine(line[:0], e, status, problem)
			if _, err := jw.Write(line); err != nil {
				return fmt.Errorf("write %s: %w", FileJoined, err)
			}
		}
		if status == verdict.JoinMatched && e.phase == phaseMeasured {
			j.measured(&t, e, sizes)
		}
	}
	if jw != nil {
		if err := jw.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", FileJoined, err)
		}
	}
	j.phaseCounts(&t)
	j.res.ImageSizes = imageSizes(j.res.ImageSizes, sizes)
	j.res.Stats.RequestIDs = int(j.x.n)
	j.taskScope()
	j.res.Agreement = t.agree
	j.finalNotes(t.agree)
	return nil
}

// tally is what finish adds up over the client's requests besides the row
// itself: the counts of each phase and the Task agreement.
type tally struct {
	counts [3]Counts
	agree  *verdict.TaskAgreement
}

// unclaimed counts a server record or native answer of an id the client
// never sent.
func (j *joiner) unclaimed(e *entry) {
	if e.recs > 0 {
		j.res.Unclaimed.ServerRecords++
	}
	if e.nats > 0 {
		j.res.Unclaimed.NativeAnswers++
	}
}

// checkTaskDomain drops a Task time the request cannot have: none from the
// server's records when they are the source, or one longer than the
// request the client timed (the Task call is inside it).
func (j *joiner) checkTaskDomain(e *entry) {
	if e.flags&fNatTask != 0 {
		// The Task source is the server's records and there was none.
		e.taskMS = math.NaN()
		e.flags &^= fNatTask
	}
	if j.opts.TaskTime == verdict.TaskTimeServer && !math.IsNaN(e.taskMS) && !math.IsNaN(e.httpMS) && e.taskMS > e.httpMS+wallSlack(e.httpMS) {
		e.flags |= fTaskDomain
		j.note(e.key, fmt.Sprintf("%s: the Task time %g ms is longer than the %g ms the client measured for this request (request_latency): not a possible Task time",
			FileServerRecords, e.taskMS, e.httpMS))
		e.taskMS = math.NaN()
	}
}

// account counts a request in its phase and keeps the first example of
// each phase and status that is not matched.
func (j *joiner) account(t *tally, e *entry, status, problem string) {
	c := &t.counts[e.phase]
	c.Sent++
	bump(c, status)
	if e.phase == phaseMeasured && !math.IsNaN(e.httpMS) {
		j.res.CycleStart = append(j.res.CycleStart, e.startNs)
		j.res.CycleMS = append(j.res.CycleMS, e.httpMS)
	}
	if e.echo == echoMatch {
		c.EchoProven++
	}
	if status == verdict.JoinMatched {
		return
	}
	first := verdict.RequestExample{Phase: phaseString(e.phase), Status: status}
	if !slices.ContainsFunc(j.res.Examples, func(x verdict.RequestExample) bool { return x.Phase == first.Phase && x.Status == status }) {
		first.RequestID, first.Problem = j.requestID(e.key), problem
		j.res.Examples = append(j.res.Examples, first)
	}
}

// measured adds a matched measured request to the row's figures: tokens,
// boxes, HTTP and Task times (the first request without one is named),
// the Task agreement and its image size (counted in sizes).
func (j *joiner) measured(t *tally, e *entry, sizes map[[2]int32]int) {
	res := j.res
	res.OutputTokens += int(e.httpTokens)
	res.Boxes += int(e.httpBoxes)
	res.MeasuredMatched++
	if !math.IsNaN(e.httpMS) {
		res.MeasuredHTTP = append(res.MeasuredHTTP, e.httpMS)
		res.MeasuredHTTPStart = append(res.MeasuredHTTPStart, e.startNs)
	} else if res.HTTPMissing == "" {
		res.HTTPMissing = j.requestID(e.key)
	}
	if !math.IsNaN(e.taskMS) {
		res.MeasuredTask = append(res.MeasuredTask, e.taskMS)
		res.MeasuredTaskStart = append(res.MeasuredTaskStart, e.startNs)
	} else if res.TaskMissing == "" {
		res.TaskMissing = j.requestID(e.key)
	}
	j.measuredSplit(e)
	if e.flags&fTaskCompared != 0 {
		j.compareTask(t, e)
	}
	if e.imgW > 0 {
		sizes[[2]int32{e.imgW, e.imgH}]++
	}
}

// measuredSplit adds a matched measured request's HTTP split to the
// row's (the first request without one is named).
func (j *joiner) measuredSplit(e *entry) {
	res := j.res
	send, wait, recv := float64(e.sendMS), float64(e.waitMS), float64(e.recvMS)
	if math.IsNaN(send) || math.IsNaN(e.httpMS) {
		if res.SplitMissing == "" {
			res.SplitMissing = j.requestID(e.key)
		}
		return
	}
	s := &res.Split
	s.Client = append(s.Client, e.httpMS-(send+wait+recv))
	s.Sending = append(s.Sending, send)
	s.Waiting = append(s.Waiting, wait)
	s.Receiving = append(s.Receiving, recv)
	if !math.IsNaN(e.taskMS) {
		s.OutsideTask = append(s.OutsideTask, wait-e.taskMS)
	}
}

// compareTask counts a request whose server Task time was compared with
// the native replay's, and keeps the first that disagrees.
func (j *joiner) compareTask(t *tally, e *entry) {
	if t.agree == nil {
		t.agree = &verdict.TaskAgreement{Other: verdict.TaskTimeNative, Tolerance: j.opts.Agreement}
	}
	t.agree.Compared++
	if e.flags&fTaskDisagree == 0 {
		return
	}
	t.agree.Disagreeing++
	if v, ok := j.agree[e.key]; ok && t.agree.Example == "" {
		t.agree.Example = fmt.Sprintf("%s: server %.3f ms, native %.3f ms", j.requestID(e.key), v[0], v[1])
	}
}

// phaseCounts writes the counts of each phase, with the duplicates the
// index folded away and the expected counts.
func (j *joiner) phaseCounts(t *tally) {
	for _, p := range j.dupPhases {
		t.counts[p].Sent++
		t.counts[p].Duplicates++
	}
	for _, p := range []uint8{phaseWarmup, phaseMeasured} {
		c := t.counts[p]
		c.Expected = j.opts.Expected[phaseString(p)]
		j.res.ByPhase[phaseString(p)] = c
	}
}

// imageSizes appends the measured image sizes to out, by width then
// height.
func imageSizes(out []ImageSize, sizes map[[2]int32]int) []ImageSize {
	for k, n := range sizes {
		out = append(out, ImageSize{Width: int(k[0]), Height: int(k[1]), Count: n})
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Width != y.Width {
			return x.Width < y.Width
		}
		return x.Height < y.Height
	})
	return out
}

// taskScope says what the server's Task times time, when they are the
// source: the call (model_call_ms) or the reference server's task_ms.
func (j *joiner) taskScope() {
	switch {
	case j.opts.TaskTime != verdict.TaskTimeServer:
	case j.srvKind == kindCallMS:
		j.res.TaskScope = ScopeTaskCall
	case j.srvKind == kindTaskMS && j.res.TaskScope == "":
		j.res.TaskScope = verdict.TaskScopeServer
	}
}

// finalNotes adds the row's notes on what its evidence holds: a family
// without server records, and a Task agreement that failed.
func (j *joiner) finalNotes(agree *verdict.TaskAgreement) {
	res := j.res
	if j.opts.NoServerRecords {
		route := "its route"
		if j.opts.Route != "" {
			route = j.opts.Route
		}
		res.Notes = append(res.Notes, fmt.Sprintf("no server records for %s in this server version (the family declares server_records: none): "+
			"every request is accounted for by the client <-> native join alone, by its X-Request-ID; the server's own record of each id "+
			"and the served request's Task time are not part of this row's evidence", route))
	}
	if agree != nil && agree.Disagreeing > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Task time from the server's records; the native replay's task_ms differs by more than %s on %d of %d measured requests (e.g. %s)",
			agree.Tolerance, agree.Disagreeing, agree.Compared, agree.Example))
	}
}

// joinedLine appends one joined.jsonl line (verdict.JoinedLine's fields).
func (j *joiner) joinedLine(b []byte, e *entry, status, problem string) []byte {
	b = append(b, `{"request_id":`...)
	b = appendQuoted(b, j.requestID(e.key))
	b = append(b, `,"entry_id":`...)
	b = appendQuoted(b, j.sessions.entryAt(e.session))
	b = append(b, `,"phase":"`...)
	b = append(b, phaseString(e.phase)...)
	b = append(b, `","http_ms":`...)
	b = appendMS(b, e.httpMS)
	b = append(b, `,"task_ms":`...)
	b = appendMS(b, e.taskMS)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","start_ns":`...)
	b = fmt.Appendf(b, "%d", e.startNs)
	if name := echoName(e.echo); name != "" {
		b = append(b, `,"echo":"`...)
		b = append(b, name...)
		b = append(b, '"')
	}
	// The split, when the trace has one (omitted otherwise).
	if send, wait, recv := float64(e.sendMS), float64(e.waitMS), float64(e.recvMS); !math.IsNaN(send) {
		b = append(b, `,"sending_ms":`...)
		b = appendMS32(b, e.sendMS)
		b = append(b, `,"waiting_ms":`...)
		b = appendMS32(b, e.waitMS)
		b = append(b, `,"receiving_ms":`...)
		b = appendMS32(b, e.recvMS)
		if client := e.httpMS - (send + wait + recv); !math.IsNaN(client) {
			b = append(b, `,"client_ms":`...)
			b = appendMS(b, client)
		}
	}
	if problem != "" {
		b = append(b, `,"problem":`...)
		b = appendQuoted(b, problem)
	}
	return append(b, "}\n"...)
}

func appendQuoted(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func appendMS(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	q, _ := json.Marshal(v)
	return append(b, q...)
}

// appendMS32 appends a float32 value with the digits float32 holds.
func appendMS32(b []byte, v float32) []byte {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 32)
}

func (j *joiner) example(id string) {
	if len(j.examples) < 4*maxExamples {
		j.examples = append(j.examples, id)
	}
}

// unclaimedExamples reads back a few ids of the server records and native
// answers no client request claims (the index keeps keys, not id strings),
// from the line offsets the index kept.
func (j *joiner) unclaimedExamples(_ context.Context) error {
	var sf *os.File
	if j.res.Unclaimed.ServerRecords > 0 {
		f, _, err := fileio.OpenRegular(j.files.ServerRecords)
		if err != nil {
			return err
		}
		defer f.Close()
		sf = f
	}
	n := 0
	for i := uint32(0); i < j.x.n && n < maxExamples; i++ {
		e := j.x.at(i)
		if e.flags&(fClient|fForeign) != 0 || e.natOff < 0 {
			continue
		}
		f, read := j.native, readNativeID
		if e.flags&fSrvOff != 0 {
			f, read = sf, readServerID
		}
		line, err := j.lineAt(f, e.natOff)
		if err != nil {
			return err
		}
		id, err := read(line)
		if err != nil {
			return fmt.Errorf("%s at offset %d: %w", f.Name(), e.natOff, err)
		}
		j.example(id)
		n++
	}
	return nil
}

func readNativeID(line []byte) (string, error) {
	id, _, _, _, err := readNativeLine(line)
	return string(id), err
}

func readServerID(line []byte) (string, error) {
	var v serverLine
	w := worker{}
	var id string
	err := parseServerLineID(&w, line, &v, &id)
	return id, err
}

// Apply writes the join's result into a row of one trial: counts per
// phase and in total, unclaimed ids, the latency of the one stated set
// with each figure's interval and the drift checks (figures.go), images/s
// from the cycles with its interval, output tokens or boxes, image sizes.
// It is the only way a join reaches a row (ApplyTrials, for a row of
// repeated trials).
func (res *Result) Apply(r *verdict.Result) {
	r.RequestsByPhase = maps.Clone(res.ByPhase)
	r.Requests = res.total()
	r.Unclaimed = res.Unclaimed
	r.Examples = res.Examples
	r.HTTPErrors = res.HTTPErrors
	r.ImageSizes = res.ImageSizes
	r.LatencyMS = res.latency()
	r.Notes = res.notes(r.LatencyMS)
	r.OutputTokens, r.Boxes = res.outputs(r.Answers.EndpointType)
	r.ImagesPerSecInterval = res.rate(r.Workload.Concurrency)
	r.Trials, r.ImagesPerSecAcrossTrials = nil, nil
}

// httpSplit summarises the split over the set: every part withheld when a
// request of the set has none (or a value of either latency is missing).
func (res *Result) httpSplit() *verdict.HTTPSplit {
	s := res.Split
	out := &verdict.HTTPSplit{Count: len(s.Sending), MissingExample: res.SplitMissing}
	n := res.MeasuredMatched
	if n == 0 || len(s.Sending) < n || len(res.MeasuredHTTP) < n || len(res.MeasuredTask) < n || len(s.OutsideTask) < n {
		return out
	}
	out.HTTPMean, out.TaskMean = mean(res.MeasuredHTTP), mean(res.MeasuredTask)
	part := func(v []float64) verdict.SplitPart {
		ps := aiperf.Percentiles(v, 50, 95)
		return verdict.SplitPart{Mean: mean(v), P50: &ps[0], P95: &ps[1]}
	}
	out.Client, out.Sending, out.Waiting, out.Receiving = part(s.Client), part(s.Sending), part(s.Waiting), part(s.Receiving)
	out.OutsideTask = part(s.OutsideTask)
	return out
}

func mean(v []float64) *float64 {
	var sum float64
	for _, x := range v {
		sum += x
	}
	m := sum / float64(len(v))
	return &m
}

// Sessions is a dataset's session_id -> entry map in compact form: a 64-bit
// hash per session id and an index into the (few) distinct entry ids, not
// the strings, plus whether a request has used the line yet.
type Sessions struct {
	seed    maphash.Seed
	keys    []uint64 // 0: empty
	vals    []uint32 // entry index
	used    []bool
	lines   []int32 // while the dataset is read: the line of each slot's session
	mask    uint64
	n       int
	entries []string
	sink    uint64 // the dataset merge's prefetch loads end here
}

func newSessions() *Sessions {
	s := &Sessions{seed: maphash.MakeSeed()}
	s.resize(1 << 12)
	return s
}

func (s *Sessions) resize(size int) {
	keys, vals, lines := s.keys, s.vals, s.lines
	s.keys, s.vals, s.used, s.mask = make([]uint64, size), make([]uint32, size), make([]bool, size), uint64(size-1)
	if lines != nil {
		s.lines = make([]int32, size)
	}
	for i, k := range keys {
		if k != 0 {
			at := s.put(k, vals[i])
			if lines != nil {
				s.lines[at] = lines[i]
			}
		}
	}
}

// put stores a session and returns its slot.
func (s *Sessions) put(h uint64, v uint32) uint64 {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.keys[i] {
		case 0:
			s.keys[i], s.vals[i] = h, v
			return i
		case h:
			s.vals[i] = v
			return i
		}
	}
}

// add adds a new session (the caller checked it is new) and returns its
// slot.
func (s *Sessions) add(h uint64, entry uint32) uint64 {
	s.n++
	if uint64(s.n) > (s.mask+1)*3/4 {
		s.resize(2 * len(s.keys))
	}
	return s.put(h, entry)
}

func (s *Sessions) hash(b []byte) uint64 {
	if h := maphash.Bytes(s.seed, b); h != 0 {
		return h
	}
	return 1
}

// slot is the table slot of a session hash, or -1.
func (s *Sessions) slot(h uint64) int32 {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.keys[i] {
		case 0:
			return -1
		case h:
			return int32(i)
		}
	}
}

// claim marks a session used and reports whether it already was.
func (s *Sessions) claim(slot int32) bool {
	was := s.used[slot]
	s.used[slot] = true
	return was
}

// entryAt is the entry id of a slot ("" for -1).
func (s *Sessions) entryAt(slot int32) string {
	if slot < 0 {
		return ""
	}
	return s.entries[s.vals[slot]]
}

// Len is the number of sessions.
func (s *Sessions) Len() int { return s.n }
