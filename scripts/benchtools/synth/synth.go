// Package synth writes synthetic, deterministic checkpoint artifacts shaped
// like AIPerf 0.13.0's (profile_export.jsonl, profile_export_raw.jsonl
// with base64 image payloads) and the reference server's and native
// runner's (server_records.jsonl, native_answers.jsonl), plus the dataset
// AIPerf was given (dataset.jsonl), at any size, for the benchmark of
// `trtmc-qual report --rejudge` and the join's tests; Seal completes them
// into a sealed evidence directory.
//
// Line shapes (key order, metadata, metric sets, headers) are copied from
// the real 0.13.0 fixtures in qual/aiperf/testdata. A small share of
// requests carries one injected fault each, so every join status occurs;
// the generator knows which, and writes the counts a correct join must
// find to expected.json.
package synth

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Families the generator can shape.
const (
	FamilyDetect = "ref-detect"
	FamilyVLM    = "ref-vlm"
)

// Config sizes one synthetic checkpoint.
type Config struct {
	// Requests is the number of requests AIPerf sent (warmup + measured).
	Requests int
	// Warmup of them are warmup requests (default 5).
	Warmup int
	// Family is FamilyDetect (default) or FamilyVLM.
	Family string
	// Entries is the corpus size the dataset cycles through (default 24).
	Entries int
	// ImageMin and ImageMax bound the base64 length of each corpus image
	// (default 2048..8192).
	ImageMin, ImageMax int
	// Seed makes the output deterministic.
	Seed uint64
	// NoFaults writes a clean run where every request matches.
	NoFaults bool
}

func (c *Config) defaults() {
	if c.Warmup == 0 {
		c.Warmup = 5
	}
	if c.Family == "" {
		c.Family = FamilyDetect
	}
	if c.Entries == 0 {
		c.Entries = 24
	}
	if c.ImageMin == 0 {
		c.ImageMin = 2048
	}
	if c.ImageMax == 0 {
		c.ImageMax = 8192
	}
}

// File names inside the output directory: the pipeline's checkpoint layout
// (dataset.jsonl as the pipeline writes it for AIPerf: one line per
// request, session_id "<entry>#<k>", the image as a data URL) plus
// expected.json.
const (
	FileRecords  = "aiperf/profile_export.jsonl"
	FileRaw      = "aiperf/profile_export_raw.jsonl"
	FileServer   = "server_records.jsonl"
	FileNative   = "native_answers.jsonl"
	FileDataset  = "dataset.jsonl"
	FileExpected = "expected.json"
)

// Counts are per-phase join counts.
type Counts = verdict.Counts

// Expected is what a correct join of the written files finds.
type Expected struct {
	Family  string            `json:"family"`
	Config  Config            `json:"config"`
	ByPhase map[string]Counts `json:"by_phase"`
	// Orphans are server records no client request claims.
	Orphans int   `json:"orphans"`
	Bytes   int64 `json:"bytes"`
}

// faults, one per affected request; weights per 10,000 requests.
type fault int

const (
	fNone fault = iota
	fHTTP500
	fCancelled
	fTransport
	fMismatch
	fReformatted // native answer bytes differ, value equal: still matched
	fMeaningless
	fBadBody
	fNoServerRecord
	fDupServerRecord
	fNoNative
	fNativeError
	fUnknownConversation
	fDupClientRecord
	fOrphan // an extra server record no client request claims
	// fNoEcho and fWrongEcho: the answer carries no X-Request-ID header,
	// or echoes another id, in the record's HTTP trace.
	fNoEcho
	fWrongEcho
	nFaults
)

var faultWeights = [nFaults]int{
	fHTTP500: 20, fCancelled: 5, fTransport: 5, fMismatch: 10, fReformatted: 5, fMeaningless: 5,
	fBadBody: 3, fNoServerRecord: 5, fDupServerRecord: 5, fNoNative: 5, fNativeError: 5,
	fUnknownConversation: 5, fDupClientRecord: 2, fOrphan: 5, fNoEcho: 5, fWrongEcho: 5,
}

type entry struct {
	id            string
	image         string // data URL
	imageBytes    int
	width, height int
	question      string
	answer        []byte // native answer JSON: the data array, or a JSON string
	altAnswer     []byte // same value, different bytes
	wrongAnswer   []byte
	body          []byte // HTTP body without per-request parts (detect)
	meaningless   []byte // HTTP body with an empty answer
	meaninglessNA []byte
	text          string
}

type request struct {
	id, corr, conv string
	entry          int
	phase          string
	phaseIndex     int
	profIndex      int
	sessionNum     int
	credit         int64
	start          int64
	ack            int64
	end            int64
	perfStart      int64
	latencyMS      float64
	fault          fault
}

// labels is ref-detect's label space as families/families.yaml lists it:
// a rejudge takes it from there, and holds the row's to it.
var labels = []string{"red_square", "green_square", "blue_square", "yellow_square", "red_disc", "green_disc", "blue_disc", "yellow_disc"}

