package verdict

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// EvidenceError is a malformed evidence file, located as precisely as the
// decoder allows.
type EvidenceError struct {
	File  string
	Line  int    // 0 when unknown
	Field string // "" when unknown
	Err   error
}

func (e *EvidenceError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *EvidenceError) Unwrap() error { return e.Err }

// EvidenceIntact reports whether the row was read from evidence that is
// exactly what its run sealed: no evidence_changed, evidence_malformed or
// result_missing problem. Only such a row's figures are shown or compared
// (--baseline), and only such a row is a Slurm task's own.
func (r *Result) EvidenceIntact() bool {
	for _, p := range r.Problems {
		switch p.Code {
		case CodeEvidenceChanged, CodeEvidenceMalformed, CodeResultMissing:
			return false
		}
	}
	return true
}

// DecodeError is the *EvidenceError of a JSON document that does not
// decode: the line of a syntax or type error, the field of a type error
// and what it holds instead of what it must.
func DecodeError(path string, data []byte, err error) *EvidenceError {
	e := &EvidenceError{File: path, Err: err}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		e.Line = fileio.LineAt(data, se.Offset)
	case errors.As(err, &te):
		e.Line, e.Field = fileio.LineAt(data, te.Offset), te.Field
		e.Err = fmt.Errorf("is %s, want %s", te.Value, te.Type)
	}
	return e
}

// DecodeResult parses and checks one result.json. group and profile, when
// not empty, must match the file's. Errors are *EvidenceError.
func DecodeResult(path string, data []byte, group, profile string) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, DecodeError(path, data, err)
	}
	bad := func(field, format string, args ...any) error {
		return &EvidenceError{File: path, Line: lineOfKey(data, field), Field: field, Err: fmt.Errorf(format, args...)}
	}
	if r.Schema != ResultSchema {
		return nil, bad("schema", "is %q, want %q", r.Schema, ResultSchema)
	}
	if r.Profile == "" {
		return nil, bad("profile", "is missing")
	}
	if err := text.CheckName(r.Profile); err != nil {
		return nil, bad("profile", "%v", err)
	}
	if err := text.CheckName(r.Group); err != nil {
		return nil, bad("group", "%v", err)
	}
	if profile != "" && r.Profile != profile {
		return nil, bad("profile", "is %q but the evidence directory is %q", r.Profile, profile)
	}
	if group != "" && r.Group != group {
		return nil, bad("group", "is %q, want %q", r.Group, group)
	}
	switch r.Verdict {
	case VerdictQualified, VerdictFailed, VerdictError, VerdictInterrupted, VerdictExcluded, VerdictSkipped, VerdictNotRun:
	default:
		return nil, bad("verdict", "unknown verdict %q", r.Verdict)
	}
	if r.Verdict == VerdictExcluded && r.Exclusion == "" {
		return nil, bad("exclusion", "an excluded result must say why")
	}
	return &r, nil
}

// BrokenResult is the error row of a profile whose result cannot be read.
func BrokenResult(group, profile string, code Code, msg string) *Result {
	r := &Result{Schema: ResultSchema, Group: group, Profile: profile, Reasons: []Reason{}, Stages: []Stage{},
		RequestsByPhase: map[string]Counts{}, Problems: []Problem{{Stage: "evidence", Code: code, Message: msg}}}
	Judge(r)
	return r
}

// lineOfKey is the line of the first `"key":` in data, or 0.
func lineOfKey(data []byte, key string) int {
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:`)
	loc := re.FindIndex(data)
	if loc == nil {
		return 0
	}
	return fileio.LineAt(data, int64(loc[0]))
}
