package aiperf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzScanRecords: any bytes give records or a *ParseError, never a panic.
// A 16-byte read buffer exercises the long-line path on every input.
func FuzzScanRecords(f *testing.F) {
	f.Add([]byte(goodRecord + "\n"))
	f.Add([]byte(goodRecord))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"metadata":{"x_request_id":"r","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{"a":{"value":[1,"x"],"unit":"ms"}},"error":{"code":"500"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := scanReader(FileRecords, bytes.NewReader(data), 16, recordsLineFunc(FileRecords, func(_ int, r *RecordLine) error {
			if r.Metadata.XRequestID == "" || r.Metadata.ConversationID == "" {
				t.Fatalf("record without required ids delivered: %+v", r.Metadata)
			}
			for _, v := range r.Metrics {
				v.Float()
			}
			return nil
		}))
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a *ParseError: %v", err)
		}
	})
}

// FuzzParseSummary: any bytes parse or fail with a *ParseError.
func FuzzParseSummary(f *testing.F) {
	f.Add([]byte(`{"schema_version":"1.4","aiperf_version":"0.13.0","was_cancelled":false,"error_summary":[],"request_latency":{"unit":"ms","p50":1}}`))
	f.Add([]byte(`{"schema_version":"1.4","x":{"unit":null}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSummary(FileSummary, data)
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a *ParseError: %v", err)
		}
		if err == nil && (s.SchemaVersion == "" || s.AIPerfVersion == "") {
			t.Fatal("summary without required fields accepted")
		}
	})
}
