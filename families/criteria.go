package families

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Criteria are what a family's rows are judged by: the route and endpoint
// type, how answers are extracted and compared (extractor, comparator and
// their tolerances, the label space, the reading of a null
// finish_reason), where the Task time comes from, whether the route gets
// server records, and the Task agreement tolerance — each as the family
// means it (its defaults filled in). A row records their digest
// (provenance.family_criteria_sha256); a rejudge takes them from the
// family configuration, never from the row it judges, and a stored
// criterion that differs is itself a finding.
type Criteria struct {
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

// Criteria are the family's judging criteria.
func (f *Family) Criteria() Criteria {
	c := Criteria{Route: f.Route, EndpointType: f.EndpointType, Extractor: f.Extractor, Comparator: f.Comparator,
		Tolerance: f.Tolerance, MinBoxIoU: f.MinBoxIoU, MaxScoreAbsError: f.MaxScoreAbsError, Labels: slices.Clone(f.Labels),
		FinishReasonNull: f.FinishReasonNull, TaskTime: f.TaskTimeSource(), ServerRecords: f.ServerRecords, TaskAgreement: f.Agreement()}
	return c.Normal()
}

// Normal fills in what an unset criterion means: a null finish_reason is
// incomplete, the route is recorded, no labels is an empty label space,
// the Task time comes from the server.
func (c Criteria) Normal() Criteria {
	if c.FinishReasonNull == "" {
		c.FinishReasonNull = FinishNullIncomplete
	}
	if c.ServerRecords == "" {
		c.ServerRecords = ServerRecordsRequired
	}
	if c.TaskTime == "" {
		c.TaskTime = TaskTimeServer
	}
	if c.Labels == nil {
		c.Labels = []string{}
	}
	return c
}

// Digest is the sha256 of the criteria as JSON (after Normal).
func (c Criteria) Digest() string {
	b, _ := json.Marshal(c.Normal())
	return fileio.SHA256(b)
}

// Differences names each criterion of got that is not want's, as
// "name: got G, want W" (both after Normal), in a fixed order.
func (c Criteria) Differences(want Criteria) []string {
	got, want := c.Normal(), want.Normal()
	var out []string
	add := func(name string, g, w any) {
		if fmt.Sprint(g) != fmt.Sprint(w) {
			out = append(out, fmt.Sprintf("%s: %v, the configuration's %v", name, quoteStrings(g), quoteStrings(w)))
		}
	}
	add("route", got.Route, want.Route)
	add("endpoint_type", got.EndpointType, want.EndpointType)
	add("extractor", got.Extractor, want.Extractor)
	add("comparator", got.Comparator, want.Comparator)
	add("tolerance", got.Tolerance, want.Tolerance)
	add("min_box_iou", got.MinBoxIoU, want.MinBoxIoU)
	add("max_score_abs_error", got.MaxScoreAbsError, want.MaxScoreAbsError)
	add("labels", got.Labels, want.Labels)
	add("finish_reason_null", got.FinishReasonNull, want.FinishReasonNull)
	add("task_time", got.TaskTime, want.TaskTime)
	add("server_records", got.ServerRecords, want.ServerRecords)
	add("task_agreement", fmt.Sprintf("{abs_ms %g, rel %g}", got.TaskAgreement.AbsMS, got.TaskAgreement.Rel),
		fmt.Sprintf("{abs_ms %g, rel %g}", want.TaskAgreement.AbsMS, want.TaskAgreement.Rel))
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

// shipped are the family configurations that ship with the harness:
// families.yaml (the reference families) and trtmc.yaml (TRTMC's).
//
//go:embed families.yaml trtmc.yaml
var shipped embed.FS

// ShippedFile names the shipped configurations in messages.
const ShippedFile = "the shipped family configuration (families/families.yaml, families/trtmc.yaml)"

// Shipped is the family configuration that ships with the harness (both
// files, checked as Load checks them): what a rejudge judges by when no
// family configuration is named.
func Shipped() (*Config, error) {
	out := &Config{Schema: Schema, Families: map[string]*Family{}, File: ShippedFile}
	for _, name := range []string{"families.yaml", "trtmc.yaml"} {
		data, err := shipped.ReadFile(name)
		if err != nil {
			return nil, err
		}
		cfg, err := Parse("families/"+name, data)
		if err != nil {
			return nil, err
		}
		for _, n := range slices.Sorted(maps.Keys(cfg.Families)) {
			if _, dup := out.Families[n]; dup {
				return nil, fmt.Errorf("families/%s: family %s is also in another shipped configuration", name, n)
			}
			out.Families[n] = cfg.Families[n]
		}
	}
	return out, nil
}
