package families

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Answer is the canonical form of one answer, HTTP or native: the exact
// JSON value the family compares (a JSON string for chat text, the `data`
// array for detection), plus what was counted in it.
type Answer struct {
	// Canonical is compact JSON, comparable byte for byte.
	Canonical json.RawMessage
	// Tokens is the number of generated tokens of a text answer as the
	// model counted them: the HTTP answer's usage.completion_tokens, or the
	// native Task's completion_tokens. 0 means the source gave no count (a
	// complete text answer has at least one token); it is never a word
	// count.
	Tokens int
	// Boxes is the number of boxes of a detection answer.
	Boxes int
	// FinishNull is set when a chat answer's finish_reason was JSON null;
	// the family decides whether that is complete (Semantics.FinishReasonNull).
	FinishNull bool
	// NamesModel is set by an extractor whose HTTP answers name the model
	// that answered (the chat completion's `model`, "" when absent): the
	// join requires it to be the served --model-name.
	NamesModel bool
	Model      string
}

// Extractor pulls the answer out of an HTTP response body or a native
// runner's `answer` value, and judges whether an HTTP answer is complete and
// meaningful.
type Extractor interface {
	// FromHTTP extracts the answer from a full HTTP response body.
	FromHTTP(body []byte) (Answer, error)
	// FromNative canonicalises a native runner's answer value.
	FromNative(answer json.RawMessage) (Answer, error)
	// NotMeaningful returns why an answer is not complete and meaningful, or
	// "" when it is.
	NotMeaningful(a Answer, sem *verdict.Semantics) string
}

// Comparator decides whether an HTTP answer equals a native answer and
// explains the difference when it does not.
type Comparator interface {
	// Compare returns "" when the answers match, else a readable diff.
	Compare(http, native Answer, sem *verdict.Semantics) string
}

// Registry maps the names used in families.yaml to implementations.
type Registry struct {
	Extractors  map[string]Extractor
	Comparators map[string]Comparator
}

// DefaultRegistry returns the extractors and comparators trtmc-qual ships.
func DefaultRegistry() Registry {
	return Registry{
		Extractors: map[string]Extractor{
			"openai-chat-text":   chatText{},
			"nim-bounding-boxes": nimBoxes{},
		},
		Comparators: map[string]Comparator{
			"exact":           exact{},
			"boxes-tolerance": boxesTolerance{},
			"boxes-iou":       boxesIoU{},
		},
	}
}

// ExtractorNames lists the registered extractor names, sorted.
func (r Registry) ExtractorNames() []string { return keys(r.Extractors) }

