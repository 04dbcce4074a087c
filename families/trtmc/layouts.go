package trtmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// TRTMC moved its family-owned correctness between two layouts, and the
// correctness adapter runs the case that exists at the checkout's commit:
//
//   - older (e9132e79): `pytest tests/e2e/models/<f>/test_<f>_e2e.py
//     --e2e-model P --engine-dir D ...`, which uses D/<manifest bundle> and
//     writes <artifacts>/<case>/result.json (tests/e2e_harness/);
//   - newer: the family-owned qualification `trtmc-qualify run --kind
//     accuracy --model P --environment E -o DIR` writing report.json
//     (apps/benchmark/trtmc_benchmark/qualification_cli.py idx@2969ba82,
//     qualification.py generate_report idx@ce7a1333), or the family's e2e
//     test `families/<f>/tests/test_e2e.py` (idx@9777fef7), which reads
//     TRTMC_BINARY, TRTMC_RUNTIME_ROOT and TRTMC_<FAMILY>_MODEL_DIR, builds
//     its own bundle in pytest's tmp_path and asserts its thresholds
//     without writing them down. Where the family's tests validate a
//     prebuilt bundle instead (text families: TRTMC_E2E_BUNDLE,
//     TRTMC_E2E_PROFILE, TRTMC_E2E_CHECKPOINT_REVISION; text_profile.py
//     idx@a9ed5f69, families/gpt2/tests/test_prebuilt_validation.py
//     idx@6aa3968c), the served bundle is passed that way.
//
// Where the public sources cannot establish a step — that the newer
// cases tested the served bundle, or what their metrics were — the
// adapter fails closed and says which step.

// Correctness layouts (CorrectnessOptions.Layout).
const (
	LayoutAuto      = "auto"
	LayoutE2EResult = "e2e-result" // the older tests/e2e/models case, result.json
	LayoutQualify   = "qualify"    // trtmc-qualify run --kind accuracy, report.json
	LayoutE2EEnv    = "e2e-env"    // the newer families/<f>/tests/test_e2e.py
)

// QualifyReportSchema is report.json's schema_version.
const QualifyReportSchema = "trtmc.qualification-report/v1"

// pickLayout says which case exists in the checkout: the given argv's test
// file (the older layout), else the family's qualification config, else
// its newer e2e test.
func pickLayout(o CorrectnessOptions) (string, error) {
	if o.Layout != "" && o.Layout != LayoutAuto {
		return o.Layout, nil
	}
	for _, a := range o.Argv[1:] {
		if strings.HasSuffix(a, ".py") && !filepath.IsAbs(a) {
			if _, err := os.Stat(filepath.Join(o.Dir, a)); err == nil {
				return LayoutE2EResult, nil
			}
			break
		}
	}
	if o.Family == "" {
		// Nothing more to look for: run the command as given.
		return LayoutE2EResult, nil
	}
	if _, err := os.Stat(filepath.Join(o.Dir, qualifyConfig(o))); err == nil {
		return LayoutQualify, nil
	}
	if _, err := os.Stat(filepath.Join(o.Dir, newerE2E(o))); err == nil {
		return LayoutE2EEnv, nil
	}
	return "", fmt.Errorf("profile %s: no correctness case of family %s exists in %s: neither the older layout's %s, nor the newer layout's %s or %s",
		o.Profile, o.Family, o.Dir, firstPy(o.Argv), qualifyConfig(o), newerE2E(o))
}

func qualifyConfig(o CorrectnessOptions) string {
	return filepath.Join("families", o.Family, "tests", "qualification", o.Profile+".accuracy.yaml")
}

func newerE2E(o CorrectnessOptions) string {
	return filepath.Join("families", o.Family, "tests", "test_e2e.py")
}

func firstPy(argv []string) string {
	for _, a := range argv {
		if strings.HasSuffix(a, ".py") {
			return a
		}
	}
	return "(no test file in the command)"
}

