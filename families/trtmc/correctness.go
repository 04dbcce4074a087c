package trtmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
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
	Argv []string
	Dir  string
	// Cases are the testcase names of the profile's manifest (a result for
	// any other case is another model's); empty: only a case named as the
	// profile is accepted.
	Cases []string
	// Layout picks the case (LayoutAuto: the one the checkout holds);
	// Family is the TRTMC family directory (families/<Family>) of the
	// newer layout.
	Layout, Family string
	// QualifyProgram and QualifyEnvironment run trtmc-qualify (the newer
	// layout's family-owned qualification).
	QualifyProgram, QualifyEnvironment string
	// TRTMCBinary, RuntimeRoot and ModelDir are the newer e2e test's
	// TRTMC_BINARY, TRTMC_RUNTIME_ROOT and TRTMC_<FAMILY>_MODEL_DIR.
	TRTMCBinary, RuntimeRoot, ModelDir string
	// Revision is the profile's checkpoint revision, which a newer e2e
	// test that validates a prebuilt bundle requires
	// (TRTMC_E2E_CHECKPOINT_REVISION).
	Revision       string
	Env            []string
	Runner         proc.Runner
	Stdout, Stderr io.Writer
}

// Gate is one thresholded metric, as trtmc-qual's correctness result
// carries it. Reference is the reference side's value of the same metric
// when the stage records it (refMetric).
type Gate struct {
	Name      string   `json:"name"`
	Value     float64  `json:"value"`
	Op        string   `json:"op"`
	Threshold float64  `json:"threshold"`
	Passed    bool     `json:"passed"`
	Reference *float64 `json:"reference,omitempty"`
}

// refPrefix names a stage metric's reference side: TRTMC's comparators
// record the native (TensorRT) and the reference implementation's values
// of one quantity as trt_<name> and ref_<name> in the same stage
// (tests/e2e_harness/comparators/segmentation.py: trt_num_detections and
// ref_num_detections, trt_num_classes and ref_num_classes).
const refPrefix = "ref_"

// refMetric is the reference side of gate m of a stage, when the stage
// records it as ref_<m> (a metric object or a legacy bare number; read
// into res.Metrics already); nil when it does not.
func refMetric(res *CorrectnessResult, caseName, stage, m string) *float64 {
	if strings.HasPrefix(m, refPrefix) {
		return nil
	}
	v, ok := res.Metrics[caseName+"/"+stage+"/"+refPrefix+m]
	if !ok {
		return nil
	}
	return &v
}

// CaseResult is one TRTMC result.json, summarised.
type CaseResult struct {
	Case        string            `json:"case"`
	File        string            `json:"file"`
	Status      string            `json:"status"`
	FailureType string            `json:"failure_type,omitempty"`
	Stages      map[string]string `json:"stages"`
	// Composite are the stages that passed under their composite_rule,
	// which the harness evaluated over their gates.
	Composite []CompositeStage `json:"composite,omitempty"`
}

