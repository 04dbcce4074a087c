package aiperf

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// setAnswer replaces the response text of raw line i with an answer of
// about n bytes and returns that request's id.
func setAnswer(t testing.TB, dir string, i, n int) string {
	t.Helper()
	path := filepath.Join(dir, FileRaw)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	ls := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(ls[i]))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	id := meta(m)["x_request_id"].(string)
	resps := m["responses"].([]any)
	r := resps[len(resps)-1].(map[string]any)
	r["text"] = `{"choices":[{"message":{"content":"` + strings.Repeat("x", n) + `"},"finish_reason":"stop"}]}`
	ls[i], err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(bytes.Join(ls, []byte("\n")), '\n'), 0o644))
	return id
}

// Issue 13, finding 8: memory grew with the largest answer (a 150 MB
// response took the harness to 1.16 GB). An answer over MaxAnswerBytes
// is not kept: its request is an error naming the limit, the run records
// answer_too_large, and the row cannot qualify.
func TestCollectAnswerTooLarge(t *testing.T) {
	dir, meta := fixture(t, endpoint.Chat)
	id := setAnswer(t, dir, 20, fileio.MaxAnswerBytes+1)
	run, err := Collect(dir, expectFor(meta, false))
	require.NoError(t, err)
	assert.Contains(t, problemCodes(run), ProblemAnswerTooLarge)
	var found bool
	for _, q := range run.Requests {
		if q.RequestID == id {
			found = true
			assert.Nil(t, q.Response, "the answer is not kept")
			require.NotNil(t, q.Error)
			assert.Equal(t, "answer_too_large", q.Error.Type)
			assert.Contains(t, q.Error.Message, "over the 16 MiB limit for one answer (fileio.MaxAnswerBytes)")
		} else {
			assert.Nil(t, q.Error, q.RequestID)
		}
	}
	assert.True(t, found)
}

// A raw line past MaxLineBytes stops the scan with a named error at its
// line: the exports cannot be trusted (raw_invalid), nothing past the cap
// is held.
func TestCollectLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 65 MiB line")
	}
	dir, meta := fixture(t, endpoint.Chat)
	setAnswer(t, dir, 7, fileio.MaxLineBytes+1)
	run, err := Collect(dir, expectFor(meta, false))
	require.NoError(t, err)
	assert.Contains(t, problemCodes(run), ProblemRawInvalid)
	var detail string
	for _, p := range run.Problems {
		if p.Code == ProblemRawInvalid {
			detail = p.Detail
		}
	}
	assert.Contains(t, detail, "profile_export_raw.jsonl:8: line is longer than 64 MiB, the limit for one line (fileio.MaxLineBytes)")
}

// BenchmarkCollectLargeAnswer prints the peak heap of Collect over the
// chat fixture as is (baseline) and with one 150 MB answer (the probe's
// case): go test -run '^$' -bench CollectLargeAnswer ./qual/aiperf. The
// figures and their ratio are in docs/reliability.md.
func BenchmarkCollectLargeAnswer(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"baseline", 0}, {"answer-150MB", 150 << 20}, {"answer-40MB", 40 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			dir, meta := fixture(b, endpoint.Chat)
			if c.size > 0 {
				setAnswer(b, dir, 20, c.size)
			}
			var peak atomic.Uint64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					var m runtime.MemStats
					for {
						runtime.ReadMemStats(&m)
						if d := m.HeapAlloc - min(m.HeapAlloc, base.HeapAlloc); d > peak.Load() {
							peak.Store(d)
						}
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
					}
				}()
				run, err := Collect(dir, expectFor(meta, false))
				close(stop)
				<-done
				if err != nil || run == nil {
					b.Fatal(err)
				}
				_, _ = json.Marshal(len(run.Requests))
			}
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}
