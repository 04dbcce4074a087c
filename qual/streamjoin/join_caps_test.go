package streamjoin_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// bigAnswer gives raw line i an HTTP answer of n bytes (a valid detection
// answer padded with a long field).
func bigAnswer(c checkpoint, i, n int) string {
	var id string
	c.edit(synth.FileRaw, func(ls []map[string]any) []map[string]any {
		id = meta(ls[i])["x_request_id"].(string)
		resps := ls[i]["responses"].([]any)
		r := resps[len(resps)-1].(map[string]any)
		r["text"] = `{"pad":"` + strings.Repeat("x", n) + `","data":[]}`
		return ls
	})
	return id
}

// Issue 13, finding 8, in the one join: an HTTP answer over
// MaxAnswerBytes is not extracted; its request is errored, naming the
// limit, and the row cannot qualify.
func TestJoinAnswerTooLarge(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	id := bigAnswer(c, 10, fileio.MaxAnswerBytes+1)
	opts := options(t, synth.FamilyDetect, 5, 50)
	var joined bytes.Buffer
	opts.Joined = &joined
	r, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), opts)
	require.NoError(t, err)
	total := r.ByPhase[verdict.PhaseWarmup].Errored + r.ByPhase[verdict.PhaseMeasured].Errored
	assert.Equal(t, 1, total)
	var line string
	for _, l := range strings.Split(joined.String(), "\n") {
		if strings.Contains(l, id) {
			line = l
		}
	}
	assert.Contains(t, line, "over the 16 MiB limit for one answer (fileio.MaxAnswerBytes)")
}

// A raw line over MaxLineBytes stops the join with an error naming file,
// line and limit; the line is never held whole.
func TestJoinLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 65 MiB line")
	}
	c := cleanCheckpoint(t, synth.FamilyDetect)
	bigAnswer(c, 30, fileio.MaxLineBytes+1)
	_, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), options(t, synth.FamilyDetect, 5, 50))
	require.Error(t, err)
	assert.ErrorIs(t, err, fileio.ErrTooLarge)
	assert.Contains(t, err.Error(), filepath.Base(synth.FileRaw)+":31: line is longer than 64 MiB, the limit for one line (fileio.MaxLineBytes)")
}

// A source that is a FIFO is refused at once instead of blocking the join.
func TestJoinRefusesAFIFO(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	p := filepath.Join(c.dir, synth.FileNative)
	require.NoError(t, os.Remove(p))
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	done := make(chan error, 1)
	go func() {
		_, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), options(t, synth.FamilyDetect, 5, 50))
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.True(t, errors.Is(err, fileio.ErrNotRegular), "%v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the join blocked on a FIFO")
	}
}

// BenchmarkJoinLargeAnswer prints the peak heap of the join over a clean
// checkpoint (baseline) and with one 40 MB or 150 MB HTTP answer:
// go test -run '^$' -bench JoinLargeAnswer ./qual/streamjoin. Figures in
// docs/reliability.md.
func BenchmarkJoinLargeAnswer(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int
	}{{"baseline", 0}, {"answer-40MB", 40 << 20}, {"answer-150MB", 150 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			c := cleanCheckpoint(b, synth.FamilyDetect)
			if tc.size > 0 {
				bigAnswer(c, 10, tc.size)
			}
			var peak uint64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				stop, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					var m runtime.MemStats
					for {
						runtime.ReadMemStats(&m)
						if m.HeapAlloc > base.HeapAlloc && m.HeapAlloc-base.HeapAlloc > peak {
							peak = m.HeapAlloc - base.HeapAlloc
						}
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
					}
				}()
				_, _ = streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), options(b, synth.FamilyDetect, 5, 50))
				close(stop)
				<-done
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}
