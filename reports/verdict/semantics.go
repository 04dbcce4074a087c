package verdict

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Semantics are a family's judging criteria as its configuration
// (families.yaml) defines them: the AIPerf endpoint type, how answers are
// extracted and compared (the extractor, the comparator and its
// tolerances, the label space, the reading of a null finish_reason),
// where the Task time comes from, whether the route gets server records,
// and the Task agreement tolerance; in a row, also the model name the
// server was started with. It is one type from the configuration to the
// verdict: families.Family holds it (its YAML keys are the family's), the
// row carries it (result.json "answers"), and the join and a rejudge read
// it from the row, never rebuilt. With the family's route it is what a
// row's criteria digest pins (CriteriaDigest).
type Semantics struct {
	// EndpointType is the AIPerf endpoint type, a registered one
	// (inventory/endpoint: chat, image_retrieval; families.yaml is
	// validated against the registry).
	EndpointType string `json:"endpoint_type" yaml:"endpoint_type"`
	// Extractor and Comparator name how answers are pulled out and
	// compared (families.Registry).
	Extractor  string `json:"extractor" yaml:"extractor"`
	Comparator string `json:"comparator" yaml:"comparator"`
	// Tolerance is the documented tolerance of a tolerant comparator.
	Tolerance float64 `json:"tolerance" yaml:"tolerance"`
	// MinBoxIoU and MaxScoreAbsError are the boxes-iou comparator's
	// tolerances: the least overlap of two matched boxes and the largest
	// confidence difference (TRTMC's detection parity: min_box_iou,
	// max_score_abs_error).
	MinBoxIoU        float64 `json:"min_box_iou,omitempty" yaml:"min_box_iou"`
	MaxScoreAbsError float64 `json:"max_score_abs_error,omitempty" yaml:"max_score_abs_error"`
	// Labels is the family's label space, for detection answers: the
	// labels exactly as the family numbers or names them.
	Labels []string `json:"labels,omitempty" yaml:"labels"`
	// FinishReasonNull says whether a chat answer whose finish_reason is
	// JSON null is complete (FinishNullComplete) or not
	// (FinishNullIncomplete, the default). Some trtmc-server versions
	// always answer null.
	FinishReasonNull string `json:"finish_reason_null,omitempty" yaml:"finish_reason_null"`
	// ServedModel is the --model-name the server was started with: a chat
	// answer must name it. A row's only, from its inventory entry (empty
	// in rows of earlier versions: the profile id is then taken, the
	// default served name); a family configuration never sets it.
	ServedModel string `json:"served_model,omitempty" yaml:"-"`
	// ServerRecords says whether the family's server writes a request
	// record for its route: ServerRecordsRequired (the default) or
	// ServerRecordsNone (the route is not recorded in the server version
	// the family runs, as the public trtmc-server records only
	// /v1/completions and /v1/chat/completions, records.py idx@a9ed5f69).
	// With none, Task time must come from the native answers and every
	// request is accounted for by the client <-> native join alone; the
	// row says so.
	ServerRecords string `json:"server_records,omitempty" yaml:"server_records"`
	// TaskAgreement is the tolerance within which the server's and the
	// native Task times of one request agree, when the Task source is the
	// server's records and the native answers time the Task too
	// (DefaultTaskAgreement when unset). Disagreement is recorded in the
	// row, never a reason.
	TaskAgreement *Tolerance `json:"task_agreement,omitempty" yaml:"task_agreement"`
	// TaskTime says where the row's Task latency comes from: TaskTimeServer
	// (the server's request records' task_ms: the Task call timed inside
	// the server; the default) or TaskTimeNative (the native answers'
	// task_ms, whose scope the native runner states in native_meta.json,
	// e.g. public_task_call_wall). Whichever it is, every measured matched
	// request must have a value, or the row's Task percentiles are
	// withheld and the row does not qualify.
	TaskTime string `json:"task_time,omitempty" yaml:"task_time"`
}

// Values of Semantics.TaskTime.
const (
	TaskTimeServer = "server"
	TaskTimeNative = "native"
)

// Values of Semantics.ServerRecords.
const (
	ServerRecordsRequired = "required"
	ServerRecordsNone     = "none"
)

// Values of Semantics.FinishReasonNull.
const (
	FinishNullComplete   = "complete"
	FinishNullIncomplete = "incomplete"
)

// DefaultTaskAgreement is the tolerance of Semantics.TaskAgreement when a
// family states none: 2 ms or 25%, whichever is more (two calls of the
// same Task on the same input; not a verdict).
var DefaultTaskAgreement = Tolerance{AbsMS: 2, Rel: 0.25}

// Tolerance is how far apart two times of one thing may be: AbsMS or Rel
// of the larger, whichever is more.
type Tolerance struct {
	AbsMS float64 `json:"abs_ms" yaml:"abs_ms"`
	Rel   float64 `json:"rel" yaml:"rel"`
}

// Within reports whether a and b agree within the tolerance.
func (t Tolerance) Within(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= max(t.AbsMS, t.Rel*max(a, b))
}

func (t Tolerance) String() string {
	return fmt.Sprintf("max(%g ms, %g%%)", t.AbsMS, 100*t.Rel)
}

// TaskTimeSource is the Task time source, TaskTimeServer when none is
// stated.
func (s Semantics) TaskTimeSource() string {
	if s.TaskTime == "" {
		return TaskTimeServer
	}
	return s.TaskTime
}

