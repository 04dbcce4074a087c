package verdict

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// TestCriteriaDocument: what a row's criteria digest covers is a contract
// (rows on disk pin it): the route and every criterion after Normal, in
// this order, none omitted, the served model aside. Each criterion
// changes the digest; the served model does not.
func TestCriteriaDocument(t *testing.T) {
	s := Semantics{EndpointType: "image_retrieval", Extractor: "nim-bounding-boxes", Comparator: "boxes-iou", MinBoxIoU: 0.9,
		ServerRecords: ServerRecordsNone, TaskTime: TaskTimeNative, ServedModel: "m"}
	b, err := json.Marshal(criteria("/v1/infer", s))
	require.NoError(t, err)
	assert.Equal(t, `{"route":"/v1/infer","endpoint_type":"image_retrieval","extractor":"nim-bounding-boxes","comparator":"boxes-iou",`+
		`"tolerance":0,"min_box_iou":0.9,"max_score_abs_error":0,"labels":[],"finish_reason_null":"incomplete","task_time":"native",`+
		`"server_records":"none","task_agreement":{"abs_ms":2,"rel":0.25}}`, string(b))
	assert.Equal(t, fileio.SHA256(b), CriteriaDigest("/v1/infer", s))

	base := CriteriaDigest("/v1/infer", s)
	other := s
	other.ServedModel = "another"
	assert.Equal(t, base, CriteriaDigest("/v1/infer", other), "the served model is the inventory's, not a criterion")
	assert.NotEqual(t, base, CriteriaDigest("/v1/other", s))
	for name, edit := range map[string]func(*Semantics){
		"endpoint_type": func(s *Semantics) { s.EndpointType = "chat" },
		"extractor":     func(s *Semantics) { s.Extractor = "x" },
		"comparator":    func(s *Semantics) { s.Comparator = "exact" },
		"tolerance":     func(s *Semantics) { s.Tolerance = 0.1 },
		"min_box_iou":   func(s *Semantics) { s.MinBoxIoU = 0.5 },
		"max_score":     func(s *Semantics) { s.MaxScoreAbsError = 0.1 },
		"labels":        func(s *Semantics) { s.Labels = []string{"a"} },
		"finish_null":   func(s *Semantics) { s.FinishReasonNull = FinishNullComplete },
		"task_time":     func(s *Semantics) { s.TaskTime = TaskTimeServer },
		"records":       func(s *Semantics) { s.ServerRecords = ServerRecordsRequired },
		"agreement":     func(s *Semantics) { s.TaskAgreement = &Tolerance{AbsMS: 1, Rel: 0.25} },
	} {
		e := s
		edit(&e)
		assert.NotEqual(t, base, CriteriaDigest("/v1/infer", e), name)
		assert.Len(t, CriteriaDifferences("/v1/infer", e, "/v1/infer", s), 1, name)
	}
}

// TestStatedIsWhatARowRecords: a row records its family's semantics with
// the Task time source and agreement stated, so a row of a family that
// states neither reads the same as one that states the defaults; its
// criteria are the family's.
func TestStatedIsWhatARowRecords(t *testing.T) {
	bare := Semantics{EndpointType: "chat", Extractor: "openai-chat-text", Comparator: "exact"}
	st := bare.Stated()
	assert.Equal(t, TaskTimeServer, st.TaskTime)
	require.NotNil(t, st.TaskAgreement)
	assert.Equal(t, DefaultTaskAgreement, *st.TaskAgreement)
	assert.Empty(t, st.ServerRecords, "a recorded route is not named")
	none := Semantics{ServerRecords: ServerRecordsNone, TaskTime: TaskTimeNative}
	assert.Equal(t, ServerRecordsNone, none.Stated().ServerRecords)
	explicit := bare
	explicit.ServerRecords, explicit.TaskTime, explicit.TaskAgreement = ServerRecordsRequired, TaskTimeServer, &Tolerance{AbsMS: 2, Rel: 0.25}
	assert.Equal(t, st, explicit.Stated())
	assert.Equal(t, CriteriaDigest("/r", bare), CriteriaDigest("/r", st), "what the row records pins the family's criteria")
	assert.Empty(t, CriteriaDifferences("/r", st, "/r", bare))
}
