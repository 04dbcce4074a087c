package qual

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
)

func f64(v float64) *float64 { return &v }

func chatBody(text string) []byte {
	b, _ := json.Marshal(map[string]any{"object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
	return b
}

// scenario builds a 5+50 run where every request matches, then lets the
// test break it.
func scenario() JoinInput {
	reg := families.DefaultRegistry()
	in := JoinInput{
		Family: &families.Family{Name: "ref-vlm"}, Extractor: reg.Extractors["openai-chat-text"], Compare: reg.Comparators["exact"],
		EntryOf:  func(c string) (string, bool) { return "img-" + c, c != "" },
		Expected: map[string]int{PhaseWarmup: 5, PhaseMeasured: 50},
	}
	for i := 0; i < 55; i++ {
		id := fmt.Sprintf("req-%02d", i)
		phase := PhaseMeasured
		if i < 5 {
			phase = PhaseWarmup
		}
		in.Requests = append(in.Requests, ClientRequest{RequestID: id, ConversationID: fmt.Sprint(i), Phase: phase,
			HTTPStatus: 200, LatencyMS: f64(10 + float64(i)), StartNs: int64(i), Body: chatBody("three shapes")})
		in.Native = append(in.Native, NativeAnswer{RequestID: id, Answer: json.RawMessage(`{"text":"three shapes","completion_tokens":2}`), TaskMS: f64(2)})
		in.Records = append(in.Records, ServerRecord{RequestID: id, Status: 200, TaskMS: f64(float64(i)), ImageWidth: 64, ImageHeight: 48})
	}
	return in
}

func TestJoinAllMatched(t *testing.T) {
	out := Join(scenario())
	assert.Equal(t, 5, out.ByPhase[PhaseWarmup].Matched)
	assert.Equal(t, 50, out.ByPhase[PhaseMeasured].Matched)
	assert.Equal(t, 50, out.ByPhase[PhaseMeasured].Sent)
	assert.Len(t, out.Lines, 55)
	assert.Len(t, out.MeasuredTask, 50)
	assert.Equal(t, 100, out.OutputTokens, "the Task's two tokens for each of 50 measured answers")
	require.Len(t, out.ImageSizes, 1)
	assert.Equal(t, 50, out.ImageSizes[0].Count)
	assert.Empty(t, out.Orphans)
}

func TestJoinCountsEveryFailureKindOnce(t *testing.T) {
	in := scenario()
	in.Native[10].Answer = json.RawMessage(`"two shapes"`)                // mismatched
	in.Requests[11].HTTPStatus = 500                                      // errored
	in.Requests[12].Error = "TimeoutError: request timed out"             // errored
	in.Records = append(in.Records[:13], in.Records[14:]...)              // req-13 missing server record
	in.Native[20] = NativeAnswer{RequestID: "req-20", Error: "bad image"} // missing native
	in.Requests[21].Body = []byte(`{"object":"chat.completion","choices":[]}`)
	in.Requests[22].Body = chatBody("   ")                                // meaningless
	in.Requests[23].ConversationID = ""                                   // unknown entry
	in.Requests = append(in.Requests, in.Requests[30])                    // client duplicate
	in.Records = append(in.Records, ServerRecord{RequestID: "req-ghost"}) // orphan
	in.Requests[2].HTTPStatus = 503                                       // a warmup error

	out := Join(in)
	m := out.ByPhase[PhaseMeasured]
	assert.Equal(t, 51, m.Sent)
	assert.Equal(t, 1, m.Mismatched)
	assert.Equal(t, 2, m.Errored)
	assert.Equal(t, 1, m.MissingServerRecord)
	assert.Equal(t, 1, m.MissingNative)
	assert.Equal(t, 2, m.MissingHTTP)
	assert.Equal(t, 1, m.Meaningless)
	assert.Equal(t, 2, m.Duplicates, "both copies of a duplicated id are counted")
	assert.Equal(t, 51-1-2-1-1-2-1-2, m.Matched)
	w := out.ByPhase[PhaseWarmup]
	assert.Equal(t, 1, w.Errored)
	assert.Equal(t, 4, w.Matched)
	assert.Equal(t, []string{"req-ghost"}, out.Orphans)

	total := m.Matched + m.Mismatched + m.Errored + m.MissingNative + m.MissingHTTP + m.MissingServerRecord + m.Duplicates + m.Meaningless
	assert.Equal(t, m.Sent, total, "every request lands in exactly one status")

	var diff string
	for _, l := range out.Lines {
		if l.RequestID == "req-10" {
			diff = l.Diff
		}
	}
	assert.Contains(t, diff, `native: "two shapes"`)

	reasons := countReasons(out)
	var codes []string
	for _, r := range reasons {
		codes = append(codes, r.Code)
	}
	assert.Contains(t, codes, StatusMismatched)
	assert.Contains(t, codes, "short_count", "51 sent where 50 were expected")
}

func TestJoinShortCountIsAReason(t *testing.T) {
	in := scenario()
	in.Requests = in.Requests[:40]
	out := Join(in)
	assert.Equal(t, 35, out.ByPhase[PhaseMeasured].Sent)
	rs := countReasons(out)
	require.NotEmpty(t, rs)
	assert.Equal(t, "measured: the client reported 35 of 50 requests", rs[0].Message)
}
