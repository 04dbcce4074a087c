package trtmc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// BundleOptions locate or build one profile's bundle.
type BundleOptions struct {
	Profile string
	// Bundle is where the inventory expects the bundle.
	Bundle string
	// Search holds directories where an already-built bundle of the same
	// file name may be; a match is linked into place, never copied.
	Search []string
	// Build builds a missing bundle from the profile's manifest in Repo at
	// Ref (TRTMC's tests/e2e_harness/orchestrator.py build command).
	Build  bool
	Repo   string
	Ref    string
	Python string
	Specs  *specs.Config
	Git    gitread.Repo
	Env    []string
	Runner proc.Runner
	Stdout io.Writer
	Stderr io.Writer
}

// Receipt records where a bundle came from and its identity; it is
// written next to the bundle as <bundle>.receipt.json.
type Receipt struct {
	Schema   string    `json:"schema"`
	Profile  string    `json:"profile"`
	Bundle   string    `json:"bundle"`
	SHA256   string    `json:"sha256"`
	Source   string    `json:"source"` // existing, linked, built
	From     string    `json:"from,omitempty"`
	Manifest string    `json:"manifest,omitempty"`
	Commit   string    `json:"commit,omitempty"`
	Argv     []string  `json:"argv,omitempty"`
	At       time.Time `json:"at"`
}

// ReceiptSchema is the receipt's schema.
const ReceiptSchema = "trtmc-qual/bundle-receipt/v1"

// PrepareBundle makes Bundle exist and returns its receipt.
func PrepareBundle(ctx context.Context, o BundleOptions) (*Receipt, error) {
	rc := &Receipt{Schema: ReceiptSchema, Profile: o.Profile, Bundle: o.Bundle, At: time.Now().UTC()}
	switch fi, err := os.Stat(o.Bundle); {
	case err == nil && fi.Mode().IsRegular():
		rc.Source = "existing"
	case err == nil:
		return nil, fmt.Errorf("profile %s: bundle %s is not a regular file", o.Profile, o.Bundle)
	default:
		found := ""
		for _, dir := range o.Search {
			cand := filepath.Join(dir, filepath.Base(o.Bundle))
			if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() {
				found = cand
				break
			}
		}
		switch {
		case found != "":
			abs, err := filepath.Abs(found)
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Dir(o.Bundle), 0o755); err != nil {
				return nil, err
			}
			if err := os.Symlink(abs, o.Bundle); err != nil {
				return nil, err
			}
			rc.Source, rc.From = "linked", abs
		case o.Build:
			if err := build(ctx, o, rc); err != nil {
				return nil, err
			}
			rc.Source = "built"
		default:
			where := "no search directory given"
			if len(o.Search) > 0 {
				where = "not in " + strings.Join(o.Search, ", ")
			}
			return nil, fmt.Errorf("profile %s: bundle %s is missing (%s); place it there, pass --search DIR, or --build it from the manifest",
				o.Profile, o.Bundle, where)
		}
	}
	sum, err := fileio.FileSHA256(ctx, o.Bundle)
	if err != nil {
		return nil, err
	}
	rc.SHA256 = sum
	if err := fileio.WriteJSON(o.Bundle+".receipt.json", rc); err != nil {
		return nil, err
	}
	return rc, nil
}

func build(ctx context.Context, o BundleOptions, rc *Receipt) error {
	if o.Repo == "" {
		return fmt.Errorf("profile %s: --build needs the TRTMC checkout (--repo or TRTMC_REPO)", o.Profile)
	}
	snap, err := specs.Source{Git: o.Git, Config: o.Specs, Repo: o.Repo}.Read(ctx, o.Ref)
	if err != nil {
		return fmt.Errorf("profile %s: bundle %s is missing and its manifest cannot be read to build it: %w", o.Profile, o.Bundle, err)
	}
	var m *specs.Manifest
	for _, cand := range snap.Manifests {
		if cand.Name == o.Profile {
			m = cand
		}
	}
	if m == nil {
		return fmt.Errorf("profile %s: no manifest named %s in %s at %s", o.Profile, o.Profile, o.Repo, snap.Commit[:min(12, len(snap.Commit))])
	}
	if filepath.Base(o.Bundle) != m.Bundle {
		return fmt.Errorf("profile %s: the inventory's bundle file %s is not the manifest's bundle %s (%s)", o.Profile, filepath.Base(o.Bundle), m.Bundle, m.Path)
	}
	python := o.Python
	if python == "" {
		python = "python3"
	}
	bundle, err := filepath.Abs(o.Bundle)
	if err != nil {
		return err
	}
	argv, err := BuildArgv(python, m, bundle, o.Repo)
	if err != nil {
		return fmt.Errorf("profile %s: %w", o.Profile, err)
	}
	if err := os.MkdirAll(filepath.Dir(bundle), 0o755); err != nil {
		return err
	}
	rc.Manifest, rc.Commit, rc.Argv = m.Path, snap.Commit, argv
	if _, err := o.Runner.Run(ctx, proc.Spec{Name: "bundle build", Argv: argv, Dir: o.Repo, Env: o.Env, Stdout: o.Stdout, Stderr: o.Stderr}); err != nil {
		return fmt.Errorf("profile %s: build: %w", o.Profile, err)
	}
	if fi, err := os.Stat(bundle); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("profile %s: the build exited 0 but wrote no bundle at %s", o.Profile, bundle)
	}
	return nil
}

