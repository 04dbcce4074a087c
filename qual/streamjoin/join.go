// Package streamjoin is the streaming form of qual.Join: it reads a
// checkpoint's four artifacts straight from disk (AIPerf's records and raw
// export, the server's request records, the native runner's answers),
// joins them by request identity and counts every request in exactly one
// status per phase, with the same precedence and the same answer semantics
// (the family's extractor and comparator from families.Registry) as
// qual.Join given every records line as a client request.
//
// Memory does not grow with payload or answer sizes: each request id keeps
// an 80-byte index entry and a 4-byte table slot holding its phase, HTTP
// status, start time, task latency, image size, counts per source, small
// flags and a 64-bit hash of its canonical native answer, never the bytes.
// Base64 images in the raw export are skipped, not decoded. Files are
// parsed in parallel chunks (one worker per CPU) and merged in file order.
// docs/performance.md has the measurements behind each choice.
package streamjoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

// Phases, counts and image sizes are the row model's (reports owns them).
const (
	PhaseWarmup   = reports.PhaseWarmup
	PhaseMeasured = reports.PhaseMeasured
)

// Counts are per-phase join counts.
type Counts = reports.Counts

// ImageSize counts measured, matched requests per image size.
type ImageSize = reports.ImageSize

// Files are the four artifacts of one checkpoint.
type Files struct {
	Records       string // AIPerf profile_export.jsonl
	Raw           string // AIPerf profile_export_raw.jsonl
	ServerRecords string // the server's request records
	Native        string // the native runner's answers
}

// CheckpointFiles names the artifacts in a checkpoint's evidence directory
// as the pipeline lays it out.
func CheckpointFiles(dir string) Files {
	return Files{
		Records:       filepath.Join(dir, "aiperf", aiperf.FileRecords),
		Raw:           filepath.Join(dir, "aiperf", aiperf.FileRaw),
		ServerRecords: filepath.Join(dir, "server_records.jsonl"),
		Native:        filepath.Join(dir, "native_answers.jsonl"),
	}
}

// Options are the join's semantics, as in qual.JoinInput.
type Options struct {
	Family *families.Family
	// Extractor and Comparator must be safe for concurrent use (the
	// registered ones are stateless).
	Extractor  families.Extractor
	Comparator families.Comparator
	// EntryOf maps a conversation id to its dataset entry; nil knows none.
	// It is called by one goroutine at a time (the merge is serialised).
	EntryOf func(conversationID string) (string, bool)
	// Sessions, when set, replaces EntryOf: looked up in the parsing
	// goroutines, without a string per request.
	Sessions *Sessions
	Expected map[string]int // per phase
	// Workers parse in parallel (default GOMAXPROCS).
	Workers int
	// NoMemo extracts every answer, even one whose exact bytes were
	// extracted before (for measurements; the result is the same).
	NoMemo bool
	// SizeHint is the expected number of request ids (0: grow as needed).
	SizeHint int
}

// Result is what the join adds up to: qual.JoinOutput without the
// per-request lines.
type Result struct {
	ByPhase map[string]Counts `json:"by_phase"`
	// MeasuredTask are task latencies of measured, matched requests in
	// request start order.
	MeasuredTask []float64   `json:"-"`
	OutputTokens int         `json:"output_tokens"`
	Boxes        int         `json:"boxes"`
	ImageSizes   []ImageSize `json:"image_sizes"`
	// Orphans counts request ids the server recorded and no client
	// request claims; OrphanExamples are the first few, sorted.
	Orphans        int      `json:"orphans"`
	OrphanExamples []string `json:"orphan_examples,omitempty"`
	Stats          Stats    `json:"stats"`
}

// Stats describe the input.
type Stats struct {
	ClientRecords int   `json:"client_records"`
	RequestIDs    int   `json:"request_ids"`
	Bytes         int64 `json:"bytes"`
}

// maxOrphanExamples bounds Result.OrphanExamples.
const maxOrphanExamples = 10

