package streamjoin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// Benchmarks of the parse-and-join hot paths, on a synthetic checkpoint
// (20,000 requests, 2-8 KiB images; STREAMJOIN_BENCH_DIR points them at a
// bigger one made by gen-aiperf-artifacts). Each reports bytes/s so
// alternatives compare in one run:
//
//	go test -run '^$' -bench . ./qual/streamjoin/
var benchData struct {
	once sync.Once
	dir  string
	err  error
}

func benchDir(b *testing.B) string {
	b.Helper()
	if d := os.Getenv("STREAMJOIN_BENCH_DIR"); d != "" {
		return d
	}
	benchData.once.Do(func() {
		dir, err := os.MkdirTemp("", "streamjoin-bench-")
		if err != nil {
			benchData.err = err
			return
		}
		benchData.dir = dir
		_, benchData.err = synth.Write(dir, synth.Config{Requests: 20000, Seed: 1})
	})
	if benchData.err != nil {
		b.Fatal(benchData.err)
	}
	return benchData.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchData.dir != "" {
		os.RemoveAll(benchData.dir)
	}
	os.Exit(code)
}

func fileSize(b *testing.B, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

func benchOptions(b *testing.B) Options {
	cfg, err := families.Load(filepath.Join("..", "..", "families", "families.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	fam := cfg.Families["ref-detect"]
	reg := families.DefaultRegistry()
	return Options{Semantics: &fam.Semantics, Route: fam.Route, Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator]}
}

// BenchmarkStreamJoin is the whole parse-and-join of a checkpoint.
func BenchmarkStreamJoin(b *testing.B) {
	for _, bc := range []struct {
		name    string
		workers int
		noMemo  bool
	}{{"workers=1", 1, false}, {"workers=GOMAXPROCS", 0, false}, {"workers=GOMAXPROCS/no-memo", 0, true}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := benchDir(b)
			files := CheckpointFiles(dir)
			b.SetBytes(fileSize(b, files.Records) + fileSize(b, files.Raw) + fileSize(b, files.ServerRecords) + fileSize(b, files.Native))
			opts := benchOptions(b)
			opts.Workers, opts.NoMemo = bc.workers, bc.noMemo
			for b.Loop() {
				if _, err := Join(context.Background(), files, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The raw export (base64 payloads): the hand-rolled reader vs
// qual/aiperf.ScanRaw (encoding/json into RawLine, payload as RawMessage)
// vs encoding/json into a struct with only the fields the join needs.
func BenchmarkParseRaw(b *testing.B) {
	path := CheckpointFiles(benchDir(b)).Raw
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := splitLines(data)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		w := newWorker(newHasher(), &nopExtractor{}, nil, false, "")
		var out rawLine
		for b.Loop() {
			for _, l := range lines {
				if err := parseRawLine(w, l, &out); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("aiperf.ScanRaw", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := aiperf.ScanRaw(path, func(_ int, r *aiperf.RawLine) error { _ = r.Body(); return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json-minimal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		type minimal struct {
			Metadata struct {
				XRequestID string `json:"x_request_id"`
			} `json:"metadata"`
			Status    *int `json:"status"`
			Responses []struct {
				Text *string `json:"text"`
			} `json:"responses"`
		}
		for b.Loop() {
			for _, l := range lines {
				var m minimal
				if err := json.Unmarshal(l, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// The records export: the hand-rolled reader vs qual/aiperf.ScanRecords.
func BenchmarkParseRecords(b *testing.B) {
	path := CheckpointFiles(benchDir(b)).Records
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := splitLines(data)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		w := newWorker(newHasher(), nil, nil, false, "")
		var out clientLine
		for b.Loop() {
			for _, l := range lines {
				if err := parseRecordLine(w, l, &out); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("aiperf.ScanRecords", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := aiperf.ScanRecords(path, func(int, *aiperf.RecordLine) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// One raw line with its answer extracted, judged and hashed: every time,
// or once per distinct response (the memo).
func BenchmarkRawLineAnswer(b *testing.B) {
	opts := benchOptions(b)
	data, err := os.ReadFile(CheckpointFiles(benchDir(b)).Raw)
	if err != nil {
		b.Fatal(err)
	}
	line := splitLines(data)[100]
	for _, m := range []bool{false, true} {
		name := "extract"
		if m {
			name = "memo"
		}
		b.Run(name, func(b *testing.B) {
			w := newWorker(newHasher(), opts.Extractor, opts.Semantics, m, opts.ServedModel)
			b.SetBytes(int64(len(line)))
			var out rawLine
			for b.Loop() {
				if err := parseRawLine(w, line, &out); err != nil || out.ans.outcome != ansOK {
					b.Fatal("not ok", err)
				}
			}
		})
	}
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		out = append(out, data[:i])
		if i < len(data) {
			i++
		}
		data = data[i:]
	}
	return out
}

type nopExtractor struct{}

func (nopExtractor) FromHTTP([]byte) (families.Answer, error) { return families.Answer{}, nil }
func (nopExtractor) FromNative(json.RawMessage) (families.Answer, error) {
	return families.Answer{}, nil
}
func (nopExtractor) NotMeaningful(families.Answer, *verdict.Semantics) string { return "" }

// BenchmarkStringEnd ends every string of the synthetic raw export (keys,
// ids, AIPerf's escaped response text, the base64 payload) the way the
// readers do: bytes/s over the strings' bytes, by shape.
func BenchmarkStringEnd(b *testing.B) {
	data, err := os.ReadFile(CheckpointFiles(benchDir(b)).Raw)
	if err != nil {
		b.Fatal(err)
	}
	var short, escaped, long []int // offsets of the opening quotes
	var nShort, nEscaped, nLong int64
	for base, nl := 0, 0; nl < 2000 && base < len(data); nl++ {
		l := data[base:]
		if k := bytes.IndexByte(l, '\n'); k >= 0 {
			l = l[:k+1]
		}
		for i := 0; i < len(l); {
			if l[i] != '"' {
				i++
				continue
			}
			end, err := stringEnd(l, i)
			if err != nil {
				b.Fatal(err)
			}
			n := int64(end - i)
			switch s := l[i:end]; {
			case bytes.IndexByte(s[:len(s)-1], '\\') >= 0:
				escaped, nEscaped = append(escaped, base+i), nEscaped+n
			case n > 64:
				long, nLong = append(long, base+i), nLong+n
			default:
				short, nShort = append(short, base+i), nShort+n
			}
			i = end
		}
		base += len(l)
	}
	for _, bc := range []struct {
		name  string
		at    []int
		bytes int64
	}{{"short", short, nShort}, {"escaped", escaped, nEscaped}, {"long", long, nLong}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(bc.bytes)
			for b.Loop() {
				for _, i := range bc.at {
					if _, err := stringEnd(data, i); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
