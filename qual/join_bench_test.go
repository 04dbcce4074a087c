package qual

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families"
)

// BenchmarkJoin is the in-memory join of a 20,000-request detection run
// whose requests all match (boxes answers, tolerant comparator): the part
// of the pipeline after the artifacts are parsed. qual/streamjoin's
// BenchmarkStreamJoin covers parsing and joining from files.
//
//	go test -run '^$' -bench Join ./qual/
func BenchmarkJoin(b *testing.B) {
	reg := families.DefaultRegistry()
	data := json.RawMessage(`[{"index":0,"bounding_boxes":{"blue_disc":[{"x_min":0.8125,"y_min":0.5156,"x_max":0.9375,"y_max":0.7031,"confidence":0.9739}],"red_square":[{"x_min":0.1458,"y_min":0.1094,"x_max":0.3333,"y_max":0.3906,"confidence":0.9805}]}}]`)
	body := []byte(`{"data":` + string(data) + `,"usage":{"num_images":1}}`)
	in := JoinInput{
		Family:    &families.Family{Name: "ref-detect", Labels: []string{"blue_disc", "red_square"}},
		Extractor: reg.Extractors["nim-bounding-boxes"], Compare: reg.Comparators["boxes-tolerance"],
		EntryOf:  func(c string) (string, bool) { return c, true },
		Expected: map[string]int{PhaseWarmup: 5, PhaseMeasured: 19995},
	}
	for i := range 20000 {
		id := fmt.Sprintf("req-%06d", i)
		phase := PhaseMeasured
		if i < 5 {
			phase = PhaseWarmup
		}
		task := float64(i % 7)
		in.Requests = append(in.Requests, ClientRequest{RequestID: id, ConversationID: id, Phase: phase, HTTPStatus: 200, StartNs: int64(i), Body: body})
		in.Native = append(in.Native, NativeAnswer{RequestID: id, Answer: data})
		in.Records = append(in.Records, ServerRecord{RequestID: id, Status: 200, TaskMS: &task, ImageWidth: 96, ImageHeight: 64})
	}
	for b.Loop() {
		out := Join(in)
		if out.ByPhase[PhaseMeasured].Matched != 19995 {
			b.Fatalf("%+v", out.ByPhase)
		}
	}
}
