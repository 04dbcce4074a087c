package aiperf

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

func TestClassifyEcho(t *testing.T) {
	const id = "c8a0322a-b992-473b-87f9-fe4e58b8b822"
	for _, c := range []struct {
		name         string
		traced       bool
		sent, echoed []string
		want         Echo
		detail       string
	}{
		{"match", true, []string{id}, []string{id}, EchoMatch, ""},
		{"no trace", false, nil, nil, EchoNoTrace, "--export-http-trace"},
		{"no echo", true, []string{id}, nil, EchoMissing, "carries no X-Request-ID"},
		{"another id", true, []string{id}, []string{"req-1f2e"}, EchoDiffers, `echoes X-Request-ID "req-1f2e"`},
		{"one of two differs", true, []string{id}, []string{id, id + "x"}, EchoDiffers, "not the id sent"},
		{"empty echo", true, []string{id}, []string{""}, EchoDiffers, `""`},
		{"sent another id", true, []string{"other"}, []string{"other"}, EchoDiffers, "request's own"},
		{"no request header kept", true, nil, []string{id}, EchoMatch, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, detail := ClassifyEcho(id, c.traced, c.sent, c.echoed)
			assert.Equal(t, c.want, got)
			if c.detail == "" {
				assert.Empty(t, detail)
			} else {
				assert.Contains(t, detail, c.detail)
			}
		})
	}
}

// TestRecordEchoHeaderCase: header names match in any case (aiohttp keeps
// the server's spelling: uvicorn sends x-request-id, Go X-Request-Id).
func TestRecordEchoHeaderCase(t *testing.T) {
	const id = "7eb8cf5d-d9b0-4a86-89f7-6d072e6b820d"
	for _, name := range []string{"X-Request-ID", "x-request-id", "X-Request-Id"} {
		r := RecordLine{Metadata: RecordMetadata{XRequestID: id},
			TraceData: &TraceData{RequestHeaders: map[string]string{"X-Request-ID": id}, ResponseHeaders: map[string]string{name: id, "Date": "x"}}}
		got, _ := r.Echo()
		assert.Equal(t, EchoMatch, got, name)
	}
	r := RecordLine{Metadata: RecordMetadata{XRequestID: id}}
	got, _ := r.Echo()
	assert.Equal(t, EchoNoTrace, got)
}

func TestSplitAddsUpToTheExchange(t *testing.T) {
	s, ok := Split(1_000_000_000, 1_002_500_000, 1_010_000_000, 1_010_250_000)
	require.True(t, ok)
	assert.InDelta(t, 2.5, s.SendingMS, 1e-9)
	assert.InDelta(t, 7.5, s.WaitingMS, 1e-9)
	assert.InDelta(t, 0.25, s.ReceivingMS, 1e-9)
	assert.InDelta(t, 10.25, s.SendingMS+s.WaitingMS+s.ReceivingMS, 1e-9, "the parts add up to the exchange")
	for _, bad := range [][4]int64{
		{0, 1, 2, 3}, // no start
		{5, 4, 6, 7}, // send ends before it starts
		{1, 5, 4, 7}, // body before the request was sent
		{1, 2, 3, 2}, // body ends before it starts
	} {
		_, ok := Split(bad[0], bad[1], bad[2], bad[3])
		assert.False(t, ok, "%v", bad)
	}
}

// TestFixtureTracesProveEveryEcho: the real AIPerf 0.13.0 runs against
// trtmc-refserver (testdata) carry trace_data on every record, warmup
// included, and every answer echoes its id; the split adds up to
// request_latency but for the client's own time before sending.
func TestFixtureTracesProveEveryEcho(t *testing.T) {
	for _, name := range []string{endpoint.Chat, endpoint.ImageRetrieval, "all_failed"} {
		dir, _ := fixture(t, name)
		phases := map[string]int{}
		err := ScanRecords(filepath.Join(dir, FileRecords), func(_ int, r *RecordLine) error {
			phases[r.Metadata.BenchmarkPhase]++
			e, detail := r.Echo()
			assert.Equal(t, EchoMatch, e, "%s: %s", r.Metadata.XRequestID, detail)
			if r.Error != nil {
				return nil
			}
			td := r.TraceData
			s, ok := Split(*td.RequestSendStartNs, *td.RequestSendEndNs, *td.ResponseReceiveStartNs, *td.ResponseReceiveEndNs)
			require.True(t, ok, r.Metadata.XRequestID)
			lat, ok := r.Metric("request_latency")
			require.True(t, ok)
			c := lat - (s.SendingMS + s.WaitingMS + s.ReceivingMS) // AIPerf's own time before the first byte
			assert.GreaterOrEqual(t, c, 0.0, "client time of %s", r.Metadata.XRequestID)
			assert.Less(t, c, lat, "client time of %s", r.Metadata.XRequestID)
			return nil
		})
		require.NoError(t, err)
		assert.Positive(t, phases[PhaseWarmup], name)
		assert.Positive(t, phases[PhaseProfiling], name)
	}
}
