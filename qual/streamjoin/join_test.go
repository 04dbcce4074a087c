package streamjoin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// loadFamily returns the shipped family configuration.
func loadFamily(t testing.TB, name string) *families.Family {
	t.Helper()
	cfg, err := families.Load(filepath.Join("..", "..", "families", "families.yaml"))
	require.NoError(t, err)
	f, ok := cfg.Families[name]
	require.True(t, ok, "family %s", name)
	return f
}

func options(t testing.TB, family string, warmup, measured int) streamjoin.Options {
	fam := loadFamily(t, family)
	reg := families.DefaultRegistry()
	return streamjoin.Options{Semantics: &fam.Semantics, Route: fam.Route, Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator],
		Expected: map[string]int{verdict.PhaseWarmup: warmup, verdict.PhaseMeasured: measured}}
}

func countLines(t testing.TB, data []byte) int {
	t.Helper()
	return bytes.Count(data, []byte{'\n'})
}

// TestJoinFindsWhatTheGeneratorPlanted: over synthetic checkpoints with
// about 1% of requests broken in every way the generator knows, the join
// finds exactly the counts the generator planted, whatever the number of
// workers and with the extraction memo on or off; joined.jsonl has one line
// per client request id and mismatches.jsonl one per mismatch.
func TestJoinFindsWhatTheGeneratorPlanted(t *testing.T) {
	for _, tc := range []struct {
		family string
		n      int
		seed   uint64
	}{
		{synth.FamilyDetect, 2000, 1},
		{synth.FamilyDetect, 1500, 7},
		{synth.FamilyVLM, 2000, 2},
		{synth.FamilyVLM, 1500, 9},
	} {
		t.Run(tc.family, func(t *testing.T) {
			dir := t.TempDir()
			exp, err := synth.Write(dir, synth.Config{Requests: tc.n, Family: tc.family, Seed: tc.seed, ImageMin: 256, ImageMax: 512})
			require.NoError(t, err)
			files := streamjoin.CheckpointFiles(dir)
			var first *streamjoin.Result
			for _, noMemo := range []bool{false, true} {
				for _, workers := range []int{1, 3} {
					opts := options(t, tc.family, 5, tc.n-5)
					opts.NoMemo, opts.Workers, opts.Digests = noMemo, workers, true
					var joined, mism bytes.Buffer
					opts.Joined, opts.Mismatches = &joined, &mism
					got, err := streamjoin.Join(context.Background(), files, opts)
					require.NoError(t, err)
					for phase, want := range exp.ByPhase {
						c := got.ByPhase[phase]
						want.Expected = c.Expected
						assert.Equal(t, want, c, "phase %s (memo off %v, %d workers)", phase, noMemo, workers)
					}
					assert.Equal(t, exp.Orphans, got.Unclaimed.ServerRecords)
					assert.Zero(t, got.Unclaimed.NativeAnswers+got.Unclaimed.RawRecords)
					mismatched := got.ByPhase[verdict.PhaseWarmup].Mismatched + got.ByPhase[verdict.PhaseMeasured].Mismatched
					assert.GreaterOrEqual(t, countLines(t, mism.Bytes()), mismatched)
					assert.Equal(t, got.Stats.ClientRecords-dupCopies(exp), countLines(t, joined.Bytes()))
					for path, d := range got.Digests {
						want, err := evidence.Default().File(path)
						require.NoError(t, err)
						assert.Equal(t, want, d, path)
					}
					assert.Len(t, got.Digests, 5)
					if first == nil {
						first = got
						continue
					}
					assert.Equal(t, first.MeasuredTask, got.MeasuredTask)
					assert.Equal(t, first.MeasuredHTTP, got.MeasuredHTTP)
					assert.Equal(t, first.OutputTokens, got.OutputTokens)
					assert.Equal(t, first.Boxes, got.Boxes)
					assert.Equal(t, first.ImageSizes, got.ImageSizes)
					assert.Equal(t, first.Unclaimed, got.Unclaimed)
				}
			}
			m := first.ByPhase[verdict.PhaseMeasured]
			assert.Len(t, first.MeasuredHTTP, m.Matched)
			assert.Len(t, first.MeasuredTask, m.Matched)
		})
	}
}

// dupCopies is how many client records are second copies of an id.
func dupCopies(exp *synth.Expected) int {
	n := 0
	for _, c := range exp.ByPhase {
		n += c.Sent - c.Expected
	}
	return n
}

// checkpoint is a clean synthetic checkpoint of 5 + 50 requests whose
// files a test edits line by line.
type checkpoint struct {
	t   testing.TB
	dir string
}

func cleanCheckpoint(t testing.TB, family string) checkpoint {
	t.Helper()
	dir := t.TempDir()
	_, err := synth.Write(dir, synth.Config{Requests: 55, Family: family, Seed: 5, NoFaults: true, ImageMin: 64, ImageMax: 128})
	require.NoError(t, err)
	return checkpoint{t: t, dir: dir}
}