// Write generates the artifacts into dir and returns what a join must find.
func Write(dir string, cfg Config) (*Expected, error) {
	cfg.defaults()
	if cfg.Requests <= cfg.Warmup {
		return nil, fmt.Errorf("synth: %d requests, want more than the %d warmup", cfg.Requests, cfg.Warmup)
	}
	if cfg.Family != FamilyDetect && cfg.Family != FamilyVLM {
		return nil, fmt.Errorf("synth: unknown family %q", cfg.Family)
	}
	if err := os.MkdirAll(filepath.Join(dir, "aiperf"), 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7472746d63))
	g := &gen{cfg: cfg, rng: rng}
	g.corpus()
	g.plan()
	exp := g.expected()
	for _, w := range []struct {
		name string
		fn   func(*bufio.Writer) error
	}{
		{FileDataset, g.writeDataset},
		{FileNative, g.writeNative},
		{FileServer, g.writeServer},
		{FileRecords, g.writeRecords},
		{FileRaw, g.writeRaw},
	} {
		n, err := writeFile(filepath.Join(dir, w.name), w.fn)
		if err != nil {
			return nil, err
		}
		exp.Bytes += n
	}
	data, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return nil, err
	}
	return exp, os.WriteFile(filepath.Join(dir, FileExpected), append(data, '\n'), 0o644)
}

func writeFile(path string, fn func(*bufio.Writer) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := fn(w); err != nil {
		f.Close()
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

type gen struct {
	cfg     Config
	rng     *rand.Rand
	entries []entry
	reqs    []request
	orphans []string
	line    []byte
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := g.rng.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hexd = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hexd[c>>4], hexd[c&15]
		j += 2
	}
	return string(out)
}

func round4(v float64) float64 { return float64(int(v*10000+0.5)) / 10000 }

func (g *gen) corpus() {
	sizes := [][2]int{{64, 64}, {96, 64}, {112, 80}, {128, 96}, {160, 120}, {200, 150}}
	questions := []string{"How many shapes are in the image?", "What is the image size?", "What colour is the largest shape?"}
	for i := range g.cfg.Entries {
		n := g.cfg.ImageMin
		if g.cfg.ImageMax > g.cfg.ImageMin {
			n += g.rng.IntN(g.cfg.ImageMax - g.cfg.ImageMin + 1)
		}
		raw := make([]byte, n*3/4)
		for k := range raw {
			raw[k] = byte(g.rng.Uint32())
		}
		copy(raw, "\x89PNG\r\n\x1a\n")
		sz := sizes[i%len(sizes)]
		e := entry{id: fmt.Sprintf("img-%04d", i), image: "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw),
			imageBytes: len(raw), width: sz[0], height: sz[1], question: questions[i%len(questions)]}
		if g.cfg.Family == FamilyDetect {
			g.boxes(&e)
		} else {
			g.text(&e, i)
		}
		g.entries = append(g.entries, e)
	}
}

// boxes makes a detection answer: the native `data` array and the HTTP
// body around it, with 4-decimal numbers as the reference server writes.
func (g *gen) boxes(e *entry) {
	type box struct{ x0, y0, x1, y1, c float64 }
	k := 1 + g.rng.IntN(5)
	picked := slices.Clone(labels)
	g.rng.Shuffle(len(picked), func(a, b int) { picked[a], picked[b] = picked[b], picked[a] })
	picked = picked[:k]
	slices.Sort(picked)
	bs := make([]box, k)
	for i := range bs {
		x0, y0 := round4(g.rng.Float64()*0.6), round4(g.rng.Float64()*0.6)
		bs[i] = box{x0, y0, round4(x0 + 0.05 + g.rng.Float64()*0.3), round4(y0 + 0.05 + g.rng.Float64()*0.3), round4(0.9 + g.rng.Float64()*0.09)}
	}
	format := func(variant int, empty bool) []byte {
		var b []byte
		b = append(b, `[{"index":0,"bounding_boxes":{`...)
		if !empty {
			for i, l := range picked {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, '"')
				b = append(b, l...)
				b = append(b, `":[{"x_min":`...)
				x := bs[i]
				b = strconv.AppendFloat(b, x.x0, 'f', -1, 64)
				if variant == 1 && i == 0 {
					b = append(b, '0') // 0.8125 -> 0.81250: same value
					if x.x0 == float64(int(x.x0)) {
						b = append(b[:len(b)-1], ".0"...)
					}
				}
				b = append(b, `,"y_min":`...)
				b = strconv.AppendFloat(b, x.y0, 'f', -1, 64)
				b = append(b, `,"x_max":`...)
				x1 := x.x1
				if variant == 2 && i == 0 {
					x1 = round4(x1 + 0.0001)
				}
				b = strconv.AppendFloat(b, x1, 'f', -1, 64)
				b = append(b, `,"y_max":`...)
				b = strconv.AppendFloat(b, x.y1, 'f', -1, 64)
				b = append(b, `,"confidence":`...)
				b = strconv.AppendFloat(b, x.c, 'f', -1, 64)
				b = append(b, "}]"...)
			}
		}
		b = append(b, "}}]"...)
		return b
	}
	e.answer, e.altAnswer, e.wrongAnswer = format(0, false), format(1, false), format(2, false)
	e.meaninglessNA = format(0, true)
	wrap := func(data []byte) []byte {
		b := append([]byte(`{"data":`), data...)
		return append(b, `,"usage":{"num_images":1}}`+"\n"...)
	}
	e.body = wrap(e.answer)
	e.meaningless = wrap(e.meaninglessNA)
}

