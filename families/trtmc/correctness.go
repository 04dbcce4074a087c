package trtmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/qual/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// CorrectnessSchema is the schema of the result the correctness adapter
// writes: trtmc-qual's correctness result (passed, metrics, gates; see
// docs/design.md) plus where it came from.
const CorrectnessSchema = "trtmc-qual/correctness/v1"

// CorrectnessOptions run TRTMC's e2e case for one profile on the served
// bundle.
type CorrectnessOptions struct {
	Profile string
	// Bundle is the served bundle. EngineDir is created and given one
	// entry, BundleName (the manifest's `bundle`, default Bundle's base
	// name), a symlink to Bundle: TRTMC's orchestrator uses
	// <engine-dir>/<manifest bundle> when it exists and builds one only
	// when it does not (tests/e2e_harness/orchestrator.py).
	Bundle     string
	BundleName string
	EngineDir  string
	// ArtifactsDir is where the case writes <case>/result.json
	// (--e2e-artifacts-dir; tests/e2e_harness/artifact_sink.py).
	ArtifactsDir string
	// Out is the trtmc-qual correctness result.
	Out string
	// Argv is the case's command (pytest ...), run in Dir (the TRTMC
	// checkout).
	Argv           []string
	Dir            string
	Env            []string
	Runner         proc.Runner
	Stdout, Stderr io.Writer
}

// Gate is one thresholded metric, as trtmc-qual's correctness result
// carries it.
type Gate struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
}

// CaseResult is one TRTMC result.json, summarised.
type CaseResult struct {
	Case        string            `json:"case"`
	File        string            `json:"file"`
	Status      string            `json:"status"`
	FailureType string            `json:"failure_type,omitempty"`
	Stages      map[string]string `json:"stages"`
}

// CorrectnessResult is what the adapter writes to Out.
type CorrectnessResult struct {
	Schema       string             `json:"schema"`
	Source       string             `json:"source"`
	Profile      string             `json:"profile"`
	BundleSHA256 string             `json:"bundle_sha256"`
	Passed       *bool              `json:"passed"`
	Metrics      map[string]float64 `json:"metrics"`
	Gates        []Gate             `json:"gates"`
	Cases        []CaseResult       `json:"cases"`
	Argv         []string           `json:"argv"`
	ExitCode     int                `json:"exit_code"`
	Reasons      []string           `json:"reasons,omitempty"`
}

// CorrectnessFailed is a case that ran and failed: the result is written
// with passed=false (adapter exit status 1).
type CorrectnessFailed struct{ Reasons []string }

func (e *CorrectnessFailed) Error() string {
	return "the e2e case failed: " + strings.Join(e.Reasons, "; ")
}