// Recorded reports whether the server records the route.
func (s Semantics) Recorded() bool { return s.ServerRecords != ServerRecordsNone }

// Agreement is the Task agreement tolerance, DefaultTaskAgreement when
// none is stated.
func (s Semantics) Agreement() Tolerance {
	if s.TaskAgreement != nil {
		return *s.TaskAgreement
	}
	return DefaultTaskAgreement
}

// Stated is what a row records of its family's semantics: the
// configuration's, with the Task time source and the Task agreement
// stated (so the row says which it was judged with) and server records
// named only when the route has none. The served model is the caller's.
func (s Semantics) Stated() Semantics {
	a, recorded := s.Agreement(), s.Recorded()
	s.Labels = slices.Clone(s.Labels)
	s.TaskTime, s.TaskAgreement, s.ServerRecords = s.TaskTimeSource(), &a, ""
	if !recorded {
		s.ServerRecords = ServerRecordsNone
	}
	return s
}

// Normal fills in what an unset criterion means: a null finish_reason is
// incomplete, the route is recorded, no labels is an empty label space,
// the Task time comes from the server, the Task agreement is the default.
func (s Semantics) Normal() Semantics {
	if s.FinishReasonNull == "" {
		s.FinishReasonNull = FinishNullIncomplete
	}
	if s.ServerRecords == "" {
		s.ServerRecords = ServerRecordsRequired
	}
	s.TaskTime = s.TaskTimeSource()
	a := s.Agreement()
	s.TaskAgreement = &a
	if s.Labels == nil {
		s.Labels = []string{}
	}
	return s
}

// criteriaDocument is what CriteriaDigest digests: a family's route and
// semantics after Normal, the served model aside, in this fixed order
// with nothing omitted. Rows pin digests of it
// (provenance.family_criteria_sha256), so its names and order are a
// contract (TestCriteriaDocument).
type criteriaDocument struct {
	Route            string    `json:"route"`
	EndpointType     string    `json:"endpoint_type"`
	Extractor        string    `json:"extractor"`
	Comparator       string    `json:"comparator"`
	Tolerance        float64   `json:"tolerance"`
	MinBoxIoU        float64   `json:"min_box_iou"`
	MaxScoreAbsError float64   `json:"max_score_abs_error"`
	Labels           []string  `json:"labels"`
	FinishReasonNull string    `json:"finish_reason_null"`
	TaskTime         string    `json:"task_time"`
	ServerRecords    string    `json:"server_records"`
	TaskAgreement    Tolerance `json:"task_agreement"`
}

func criteria(route string, s Semantics) criteriaDocument {
	n := s.Normal()
	return criteriaDocument{Route: route, EndpointType: n.EndpointType, Extractor: n.Extractor, Comparator: n.Comparator,
		Tolerance: n.Tolerance, MinBoxIoU: n.MinBoxIoU, MaxScoreAbsError: n.MaxScoreAbsError, Labels: n.Labels,
		FinishReasonNull: n.FinishReasonNull, TaskTime: n.TaskTime, ServerRecords: n.ServerRecords, TaskAgreement: *n.TaskAgreement}
}

// CriteriaDigest is the sha256 of a family's judging criteria — its route
// and its semantics as the family means them (after Normal; the served
// model aside) — as JSON: what a row pins
// (provenance.family_criteria_sha256) and a rejudge holds the family
// configuration to.
func CriteriaDigest(route string, s Semantics) string {
	b, _ := json.Marshal(criteria(route, s))
	return fileio.SHA256(b)
}

// CriteriaDifferences names each criterion of got (a row's route and
// semantics) that is not want's (the configuration's), as "name: G, the
// configuration's W" (both after Normal), in a fixed order.
func CriteriaDifferences(gotRoute string, got Semantics, wantRoute string, want Semantics) []string {
	g, w := criteria(gotRoute, got), criteria(wantRoute, want)
	var out []string
	add := func(name string, gv, wv any) {
		if fmt.Sprint(gv) != fmt.Sprint(wv) {
			out = append(out, fmt.Sprintf("%s: %v, the configuration's %v", name, quoteStrings(gv), quoteStrings(wv)))
		}
	}
	add("route", g.Route, w.Route)
	add("endpoint_type", g.EndpointType, w.EndpointType)
	add("extractor", g.Extractor, w.Extractor)
	add("comparator", g.Comparator, w.Comparator)
	add("tolerance", g.Tolerance, w.Tolerance)
	add("min_box_iou", g.MinBoxIoU, w.MinBoxIoU)
	add("max_score_abs_error", g.MaxScoreAbsError, w.MaxScoreAbsError)
	add("labels", g.Labels, w.Labels)
	add("finish_reason_null", g.FinishReasonNull, w.FinishReasonNull)
	add("task_time", g.TaskTime, w.TaskTime)
	add("server_records", g.ServerRecords, w.ServerRecords)
	add("task_agreement", fmt.Sprintf("{abs_ms %g, rel %g}", g.TaskAgreement.AbsMS, g.TaskAgreement.Rel),
		fmt.Sprintf("{abs_ms %g, rel %g}", w.TaskAgreement.AbsMS, w.TaskAgreement.Rel))
	return out
}

func quoteStrings(v any) any {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []string:
		return fmt.Sprintf("%q", x)
	}
	return v
}