// runQualify runs TRTMC's family-owned accuracy qualification for the
// profile and reads report.json closed.
func runQualify(ctx context.Context, o CorrectnessOptions, res *CorrectnessResult) error {
	if o.QualifyEnvironment == "" {
		return fmt.Errorf("profile %s: the newer layout's correctness is `trtmc-qualify run --kind accuracy` (%s), which needs a qualification environment file: pass --qualify-environment or set TRTMC_QUALIFY_ENVIRONMENT",
			o.Profile, qualifyConfig(o))
	}
	prog := o.QualifyProgram
	if prog == "" {
		prog = "trtmc-qualify"
	}
	out := filepath.Join(o.ArtifactsDir, "qualify")
	argv := []string{prog, "run", "--kind", "accuracy", "--model", o.Profile, "--environment", o.QualifyEnvironment, "-o", out}
	res.Source, res.Argv = "trtmc-qualify-report-json", argv
	run, err := o.Runner.Run(ctx, proc.Spec{Name: "trtmc-qualify", Argv: argv, Dir: o.Dir, Env: o.Env, Stdout: o.Stdout, Stderr: o.Stderr})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.ExitCode = run.ExitCode
	var pe *proc.ExitError
	if err != nil && !errors.As(err, &pe) {
		return fmt.Errorf("profile %s: %w", o.Profile, err)
	}
	if run.ExitCode == 2 {
		return fmt.Errorf("profile %s: trtmc-qualify refused the run (exit 2, a QualificationError)%s", o.Profile, tailNote(run.StderrTail))
	}
	data, err := fileio.ReadFile(ctx, filepath.Join(out, "report.json"), fileio.MaxDocumentBytes)
	if err != nil {
		return fmt.Errorf("profile %s: trtmc-qualify wrote no usable report.json (exit %d): %w", o.Profile, run.ExitCode, err)
	}
	return readQualifyReport(data, o, res)
}

type qualifyReport struct {
	Schema string        `json:"schema_version"`
	Kind   string        `json:"kind"`
	Status string        `json:"status"`
	Items  []qualifyItem `json:"items"`
}

// qualifyItem is one suite of a qualification report.
type qualifyItem struct {
	Model      string                     `json:"model"`
	SuiteID    string                     `json:"suite_id"`
	CaseID     string                     `json:"case_id"`
	GatePolicy string                     `json:"gate_policy"`
	Execution  string                     `json:"execution"`
	Verdict    *string                    `json:"verdict"`
	Details    map[string]json.RawMessage `json:"details"`
}

// qualifyFile is report.json as the result names it.
const qualifyFile = "qualify/report.json"

// readQualifyReport reads report.json closed: its schema and kind, a
// status TRTMC defines, every item the profile's, completed, a blocking
// one passed; gates from the items' metrics; and, since the public sources
// do not establish that trtmc-qualify runs an already-built bundle, an
// item that names the bundle it ran (details.bundle_sha256) equal to the
// served one — else no result, naming that step.
func readQualifyReport(data []byte, o CorrectnessOptions, res *CorrectnessResult) error {
	var r qualifyReport
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("profile %s: report.json is not a TRTMC qualification report: %w", o.Profile, err)
	}
	if err := r.checkHeader(o.Profile); err != nil {
		return err
	}
	var failed []string
	fail := func(format string, args ...any) {
		failed = append(failed, qualifyFile+": "+fmt.Sprintf(format, args...))
	}
	switch r.Status {
	case "pass":
	case "fail":
		fail("status is fail")
	default:
		fail("status %q is not one of TRTMC's (pass, fail, error, empty, observed)", r.Status)
	}
	bundleNamed := false
	for i, it := range r.Items {
		named, err := it.read(fmt.Sprintf("items[%d]", i), o.Profile, res, fail)
		if err != nil {
			return err
		}
		bundleNamed = bundleNamed || named
	}
	if !bundleNamed {
		return fmt.Errorf("profile %s: %s names no bundle it ran (no item has details.bundle_sha256): the public sources do not establish that trtmc-qualify tests an already-built bundle, so nothing shows it tested the served one (step: served bundle)",
			o.Profile, qualifyFile)
	}
	res.Reasons = append(res.Reasons, failed...)
	return nil
}

// checkHeader refuses a report that is no accuracy verdict at all.
func (r *qualifyReport) checkHeader(profile string) error {
	switch {
	case r.Schema != QualifyReportSchema:
		return fmt.Errorf("profile %s: %s: schema_version %q, want %s", profile, qualifyFile, r.Schema, QualifyReportSchema)
	case r.Kind != "accuracy":
		return fmt.Errorf("profile %s: %s: kind %q, want accuracy", profile, qualifyFile, r.Kind)
	case r.Status == "error", r.Status == "empty", r.Status == "observed":
		return fmt.Errorf("profile %s: %s: status %q: no blocking accuracy verdict (qualification_cli.py: pass, fail, error, empty, observed)", profile, qualifyFile, r.Status)
	case len(r.Items) == 0:
		return fmt.Errorf("profile %s: %s: items: none", profile, qualifyFile)
	}
	return nil
}