func (g *gen) text(e *entry, i int) {
	answers := []string{"4", "64x64", "green", "3", "red square", "blue"}
	e.text = answers[i%len(answers)]
	e.answer, _ = json.Marshal(e.text)
	e.altAnswer = []byte(`"\u00` + strconv.FormatInt(int64(e.text[0]), 16) + e.text[1:] + `"`)
	e.wrongAnswer, _ = json.Marshal(e.text + " and more")
	e.meaninglessNA = []byte(`""`)
}

// plan decides every request: its id, entry, phase, timings and fault.
func (g *gen) plan() {
	total := 0
	for _, w := range faultWeights {
		total += w
	}
	start := int64(1796024903069438889)
	perf := int64(828340713294)
	uses := make([]int, len(g.entries))
	g.reqs = make([]request, g.cfg.Requests)
	for i := range g.reqs {
		r := &g.reqs[i]
		r.id, r.corr = g.uuid(), g.uuid()
		r.entry = i % len(g.entries)
		r.conv = g.entries[r.entry].id + "#" + strconv.Itoa(uses[r.entry])
		uses[r.entry]++
		r.phase, r.phaseIndex = "warmup", 0
		r.sessionNum = i
		if i >= g.cfg.Warmup {
			r.phase, r.phaseIndex, r.profIndex = "profiling", 1, i-g.cfg.Warmup
		}
		r.credit = start + int64(i)*1_700_000
		r.start = r.credit + int64(g.rng.IntN(3_000_000))
		lat := 2_000_000 + int64(g.rng.IntN(18_000_000))
		r.ack = r.start + lat - int64(g.rng.IntN(1_000_000))
		r.end = r.start + lat
		r.perfStart = perf + (r.start - start)
		r.latencyMS = float64(lat) / 1e6
		if !g.cfg.NoFaults {
			pick := g.rng.IntN(10000)
			for f, w := range faultWeights {
				if pick < w {
					r.fault = fault(f)
					break
				}
				pick -= w
			}
		}
		if r.fault == fUnknownConversation {
			r.conv = "not-in-dataset#" + strconv.Itoa(i)
		}
		if r.fault == fOrphan {
			g.orphans = append(g.orphans, g.uuid())
			r.fault = fNone
		}
	}
}

func (g *gen) expected() *Expected {
	exp := &Expected{Family: g.cfg.Family, Config: g.cfg, ByPhase: map[string]Counts{}}
	for _, r := range g.reqs {
		phase := "measured"
		if r.phase == "warmup" {
			phase = "warmup"
		}
		c := exp.ByPhase[phase]
		c.Expected++
		c.Sent++
		switch r.fault {
		case fNone, fReformatted:
			c.Matched++
		case fHTTP500, fCancelled, fTransport:
			c.Errored++
		case fMismatch:
			c.Mismatched++
		case fMeaningless:
			c.Meaningless++
		case fBadBody:
			c.MissingHTTP++
		case fUnknownConversation:
			c.UnknownConversation++
		case fNoServerRecord:
			c.MissingServerRecord++
		case fDupServerRecord:
			c.Duplicates++
		case fNoNative, fNativeError:
			c.MissingNative++
		case fDupClientRecord:
			c.Sent++
			c.Duplicates += 2
		case fNoEcho:
			c.EchoMissing++
		case fWrongEcho:
			c.EchoMismatched++
		}
		if r.echoes() {
			c.EchoProven++ // the first copy of a duplicate is the request
		}
		exp.ByPhase[phase] = c
	}
	exp.Orphans = len(g.orphans)
	return exp
}

// order returns request indexes in a completion-like order: file order
// with neighbours swapped within small windows (AIPerf writes records in
// completion order; concurrency reorders them a little).
func (g *gen) order(window int) []int {
	idx := make([]int, len(g.reqs))
	for i := range idx {
		idx[i] = i
	}
	for s := 0; s < len(idx); s += window {
		e := min(s+window, len(idx))
		g.rng.Shuffle(e-s, func(a, b int) { idx[s+a], idx[s+b] = idx[s+b], idx[s+a] })
	}
	return idx
}

