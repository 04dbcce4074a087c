// Package check is the reference families' correctness case: it runs the
// Task of the exact bundle over a corpus and gates the family's metrics
// (mAP for ref-detect, exact-answer accuracy for ref-vlm).
package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

// Schema is the value of the result's "schema" field.
const Schema = "trtmc-ref/check/v1"

// Minimum gates of the families.
const (
	MinMAP5095  = 0.60
	MinMAP50    = 0.90
	MinAccuracy = 0.90
)

// maxFailures bounds the failures listed in a result.
const maxFailures = 20

// Gate is one threshold a metric must meet.
type Gate struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
}

// Failure is one corpus entry the model got wrong (ref-vlm) or rejected.
type Failure struct {
	ID       string `json:"id"`
	Question string `json:"question,omitempty"`
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Result is the content of RESULT.json.
type Result struct {
	Schema       string             `json:"schema"`
	Family       string             `json:"family"`
	BundleSHA256 string             `json:"bundle_sha256"`
	Passed       bool               `json:"passed"`
	Count        int                `json:"count"`
	Metrics      map[string]float64 `json:"metrics"`
	Gates        []Gate             `json:"gates"`
	Failures     []Failure          `json:"failures,omitempty"`
}

// Run runs the correctness case of t's bundle over the corpus.
func Run(t *task.Task, c *corpus.Corpus) (*Result, error) {
	b := t.Bundle()
	if c.Family != b.Family {
		return nil, fmt.Errorf("corpus %s is for family %s but bundle %s is %s", c.Dir, c.Family, b.Path, b.Family)
	}
	res := &Result{Schema: Schema, Family: b.Family, BundleSHA256: b.SHA256, Count: len(c.Entries)}
	var err error
	if b.Family == bundle.FamilyDetect {
		err = runDetect(t, c, res)
	} else {
		err = runVLM(t, c, res)
	}
	if err != nil {
		return nil, err
	}
	res.Passed = true
	for _, g := range res.Gates {
		res.Passed = res.Passed && g.Passed
	}
	return res, nil
}

func runDetect(t *task.Task, c *corpus.Corpus, res *Result) error {
	var truth []GroundTruth
	var preds []Prediction
	for i, e := range c.Entries {
		for _, o := range e.Objects {
			truth = append(truth, GroundTruth{Image: i, Label: o.Label, Box: o.Box})
		}
		payload, err := inferPayload(c, e)
		if err != nil {
			return err
		}
		r, err := t.Answer(task.RouteInfer, payload)
		if reqErr := (*task.RequestError)(nil); errors.As(err, &reqErr) {
			res.addFailure(Failure{ID: e.ID, Error: reqErr.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("corpus entry %s: %w", e.ID, err)
		}
		var items []task.InferItem
		if err := json.Unmarshal(r.Answer, &items); err != nil || len(items) != 1 {
			return fmt.Errorf("corpus entry %s: answer is not one data item: %s", e.ID, r.Answer)
		}
		for label, boxes := range items[0].BoundingBoxes {
			for _, bx := range boxes {
				preds = append(preds, Prediction{Image: i, Label: label, Box: Box{bx.XMin, bx.YMin, bx.XMax, bx.YMax}, Score: bx.Confidence})
			}
		}
	}
	m5095 := round4(MeanAPRange(truth, preds, IoUThresholds()))
	m50 := round4(MeanAP(truth, preds, 0.5))
	res.Metrics = map[string]float64{"map_50_95": m5095, "map_50": m50}
	res.Gates = []Gate{atLeast("map_50_95", m5095, MinMAP5095), atLeast("map_50", m50, MinMAP50)}
	return nil
}

func runVLM(t *task.Task, c *corpus.Corpus, res *Result) error {
	correct := 0
	for _, e := range c.Entries {
		payload, err := chatPayload(c, e)
		if err != nil {
			return err
		}
		r, err := t.Answer(task.RouteChat, payload)
		if reqErr := (*task.RequestError)(nil); errors.As(err, &reqErr) {
			res.addFailure(Failure{ID: e.ID, Question: e.Question, Expected: e.Answer, Error: reqErr.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("corpus entry %s: %w", e.ID, err)
		}
		if SameAnswer(r.Text, e.Answer) {
			correct++
		} else {
			res.addFailure(Failure{ID: e.ID, Question: e.Question, Expected: e.Answer, Got: r.Text})
		}
	}
	acc := round4(float64(correct) / float64(len(c.Entries)))
	res.Metrics = map[string]float64{"accuracy": acc}
	res.Gates = []Gate{atLeast("accuracy", acc, MinAccuracy)}
	return nil
}

// SameAnswer compares answers exactly, up to case and surrounding space.
func SameAnswer(got, want string) bool {
	return strings.EqualFold(strings.TrimSpace(got), strings.TrimSpace(want))
}

func (r *Result) addFailure(f Failure) {
	if len(r.Failures) < maxFailures {
		r.Failures = append(r.Failures, f)
	}
}

func atLeast(name string, value, threshold float64) Gate {
	return Gate{Name: name, Value: value, Op: ">=", Threshold: threshold, Passed: value >= threshold}
}

func round4(v float64) float64 { return detect.Round4(v) }

func dataURL(c *corpus.Corpus, e corpus.Entry) (string, error) {
	data, err := c.ReadImage(e)
	if err != nil {
		return "", err
	}
	return imaging.DataURL(e.MIME, data), nil
}

// inferBody is the /v1/infer body for one image, as AIPerf sends it.
func inferBody(url string) ([]byte, error) {
	type input struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	body, err := json.Marshal(map[string][]input{"input": {{Type: "image_url", URL: url}}})
	if err != nil {
		return nil, fmt.Errorf("encode infer payload: %w", err)
	}
	return body, nil
}

// chatBody is the chat completion body for one question and image, in the
// shape AIPerf sends.
func chatBody(model, question, url string) ([]byte, error) {
	type imageURL struct {
		URL string `json:"url"`
	}
	type part struct {
		Type     string    `json:"type"`
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	type message struct {
		Role    string `json:"role"`
		Content []part `json:"content"`
	}
	type body struct {
		Messages []message `json:"messages"`
		Model    string    `json:"model"`
		Stream   bool      `json:"stream"`
	}
	out, err := json.Marshal(body{
		Messages: []message{{Role: "user", Content: []part{{Type: "text", Text: question}, {Type: "image_url", ImageURL: &imageURL{URL: url}}}}},
		Model:    model,
	})
	if err != nil {
		return nil, fmt.Errorf("encode chat payload: %w", err)
	}
	return out, nil
}

func inferPayload(c *corpus.Corpus, e corpus.Entry) ([]byte, error) {
	url, err := dataURL(c, e)
	if err != nil {
		return nil, err
	}
	return inferBody(url)
}

func chatPayload(c *corpus.Corpus, e corpus.Entry) ([]byte, error) {
	url, err := dataURL(c, e)
	if err != nil {
		return nil, err
	}
	return chatBody("check", e.Question, url)
}

// Encode renders a result as indented JSON with a trailing newline.
func (r *Result) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode check result: %w", err)
	}
	return buf.Bytes(), nil
}