// read adds one item to res: its case, its checks (the profile's model,
// completed, a blocking suite passed), the bundle it names (which must be
// the served one: named reports it) and its metrics.
func (it *qualifyItem) read(where, profile string, res *CorrectnessResult, fail func(string, ...any)) (named bool, err error) {
	c := CaseResult{Case: it.CaseID, File: qualifyFile, Status: it.Execution, Stages: map[string]string{it.SuiteID: it.Execution}}
	if it.Verdict != nil {
		c.Status = *it.Verdict
	}
	res.Cases = append(res.Cases, c)
	if it.Model != profile {
		fail("%s.model is %q, not the profile %s: another model's result", where, it.Model, profile)
	}
	if it.Execution != "completed" {
		fail("%s.execution is %q, not completed", where, it.Execution)
	}
	if it.GatePolicy == "blocking" && (it.Verdict == nil || *it.Verdict != "pass") {
		v := "none"
		if it.Verdict != nil {
			v = *it.Verdict
		}
		fail("%s.verdict is %s for a blocking suite", where, v)
	}
	var sum string
	if raw, ok := it.Details["bundle_sha256"]; ok {
		_ = json.Unmarshal(raw, &sum)
	}
	if sum != "" {
		if sum != res.BundleSHA256 {
			return false, fmt.Errorf("profile %s: %s: %s.details.bundle_sha256 is %s, not the served bundle's %s: it tested another bundle",
				profile, qualifyFile, where, sum, res.BundleSHA256)
		}
		named = true
	}
	return named, it.readMetrics(where, profile, res, fail)
}

// readMetrics adds the item's details.metrics to res: a bare number is
// informational, one with a threshold a gate whose outcome must agree with
// its value, operator and threshold.
func (it *qualifyItem) readMetrics(where, profile string, res *CorrectnessResult, fail func(string, ...any)) error {
	var metrics map[string]json.RawMessage
	if raw, ok := it.Details["metrics"]; ok {
		_ = json.Unmarshal(raw, &metrics)
	}
	for _, m := range slices.Sorted(mapsKeys(metrics)) {
		name := it.CaseID + "/" + it.SuiteID + "/" + m
		var mr e2eMetric
		if json.Unmarshal(metrics[m], &mr) != nil || mr.Value == nil {
			var v float64
			if json.Unmarshal(metrics[m], &v) == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				res.Metrics[name] = v
			}
			continue
		}
		res.Metrics[name] = *mr.Value
		if mr.Threshold == nil {
			if mr.Passed != nil && !*mr.Passed {
				fail("%s.details.metrics.%s says passed: false with no threshold", where, m)
			}
			continue
		}
		holds, ok := compare(*mr.Value, mr.Operator, *mr.Threshold)
		if !ok || mr.Passed == nil || holds != *mr.Passed {
			return fmt.Errorf("profile %s: %s: %s.details.metrics.%s: a gate whose outcome is missing or contradicts its value, operator and threshold", profile, qualifyFile, where, m)
		}
		res.Gates = append(res.Gates, Gate{Name: name, Value: *mr.Value, Op: mr.Operator, Threshold: *mr.Threshold, Passed: holds})
		if !holds {
			fail("%s %g not %s %g", name, *mr.Value, mr.Operator, *mr.Threshold)
		}
	}
	return nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runE2EEnv runs the newer layout's family e2e test the way it reads its