// lines reads a file's lines as generic JSON objects.
func (c checkpoint) lines(name string) []map[string]any {
	c.t.Helper()
	f, err := os.Open(filepath.Join(c.dir, name))
	require.NoError(c.t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		require.NoError(c.t, d.Decode(&m))
		out = append(out, m)
	}
	require.NoError(c.t, sc.Err())
	return out
}

func (c checkpoint) write(name string, lines []map[string]any) {
	c.t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		data, err := json.Marshal(l)
		require.NoError(c.t, err)
		b.Write(data)
		b.WriteByte('\n')
	}
	require.NoError(c.t, os.WriteFile(filepath.Join(c.dir, name), b.Bytes(), 0o644))
}

// edit rewrites one file through fn.
func (c checkpoint) edit(name string, fn func([]map[string]any) []map[string]any) {
	c.t.Helper()
	c.write(name, fn(c.lines(name)))
}

func meta(l map[string]any) map[string]any { return l["metadata"].(map[string]any) }

func clone(l map[string]any) map[string]any {
	data, _ := json.Marshal(l)
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	_ = d.Decode(&m)
	return m
}

// TestJoinAccountsForEverySource breaks one source of a clean checkpoint at
// a time and checks the join counts it where it belongs: nothing is dropped,
// nothing is counted twice, every request lands in exactly one status.
func TestJoinAccountsForEverySource(t *testing.T) {
	const (
		records = synth.FileRecords
		raw     = synth.FileRaw
		server  = synth.FileServer
		native  = synth.FileNative
		dataset = synth.FileDataset
	)
	cases := []struct {
		name   string
		break_ func(c checkpoint)
		check  func(t *testing.T, r *streamjoin.Result, mism string)
	}{
		{"clean", func(checkpoint) {}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 50, r.ByPhase[verdict.PhaseMeasured].Matched)
			assert.Equal(t, 5, r.ByPhase[verdict.PhaseWarmup].Matched)
		}},
		{"records: a second copy of an id that is an HTTP 500 error", func(c checkpoint) {
			c.edit(records, func(ls []map[string]any) []map[string]any {
				dup := clone(ls[20])
				dup["error"] = map[string]any{"code": 500, "type": "Internal Server Error", "message": "boom"}
				return append(ls, dup)
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			m := r.ByPhase[verdict.PhaseMeasured]
			assert.Equal(t, 2, m.Duplicates, "the request and its copy")
			assert.Equal(t, 51, m.Sent)
		}},
		{"raw: a duplicated line", func(c checkpoint) {
			c.edit(raw, func(ls []map[string]any) []map[string]any { return append(ls, clone(ls[30])) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Duplicates)
		}},
		{"server: a duplicated record", func(c checkpoint) {
			c.edit(server, func(ls []map[string]any) []map[string]any { return append(ls, clone(ls[30])) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Duplicates)
		}},
		{"native: a duplicated answer", func(c checkpoint) {
			c.edit(native, func(ls []map[string]any) []map[string]any { return append(ls, clone(ls[30])) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Duplicates)
		}},
		{"native: an answer for an id nobody sent", func(c checkpoint) {
			c.edit(native, func(ls []map[string]any) []map[string]any {
				x := clone(ls[3])
				x["request_id"] = "00000000-0000-4000-8000-00000000beef"
				return append(ls, x)
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.Unclaimed.NativeAnswers)
			assert.Equal(t, []string{"00000000-0000-4000-8000-00000000beef"}, r.Unclaimed.Examples)
			assert.Equal(t, 50, r.ByPhase[verdict.PhaseMeasured].Matched)
		}},
		{"server: a record for an id nobody sent", func(c checkpoint) {
			c.edit(server, func(ls []map[string]any) []map[string]any {
				x := clone(ls[3])
				x["request_id"] = "not-a-uuid"
				return append(ls, x)
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.Unclaimed.ServerRecords)
			assert.Equal(t, []string{"not-a-uuid"}, r.Unclaimed.Examples)
		}},
		{"raw: a record the records export lacks", func(c checkpoint) {
			c.edit(raw, func(ls []map[string]any) []map[string]any {
				x := clone(ls[3])
				meta(x)["x_request_id"] = "stray"
				return append(ls, x)
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.Unclaimed.RawRecords)
		}},
		{"raw: a line deleted", func(c checkpoint) {
			c.edit(raw, func(ls []map[string]any) []map[string]any { return append(ls[:10], ls[11:]...) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].MissingHTTP)
		}},
		{"records: a line deleted", func(c checkpoint) {
			c.edit(records, func(ls []map[string]any) []map[string]any { return append(ls[:10], ls[11:]...) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 49, r.ByPhase[verdict.PhaseMeasured].Sent)
			assert.Equal(t, 1, r.Unclaimed.RawRecords)
			assert.Equal(t, 1, r.Unclaimed.ServerRecords)
			assert.Equal(t, 1, r.Unclaimed.NativeAnswers)
		}},
		{"server: a record deleted", func(c checkpoint) {
			c.edit(server, func(ls []map[string]any) []map[string]any { return append(ls[:10], ls[11:]...) })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].MissingServerRecord)
		}},
		{"raw: another phase than the records say", func(c checkpoint) {
			c.edit(raw, func(ls []map[string]any) []map[string]any {
				for _, l := range ls {
					if meta(l)["benchmark_phase"] == "profiling" {
						meta(l)["benchmark_phase"] = "warmup"
						break
					}
				}
				return ls
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Inconsistent)
		}},
		{"dataset: a line removed", func(c checkpoint) {
			c.edit(dataset, func(ls []map[string]any) []map[string]any { return ls[1:] })
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseWarmup].UnknownConversation)
		}},
		{"records: two requests of one dataset line", func(c checkpoint) {
			c.edit(records, func(ls []map[string]any) []map[string]any {
				meta(ls[12])["conversation_id"] = meta(ls[13])["conversation_id"]
				return ls
			})
			c.edit(raw, func(ls []map[string]any) []map[string]any {
				byID := map[any]map[string]any{}
				for _, l := range ls {
					byID[meta(l)["x_request_id"]] = l
				}
				rl := c.lines(records)
				meta(byID[meta(rl[12])["x_request_id"]])["conversation_id"] = meta(rl[13])["conversation_id"]
				return ls
			})
		}, func(t *testing.T, r *streamjoin.Result, _ string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Duplicates+r.ByPhase[verdict.PhaseWarmup].Duplicates)
		}},
		{"native: an answer changed", func(c checkpoint) {
			c.edit(native, func(ls []map[string]any) []map[string]any {
				ls[40]["answer"] = []any{map[string]any{"index": 0, "bounding_boxes": map[string]any{
					"red_square": []any{map[string]any{"x_min": 0.1, "y_min": 0.1, "x_max": 0.2, "y_max": 0.2, "confidence": 0.5}}}}}
				return ls
			})
		}, func(t *testing.T, r *streamjoin.Result, mism string) {
			assert.Equal(t, 1, r.ByPhase[verdict.PhaseMeasured].Mismatched)
			require.Equal(t, 1, strings.Count(mism, "\n"))
			var l map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(mism), &l))
			assert.Contains(t, string(l["native_answer"]), `"confidence":0.5`, "the full native answer is kept")
			assert.Contains(t, string(l["http_answer"]), `"bounding_boxes"`, "the full HTTP answer is kept")
			assert.NotEmpty(t, string(l["diff"]))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cleanCheckpoint(t, synth.FamilyDetect)
			tc.break_(c)
			opts := options(t, synth.FamilyDetect, 5, 50)
			var joined, mism bytes.Buffer
			opts.Joined, opts.Mismatches = &joined, &mism
			r, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), opts)
			require.NoError(t, err)
			for phase, n := range r.ByPhase {
				sum := n.Matched + n.Mismatched + n.Errored + n.MissingNative + n.MissingHTTP + n.MissingServerRecord +
					n.Duplicates + n.Meaningless + n.UnknownConversation + n.Inconsistent + n.EchoMissing + n.EchoMismatched + n.ServerBusy
				assert.Equal(t, n.Sent, sum, "phase %s: every request in exactly one status: %+v", phase, n)
			}
			tc.check(t, r, mism.String())
			// The row this join gives never qualifies, except the clean one.
			row := verdict.Result{Workload: verdict.Workload{Warmup: 5, Measured: 50, Concurrency: 1},
				Answers:     verdict.Semantics{EndpointType: "image_retrieval"},
				Correctness: &verdict.Correctness{Ran: true, Passed: true, Gates: []verdict.Gate{{Name: "g", Value: 1, Op: ">=", Threshold: 0.5, Passed: true}}},
				Provenance: verdict.Provenance{AIPerfVersion: "0.13.0", BundleSHA256: "x", BundlePinnedSHA256: "x",
					BundleChecks: []verdict.BundleCheck{{After: verdict.BundleAfterCorrectness, SHA256: "x"}}},
				Stages: []verdict.Stage{{Name: "correctness", Status: "ok"}, {Name: "join", Status: "ok"}}}
			r.Apply(&row)
			verdict.Judge(&row)
			if tc.name == "clean" {
				assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
			} else {
				assert.Equal(t, verdict.VerdictFailed, row.Verdict)
				assert.NotEmpty(t, row.Reasons)
			}
		})
	}
}