// BuildArgv is TRTMC's bundle build command for a manifest, as its e2e
// orchestrator composes it (tests/e2e_harness/orchestrator.py
// _resolve_bundle at e9132e79): hf_id, -o, --max-cache-length,
// --model-revision, --method, build_args (decoder layout, tp/cp),
// --precision unless fp32, --fp32-layers, quantization,
// --trust-remote-code. Manifest keys whose meaning depends on TRTMC's
// Python side (build_cli_args, build_env, fp8_scales) are refused by name
// rather than guessed.
//
// A manifest of TRTMC's newer layout (families/<f>/tests/manifests) is
// refused: there the build is the family's own `build` command, declared
// in families/<f>/cli.json (arguments such as --revision, --task,
// --precision, --backend, --image-height; TRTMC's benchmark/catalog.py
// binds the manifest's fields to them), not this command, and its argv
// has not been run against a real TRTMC here, so it is not guessed.
func BuildArgv(python string, m *specs.Manifest, bundle, repo string) ([]string, error) {
	if err := checkBuildable(m); err != nil {
		return nil, err
	}
	raw := m.Raw
	hf := m.Checkpoint
	if hf != "" && !filepath.IsAbs(hf) && repo != "" {
		if _, err := os.Stat(filepath.Join(repo, hf)); err == nil {
			hf = filepath.Join(repo, hf)
		}
	}
	argv := []string{python, "-m", "tensorrt_model_connect.__main__", "build", hf, "-o", bundle}
	if v, ok := raw["max_cache_length"]; ok {
		argv = append(argv, "--max-cache-length", scalar(v))
	}
	if m.Revision != "" {
		argv = append(argv, "--model-revision", m.Revision)
	}
	argv, err := appendBuildArgs(argv, m)
	if err != nil {
		return nil, err
	}
	if p := m.Precision; p != "" && p != "fp32" {
		argv = append(argv, "--precision", p)
	}
	if layers, ok := raw["fp32_layers"].([]any); ok && len(layers) > 0 {
		parts := make([]string, len(layers))
		for i, l := range layers {
			parts[i] = scalar(l)
		}
		argv = append(argv, "--fp32-layers", strings.Join(parts, ","))
	}
	argv = appendQuantization(argv, raw)
	if t, ok := raw["trust_remote_code"].(bool); ok && t {
		argv = append(argv, "--trust-remote-code")
	}
	return argv, nil
}

// checkBuildable refuses a manifest whose build this command would not be:
// one of TRTMC's newer layout, or one using keys whose meaning lives in
// TRTMC's Python side.
func checkBuildable(m *specs.Manifest) error {
	if m.Layout == specs.LayoutFamilies {
		return fmt.Errorf("manifest %s is in TRTMC's newer layout, whose bundles are built by the family's own build command (families/%s/cli.json), which trtmc-qual does not compose: build the bundle with TRTMC's tooling and pass its folder with --search (or $TRTMC_BUNDLE_DIR)",
			m.Path, m.Dir)
	}
	var unsupported []string
	for _, k := range []string{"build_cli_args", "build_env", "fp8_scales"} {
		if _, ok := m.Raw[k]; ok {
			unsupported = append(unsupported, k)
		}
	}
	if len(unsupported) > 0 {
		return fmt.Errorf("manifest %s uses %s, which trtmc-qual does not translate: build the bundle with TRTMC's e2e harness (pytest ... --rebuild-engines) and point the inventory at it",
			m.Path, strings.Join(unsupported, ", "))
	}
	return nil
}

// buildArgsKnown are the build_args keys the orchestrator translates.
var buildArgsKnown = map[string]bool{"backend": true, "method": true, "decoder_engine_layout": true, "parallel": true,
	"tp_size": true, "tensor_parallel_size": true, "cp_size": true, "context_parallel_size": true, "parallel_mode": true}

// appendBuildArgs translates the manifest's build_args: --method trt,
// --decoder-engine-layout, and the tp/cp sizes of its parallelism; any
// other key is refused.
func appendBuildArgs(argv []string, m *specs.Manifest) ([]string, error) {
	ba, _ := m.Raw["build_args"].(map[string]any)
	if ba == nil {
		return argv, nil
	}
	var extra []string
	for k := range ba {
		if !buildArgsKnown[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("manifest %s has build_args %s that trtmc-qual does not translate", m.Path, strings.Join(extra, ", "))
	}
	if b := strings.ToLower(scalar(firstOf(ba, "backend", "method"))); b == "trt" {
		argv = append(argv, "--method", "trt")
	}
	if v, ok := ba["decoder_engine_layout"]; ok {
		argv = append(argv, "--decoder-engine-layout", scalar(v))
	}
	if m.Parallel != nil && m.Parallel.TP > 1 {
		argv = append(argv, "--tp-size", strconv.Itoa(m.Parallel.TP))
	}
	if m.Parallel != nil && m.Parallel.CP > 1 {
		argv = append(argv, "--cp-size", strconv.Itoa(m.Parallel.CP))
	}
	return argv, nil
}

// appendQuantization translates the manifest's quantization block
// (format, scale_artifact, calibration_samples); format none quantizes
// nothing.
func appendQuantization(argv []string, raw map[string]any) []string {
	q, ok := raw["quantization"].(map[string]any)
	if !ok {
		return argv
	}
	f := scalar(q["format"])
	if f == "" || f == "none" || f == "<nil>" {
		return argv
	}
	argv = append(argv, "--quantize", f)
	if s, ok := q["scale_artifact"]; ok && s != nil {
		argv = append(argv, "--quant-scales", scalar(s))
	}
	if n, ok := q["calibration_samples"]; ok && n != nil {
		argv = append(argv, "--quant-calibration-samples", scalar(n))
	}
	return argv
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// scalar writes a JSON scalar the way Python's str() does for ints and
// strings (manifests hold integers as JSON numbers).
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		if x {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}