type joiner struct {
	opts    Options
	files   Files
	h       hasher
	x       *index
	workers []*worker
	seq     uint32
	// dupPhases are the phases of the second and later client records of
	// an id (each is counted, as qual.Join counts every request).
	dupPhases []uint8
	native    *os.File // for comparators that need the native answer's bytes
	lineBuf   []byte
	exact     bool
	res       *Result
}

// Join reads files and joins them (see the package comment). The error is
// for unreadable or malformed files ("file:line: field: problem");
// everything else is a count.
func Join(ctx context.Context, files Files, opts Options) (*Result, error) {
	if opts.Extractor == nil || opts.Comparator == nil {
		return nil, errors.New("streamjoin: extractor and comparator are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	j := &joiner{opts: opts, files: files, h: newHasher(), x: newIndex(opts.SizeHint), res: &Result{ByPhase: map[string]Counts{}}}
	j.exact = opts.Comparator == families.DefaultRegistry().Comparators["exact"]
	for range opts.Workers {
		w := newWorker(j.h, opts.Extractor, opts.Family, !opts.NoMemo)
		w.sessions = opts.Sessions
		j.workers = append(j.workers, w)
	}
	nf, err := os.Open(files.Native)
	if err != nil {
		return nil, fmt.Errorf("streamjoin: %w", err)
	}
	defer nf.Close()
	j.native = nf

	// Order matters: native answers and server records first, so that
	// when a raw line is read its answer can be compared at once.
	steps := []func(context.Context) (int64, error){j.readNative, j.readServer, j.readRecords, j.readRaw}
	for i, step := range steps {
		n, err := step(ctx)
		j.res.Stats.Bytes += n
		if err != nil {
			return nil, err
		}
		if i == 2 { // the sessions are not needed after the records
			j.opts.Sessions, j.opts.EntryOf = nil, nil
			for _, w := range j.workers {
				w.sessions = nil
			}
		}
	}
	j.finish()
	if j.res.Orphans > 0 {
		if err := j.orphanExamples(ctx); err != nil {
			return nil, err
		}
	}
	return j.res, nil
}

func (j *joiner) readNative(ctx context.Context) (int64, error) {
	return scanFile(ctx, j.files.Native, j.opts.Workers, j.workers, parseNativeLine,
		func(_ int, off int64, v *nativeLine) error {
			e := j.x.get(v.key)
			bump8(&e.nats)
			if e.nats != 1 {
				return nil
			}
			e.natOff = off
			switch {
			case v.failed:
				e.flags |= fNatFailed
			case v.ans.outcome != ansOK:
				e.flags |= fNatBad
			default:
				e.natHash, e.natTokens, e.natBoxes = v.ans.hash, v.ans.tokens, v.ans.boxes
			}
			return nil
		})
}

func (j *joiner) readServer(ctx context.Context) (int64, error) {
	return scanFile(ctx, j.files.ServerRecords, j.opts.Workers, j.workers, parseServerLine,
		func(_ int, off int64, v *serverLine) error {
			e := j.x.get(v.key)
			bump8(&e.recs)
			if e.recs == 1 {
				e.taskMS, e.imgW, e.imgH = v.taskMS, v.w, v.h
				if e.natOff < 0 {
					// No native answer: remember where the id is written,
					// should it be an orphan.
					e.natOff, e.srvOff = off, true
				}
			}
			return nil
		})
}

func (j *joiner) readRecords(ctx context.Context) (int64, error) {
	return scanFile(ctx, j.files.Records, j.opts.Workers, j.workers, parseRecordLine,
		func(_ int, _ int64, v *clientLine) error {
			j.res.Stats.ClientRecords++
			e := j.x.get(v.key)
			bump8(&e.copies)
			if e.copies > 1 {
				j.dupPhases = append(j.dupPhases, v.phase)
				return nil
			}
			e.flags |= fClient
			e.seq = j.seq
			j.seq++
			e.phase, e.startNs, e.status = v.phase, v.startNs, v.status
			if v.failed {
				e.flags |= fFailed
			}
			switch {
			case j.opts.Sessions != nil:
				if v.entryOK {
					e.flags |= fEntryOK
				}
			case j.opts.EntryOf != nil:
				if _, ok := j.opts.EntryOf(string(v.conv)); ok {
					e.flags |= fEntryOK
				}
			}
			return nil
		})
}

func (j *joiner) readRaw(ctx context.Context) (int64, error) {
	return scanFile(ctx, j.files.Raw, j.opts.Workers, j.workers, parseRawLine,
		func(_ int, _ int64, v *rawLine) error {
			e := j.x.lookup(v.key)
			if e == nil || e.flags&fClient == 0 || e.flags&fRawSeen != 0 {
				return nil // not a client request, or not its first raw line
			}
			e.flags |= fRawSeen
			if v.hasStatus {
				e.status = v.status
			}
			e.ans = v.ans.outcome
			if e.ans != ansOK || e.nats == 0 || e.flags&(fNatFailed|fNatBad) != 0 {
				return nil
			}
			if v.ans.hash == e.natHash {
				return nil
			}
			if j.exact {
				e.flags |= fMismatch
				return nil
			}
			// A tolerant comparator: compare the real answers.
			nat, err := j.nativeAt(e.natOff)
			if err != nil {
				return err
			}
			httpAns := families.Answer{Canonical: v.ans.canon, Tokens: int(v.ans.tokens), Boxes: int(v.ans.boxes)}
			if j.opts.Comparator.Compare(httpAns, nat, j.opts.Family) != "" {
				e.flags |= fMismatch
			}
			return nil
		})
}

// nativeAt re-reads the native answer line at off.
func (j *joiner) nativeAt(off int64) (families.Answer, error) {
	line, err := j.lineAt(j.native, off)
	if err != nil {
		return families.Answer{}, err
	}
	_, answer, _, err := readNativeLine(line)
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

// judge is qual.Join's order of precedence over the index entry.
func (j *joiner) judge(e *entry) string {
	switch {
	case e.copies > 1, e.recs > 1, e.nats > 1:
		return "duplicate"
	case e.flags&fFailed != 0:
		return "errored"
	case e.status < 200 || e.status > 299:
		return "errored"
	case e.flags&fEntryOK == 0:
		return "missing_http"
	}
	ans := e.ans
	if e.flags&fRawSeen == 0 {
		ans = j.emptyBodyOutcome()
	}
	switch {
	case ans == ansBad:
		return "missing_http"
	case ans == ansMeaningless:
		return "meaningless"
	case e.recs == 0:
		return "missing_server_record"
	case e.nats == 0, e.flags&(fNatFailed|fNatBad) != 0:
		return "missing_native"
	case e.flags&fMismatch != 0:
		return "mismatched"
	}
	return "matched"
}

// emptyBodyOutcome is the outcome of a request with no raw line: the
// extractor judges an empty body.
func (j *joiner) emptyBodyOutcome() uint8 {
	return j.workers[0].extractHTTP(nil).outcome
}

func phaseString(p uint8) string {
	if p == phaseWarmup {
		return PhaseWarmup
	}
	return PhaseMeasured
}

func bump(c *Counts, status string) {
	switch status {
	case "matched":
		c.Matched++
	case "mismatched":
		c.Mismatched++
	case "errored":
		c.Errored++
	case "missing_native":
		c.MissingNative++
	case "missing_http":
		c.MissingHTTP++
	case "missing_server_record":
		c.MissingServerRecord++
	case "duplicate":
		c.Duplicates++
	case "meaningless":
		c.Meaningless++
	}
}

func (j *joiner) finish() {
	res := j.res
	for phase, n := range j.opts.Expected {
		c := res.ByPhase[phase]
		c.Expected = n
		res.ByPhase[phase] = c
	}
	type task struct {
		startNs int64
		seq     uint32
		ms      float64
	}
	var tasks []task
	sizes := map[[2]int32]int{}
	var counts [3]Counts
	var seen [3]bool
	for i := uint32(0); i < j.x.n; i++ {
		e := j.x.at(i)
		if e.recs > 0 && e.flags&fClient == 0 {
			res.Orphans++
		}
		if e.flags&fClient == 0 {
			continue
		}
		status := j.judge(e)
		c := &counts[e.phase]
		seen[e.phase] = true
		c.Sent++
		bump(c, status)
		if status != "matched" || e.phase != phaseMeasured {
			continue
		}
		res.OutputTokens += int(e.natTokens)
		res.Boxes += int(e.natBoxes)
		if !math.IsNaN(e.taskMS) {
			tasks = append(tasks, task{e.startNs, e.seq, e.taskMS})
		}
		if e.imgW > 0 {
			sizes[[2]int32{e.imgW, e.imgH}]++
		}
	}
	for _, p := range j.dupPhases {
		seen[p] = true
		counts[p].Sent++
		counts[p].Duplicates++
	}
	for p := phaseWarmup; p <= phaseMeasured; p++ {
		if !seen[p] {
			continue
		}
		name := phaseString(p)
		c := res.ByPhase[name]
		exp := c.Expected
		c = counts[p]
		c.Expected = exp
		res.ByPhase[name] = c
	}
	slices.SortFunc(tasks, func(a, b task) int {
		if a.startNs != b.startNs {
			if a.startNs < b.startNs {
				return -1
			}
			return 1
		}
		return int(a.seq) - int(b.seq)
	})
	res.MeasuredTask = make([]float64, len(tasks))
	for i, t := range tasks {
		res.MeasuredTask[i] = t.ms
	}
	for k, n := range sizes {
		res.ImageSizes = append(res.ImageSizes, ImageSize{Width: int(k[0]), Height: int(k[1]), Count: n})
	}
	sort.Slice(res.ImageSizes, func(a, b int) bool {
		x, y := res.ImageSizes[a], res.ImageSizes[b]
		if x.Width != y.Width {
			return x.Width < y.Width
		}
		return x.Height < y.Height
	})
	res.Stats.RequestIDs = int(j.x.n)
}

// orphanExamples reads back the ids of the server records no client
// request claims (the index keeps keys, not id strings) and keeps the
// smallest few: from the line offsets the index kept, or, for very many
// orphans, by reading the server records again.
func (j *joiner) orphanExamples(ctx context.Context) error {
	var ex []string
	keep := func(id string) {
		k, found := slices.BinarySearch(ex, id)
		if found || k >= maxOrphanExamples {
			return
		}
		ex = slices.Insert(ex, k, id)
		if len(ex) > maxOrphanExamples {
			ex = ex[:maxOrphanExamples]
		}
	}
	defer func() { j.res.OrphanExamples = ex }()
	if j.res.Orphans <= 10000 {
		sf, err := os.Open(j.files.ServerRecords)
		if err != nil {
			return err
		}
		defer sf.Close()
		for i := uint32(0); i < j.x.n; i++ {
			e := j.x.at(i)
			if e.recs == 0 || e.flags&fClient != 0 {
				continue
			}
			f, read := j.native, readNativeID
			if e.srvOff {
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
			keep(id)
		}
		return nil
	}
	_, err := scanFile(ctx, j.files.ServerRecords, j.opts.Workers, j.workers,
		func(_ *worker, line []byte, out *string) (err error) {
			*out, err = readServerID(line)
			return err
		},
		func(_ int, _ int64, id *string) error {
			if e := j.x.lookup(j.h.key([]byte(*id))); e != nil && e.flags&fClient == 0 {
				keep(*id)
			}
			return nil
		})
	return err
}

func readNativeID(line []byte) (string, error) {
	id, _, _, err := readNativeLine(line)
	return string(id), err
}

func readServerID(line []byte) (string, error) {
	var v serverLine
	w := worker{}
	var id string
	err := parseServerLineID(&w, line, &v, &id)
	return id, err
}

// Sessions is a dataset's session_id -> entry_id map in compact form: a
// 64-bit hash per session id and an index into the (few) distinct entry
// ids, not the strings: 12 bytes a session at most 3/4 full, so a million
// sessions cost under 32 MiB. It is immutable once loaded and safe for
// concurrent use.
type Sessions struct {
	seed    maphash.Seed
	keys    []uint64 // 0: empty
	vals    []uint32 // entry index
	mask    uint64
	n       int
	entries []string
}

func newSessions() *Sessions {
	s := &Sessions{seed: maphash.MakeSeed()}
	s.resize(1 << 12)
	return s
}

func (s *Sessions) resize(size int) {
	keys, vals := s.keys, s.vals
	s.keys, s.vals, s.mask = make([]uint64, size), make([]uint32, size), uint64(size-1)
	for i, k := range keys {
		if k != 0 {
			s.put(k, vals[i])
		}
	}
}

func (s *Sessions) put(h uint64, v uint32) {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.keys[i] {
		case 0:
			s.keys[i], s.vals[i] = h, v
			return
		case h:
			s.vals[i] = v
			return
		}
	}
}

func (s *Sessions) hash(b []byte) uint64 {
	if h := maphash.Bytes(s.seed, b); h != 0 {
		return h
	}
	return 1
}

func (s *Sessions) find(h uint64) (uint32, bool) {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.keys[i] {
		case 0:
			return 0, false
		case h:
			return s.vals[i], true
		}
	}
}

// Has reports whether a conversation id is one of the sessions.
func (s *Sessions) Has(conversationID []byte) bool {
	_, ok := s.find(s.hash(conversationID))
	return ok
}

// EntryOf maps a conversation id to its entry (streamjoin.Options.EntryOf).
func (s *Sessions) EntryOf(conversationID string) (string, bool) {
	v, ok := s.find(s.hash([]byte(conversationID)))
	if !ok {
		return "", false
	}
	return s.entries[v], true
}

// Len is the number of sessions.
func (s *Sessions) Len() int { return s.n }

// LoadSessions reads JSONL lines of {"session_id", "entry_id"} (the
// Sessions of aiperf.Dataset, one per line).
func LoadSessions(ctx context.Context, path string) (*Sessions, error) {
	s := newSessions()
	byEntry := map[string]uint32{}
	workers := runtime.GOMAXPROCS(0)
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = newWorker(newHasher(), nil, nil, false)
	}
	type line struct {
		hash  uint64
		entry []byte
	}
	_, err := scanFile(ctx, path, workers, ws,
		func(w *worker, b []byte, out *line) error {
			i, empty, err := objectOpen(b, 0)
			if err != nil {
				return err
			}
			var sid []byte
			for more := !empty; more; {
				var key, v []byte
				if key, i, err = objectKey(b, i); err != nil {
					return err
				}
				switch string(key) {
				case "session_id":
					v, i, _, err = readString(nil, b, i)
					sid = v
				case "entry_id":
					v, i, _, err = readString(nil, b, i)
					out.entry = v
				default:
					i, err = skipValue(b, i)
				}
				if err != nil {
					return inField(string(key), err)
				}
				if i, more, err = objectNext(b, i); err != nil {
					return err
				}
			}
			if err := lineEnd(b, i); err != nil {
				return err
			}
			if len(sid) == 0 {
				return &fieldError{"session_id", errMissing}
			}
			out.hash = s.hash(sid)
			return nil
		},
		func(_ int, _ int64, v *line) error {
			e, ok := byEntry[string(v.entry)]
			if !ok {
				e = uint32(len(s.entries))
				s.entries = append(s.entries, string(v.entry))
				byEntry[string(v.entry)] = e
			}
			if _, dup := s.find(v.hash); !dup {
				s.n++
				if uint64(s.n) > (s.mask+1)*3/4 {
					s.resize(2 * len(s.keys))
				}
			}
			s.put(v.hash, e)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return s, nil
}