// ComparatorNames lists the registered comparator names, sorted.
func (r Registry) ComparatorNames() []string { return keys(r.Comparators) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- chat text ---------------------------------------------------------

type chatText struct{}

func (chatText) FromHTTP(body []byte) (Answer, error) {
	var resp struct {
		Object  string  `json:"object"`
		Model   *string `json:"model"`
		Choices []struct {
			Message *struct {
				Content *string `json:"content"`
			} `json:"message"`
			FinishReason json.RawMessage `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens json.RawMessage `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return Answer{}, fmt.Errorf("response is not JSON: %w", err)
	}
	if resp.Object != "chat.completion" {
		return Answer{}, fmt.Errorf("object is %q, want chat.completion", resp.Object)
	}
	if len(resp.Choices) != 1 {
		return Answer{}, fmt.Errorf("%d choices, want 1", len(resp.Choices))
	}
	c := resp.Choices[0]
	if c.Message == nil || c.Message.Content == nil {
		return Answer{}, fmt.Errorf("choices[0].message.content is missing")
	}
	a := textAnswer(*c.Message.Content)
	a.NamesModel = true
	if resp.Model != nil {
		a.Model = *resp.Model
	}
	switch fr := strings.TrimSpace(string(c.FinishReason)); {
	case fr == "null":
		a.FinishNull = true
	case fr == "" || fr == `""`:
		return Answer{}, fmt.Errorf("choices[0].finish_reason is missing (incomplete answer)")
	case !strings.HasPrefix(fr, `"`):
		return Answer{}, fmt.Errorf("choices[0].finish_reason is %s, not a string", clip([]byte(fr)))
	}
	if resp.Usage != nil && len(resp.Usage.CompletionTokens) > 0 && string(resp.Usage.CompletionTokens) != "null" {
		n, err := tokenCount(resp.Usage.CompletionTokens)
		if err != nil {
			return Answer{}, fmt.Errorf("usage.completion_tokens: %w", err)
		}
		a.Tokens = n
	}
	return a, nil
}

// FromNative accepts the native answer of a chat Task in one of two forms:
// the answer text as a JSON string (no token count), or
// {"text": "...", "completion_tokens": N} (the Task's own count).
func (chatText) FromNative(answer json.RawMessage) (Answer, error) {
	var s string
	if err := json.Unmarshal(answer, &s); err == nil {
		return textAnswer(s), nil
	}
	var obj struct {
		Text             *string         `json:"text"`
		CompletionTokens json.RawMessage `json:"completion_tokens"`
	}
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.Text == nil {
		return Answer{}, fmt.Errorf("native answer is neither a JSON string nor {\"text\", \"completion_tokens\"}: %s", clip(answer))
	}
	a := textAnswer(*obj.Text)
	if len(obj.CompletionTokens) > 0 && string(obj.CompletionTokens) != "null" {
		n, err := tokenCount(obj.CompletionTokens)
		if err != nil {
			return Answer{}, fmt.Errorf("native answer completion_tokens: %w", err)
		}
		a.Tokens = n
	}
	return a, nil
}

func tokenCount(raw json.RawMessage) (int, error) {
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a token count", clip(raw))
	}
	return int(n), nil
}

func (chatText) NotMeaningful(a Answer, sem *verdict.Semantics) string {
	var s string
	_ = json.Unmarshal(a.Canonical, &s)
	if strings.TrimSpace(s) == "" {
		return "empty answer text"
	}
	if strings.ContainsRune(s, '\uFFFD') {
		return "answer text contains invalid UTF-8"
	}
	if a.FinishNull && (sem == nil || sem.FinishReasonNull != verdict.FinishNullComplete) {
		return "finish_reason is null: the answer may be incomplete (the family does not declare finish_reason_null: complete)"
	}
	if a.Tokens == 0 {
		// The HTTP answer's usage.completion_tokens is the row's output
		// size: without it the sum over the matched requests would
		// undercount.
		return "the answer reports no usage.completion_tokens: its output size is not known (the row never counts words)"
	}
	return ""
}

// textAnswer is a chat answer's canonical form: the text as a JSON string.
// Its token count comes from the model (usage, the Task), never from here.
func textAnswer(s string) Answer {
	b, _ := json.Marshal(s)
	return Answer{Canonical: b}
}

// --- NIM bounding boxes --------------------------------------------------

type nimBoxes struct{}

// Box is one detected box in NIM shape.
type Box struct {
	XMin       float64 `json:"x_min"`
	YMin       float64 `json:"y_min"`
	XMax       float64 `json:"x_max"`
	YMax       float64 `json:"y_max"`
	Confidence float64 `json:"confidence"`
}

type nimItem struct {
	Index         int              `json:"index"`
	BoundingBoxes map[string][]Box `json:"bounding_boxes"`
}

func (nimBoxes) FromHTTP(body []byte) (Answer, error) {
	var resp struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return Answer{}, fmt.Errorf("response is not JSON: %w", err)
	}
	if len(resp.Data) == 0 || string(resp.Data) == "null" {
		return Answer{}, fmt.Errorf("response has no data")
	}
	return boxesAnswer(resp.Data)
}

func (nimBoxes) FromNative(answer json.RawMessage) (Answer, error) { return boxesAnswer(answer) }

func boxesAnswer(data json.RawMessage) (Answer, error) {
	items, err := parseItems(data)
	if err != nil {
		return Answer{}, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return Answer{}, fmt.Errorf("data is not JSON: %w", err)
	}
	n := 0
	for _, it := range items {
		for _, bs := range it.BoundingBoxes {
			n += len(bs)
		}
	}
	return Answer{Canonical: buf.Bytes(), Boxes: n}, nil
}

func parseItems(data json.RawMessage) ([]nimItem, error) {
	var items []nimItem
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil {
		return nil, fmt.Errorf("data is not a list of {index, bounding_boxes}: %w", err)
	}
	return items, nil
}

func (nimBoxes) NotMeaningful(a Answer, sem *verdict.Semantics) string {
	items, err := parseItems(a.Canonical)
	if err != nil {
		return err.Error()
	}
	if len(items) != 1 {
		return fmt.Sprintf("%d data items for one image", len(items))
	}
	if a.Boxes == 0 {
		return "no boxes"
	}
	labels := map[string]bool{}
	if sem != nil {
		for _, l := range sem.Labels {
			labels[l] = true
		}
	}
	for _, label := range sortedLabels(items[0].BoundingBoxes) {
		if len(labels) > 0 && !labels[label] {
			return fmt.Sprintf("unknown label %q", label)
		}
		for i, b := range items[0].BoundingBoxes[label] {
			where := fmt.Sprintf("%s[%d]", label, i)
			for _, v := range []float64{b.XMin, b.YMin, b.XMax, b.YMax} {
				if v < 0 || v > 1 || math.IsNaN(v) {
					return where + ": coordinate outside 0..1"
				}
			}
			if b.XMin >= b.XMax || b.YMin >= b.YMax {
				return where + ": empty box (min >= max)"
			}
			if b.Confidence < 0 || b.Confidence > 1 || math.IsNaN(b.Confidence) {
				return where + ": confidence outside 0..1"
			}
		}
	}
	return ""
}

func sortedLabels(m map[string][]Box) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- comparators ---------------------------------------------------------

type exact struct{}