// CompositeStage is a stage that passed under its composite rule, and the
// gates of the rule that did not hold but were not needed (they are kept
// as metrics, not gates).
type CompositeStage struct {
	Stage     string   `json:"stage"`
	Rule      string   `json:"rule"`
	NotNeeded []string `json:"not_needed,omitempty"`
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
	// Layout is the layout whose case ran (e2e-result, qualify, e2e-env).
	Layout  string   `json:"layout,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
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
	before, err := fileio.FileSHA256(ctx, bundle)
	if err != nil {
		return nil, fmt.Errorf("profile %s: the served bundle: %w", o.Profile, err)
	}
	o.Bundle = bundle
	layout, err := pickLayout(o)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(o.ArtifactsDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("profile %s: artifacts directory %s is not empty: results of another run would be read", o.Profile, o.ArtifactsDir)
	}
	if err := os.MkdirAll(o.ArtifactsDir, 0o755); err != nil {
		return nil, err
	}
	res := &CorrectnessResult{Schema: CorrectnessSchema, Source: "trtmc-e2e-result-json", Profile: o.Profile,
		BundleSHA256: before, Metrics: map[string]float64{}, Gates: []Gate{}, Argv: o.Argv, Layout: layout}
	switch layout {
	case LayoutE2EResult:
		return runE2EResult(ctx, o, res, before)
	case LayoutQualify:
		if err := runQualify(ctx, o, res); err != nil {
			return nil, err
		}
		if after, err := fileio.FileSHA256(ctx, bundle); err != nil || after != before {
			return nil, fmt.Errorf("profile %s: the served bundle %s changed during trtmc-qualify", o.Profile, bundle)
		}
		failed := res.Reasons
		res.Reasons = nil
		return finishCorrectness(o, res, failed)
	case LayoutE2EEnv:
		return nil, runE2EEnv(ctx, o, res)
	}
	return nil, fmt.Errorf("unknown correctness layout %q (%s, %s, %s or %s)", layout, LayoutAuto, LayoutE2EResult, LayoutQualify, LayoutE2EEnv)
}

// runE2EResult runs the e2e case of the e2e-result layout against the
// served bundle (linked into the engine directory, checked unchanged
// afterwards) and converts every result.json it wrote.
func runE2EResult(ctx context.Context, o CorrectnessOptions, res *CorrectnessResult, before string) (*CorrectnessResult, error) {
	link, err := linkServedBundle(o)
	if err != nil {
		return nil, err
	}
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
	if err := checkServedBundle(o.EngineDir, link, o.Bundle, before); err != nil {
		return nil, fmt.Errorf("profile %s: %w", o.Profile, err)
	}
	if run.ExitCode != 0 && run.ExitCode != 1 {
		// pytest: 2 interrupted, 3 internal error, 4 usage error, 5 no tests.
		return nil, fmt.Errorf("profile %s: the e2e case did not run to a verdict (%s exited %d; pytest: 2 interrupted, 3 internal error, 4 usage error, 5 no tests collected)%s",
			o.Profile, filepath.Base(o.Argv[0]), run.ExitCode, tailNote(run.StderrTail))
	}
	failed, err := convertResults(o, res, run)
	if err != nil {
		return nil, err
	}
	return finishCorrectness(o, res, failed)
}

// linkServedBundle puts a symlink to the served bundle into the engine
// directory, under the name the manifest gives it; the directory must hold
// nothing of that name already.
func linkServedBundle(o CorrectnessOptions) (string, error) {
	name := o.BundleName
	if name == "" {
		name = filepath.Base(o.Bundle)
	}
	if err := os.MkdirAll(o.EngineDir, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(o.EngineDir, name)
	if _, err := os.Lstat(link); err == nil {
		return "", fmt.Errorf("profile %s: %s already exists; the engine directory must hold only the served bundle", o.Profile, link)
	}
	if err := os.Symlink(o.Bundle, link); err != nil {
		return "", err
	}
	return link, nil
}

// convertResults converts every result.json under the artifacts
// directory, and fails a case of the manifest that wrote none and a
// pytest failure no result explains.
func convertResults(o CorrectnessOptions, res *CorrectnessResult, run proc.Result) ([]string, error) {
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
		c, reasons, err := convertResult(f, o.ArtifactsDir, res, o.Profile, o.Cases)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", o.Profile, err)
		}
		res.Cases = append(res.Cases, c)
		failed = append(failed, reasons...)
	}
	for _, want := range o.Cases {
		if !slices.ContainsFunc(res.Cases, func(c CaseResult) bool { return c.Case == want }) {
			failed = append(failed, fmt.Sprintf("case %s of profile %s wrote no result.json: a case of the manifest is missing", want, o.Profile))
		}
	}
	if run.ExitCode == 1 && len(failed) == 0 {
		failed = append(failed, "pytest exited 1 (a test failed) although every result.json passed")
	}
	return failed, nil
}

// finishCorrectness writes the result: a result without a gate is no
// result at all; one with failures is passed: false.
func finishCorrectness(o CorrectnessOptions, res *CorrectnessResult, failed []string) (*CorrectnessResult, error) {
	if len(res.Gates) == 0 {
		return nil, fmt.Errorf("profile %s: correctness output without metrics: %d case result(s) hold no metric with a threshold, so nothing says the bundle is correct",
			o.Profile, len(res.Cases))
	}
	passed := len(failed) == 0
	res.Passed = &passed
	res.Reasons = failed
	if err := fileio.WriteJSON(o.Out, res); err != nil {
		return nil, err
	}
	if !passed {
		return res, &CorrectnessFailed{Reasons: failed}
	}
	return res, nil
}

func tailNote(tail string) string {
	if t := strings.TrimSpace(tail); t != "" {
		return "; last output:\n" + text.Indent(text.LastLines(t, 10))
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
	after, err := fileio.FileSHA256(context.Background(), bundle)
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
// (tests/e2e_harness/result_schema.py serialize_result; contracts.py
// E2EStatus pass/fail/skip/error, StageStatus passed/failed/skipped/error).
type e2eResult struct {
	CaseName    *string             `json:"case_name"`
	Status      string              `json:"status"`
	FailureType json.RawMessage     `json:"failure_type"`
	Stages      map[string]e2eStage `json:"stages"`
}

type e2eStage struct {
	Status        *string                    `json:"status"`
	Metrics       map[string]json.RawMessage `json:"metrics"`
	Message       string                     `json:"message"`
	CompositeRule string                     `json:"composite_rule"`
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
// It reads TRTMC's result closed (issue 25 items 4 to 6): the case must be
// one of the profile's (cases; the profile's own name when they are not
// known), its status one TRTMC defines, a pass must carry no failure_type,
// every stage must say passed, a metric that says passed: false without a
// threshold is a failure, and a stage passes under its composite_rule only
// when the rule evaluates true over its gates. Each failure names the file
// and field; the error is for a result that is no result at all.
func convertResult(path, root string, res *CorrectnessResult, profile string, cases []string) (CaseResult, []string, error) {
	rel, _ := filepath.Rel(root, path)
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return CaseResult{}, nil, err
	}
	var r e2eResult
	if err := json.Unmarshal(data, &r); err != nil {
		return CaseResult{}, nil, fmt.Errorf("%s: not a TRTMC result.json: %w", rel, err)
	}
	var failed []string
	fail := func(format string, args ...any) { failed = append(failed, rel+": "+fmt.Sprintf(format, args...)) }
	name := ""
	switch {
	case r.CaseName == nil || *r.CaseName == "":
		fail("case_name is missing: the result names no case")
		name = filepath.Base(filepath.Dir(path))
	default:
		name = *r.CaseName
		want := cases
		if len(want) == 0 {
			want = []string{profile}
		}
		if !slices.Contains(want, name) {
			fail("case_name %q is not a case of profile %s (its cases: %s): another model's result", name, profile, strings.Join(want, ", "))
		}
	}
	c := CaseResult{Case: name, File: rel, Status: r.Status, Stages: map[string]string{}}
	if ft := strings.TrimSpace(string(r.FailureType)); ft != "" && ft != "null" {
		var s string
		if json.Unmarshal(r.FailureType, &s) == nil {
			c.FailureType = s
		} else {
			c.FailureType = ft
		}
	}
	switch r.Status {
	case "pass":
		if c.FailureType != "" {
			fail("failure_type is %q although status is pass: TRTMC names a failure", c.FailureType)
		}
	case "fail":
		fail("case %s failed (%s)", name, orNone(c.FailureType))
	case "skip":
		return c, nil, fmt.Errorf("%s: case %s was skipped: a skipped case is no correctness result", rel, name)
	case "error":
		return c, nil, fmt.Errorf("%s: case %s ended in error (%s): the case broke before a verdict", rel, name, orNone(c.FailureType))
	default:
		fail("status %q is not one of TRTMC's (pass, fail, skip, error)", r.Status)
	}
	if len(r.Stages) == 0 {
		fail("stages: none: the case records no compared stage")
	}
	for _, s := range slices.Sorted(maps.Keys(r.Stages)) {
		st := r.Stages[s]
		status := "missing"
		if st.Status != nil {
			status = *st.Status
		}
		c.Stages[s] = status
		if status != "passed" {
			fail("stages.%s.status is %q, not passed%s", s, status, msgNote(st.Message))
		}
		if err := convertStage(rel, name, s, st, res, &c, fail); err != nil {
			return c, nil, err
		}
	}
	return c, failed, nil
}

// stageMetric is one metric of a stage as read and checked.
type stageMetric struct {
	gated bool // it has a threshold
	holds bool // its gate holds (checked against value, operator, threshold)
	value float64
	m     e2eMetric
}

// convertStage adds one stage's metrics to res and its gates to res and
// c: every metric read and checked (readMetric), the stage's composite
// rule evaluated over its gates (compositeRule), then each gate recorded,
// or noted as not needed when the rule decided the stage (stageGates).
func convertStage(rel, caseName, s string, st e2eStage, res *CorrectnessResult, c *CaseResult, fail func(string, ...any)) error {
	metrics := map[string]stageMetric{}
	names := slices.Sorted(maps.Keys(st.Metrics))
	for _, m := range names {
		field := fmt.Sprintf("%s: stages.%s.metrics.%s", rel, s, m)
		sm, legacy, err := readMetric(field, st.Metrics[m])
		if err != nil {
			return err
		}
		res.Metrics[caseName+"/"+s+"/"+m] = sm.value
		if !legacy {
			metrics[m] = sm
		}
	}
	expr := compositeRule(s, strings.TrimSpace(st.CompositeRule), metrics, c, fail)
	stageGates(caseName, s, names, metrics, expr, res, c, fail)
	return nil
}

// readMetric reads one metric: {value, threshold, operator, passed}, whose
// outcome, when it has a threshold, must be what value, operator and
// threshold say; or, legacy, a bare finite number (informational).
func readMetric(field string, raw json.RawMessage) (sm stageMetric, legacy bool, err error) {
	var mr e2eMetric
	if err := json.Unmarshal(raw, &mr); err != nil {
		var v float64
		if json.Unmarshal(raw, &v) == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return stageMetric{value: v}, true, nil
		}
		return stageMetric{}, false, fmt.Errorf("%s: not a metric {value, threshold, operator, passed}", field)
	}
	if mr.Value == nil || math.IsNaN(*mr.Value) || math.IsInf(*mr.Value, 0) {
		return stageMetric{}, false, fmt.Errorf("%s: value missing or not a finite number", field)
	}
	sm = stageMetric{value: *mr.Value, m: mr}
	if mr.Threshold == nil {
		return sm, false, nil
	}
	if mr.Passed == nil {
		return stageMetric{}, false, fmt.Errorf("%s: a thresholded metric without its outcome (passed)", field)
	}
	holds, ok := compare(*mr.Value, mr.Operator, *mr.Threshold)
	if !ok {
		return stageMetric{}, false, fmt.Errorf("%s: unknown operator %q", field, mr.Operator)
	}
	if holds != *mr.Passed {
		return stageMetric{}, false, fmt.Errorf("%s: TRTMC says passed=%t but %g %s %g is %t: the result contradicts itself",
			field, *mr.Passed, *mr.Value, mr.Operator, *mr.Threshold, holds)
	}
	sm.gated, sm.holds = true, holds
	return sm, false, nil
}

// compositeRule evaluates a stage's composite_rule over its gates (nil for
// a rule that means "every gate passes"). A rule that holds is recorded in
// c.Composite; one that does not hold, cannot be parsed or names a metric
// without a gate is a failure.
func compositeRule(s, rule string, metrics map[string]stageMetric, c *CaseResult, fail func(string, ...any)) *ruleExpr {
	if allPassRules[strings.ToLower(rule)] {
		return nil
	}
	expr, err := parseRule(rule)
	if err != nil {
		fail("stages.%s.composite_rule %q cannot be evaluated (%v): the harness cannot establish that the stage passes", s, rule, err)
		return nil
	}
	outcome := func(n string) tri {
		sm, ok := metrics[n]
		if !ok || !sm.gated {
			return triUnknown
		}
		if sm.holds {
			return triTrue
		}
		return triFalse
	}
	switch expr.eval(outcome) {
	case triFalse:
		fail("stages.%s.composite_rule %q does not hold over the stage's gates", s, rule)
	case triUnknown:
		var why []string
		for _, n := range expr.names {
			if sm, ok := metrics[n]; !ok {
				why = append(why, n+" is not recorded")
			} else if !sm.gated {
				why = append(why, n+" has no threshold")
			}
		}
		fail("stages.%s.composite_rule %q cannot be established: %s", s, rule, strings.Join(why, ", "))
	default:
		c.Composite = append(c.Composite, CompositeStage{Stage: s, Rule: rule})
	}
	return expr
}

// stageGates records each metric of the stage: a gate (failed when it
// does not hold), a passed: false without a threshold as a failure, or,
// when the stage's composite rule decides and the gate did not hold, a
// note on the rule that it was not needed.
func stageGates(caseName, s string, names []string, metrics map[string]stageMetric, expr *ruleExpr, res *CorrectnessResult, c *CaseResult, fail func(string, ...any)) {
	held := expr != nil && len(c.Composite) > 0 && c.Composite[len(c.Composite)-1].Stage == s
	for _, m := range names {
		sm, ok := metrics[m]
		if !ok {
			continue // legacy informational number
		}
		full := caseName + "/" + s + "/" + m
		inRule := expr != nil && slices.Contains(expr.names, m)
		switch {
		case !sm.gated:
			if sm.m.Passed != nil && !*sm.m.Passed && !inRule {
				fail("stages.%s.metrics.%s says passed: false with no threshold: TRTMC counts it failed", s, m)
			}
		case expr != nil && !sm.holds && (inRule || held):
			// The stage's composite rule decides: TRTMC's comparator sets
			// the stage's status from the rule alone, so a gate the rule
			// did not need (or does not name) stays a metric, listed, not
			// a gate (the criteria stay TRTMC's own). When the rule did
			// not hold its failure is recorded above.
			if held {
				note := fmt.Sprintf("%s %g not %s %g", full, sm.value, sm.m.Operator, *sm.m.Threshold)
				if !inRule {
					note += " (outside the rule)"
				}
				c.Composite[len(c.Composite)-1].NotNeeded = append(c.Composite[len(c.Composite)-1].NotNeeded, note)
			}
		default:
			res.Gates = append(res.Gates, Gate{Name: full, Value: sm.value, Op: sm.m.Operator, Threshold: *sm.m.Threshold, Passed: sm.holds,
				Reference: refMetric(res, caseName, s, m)})
			if !sm.holds {
				fail("%s %g not %s %g", full, sm.value, sm.m.Operator, *sm.m.Threshold)
			}
		}
	}
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
		return ": " + text.Clip(m, 200)
	}
	return ""
}