// serverError is trtmc-server's error answer as AIPerf keeps it: the HTTP
// status, the reason phrase as its type, the body text as its message
// (aiohttp_client.py; app.py error_response idx@a9ed5f69).
func serverError(status int, phrase, typ, code, msg string) map[string]any {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return map[string]any{"code": status, "type": phrase, "message": string(body)}
}

// The server's error answers are told apart: a 429 server_busy is an
// overlap, its own status and reason (the row is an error: the run was
// disturbed); every other failed request is errored, and the reason names
// the server's status, type and code and what each means (the two 413s
// apart, max_tokens_exceeded).
func TestJoinNamesTheServersErrors(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	answers := map[int]map[string]any{
		20: serverError(429, "Too Many Requests", "rate_limit_error", "server_busy", "all model worker replicas are busy"),
		21: serverError(413, "Request Entity Too Large", "invalid_request_error", "content_too_large", "prompt exceeds the server limit"),
		22: serverError(413, "Request Entity Too Large", "invalid_request_error", "content_too_large", "request body exceeds limit"),
		23: serverError(400, "Bad Request", "invalid_request_error", "max_tokens_exceeded", "requested generation exceeds 4096 tokens"),
		24: serverError(503, "Service Unavailable", "server_error", "worker_crashed", "The model worker is unavailable"),
		25: {"code": 404, "type": "Not Found", "message": `{"detail":"Not Found"}`},
	}
	failedIDs := map[any]int{}
	c.edit(synth.FileRecords, func(ls []map[string]any) []map[string]any {
		for i, e := range answers {
			ls[i]["error"], ls[i]["metrics"] = e, map[string]any{}
			failedIDs[meta(ls[i])["x_request_id"]] = e["code"].(int)
		}
		return ls
	})
	c.edit(synth.FileRaw, func(ls []map[string]any) []map[string]any {
		for _, l := range ls {
			if st, ok := failedIDs[meta(l)["x_request_id"]]; ok {
				l["status"], l["responses"] = st, []any{}
			}
		}
		return ls
	})
	r, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), options(t, synth.FamilyDetect, 5, 50))
	require.NoError(t, err)
	m := r.ByPhase[verdict.PhaseMeasured]
	assert.Equal(t, 1, m.ServerBusy)
	assert.Equal(t, 5, m.Errored)
	assert.Equal(t, 44, m.Matched)
	require.Len(t, r.HTTPErrors, 6)
	codes := map[string]int{}
	for _, e := range r.HTTPErrors {
		codes[fmt.Sprintf("%d %s %s", e.Status, e.Type, e.Code)] += e.Count
	}
	assert.Equal(t, map[string]int{"429 rate_limit_error server_busy": 1, "413 invalid_request_error content_too_large": 2,
		"400 invalid_request_error max_tokens_exceeded": 1, "503 server_error worker_crashed": 1, "404 detail ": 1}, codes)

	row := verdict.Result{Workload: verdict.Workload{Warmup: 5, Measured: 50, Concurrency: 1},
		Answers:     verdict.Semantics{EndpointType: "image_retrieval"},
		Correctness: &verdict.Correctness{Ran: true, Passed: true, Gates: []verdict.Gate{{Name: "g", Value: 1, Op: ">=", Threshold: 0.5, Passed: true}}},
		Provenance:  verdict.Provenance{AIPerfVersion: "0.13.0", BundleSHA256: "x", BundlePinnedSHA256: "x"},
		Stages:      []verdict.Stage{{Name: "correctness", Status: "ok"}, {Name: "join", Status: "ok"}}}
	r.Apply(&row)
	verdict.Judge(&row)
	assert.Equal(t, verdict.VerdictError, row.Verdict, "an overlap disturbed the run: %+v", row.Reasons)
	byCode := map[verdict.Code]string{}
	for _, rs := range row.Reasons {
		byCode[rs.Code] = rs.Message
	}
	require.Contains(t, byCode, verdict.CodeServerBusy)
	assert.Contains(t, byCode[verdict.CodeServerBusy], "measured: 1 of 50 requests were refused 429 server_busy: something else sent a request to the served model at the same time")
	require.Contains(t, byCode, verdict.CodeErrored)
	for _, want := range []string{"1 × 413 invalid_request_error content_too_large (the prompt and system text are over the server's --max-prompt-bytes)",
		"1 × 413 invalid_request_error content_too_large (the request body is over the server's --max-body-bytes)",
		"1 × 400 invalid_request_error max_tokens_exceeded (max_tokens is above the server's --max-new-tokens)",
		"1 × 503 server_error worker_crashed (the native worker crashed)", "1 × 404 detail (the route does not exist on this server)"} {
		assert.Contains(t, byCode[verdict.CodeErrored], want)
	}
	assert.NotContains(t, byCode[verdict.CodeErrored], "server_busy", "the overlap is its own reason")
}