// Compare matches equal canonical answers. When both sides counted the
// generated tokens, the counts must be equal too: the same text from a
// different token sequence is not the same answer.
func (exact) Compare(h, n Answer, _ *verdict.Semantics) string {
	if !bytes.Equal(h.Canonical, n.Canonical) {
		return fmt.Sprintf("http:   %s\nnative: %s", clip(h.Canonical), clip(n.Canonical))
	}
	if h.Tokens > 0 && n.Tokens > 0 && h.Tokens != n.Tokens {
		return fmt.Sprintf("same text, but %d completion tokens over http and %d native", h.Tokens, n.Tokens)
	}
	return ""
}

// boxesTolerance matches detection answers whose labels and box counts are
// equal and whose coordinates and confidences differ by at most the
// family's documented tolerance.
type boxesTolerance struct{}

func (boxesTolerance) Compare(h, n Answer, sem *verdict.Semantics) string {
	tol := 0.0
	if sem != nil {
		tol = sem.Tolerance
	}
	return compareBoxes(h, n, sem, func(label string, j int, hb, nb Box) []string {
		if d := maxAbs(hb, nb); d > tol {
			return []string{fmt.Sprintf("%s[%d]: differs by %.6g > tolerance %.6g (http %+v, native %+v)", label, j, d, tol, hb, nb)}
		}
		return nil
	})
}

// boxesIoU matches detection answers box by box as TRTMC's detection
// parity does (families/<f>/tests/benchmark/<profile>.yaml idx@05c79a3a,
// output_contract detection-parity: min_box_iou, max_score_abs_error):
// per label the same number of boxes, each pair overlapping by at least the
// family's MinBoxIoU and with confidences no further apart than its
// MaxScoreAbsError.
type boxesIoU struct{}

func (boxesIoU) Compare(h, n Answer, sem *verdict.Semantics) string {
	var minIoU, maxScore float64
	if sem != nil {
		minIoU, maxScore = sem.MinBoxIoU, sem.MaxScoreAbsError
	}
	return compareBoxes(h, n, sem, func(label string, j int, hb, nb Box) []string {
		var diffs []string
		if iou := IoU(hb, nb); iou < minIoU {
			diffs = append(diffs, fmt.Sprintf("%s[%d]: box IoU %.4f < min_box_iou %g (http %+v, native %+v)", label, j, iou, minIoU, hb, nb))
		}
		if d := math.Abs(hb.Confidence - nb.Confidence); d > maxScore {
			diffs = append(diffs, fmt.Sprintf("%s[%d]: confidence differs by %.6g > max_score_abs_error %g", label, j, d, maxScore))
		}
		return diffs
	})
}

// compareBoxes is the walk both box comparators share: equal canonical
// answers match; otherwise both must parse as the same number of items,
// each label with as many boxes on both sides (else the exact comparison's
// diff), and pair says what differs between the j-th boxes of a label.
func compareBoxes(h, n Answer, sem *verdict.Semantics, pair func(label string, j int, hb, nb Box) []string) string {
	if bytes.Equal(h.Canonical, n.Canonical) {
		return ""
	}
	hi, err1 := parseItems(h.Canonical)
	ni, err2 := parseItems(n.Canonical)
	if err1 != nil || err2 != nil || len(hi) != len(ni) {
		return exact{}.Compare(h, n, sem)
	}
	var diffs []string
	for i := range hi {
		for _, label := range union(hi[i].BoundingBoxes, ni[i].BoundingBoxes) {
			hb, nb := hi[i].BoundingBoxes[label], ni[i].BoundingBoxes[label]
			if len(hb) != len(nb) {
				diffs = append(diffs, fmt.Sprintf("%s: %d boxes over http, %d native", label, len(hb), len(nb)))
				continue
			}
			for j := range hb {
				diffs = append(diffs, pair(label, j, hb[j], nb[j])...)
			}
		}
	}
	return strings.Join(diffs, "\n")
}

// IoU is the intersection over union of two boxes (0 when either is
// empty).
func IoU(a, b Box) float64 {
	ix := max(0, min(a.XMax, b.XMax)-max(a.XMin, b.XMin))
	iy := max(0, min(a.YMax, b.YMax)-max(a.YMin, b.YMin))
	inter := ix * iy
	area := func(x Box) float64 { return max(0, x.XMax-x.XMin) * max(0, x.YMax-x.YMin) }
	union := area(a) + area(b) - inter
	if union <= 0 || math.IsNaN(union) {
		return 0
	}
	return inter / union
}

func union(a, b map[string][]Box) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return keys(set)
}

func maxAbs(a, b Box) float64 {
	return max(math.Abs(a.XMin-b.XMin), math.Abs(a.YMin-b.YMin), math.Abs(a.XMax-b.XMax),
		math.Abs(a.YMax-b.YMax), math.Abs(a.Confidence-b.Confidence))
}

func clip(b []byte) string {
	const n = 400
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + fmt.Sprintf("... (%d bytes)", len(b))
}