// RunCorrectness runs the case and converts its results. It returns nil
// (passed), *CorrectnessFailed (ran and failed; Out written) or another
// error (no trustworthy result; Out not written).
func RunCorrectness(ctx context.Context, o CorrectnessOptions) (*CorrectnessResult, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no e2e command given (after --)")
	}
	bundle, err := filepath.Abs(o.Bundle)
	if err != nil {
		return nil, err
	}
	before, err := evidence.FileSHA256(ctx, bundle)
	if err != nil {
		return nil, fmt.Errorf("profile %s: the served bundle: %w", o.Profile, err)
	}
	name := o.BundleName
	if name == "" {
		name = filepath.Base(bundle)
	}
	if err := os.MkdirAll(o.EngineDir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(o.EngineDir, name)
	if _, err := os.Lstat(link); err == nil {
		return nil, fmt.Errorf("profile %s: %s already exists; the engine directory must hold only the served bundle", o.Profile, link)
	}
	if err := os.Symlink(bundle, link); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(o.ArtifactsDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("profile %s: artifacts directory %s is not empty: results of another run would be read", o.Profile, o.ArtifactsDir)
	}
	if err := os.MkdirAll(o.ArtifactsDir, 0o755); err != nil {
		return nil, err
	}

	res := &CorrectnessResult{Schema: CorrectnessSchema, Source: "trtmc-e2e-result-json", Profile: o.Profile,
		BundleSHA256: before, Metrics: map[string]float64{}, Gates: []Gate{}, Argv: o.Argv}
	run, runErr := o.Runner.Run(ctx, proc.Spec{Name: "e2e case", Argv: o.Argv, Dir: o.Dir, Env: o.Env,
		Stdout: o.Stdout, Stderr: o.Stderr})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.ExitCode = run.ExitCode
	var pe *proc.ExitError
	if runErr != nil && !errors.As(runErr, &pe) {
		return nil, fmt.Errorf("profile %s: %w", o.Profile, runErr)
	}
	// The case must have used the served bundle, unchanged.
	if err := checkServedBundle(o.EngineDir, link, bundle, before); err != nil {
		return nil, fmt.Errorf("profile %s: %w", o.Profile, err)
	}
	if run.ExitCode != 0 && run.ExitCode != 1 {
		// pytest: 2 interrupted, 3 internal error, 4 usage error, 5 no tests.
		return nil, fmt.Errorf("profile %s: the e2e case did not run to a verdict (%s exited %d; pytest: 2 interrupted, 3 internal error, 4 usage error, 5 no tests collected)%s",
			o.Profile, filepath.Base(o.Argv[0]), run.ExitCode, tailNote(run.StderrTail))
	}
	files, err := resultFiles(o.ArtifactsDir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("profile %s: the e2e case wrote no result.json under %s (exit %d): no metrics to judge%s",
			o.Profile, o.ArtifactsDir, run.ExitCode, tailNote(run.StderrTail))
	}
	var failed []string
	for _, f := range files {
		c, reasons, err := convertResult(f, o.ArtifactsDir, res)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", o.Profile, err)
		}
		res.Cases = append(res.Cases, c)
		failed = append(failed, reasons...)
	}
	if len(res.Gates) == 0 {
		return nil, fmt.Errorf("profile %s: correctness output without metrics: %d result.json file(s) hold no metric with a threshold, so nothing says the bundle is correct",
			o.Profile, len(files))
	}
	if run.ExitCode == 1 && len(failed) == 0 {
		failed = append(failed, "pytest exited 1 (a test failed) although every result.json passed")
	}
	passed := len(failed) == 0
	res.Passed = &passed
	res.Reasons = failed
	if err := evidence.WriteJSON(o.Out, res); err != nil {
		return nil, err
	}
	if !passed {
		return res, &CorrectnessFailed{Reasons: failed}
	}
	return res, nil
}

func tailNote(tail string) string {
	if t := strings.TrimSpace(tail); t != "" {
		return "; last output:\n    " + strings.ReplaceAll(lastLines(t, 10), "\n", "\n    ")
	}
	return ""
}

// checkServedBundle: the engine directory still holds exactly the symlink
// to the served bundle, whose bytes did not change.
func checkServedBundle(dir, link, bundle, sum string) error {
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("the e2e case replaced %s: it built its own bundle instead of testing the served one", link)
	}
	if target, err := os.Readlink(link); err != nil || target != bundle {
		return fmt.Errorf("the e2e case re-pointed %s to %q", link, target)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".bundle") && filepath.Join(dir, e.Name()) != link {
			return fmt.Errorf("the e2e case built %s: it did not use the served bundle (is the manifest's bundle name %s?)", e.Name(), filepath.Base(link))
		}
	}
	after, err := evidence.FileSHA256(context.Background(), bundle)
	if err != nil {
		return err
	}
	if after != sum {
		return fmt.Errorf("the served bundle %s changed during the e2e case (sha256 %s, then %s)", bundle, sum, after)
	}
	return nil
}

func resultFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "result.json" {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// e2eResult is the part of TRTMC's result.json read here
// (tests/e2e_harness/result_schema.py serialize_result).
type e2eResult struct {
	CaseName    string              `json:"case_name"`
	Status      string              `json:"status"`
	FailureType *string             `json:"failure_type"`
	Stages      map[string]e2eStage `json:"stages"`
}

type e2eStage struct {
	Status  string                     `json:"status"`
	Metrics map[string]json.RawMessage `json:"metrics"`
	Message string                     `json:"message"`
}

type e2eMetric struct {
	Value     *float64 `json:"value"`
	Threshold *float64 `json:"threshold"`
	Operator  string   `json:"operator"`
	Passed    *bool    `json:"passed"`
}

// convertResult adds one result.json's metrics and gates to res. Every
// metric becomes `<case>/<stage>/<metric>`; one with a threshold is a gate
// whose outcome is TRTMC's, checked against value, operator and threshold.
func convertResult(path, root string, res *CorrectnessResult) (CaseResult, []string, error) {
	rel, _ := filepath.Rel(root, path)
	data, err := evidence.ReadFile(context.Background(), path, evidence.MaxDocumentBytes)
	if err != nil {
		return CaseResult{}, nil, err
	}
	var r e2eResult
	if err := json.Unmarshal(data, &r); err != nil {
		return CaseResult{}, nil, fmt.Errorf("%s: not a TRTMC result.json: %w", rel, err)
	}
	if r.CaseName == "" {
		r.CaseName = filepath.Base(filepath.Dir(path))
	}
	c := CaseResult{Case: r.CaseName, File: rel, Status: r.Status, Stages: map[string]string{}}
	if r.FailureType != nil {
		c.FailureType = *r.FailureType
	}
	var failed []string
	switch r.Status {
	case "pass":
	case "fail":
		failed = append(failed, fmt.Sprintf("case %s failed (%s)", r.CaseName, orNone(c.FailureType)))
	case "skip":
		return c, nil, fmt.Errorf("%s: case %s was skipped: a skipped case is no correctness result", rel, r.CaseName)
	case "error":
		return c, nil, fmt.Errorf("%s: case %s ended in error (%s): the case broke before a verdict", rel, r.CaseName, orNone(c.FailureType))
	default:
		return c, nil, fmt.Errorf("%s: case %s has status %q (want pass, fail, skip or error)", rel, r.CaseName, r.Status)
	}
	stages := make([]string, 0, len(r.Stages))
	for s := range r.Stages {
		stages = append(stages, s)
	}
	sort.Strings(stages)
	for _, s := range stages {
		st := r.Stages[s]
		c.Stages[s] = st.Status
		if st.Status == "failed" || st.Status == "error" {
			failed = append(failed, fmt.Sprintf("case %s stage %s %s%s", r.CaseName, s, st.Status, msgNote(st.Message)))
		}
		names := make([]string, 0, len(st.Metrics))
		for m := range st.Metrics {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			field := fmt.Sprintf("%s: stages.%s.metrics.%s", rel, s, m)
			name := r.CaseName + "/" + s + "/" + m
			var mr e2eMetric
			if err := json.Unmarshal(st.Metrics[m], &mr); err != nil {
				// Legacy form: a bare number, informational.
				var v float64
				if json.Unmarshal(st.Metrics[m], &v) == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
					res.Metrics[name] = v
					continue
				}
				return c, nil, fmt.Errorf("%s: not a metric {value, threshold, operator, passed}", field)
			}
			if mr.Value == nil || math.IsNaN(*mr.Value) || math.IsInf(*mr.Value, 0) {
				return c, nil, fmt.Errorf("%s: value missing or not a finite number", field)
			}
			res.Metrics[name] = *mr.Value
			if mr.Threshold == nil {
				continue // informational
			}
			if mr.Passed == nil {
				return c, nil, fmt.Errorf("%s: a thresholded metric without its outcome (passed)", field)
			}
			holds, ok := compare(*mr.Value, mr.Operator, *mr.Threshold)
			if !ok {
				return c, nil, fmt.Errorf("%s: unknown operator %q", field, mr.Operator)
			}
			if holds != *mr.Passed {
				return c, nil, fmt.Errorf("%s: TRTMC says passed=%t but %g %s %g is %t: the result contradicts itself",
					field, *mr.Passed, *mr.Value, mr.Operator, *mr.Threshold, holds)
			}
			res.Gates = append(res.Gates, Gate{Name: name, Value: *mr.Value, Op: mr.Operator, Threshold: *mr.Threshold, Passed: *mr.Passed})
			if !*mr.Passed {
				failed = append(failed, fmt.Sprintf("%s %g not %s %g", name, *mr.Value, mr.Operator, *mr.Threshold))
			}
		}
	}
	return c, failed, nil
}

func compare(v float64, op string, t float64) (bool, bool) {
	switch op {
	case ">=":
		return v >= t, true
	case "<=":
		return v <= t, true
	case ">":
		return v > t, true
	case "<":
		return v < t, true
	case "==":
		return v == t, true
	case "!=":
		return v != t, true
	}
	return false, false
}

func orNone(s string) string {
	if s == "" {
		return "no failure_type"
	}
	return s
}

func msgNote(m string) string {
	if m = strings.TrimSpace(m); m != "" {
		return ": " + clipText(m, 200)
	}
	return ""
}
