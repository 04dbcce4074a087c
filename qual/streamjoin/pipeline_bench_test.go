package streamjoin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin/synth"
)

// BenchmarkParseAndJoin compares, on one synthetic checkpoint (20,000
// requests, 2-8 KiB images), the pipeline's path today (qual/aiperf's
// encoding/json scanners into memory, then qual.Join) with
// streamjoin.Join from the same files.
//
//	go test -run '^$' -bench ParseAndJoin -benchmem ./qual/streamjoin/
func BenchmarkParseAndJoin(b *testing.B) {
	dir := b.TempDir()
	if _, err := synth.Write(dir, synth.Config{Requests: 20000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	files := streamjoin.CheckpointFiles(dir)
	var size int64
	for _, p := range []string{files.Records, files.Raw, files.ServerRecords, files.Native, filepath.Join(dir, synth.FileSessions)} {
		st, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += st.Size()
	}
	cfg, err := families.Load(filepath.Join("..", "..", "families", "families.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	fam := cfg.Families["ref-detect"]
	reg := families.DefaultRegistry()
	expected := map[string]int{qual.PhaseWarmup: 5, qual.PhaseMeasured: 19995}

	b.Run("aiperf-scanners+qual.Join", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			sessions := map[string]string{}
			for _, s := range readLines[aiperf.Session](b, filepath.Join(dir, synth.FileSessions)) {
				sessions[s.SessionID] = s.EntryID
			}
			in := qual.JoinInput{Family: fam, Extractor: reg.Extractors[fam.Extractor], Compare: reg.Comparators[fam.Comparator],
				EntryOf: func(c string) (string, bool) { e, ok := sessions[c]; return e, ok }, Expected: expected}
			byID := map[string]int{}
			if err := aiperf.ScanRecords(files.Records, func(_ int, r *aiperf.RecordLine) error {
				m := &r.Metadata
				c := qual.ClientRequest{RequestID: m.XRequestID, ConversationID: m.ConversationID, Phase: qual.PhaseMeasured}
				if m.BenchmarkPhase == aiperf.PhaseWarmup {
					c.Phase = qual.PhaseWarmup
				}
				if r.Error != nil {
					c.Error = r.Error.String()
					if r.Error.Code != nil {
						c.HTTPStatus = *r.Error.Code
					}
				}
				byID[m.XRequestID] = len(in.Requests)
				in.Requests = append(in.Requests, c)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if err := aiperf.ScanRaw(files.Raw, func(_ int, r *aiperf.RawLine) error {
				if i, ok := byID[r.Metadata.XRequestID]; ok {
					in.Requests[i].Body = r.Body()
					if r.Status != nil {
						in.Requests[i].HTTPStatus = *r.Status
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			in.Records = readLines[qual.ServerRecord](b, files.ServerRecords)
			in.Native = readLines[qual.NativeAnswer](b, files.Native)
			if out := qual.Join(in); out.ByPhase[qual.PhaseMeasured].Sent == 0 {
				b.Fatal("nothing joined")
			}
		}
	})
	b.Run("streamjoin", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			ss, err := streamjoin.LoadSessions(context.Background(), filepath.Join(dir, synth.FileSessions))
			if err != nil {
				b.Fatal(err)
			}
			res, err := streamjoin.Join(context.Background(), files, streamjoin.Options{Family: fam,
				Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator], Sessions: ss, Expected: expected})
			if err != nil || res.ByPhase[qual.PhaseMeasured].Sent == 0 {
				b.Fatal(err)
			}
		}
	})
}