// inputs (TRTMC_BINARY, TRTMC_RUNTIME_ROOT, TRTMC_<FAMILY>_MODEL_DIR), with
// pytest's --basetemp inside the artifacts so the bundle it builds can be
// found, and says which steps the sources leave unestablished: whether the
// bundle it built is byte for byte the served one, and what its metrics
// were (it asserts its thresholds without recording values). It never
// gives a result the row could qualify on.
func runE2EEnv(ctx context.Context, o CorrectnessOptions, res *CorrectnessResult) error {
	envName := "TRTMC_" + strings.ToUpper(o.Family) + "_MODEL_DIR"
	var missing []string
	vals := map[string]string{"TRTMC_BINARY": o.TRTMCBinary, "TRTMC_RUNTIME_ROOT": o.RuntimeRoot, envName: o.ModelDir}
	for _, k := range []string{"TRTMC_BINARY", "TRTMC_RUNTIME_ROOT", envName} {
		if vals[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("profile %s: the newer layout's e2e test (%s) reads %s, which are not set: it cannot run (step: inputs)", o.Profile, newerE2E(o), strings.Join(missing, ", "))
	}
	base := filepath.Join(o.ArtifactsDir, "basetemp")
	argv := []string{"pytest", newerE2E(o), "--e2e-model", o.Profile, "--basetemp", base}
	env := append(append([]string{}, o.Env...), "TRTMC_BINARY="+o.TRTMCBinary, "TRTMC_RUNTIME_ROOT="+o.RuntimeRoot, envName+"="+o.ModelDir)
	prebuilt, err := acceptsPrebuilt(o)
	if err != nil {
		return err
	}
	if prebuilt {
		env = append(env, prebuiltEnv+"="+o.Bundle, "TRTMC_E2E_PROFILE="+o.Profile, "TRTMC_E2E_CHECKPOINT_REVISION="+o.Revision)
	}
	res.Source, res.Argv = "trtmc-e2e-families-test", argv
	run, err := o.Runner.Run(ctx, proc.Spec{Name: "e2e case", Argv: argv, Dir: o.Dir, Env: env, Stdout: o.Stdout, Stderr: o.Stderr})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.ExitCode = run.ExitCode
	var pe *proc.ExitError
	if err != nil && !errors.As(err, &pe) {
		return fmt.Errorf("profile %s: %w", o.Profile, err)
	}
	outcome := map[int]string{0: "passed", 1: "failed"}[run.ExitCode]
	if outcome == "" {
		return fmt.Errorf("profile %s: %s did not run to a verdict (pytest exited %d)%s", o.Profile, newerE2E(o), run.ExitCode, tailNote(run.StderrTail))
	}
	name := o.BundleName
	if name == "" {
		name = filepath.Base(o.Bundle)
	}
	var built []string
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			built = append(built, p)
		}
		return nil
	})
	bundleStep := fmt.Sprintf("it built no %s under its tmp_path", name)
	if prebuilt && len(built) == 0 && run.ExitCode == 0 {
		// The test took the served bundle (prebuiltEnv) and validated it
		// against the profile and the exact checkpoint revision: that
		// step is established; its metrics still are not.
		return fmt.Errorf("profile %s: %s passed on the served bundle (given as %s, with TRTMC_E2E_PROFILE and TRTMC_E2E_CHECKPOINT_REVISION %s), "+
			"but it asserts its thresholds (families/%s/tests/thresholds/<case>.json) without recording their values, so there is no gate to judge (step: metrics)",
			o.Profile, newerE2E(o), prebuiltEnv, o.Revision, o.Family)
	}
	for _, b := range built {
		sum, err := fileio.FileSHA256(ctx, b)
		if err != nil {
			continue
		}
		if sum == res.BundleSHA256 {
			bundleStep = "the bundle it built is byte for byte the served one"
		} else {
			bundleStep = fmt.Sprintf("it built its own bundle (sha256 %s), not the served one (%s)", sum[:12], res.BundleSHA256[:12])
		}
	}
	return fmt.Errorf("profile %s: %s %s (pytest exit %d), but it asserts its thresholds (families/%s/tests/thresholds/<case>.json) without recording their values, so there is no gate to judge (step: metrics); and %s (step: served bundle)",
		o.Profile, newerE2E(o), outcome, run.ExitCode, o.Family, bundleStep)
}

// prebuiltEnv names the bundle a newer text family's e2e test validates
// instead of building its own.
const prebuiltEnv = "TRTMC_E2E_BUNDLE"

// acceptsPrebuilt reports whether the family's newer e2e test validates a
// prebuilt bundle (its tests read TRTMC_E2E_BUNDLE: the text families'
// _validation_bundle, idx@6aa3968c), and refuses to run one without the
// checkpoint revision it requires (it asserts the exact revision,
// TRTMC_E2E_CHECKPOINT_REVISION).
func acceptsPrebuilt(o CorrectnessOptions) (bool, error) {
	dir := filepath.Join(o.Dir, "families", o.Family, "tests")
	files, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	for _, f := range files {
		data, err := fileio.ReadFile(context.Background(), f, fileio.MaxDocumentBytes)
		if err != nil || !strings.Contains(string(data), prebuiltEnv) {
			continue
		}
		if o.Revision == "" {
			return true, fmt.Errorf("profile %s: the family's e2e tests validate a prebuilt bundle (%s reads %s) only with its exact checkpoint revision, "+
				"and the inventory pins no revision for the profile: pin it (revision:) so the served bundle can be tested (step: inputs)",
				o.Profile, filepath.Join("families", o.Family, "tests", filepath.Base(f)), prebuiltEnv)
		}
		return true, nil
	}
	return false, nil
}