func (g *gen) writeDataset(w *bufio.Writer) error {
	for _, r := range g.reqs {
		if r.fault == fUnknownConversation {
			continue
		}
		e := &g.entries[r.entry]
		b := append(g.line[:0], `{"session_id":`...)
		b = strconv.AppendQuote(b, r.conv)
		if g.cfg.Family == FamilyVLM {
			b = append(b, `,"text":`...)
			b = strconv.AppendQuote(b, e.question)
		}
		b = append(b, `,"image":"`...)
		b = append(b, e.image...)
		b = append(b, "\"}\n"...)
		g.line = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) writeNative(w *bufio.Writer) error {
	for _, r := range g.reqs { // native_requests order: the run's requests
		if r.fault == fNoNative || r.fault == fTransport || r.fault == fCancelled {
			continue // no payload recorded, or the runner lost it
		}
		e := &g.entries[r.entry]
		b := append(g.line[:0], `{"request_id":"`...)
		b = append(b, r.id...)
		b = append(b, '"')
		switch r.fault {
		case fNativeError:
			b = append(b, `,"task_ms":0,"error":"payload image is not a PNG or JPEG"`...)
		default:
			ans := e.answer
			switch r.fault {
			case fMismatch:
				ans = e.wrongAnswer
			case fReformatted:
				ans = e.altAnswer
			case fMeaningless:
				ans = e.meaninglessNA
			}
			b = append(b, `,"answer":`...)
			b = append(b, ans...)
			b = append(b, `,"task_ms":`...)
			b = strconv.AppendFloat(b, round3(0.2+g.rng.Float64()*3), 'f', -1, 64)
		}
		b = append(b, "}\n"...)
		g.line = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func round3(v float64) float64 { return float64(int(v*1000+0.5)) / 1000 }

func (g *gen) route() (string, string) {
	if g.cfg.Family == FamilyDetect {
		return "/v1/infer", "ref-detect-small"
	}
	return "/v1/chat/completions", "ref-vlm-small"
}

func (g *gen) serverLine(b []byte, id string, r *request) []byte {
	route, model := g.route()
	e := &g.entries[r.entry]
	status := 200
	if r.fault == fHTTP500 {
		status = 500
	}
	// The Task call is inside the request the client timed: never longer.
	task := round3(min(0.3+g.rng.Float64()*3, r.latencyMS*0.9))
	b = append(b, `{"request_id":"`...)
	b = append(b, id...)
	b = append(b, `","route":"`...)
	b = append(b, route...)
	b = append(b, `","model":"`...)
	b = append(b, model...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"handler_ms":`...)
	b = strconv.AppendFloat(b, round3(task+0.3), 'f', -1, 64)
	b = append(b, `,"queue_ms":0.004,"task_ms":`...)
	b = strconv.AppendFloat(b, task, 'f', -1, 64)
	b = append(b, `,"image_bytes":`...)
	b = strconv.AppendInt(b, int64(e.imageBytes), 10)
	b = append(b, `,"image_width":`...)
	b = strconv.AppendInt(b, int64(e.width), 10)
	b = append(b, `,"image_height":`...)
	b = strconv.AppendInt(b, int64(e.height), 10)
	b = append(b, `,"warmup_marker":`...)
	b = strconv.AppendBool(b, r.phase == "warmup" && g.cfg.Family == FamilyVLM)
	if g.cfg.Family == FamilyVLM {
		b = append(b, `,"prompt_tokens":7,"completion_tokens":1,"token_source":"whitespace_words"}`...)
	} else {
		b = append(b, `,"prompt_tokens":0,"completion_tokens":0}`...)
	}
	return append(b, '\n')
}

func (g *gen) writeServer(w *bufio.Writer) error {
	orphan := 0
	for n, i := range g.order(4) {
		r := &g.reqs[i]
		if r.fault == fNoServerRecord || r.fault == fTransport || r.fault == fCancelled {
			continue
		}
		b := g.serverLine(g.line[:0], r.id, r)
		if r.fault == fDupServerRecord {
			b = g.serverLine(b, r.id, r)
		}
		if orphan < len(g.orphans) && n%97 == 50 {
			b = g.serverLine(b, g.orphans[orphan], r)
			orphan++
		}
		g.line = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	for ; orphan < len(g.orphans); orphan++ {
		g.line = g.serverLine(g.line[:0], g.orphans[orphan], &g.reqs[0])
		if _, err := w.Write(g.line); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) metadata(b []byte, r *request) []byte {
	b = append(b, `{"session_num":`...)
	b = strconv.AppendInt(b, int64(r.sessionNum), 10)
	b = append(b, `,"x_request_id":"`...)
	b = append(b, r.id...)
	b = append(b, `","x_correlation_id":"`...)
	b = append(b, r.corr...)
	b = append(b, `","conversation_id":`...)
	b = strconv.AppendQuote(b, r.conv)
	b = append(b, `,"turn_index":0,"credit_issued_ns":`...)
	b = strconv.AppendInt(b, r.credit, 10)
	b = append(b, `,"request_start_ns":`...)
	b = strconv.AppendInt(b, r.start, 10)
	if r.fault != fTransport && r.fault != fCancelled {
		b = append(b, `,"request_ack_ns":`...)
		b = strconv.AppendInt(b, r.ack, 10)
	}
	b = append(b, `,"request_end_ns":`...)
	b = strconv.AppendInt(b, r.end, 10)
	b = append(b, `,"worker_id":"worker_a9a32895","record_processor_id":"record_processor_5d37a472","benchmark_phase":"`...)
	b = append(b, r.phase...)
	b = append(b, `","phase_index":`...)
	b = strconv.AppendInt(b, int64(r.phaseIndex), 10)
	if r.phase == "profiling" {
		b = append(b, `,"profiling_index":`...)
		b = strconv.AppendInt(b, int64(r.profIndex), 10)
	}
	b = append(b, `,"phase_name":"`...)
	b = append(b, r.phase...)
	b = append(b, `","phase_kind":"`...)
	b = append(b, r.phase...)
	b = append(b, `","was_cancelled":`...)
	b = strconv.AppendBool(b, r.fault == fCancelled)
	b = append(b, `,"context_overflow_skip":false,"agent_depth":0,"root_correlation_id":"`...)
	b = append(b, r.corr...)
	return append(b, `"}`...)
}

func metric(b []byte, first bool, name string, v float64, unit string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":{"value":`...)
	if v == float64(int64(v)) && v < 1e15 && (name == "num_images" || name == "http_req_chunks_sent" || name == "http_req_chunks_received" ||
		name == "http_req_connection_reused" || name == "output_token_count" || name == "usage_prompt_tokens" || name == "input_sequence_length" ||
		name == "output_sequence_length" || name == "usage_total_tokens" || name == "usage_completion_tokens") {
		b = strconv.AppendInt(b, int64(v), 10)
	} else {
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
		if v == float64(int64(v)) {
			b = append(b, ".0"...)
		}
	}
	b = append(b, `,"unit":"`...)
	b = append(b, unit...)
	return append(b, `"}`...)
}

func (g *gen) metrics(b []byte, r *request) []byte {
	lat := r.latencyMS
	f := func() float64 { return g.rng.Float64() * lat }
	b = append(b, '{')
	if g.cfg.Family == FamilyDetect {
		b = metric(b, true, "http_req_connecting", 0.0, "ms")
		b = metric(b, false, "http_req_sending", f(), "ms")
		b = metric(b, false, "num_images", 1, "images")
		b = metric(b, false, "http_req_waiting", f(), "ms")
		b = metric(b, false, "http_req_blocked", 0.0, "ms")
		b = metric(b, false, "http_req_dns_lookup", 0.0, "ms")
		b = metric(b, false, "http_req_receiving", 0.0, "ms")
		b = metric(b, false, "http_req_chunks_sent", 1, "count")
		b = metric(b, false, "request_latency", lat, "ms")
		b = metric(b, false, "http_req_chunks_received", 1, "count")
		b = metric(b, false, "http_req_duration", lat-0.03, "ms")
		b = metric(b, false, "http_req_connection_reused", 1, "ratio")
		b = metric(b, false, "http_req_data_sent", float64(len(g.entries[r.entry].image))/1024, "KB")
		b = metric(b, false, "http_req_data_received", 0.4306640625, "KB")
		b = metric(b, false, "http_req_connection_overhead", 0.0, "ms")
		b = metric(b, false, "http_req_total", lat-0.04, "ms")
		b = metric(b, false, "image_latency", lat, "ms/image")
		b = metric(b, false, "image_throughput", 1000/lat, "images/sec")
	} else {
		b = metric(b, true, "http_req_connection_reused", 1, "ratio")
		b = metric(b, false, "usage_prompt_tokens", 5, "tokens")
		b = metric(b, false, "input_sequence_length", 6, "tokens")
		b = metric(b, false, "request_latency", lat, "ms")
		b = metric(b, false, "output_sequence_length", 1, "tokens")
		b = metric(b, false, "http_req_receiving", 0.0, "ms")
		b = metric(b, false, "http_req_sending", f(), "ms")
		b = metric(b, false, "http_req_blocked", 0.0, "ms")
		b = metric(b, false, "http_req_connecting", 0.0, "ms")
		b = metric(b, false, "http_req_dns_lookup", 0.0, "ms")
		b = metric(b, false, "http_req_waiting", f(), "ms")
		b = metric(b, false, "num_images", 1, "images")
		b = metric(b, false, "usage_total_tokens", 6, "tokens")
		b = metric(b, false, "http_req_data_received", 0.27734375, "KB")
		b = metric(b, false, "http_req_duration", lat-0.05, "ms")
		b = metric(b, false, "http_req_data_sent", float64(len(g.entries[r.entry].image))/1024, "KB")
		b = metric(b, false, "output_token_count", 1, "tokens")
		b = metric(b, false, "http_req_chunks_sent", 1, "count")
		b = metric(b, false, "usage_completion_tokens", 1, "tokens")
		b = metric(b, false, "http_req_chunks_received", 1, "count")
		b = metric(b, false, "usage_prompt_tokens_diff_pct", 16.666666666666664, "%")
		b = metric(b, false, "e2e_output_token_throughput", 1000/lat, "tokens/sec/user")
		b = metric(b, false, "http_req_connection_overhead", 0.0, "ms")
		b = metric(b, false, "http_req_total", lat-0.06, "ms")
		b = metric(b, false, "image_throughput", 1000/lat, "images/sec")
		b = metric(b, false, "image_latency", lat, "ms/image")
		b = metric(b, false, "usage_completion_tokens_diff_pct", 0.0, "%")
	}
	return append(b, '}')
}

const err500 = `{"code":500,"type":"Internal Server Error","message":"{\"error\":{\"type\":\"internal_error\",\"message\":\"injected fault http-500-every\"}}\n"}`
const errCancelled = `{"code":499,"type":"RequestCancellationError","message":"Request was cancelled"}`
const errTransport = `{"type":"ClientConnectorError","message":"Cannot connect to host 127.0.0.1:40313 ssl:default [Connect call failed ('127.0.0.1', 40313)]"}`

func (g *gen) errorJSON(r *request) string {
	switch r.fault {
	case fHTTP500:
		return err500
	case fCancelled:
		return errCancelled
	case fTransport:
		return errTransport
	}
	return ""
}

// echoes reports whether the request's answer echoes its id: every answer
// but the echo faults', and no answer at all for a transport error or a
// cancellation.
func (r *request) echoes() bool {
	return r.fault != fNoEcho && r.fault != fWrongEcho && r.fault != fTransport && r.fault != fCancelled
}

// trace appends the record's trace_data as AIPerf 0.13.0 writes it with
// --export-http-trace (the fields the join reads, and a few others): the
// exchange starts 25 µs into request_latency and ends with it.
func (g *gen) trace(b []byte, r *request) []byte {
	lat := int64(r.latencyMS * 1e6)
	sendStart := r.start + 25_000
	sendEnd := sendStart + 150_000 + lat/20
	recvEnd := r.start + lat
	recvStart := recvEnd - 40_000
	b = append(b, `{"trace_type":"aiohttp","request_send_start_ns":`...)
	b = strconv.AppendInt(b, sendStart, 10)
	b = append(b, `,"request_headers":{"Host":"127.0.0.1:40313","User-Agent":"aiperf/0.13.0","X-Request-ID":"`...)
	b = append(b, r.id...)
	b = append(b, `","X-Correlation-ID":"`...)
	b = append(b, r.corr...)
	b = append(b, `","Accept":"application/json","Content-Type":"application/json","X-Session-Affinity":"<redacted>"},"request_chunks":[],"request_send_end_ns":`...)
	b = strconv.AppendInt(b, sendEnd, 10)
	b = append(b, `,"request_chunks_count":1`...)
	if r.fault == fTransport || r.fault == fCancelled {
		return append(b, `,"response_chunks":[],"response_chunks_count":0,"response_bytes_total":0,"sending_ns":`+"0}"...)
	}
	status := "200,\"response_reason\":\"OK\""
	if r.fault == fHTTP500 {
		status = "500,\"response_reason\":\"Internal Server Error\""
	}
	b = append(b, `,"response_status_code":`+status+`,"response_receive_start_ns":`...)
	b = strconv.AppendInt(b, recvStart, 10)
	b = append(b, `,"response_headers":{"Content-Length":"555","Content-Type":"application/json"`...)
	switch r.fault {
	case fNoEcho:
	case fWrongEcho:
		b = append(b, `,"X-Request-ID":"req-`...)
		b = append(b, strings.ReplaceAll(r.id, "-", "")...)
		b = append(b, '"')
	default:
		b = append(b, `,"X-Request-ID":"`...)
		b = append(b, r.id...)
		b = append(b, '"')
	}
	b = append(b, `,"Date":"Fri, 04 Dec 2026 22:37:48 GMT"},"response_chunks":[],"response_chunks_count":1,"response_receive_end_ns":`...)
	b = strconv.AppendInt(b, recvEnd, 10)
	b = append(b, `,"sending_ns":`...)
	b = strconv.AppendInt(b, sendEnd-sendStart, 10)
	b = append(b, `,"waiting_ns":`...)
	b = strconv.AppendInt(b, recvStart-sendEnd, 10)
	b = append(b, `,"receiving_ns":0,"duration_ns":`...)
	b = strconv.AppendInt(b, recvEnd-sendStart, 10)
	return append(b, '}')
}

func (g *gen) writeRecords(w *bufio.Writer) error {
	for _, i := range g.order(8) {
		r := &g.reqs[i]
		copies := 1
		if r.fault == fDupClientRecord {
			copies = 2
		}
		for range copies {
			b := append(g.line[:0], `{"metadata":`...)
			b = g.metadata(b, r)
			b = append(b, `,"metrics":`...)
			if e := g.errorJSON(r); e != "" {
				b = append(b, `{}`...)
				b = append(b, `,"error":`...)
				b = append(b, e...)
			} else {
				b = g.metrics(b, r)
			}
			b = append(b, `,"trace_data":`...)
			b = g.trace(b, r)
			b = append(b, "}\n"...)
			g.line = b
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gen) payload(b []byte, r *request) []byte {
	e := &g.entries[r.entry]
	if g.cfg.Family == FamilyDetect {
		b = append(b, `{"input":[{"type":"image_url","url":"`...)
		b = append(b, e.image...)
		return append(b, `"}]}`...)
	}
	b = append(b, `{"messages":[`...)
	if r.phase == "warmup" {
		b = append(b, `{"role":"system","content":"warmup"},`...)
	}
	b = append(b, `{"role":"user","content":[{"type":"text","text":`...)
	b = strconv.AppendQuote(b, e.question)
	b = append(b, `},{"type":"image_url","image_url":{"url":"`...)
	b = append(b, e.image...)
	return append(b, `"}}]}],"model":"ref-vlm-small","stream":false,"max_tokens":32,"temperature":0}`...)
}

// body is the HTTP response body the server sent.
func (g *gen) body(r *request) []byte {
	e := &g.entries[r.entry]
	if g.cfg.Family == FamilyDetect {
		switch r.fault {
		case fMeaningless:
			return e.meaningless
		case fBadBody:
			return []byte("{\"detail\":\"upstream timeout\"}\n")
		}
		return e.body
	}
	text := e.text
	object := "chat.completion"
	switch r.fault {
	case fMeaningless:
		text = " "
	case fBadBody:
		object = "error"
	}
	b := []byte(`{"id":"chatcmpl-` + r.id + `","object":"` + object + `","created":1796024905,"model":"ref-vlm-small","choices":[{"index":0,"message":{"role":"assistant","content":`)
	b = strconv.AppendQuote(b, text)
	b = append(b, `},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`+"\n"...)
	return b
}

func appendJSONString(b []byte, s []byte) []byte {
	q, _ := json.Marshal(string(s))
	return append(b, q...)
}

func (g *gen) writeRaw(w *bufio.Writer) error {
	for _, i := range g.order(16) {
		r := &g.reqs[i]
		b := append(g.line[:0], `{"metadata":`...)
		b = g.metadata(b, r)
		b = append(b, `,"start_perf_ns":`...)
		b = strconv.AppendInt(b, r.perfStart, 10)
		b = append(b, `,"request_headers":{"User-Agent":"aiperf/0.13.0","X-Request-ID":"`...)
		b = append(b, r.id...)
		b = append(b, `","X-Correlation-ID":"`...)
		b = append(b, r.corr...)
		b = append(b, `","Accept":"application/json","Content-Type":"application/json","X-Session-Affinity":"<redacted>"}`...)
		switch r.fault {
		case fTransport, fCancelled:
			b = append(b, `,"responses":[],"error":`...)
			b = append(b, g.errorJSON(r)...)
		case fHTTP500:
			b = append(b, `,"status":500,"responses":[],"error":`...)
			b = append(b, err500...)
		default:
			b = append(b, `,"status":200,"responses":[{"perf_ns":`...)
			b = strconv.AppendInt(b, r.perfStart+int64(r.latencyMS*1e6), 10)
			b = append(b, `,"text":`...)
			b = appendJSONString(b, g.body(r))
			b = append(b, `,"content_type":"application/json"}]`...)
		}
		b = append(b, `,"payload":`...)
		b = g.payload(b, r)
		b = append(b, "}\n"...)
		g.line = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// defaultExtractor is the extractor a family of the endpoint type reads
// its answers with (the rows are written as such a family's).
func defaultExtractor(endpointType string) string {
	t, _ := endpoint.Lookup(endpointType)
	return t.DefaultExtractor()
}

// Seal completes a written checkpoint directory into sealed evidence as
// `trtmc-qual run` leaves it: result.json (every stage ok, the stored
// counts those of exp), a passing correctness.json, AIPerf's summary, and
// manifest.json over all of it. The row is a family's checkpoint under
// group; with more than 55 requests its workload is an exploration one.
func Seal(dir, group, profile string, exp *Expected) error {
	cfg := exp.Config
	sem := verdict.Semantics{EndpointType: endpoint.ImageRetrieval, Extractor: defaultExtractor(endpoint.ImageRetrieval), Comparator: "boxes-tolerance", Labels: labels}
	route := "/v1/infer"
	if cfg.Family == FamilyVLM {
		sem = verdict.Semantics{EndpointType: endpoint.Chat, Extractor: defaultExtractor(endpoint.Chat), Comparator: "exact"}
		route = "/v1/chat/completions"
	}
	bundle := strings.Repeat("ab", 32)
	gate := verdict.Gate{Name: "map_50_95", Value: 0.91, Op: ">=", Threshold: 0.5, Passed: true}
	corr := map[string]any{"schema": "trtmc-ref/check/v1", "family": cfg.Family, "bundle_sha256": bundle, "passed": true,
		"metrics": map[string]float64{gate.Name: gate.Value}, "gates": []verdict.Gate{gate}}
	summary := map[string]any{"schema_version": "1.0", "aiperf_version": verdict.QualificationAIPerfVersion, "was_cancelled": false,
		"error_summary": []any{}, "request_throughput": map[string]any{"unit": "requests/sec", "avg": 50.0}}
	r := verdict.Result{
		Schema: verdict.ResultSchema, Group: group, Profile: profile, Checkpoint: "synth/" + profile, Family: cfg.Family,
		Kind: "normal", Precision: "fp32", Parallelism: "tp1", Endpoint: sem.EndpointType, Route: route, Answers: sem,
		Workload:        verdict.Workload{Warmup: cfg.Warmup, Measured: cfg.Requests - cfg.Warmup, Concurrency: 1},
		RequestsByPhase: exp.ByPhase, Problems: []verdict.Problem{},
		Correctness: &verdict.Correctness{Ran: true, Passed: true, Metrics: map[string]float64{gate.Name: gate.Value},
			Gates: []verdict.Gate{gate}, Output: verdict.CorrectnessFile},
		Provenance: verdict.Provenance{HarnessVersion: "synth", AIPerfVersion: verdict.QualificationAIPerfVersion,
			AIPerfVersionRequired: verdict.QualificationAIPerfVersion, BundleSHA256: bundle, BundlePinnedSHA256: bundle, Commands: []verdict.Command{},
			BundleChecks: []verdict.BundleCheck{{After: verdict.BundleAfterCorrectness, SHA256: bundle}, {After: verdict.BundleAfterRun, SHA256: bundle}}},
		Command: "synth", RunKey: "synth",
	}
	for _, c := range exp.ByPhase {
		r.Requests = r.Requests.Add(c)
	}
	// The HTTP split a join of the written files gives (the exchange starts
	// 25 µs into each request: see trace), in round figures.
	f := func(v float64) *float64 { return &v }
	part := func(mean float64) verdict.SplitPart {
		return verdict.SplitPart{Mean: f(mean), P50: f(mean), P95: f(mean * 1.5)}
	}
	r.LatencyMS.HTTPSplit = &verdict.HTTPSplit{Count: exp.ByPhase[verdict.PhaseMeasured].Matched, HTTPMean: f(11), TaskMean: f(8),
		Client: part(0.025), Sending: part(0.7), Waiting: part(10.235), Receiving: part(0.04), OutsideTask: part(2.235)}
	for _, st := range []string{"preflight", "server", "correctness", "aiperf", "stop-server", "native", "bundle-check", "join"} {
		r.Stages = append(r.Stages, verdict.Stage{Name: st, Status: verdict.StageOK})
	}
	verdict.Judge(&r)
	entry := &inventory.Profile{ID: profile, Checkpoint: r.Checkpoint, Family: cfg.Family, Kind: r.Kind, Precision: r.Precision,
		Parallelism: inventory.Parallelism{TP: 1}, Bundle: inventory.Bundle{Path: "synth.bundle", SHA256: bundle},
		Controls: []string{}, Gaps: []string{}, Hardware: []string{"cpu"}, Status: inventory.StatusPlanned, Group: group}
	snap, err := addToSnapshot(filepath.Dir(dir), entry)
	if err != nil {
		return err
	}
	r.Provenance.InventoryEntrySHA256, r.Provenance.InventorySnapshotSHA256 = entry.Digest(), snap
	for name, v := range map[string]any{verdict.CorrectnessFile: corr, "aiperf/" + aiperfSummary: summary, reports.ResultFile: &r} {
		if err := fileio.WriteJSON(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return evidence.Seal(dir, map[string]any{"harness_version": "synth"})
}

// addToSnapshot adds entry to the inventory snapshot of the group directory
// (OUT/<group>/inventory.json, written as `run` writes it; an entry of the
// same id is replaced) and returns the snapshot's sha256, which the row
// records as a run's rows do: the latest row seals the snapshot.
func addToSnapshot(groupDir string, entry *inventory.Profile) (string, error) {
	path := filepath.Join(groupDir, reports.InventoryFile)
	var list []*inventory.Profile
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &list); err != nil {
			return "", fmt.Errorf("synth: %s: %w", path, err)
		}
	}
	list = slices.DeleteFunc(list, func(p *inventory.Profile) bool { return p.ID == entry.ID })
	list = append(list, entry)
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	if err := fileio.WriteFile(path, data); err != nil {
		return "", err
	}
	return fileio.SHA256(data), nil
}

// aiperfSummary is AIPerf's summary file name (qual/aiperf.FileSummary).
const aiperfSummary = "profile_export_aiperf.json"
