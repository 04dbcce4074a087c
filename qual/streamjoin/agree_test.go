package streamjoin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin/synth"
)

// loadFamily returns the shipped family configuration.
func loadFamily(t *testing.T, name string) *families.Family {
	t.Helper()
	cfg, err := families.Load(filepath.Join("..", "..", "families", "families.yaml"))
	require.NoError(t, err)
	f, ok := cfg.Families[name]
	require.True(t, ok, "family %s", name)
	return f
}

func loadSessions(t testing.TB, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s aiperf.Session
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
		out[s.SessionID] = s.EntryID
	}
	require.NoError(t, sc.Err())
	return out
}

func readLines[T any](t testing.TB, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []T
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal(line, &v))
		out = append(out, v)
	}
	return out
}

// referenceJoin builds qual.JoinInput from the files the way the pipeline
// does (aiperf's scanners and collect's rules for status and body; every
// record line is a client request) and runs qual.Join.
func referenceJoin(t *testing.T, files streamjoin.Files, in qual.JoinInput) qual.JoinOutput {
	t.Helper()
	type req struct {
		c    qual.ClientRequest
		seen bool
	}
	var reqs []*req
	byID := map[string]*req{}
	require.NoError(t, aiperf.ScanRecords(files.Records, func(_ int, r *aiperf.RecordLine) error {
		m := &r.Metadata
		q := &req{c: qual.ClientRequest{RequestID: m.XRequestID, ConversationID: m.ConversationID, Phase: qual.PhaseMeasured}}
		if m.BenchmarkPhase == aiperf.PhaseWarmup {
			q.c.Phase = qual.PhaseWarmup
		}
		if m.RequestStartNs != nil {
			q.c.StartNs = *m.RequestStartNs
		}
		if v, ok := r.Metric("request_latency"); ok {
			q.c.LatencyMS = &v
		}
		if r.Error != nil {
			q.c.Error = r.Error.String()
			if r.Error.Code != nil && *r.Error.Code >= 100 && *r.Error.Code <= 599 {
				q.c.HTTPStatus = *r.Error.Code
			}
		}
		if m.Cancelled() && q.c.Error == "" {
			q.c.Error = "cancelled by the client"
		}
		reqs = append(reqs, q)
		if _, dup := byID[m.XRequestID]; !dup {
			byID[m.XRequestID] = q
		}
		return nil
	}))
	rawSeen := map[string]bool{}
	require.NoError(t, aiperf.ScanRaw(files.Raw, func(_ int, r *aiperf.RawLine) error {
		id := r.Metadata.XRequestID
		if rawSeen[id] {
			return nil
		}
		rawSeen[id] = true
		for _, q := range reqs {
			if q.c.RequestID != id {
				continue
			}
			q.c.Body = r.Body()
			if r.Status != nil {
				q.c.HTTPStatus = *r.Status
			}
		}
		return nil
	}))
	for _, q := range reqs {
		in.Requests = append(in.Requests, q.c)
	}
	in.Records = readLines[qual.ServerRecord](t, files.ServerRecords)
	in.Native = readLines[qual.NativeAnswer](t, files.Native)
	return qual.Join(in)
}

