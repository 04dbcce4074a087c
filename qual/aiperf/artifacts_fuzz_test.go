package aiperf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Artifact kinds FuzzArtifactParsers feeds (the first argument, modulo 4).
const (
	fuzzRaw = iota
	fuzzOutputs
	fuzzInputs
	fuzzReadyMarker
)

// FuzzArtifactParsers covers the AIPerf artifact parsers that
// FuzzScanRecords and FuzzParseSummary do not, in one target so the bounded
// fuzz pass of `make test` stays short: profile_export_raw.jsonl (ScanRaw),
// outputs.json (ParseOutputs), inputs.json (ScanInputs) and the ready
// marker (through Collect). Any bytes give parsed values that carry their
// required fields, or a *ParseError; never a panic, and never a run that
// Collect calls complete. Seeds from real AIPerf 0.13.0 exports are in
// testdata/fuzz/FuzzArtifactParsers.
func FuzzArtifactParsers(f *testing.F) {
	f.Add(uint8(fuzzRaw), []byte(`{"metadata":{"x_request_id":"r","conversation_id":"c#0","benchmark_phase":"warmup"},"payload":{"a":1},"status":200,"responses":[{"text":"{}"}]}`+"\n"))
	f.Add(uint8(fuzzOutputs), []byte(`{"schema_version":"1.1","data":[{"x_request_id":"r","conversation_id":"c","response_text":"x"}],"warmup":[]}`))
	f.Add(uint8(fuzzInputs), []byte(`{"data":[{"session_id":"e#0","payloads":[{}]}]}`))
	f.Add(uint8(fuzzReadyMarker), []byte(`{"ready":true,"was_cancelled":false,"partial":false}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		dir := t.TempDir()
		write := func(name string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		var err error
		switch kind % 4 {
		case fuzzRaw:
			err = ScanRaw(write(FileRaw), func(_ int, r *RawLine) error {
				if r.Metadata.XRequestID == "" || r.Metadata.ConversationID == "" {
					t.Fatalf("raw record without required ids delivered: %+v", r.Metadata)
				}
				if r.Status == nil && r.Error == nil {
					t.Fatal("raw record with neither status nor error delivered")
				}
				_ = r.Body()
				_, _ = r.LatencyNs()
				return nil
			})
		case fuzzOutputs:
			var o *Outputs
			o, err = ParseOutputs(write(FileOutputs))
			if err == nil {
				if o.SchemaVersion != "1.0" && o.SchemaVersion != "1.1" {
					t.Fatalf("outputs with schema %q accepted", o.SchemaVersion)
				}
				for _, e := range append(append([]OutputEntry(nil), o.Data...), o.Warmup...) {
					if e.XRequestID == "" || e.ConversationID == "" {
						t.Fatalf("output entry without ids accepted: %+v", e)
					}
				}
			}
		case fuzzInputs:
			err = ScanInputs(write(FileInputs), func(_ int, e *InputEntry) error {
				if e.SessionID == "" {
					t.Fatal("input entry without session_id delivered")
				}
				return nil
			})
		case fuzzReadyMarker:
			write(FileReadyMarker)
			run, cerr := Collect(dir, Expect{Warmup: 1, Measured: 1})
			if cerr != nil {
				t.Fatalf("Collect failed on a readable directory: %v", cerr)
			}
			if run.Complete() {
				t.Fatal("a directory holding only a ready marker was collected as complete")
			}
			return
		}
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a *ParseError: %v", err)
		}
	})
}