func TestStreamJoinAgreesWithJoin(t *testing.T) {
	for _, tc := range []struct {
		family string
		n      int
		seed   uint64
	}{
		{synth.FamilyDetect, 4000, 1},
		{synth.FamilyDetect, 3000, 7},
		{synth.FamilyVLM, 4000, 2},
		{synth.FamilyVLM, 3000, 9},
	} {
		t.Run(tc.family, func(t *testing.T) {
			dir := t.TempDir()
			exp, err := synth.Write(dir, synth.Config{Requests: tc.n, Family: tc.family, Seed: tc.seed, ImageMin: 256, ImageMax: 512})
			require.NoError(t, err)
			fam := loadFamily(t, tc.family)
			reg := families.DefaultRegistry()
			sessions := loadSessions(t, filepath.Join(dir, synth.FileSessions))
			entryOf := func(c string) (string, bool) { e, ok := sessions[c]; return e, ok }
			expected := map[string]int{qual.PhaseWarmup: 5, qual.PhaseMeasured: tc.n - 5}
			files := streamjoin.CheckpointFiles(dir)

			want := referenceJoin(t, files, qual.JoinInput{Family: fam, Extractor: reg.Extractors[fam.Extractor],
				Compare: reg.Comparators[fam.Comparator], EntryOf: entryOf, Expected: expected})
			ss, err := streamjoin.LoadSessions(context.Background(), filepath.Join(dir, synth.FileSessions))
			require.NoError(t, err)
			assert.Equal(t, len(sessions), ss.Len())
			for _, noMemo := range []bool{false, true} {
				for _, workers := range []int{1, 3} {
					opts := streamjoin.Options{Family: fam,
						Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator],
						EntryOf: entryOf, Expected: expected, NoMemo: noMemo, Workers: workers}
					if workers == 3 {
						opts.EntryOf, opts.Sessions = nil, ss
					}
					got, err := streamjoin.Join(context.Background(), files, opts)
					require.NoError(t, err)
					require.Len(t, got.ByPhase, len(want.ByPhase))
					for phase, c := range got.ByPhase {
						assert.Equal(t, want.ByPhase[phase], c, "phase %s (memo off %v, %d workers)", phase, noMemo, workers)
					}
					assert.Equal(t, want.MeasuredTask, got.MeasuredTask)
					assert.Equal(t, want.OutputTokens, got.OutputTokens)
					assert.Equal(t, want.Boxes, got.Boxes)
					require.Len(t, got.ImageSizes, len(want.ImageSizes))
					for i, s := range want.ImageSizes {
						assert.Equal(t, s, got.ImageSizes[i])
					}
					assert.Equal(t, len(want.Orphans), got.Orphans)
					assert.Equal(t, want.Orphans[:min(10, len(want.Orphans))], got.OrphanExamples)
				}
			}
			// The generator's own bookkeeping agrees too (with Expected
			// being the requests sent per phase).
			for phase, c := range exp.ByPhase {
				assert.Equal(t, c, want.ByPhase[phase], "generator vs qual.Join, %s", phase)
			}
			assert.Positive(t, exp.ByPhase[qual.PhaseMeasured].Mismatched, "faults were injected")
		})
	}
}

func TestSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, `{"session_id":"img-%04d#%d","entry_id":"img-%04d"}`+"\n", i%24, i/24, i%24)
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	ss, err := streamjoin.LoadSessions(context.Background(), path)
	require.NoError(t, err)
	assert.Equal(t, 20000, ss.Len())
	e, ok := ss.EntryOf("img-0005#700")
	assert.True(t, ok)
	assert.Equal(t, "img-0005", e)
	_, ok = ss.EntryOf("img-0005#70000")
	assert.False(t, ok)
	assert.True(t, ss.Has([]byte("img-0023#0")))
}

// TestOrphanExamples: ids the server recorded and no client claims are
// counted and the smallest are named, whether the index kept their line
// (a few) or the server records are read again (very many), and whether
// the id first appeared in the native answers or the server records.
func TestOrphanExamples(t *testing.T) {
	for _, n := range []int{3, 10050} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			files := streamjoin.Files{Records: filepath.Join(dir, "r.jsonl"), Raw: filepath.Join(dir, "raw.jsonl"),
				ServerRecords: filepath.Join(dir, "s.jsonl"), Native: filepath.Join(dir, "n.jsonl")}
			var srv, nat strings.Builder
			var want []string
			for i := range n {
				id := fmt.Sprintf("orphan-%05d", n-i)
				want = append(want, id)
				fmt.Fprintf(&srv, `{"request_id":%q,"task_ms":1}`+"\n", id)
				if i%2 == 0 {
					fmt.Fprintf(&nat, `{"request_id":%q,"answer":"x"}`+"\n", id)
				}
			}
			srv.WriteString(`{"request_id":"a","task_ms":1}` + "\n")
			nat.WriteString(`{"request_id":"a","answer":"x"}` + "\n")
			require.NoError(t, os.WriteFile(files.ServerRecords, []byte(srv.String()), 0o644))
			require.NoError(t, os.WriteFile(files.Native, []byte(nat.String()), 0o644))
			require.NoError(t, os.WriteFile(files.Records, []byte(`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{}}`+"\n"), 0o644))
			require.NoError(t, os.WriteFile(files.Raw, []byte(`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"status":200}`+"\n"), 0o644))
			reg := families.DefaultRegistry()
			res, err := streamjoin.Join(context.Background(), files, streamjoin.Options{
				Extractor: reg.Extractors["openai-chat-text"], Comparator: reg.Comparators["exact"]})
			require.NoError(t, err)
			assert.Equal(t, n, res.Orphans)
			sort.Strings(want)
			assert.Equal(t, want[:min(10, n)], res.OrphanExamples)
		})
	}
}
