// Package families holds family-owned semantics on the harness side: how
// each model family's server, correctness case and native runner are
// started (argv templates from families.yaml), and how an HTTP answer and a
// native answer are extracted, checked for meaningful content and compared.
//
// The parts:
//
//   - config.go: families.yaml, checked when it is read, each problem at
//     its line: argv templates (CheckArgv: argv lists, never shell strings;
//     known placeholders), readiness, the correctness, native and prepare
//     commands, and a family's endpoint_type against inventory/endpoint's
//     registry. A family's answer semantics and judging criteria are
//     verdict.Semantics, embedded in Family as its YAML keys: the one type
//     the row carries.
//   - answers.go: the harness-side answer extractors and comparators
//     (DefaultRegistry), how an HTTP answer and a native answer are pulled
//     out and compared; labels.go the built-in label spaces.
//   - native.go: the native-side file formats, each one Go type that the
//     harness and families/trtmc both use (NativeRequest, NativeAnswer,
//     NativeMeta).
//   - shipped.go: the configuration shipped with the harness, built in
//     (Shipped: families.yaml and trtmc.yaml).
//
// The reference models themselves live in families/reference-target and are used only by
// the trtmc-refserver binary; the harness never imports them.
package families

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Schema is the value of the top-level `schema` key of families.yaml.
const Schema = "trtmc-qual/families/v1"

// Config is a parsed families.yaml.
type Config struct {
	Schema   string             `yaml:"schema" json:"schema"`
	Families map[string]*Family `yaml:"families" json:"families"`
	File     string             `yaml:"-" json:"-"`
}

// Family is one model family's commands and answer semantics.
type Family struct {
	Name string `yaml:"-" json:"name"`
	// Task is the native Task (task strategy) the family serves.
	Task string `yaml:"task" json:"task"`
	// Route is the HTTP route AIPerf posts to.
	Route string `yaml:"route" json:"route"`
	// Server starts the native server; Readiness is polled until 200.
	Server    []string `yaml:"server" json:"server"`
	Readiness string   `yaml:"readiness" json:"readiness"`
	// Correctness runs the family's correctness case on the served bundle.
	Correctness []string `yaml:"correctness" json:"correctness"`
	// Native runs the Task in-process over the exact payloads sent.
	Native []string `yaml:"native" json:"native"`
	// Prepare builds a missing bundle or corpus.
	Prepare Prepare `yaml:"prepare" json:"prepare"`
	// Semantics are the family's answer semantics and judging criteria
	// (endpoint_type, extractor, comparator and their tolerances, labels,
	// finish_reason_null, task_time, server_records, task_agreement): the
	// one type a row carries as its "answers" (Semantics.Stated) and a row's
	// criteria digest pins with Route.
	verdict.Semantics `yaml:",inline"`
	// LabelSpace names a built-in label space (see LabelSpaces) that fills
	// Labels; the two are exclusive.
	LabelSpace string `yaml:"label_space" json:"label_space,omitempty"`
	// MaxBodyBytes is the largest request body the family's server accepts
	// (trtmc-server --max-body-bytes, default 1 MiB: a larger body is a
	// 413). The server argv passes it as {max_body_bytes}; before any
	// server starts, a corpus entry whose encoded request would be larger
	// is refused. 0: the server states no limit.
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes,omitempty"`
	// MaxPromptBytes is the server's second size limit: the prompt and
	// system text in UTF-8 (trtmc-server --max-prompt-bytes, default 256
	// KiB: a larger prompt is a 413 "prompt exceeds the server limit",
	// app.py execute idx@a9ed5f69). The server argv passes it as
	// {max_prompt_bytes}; before any server starts, a corpus entry whose
	// prompt would be larger is refused. 0: the server states no limit.
	MaxPromptBytes int64 `yaml:"max_prompt_bytes" json:"max_prompt_bytes,omitempty"`
	// Preprocessing describes how the family prepares an image before the
	// Task sees it (resize, letterbox, normalisation); every row records it.
	Preprocessing string `yaml:"preprocessing" json:"preprocessing,omitempty"`
	// Executables are programs the family needs besides its argv[0]s (a
	// wrapper such as `trtmc-qual adapter` starts them), each with the argv
	// that prints its version. `trtmc-qual doctor` checks them.
	Executables []Executable `yaml:"executables" json:"executables,omitempty"`
	// Inventory holds what `inventory reconcile --write` records in a new
	// planned profile of this family.
	Inventory EntryDefaults `yaml:"inventory" json:"inventory,omitempty"`
	// Env is added to every child's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// NeedsGPU says the family's server and runners compute on a GPU: it
	// never runs on a CPU slot (a setup error naming the profile), and its
	// server must hold memory on every GPU of its slot (docs/gpu.md).
	NeedsGPU bool `yaml:"needs_gpu" json:"needs_gpu,omitempty"`
	// Timeouts per stage.
	Timeouts Timeouts `yaml:"timeouts" json:"timeouts"`

	Line int `yaml:"-" json:"-"`
}

// Executable is a program a family needs, and how to ask its version.
type Executable struct {
	Name string `yaml:"name" json:"name"`
	// Version is the argv that prints the version (empty: not asked).
	Version []string `yaml:"version" json:"version,omitempty"`
}

// EntryDefaults are the per-profile facts of a family that a generated
// inventory entry records: the controls the served Task honours, its
// capability gaps, the hardware scope, and where the profile's bundle and
// tokenizer live (templates with {profile}).
type EntryDefaults struct {
	Controls  []string `yaml:"controls" json:"controls,omitempty"`
	Gaps      []string `yaml:"gaps" json:"gaps,omitempty"`
	Hardware  []string `yaml:"hardware" json:"hardware,omitempty"`
	BundleDir string   `yaml:"bundle_dir" json:"bundle_dir,omitempty"`
	Tokenizer string   `yaml:"tokenizer" json:"tokenizer,omitempty"`
}

// Prepare holds the commands that build a missing bundle or corpus.
type Prepare struct {
	Bundle []string `yaml:"bundle" json:"bundle,omitempty"`
	Corpus []string `yaml:"corpus" json:"corpus,omitempty"`
}

// Timeouts per stage; zero means the harness default.
type Timeouts struct {
	// Prepare bounds building a missing bundle or corpus.
	Prepare     Duration `yaml:"prepare" json:"prepare"`
	Startup     Duration `yaml:"startup" json:"startup"`
	Correctness Duration `yaml:"correctness" json:"correctness"`
	Native      Duration `yaml:"native" json:"native"`
	AIPerf      Duration `yaml:"aiperf" json:"aiperf"`
	Stop        Duration `yaml:"stop" json:"stop"`
}

// Duration is a time.Duration written as "90s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 90s", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Or returns d, or def when d is zero.
func (d Duration) Or(def time.Duration) time.Duration {
	if d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// Placeholders every argv template may use.
// {families_dir} is the directory of the family configuration (family code
// shipped beside it, e.g. families/reference-target/gpu); {tp} is the profile's tensor
// parallelism (a bundle built for it).
var Placeholders = []string{"bin", "self", "bundle", "model", "host", "port", "records", "corpus", "out",
	"correctness_out", "native_in", "native_out", "precision", "seed", "profile", "checkpoint", "revision",
	"tokenizer", "families_dir", "tp", "max_body_bytes", "max_prompt_bytes"}

var placeholderRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// Load reads families.yaml and checks it; every problem names file:line.
func Load(path string) (*Config, error) {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, fileio.ReadProblem("the family configuration", path, err))
	}
	return Parse(path, data)
}

// Parse parses and checks a families document.
func Parse(path string, data []byte) (*Config, error) {
	cfg, doc, err := decodeConfig(path, data)
	if err != nil {
		return nil, err
	}
	var probs []string
	add := func(line int, field, format string, args ...any) {
		probs = append(probs, fmt.Sprintf("%s:%d: %s: %s", path, line, field, fmt.Sprintf(format, args...)))
	}
	if cfg.Schema != Schema {
		add(1, "schema", "unsupported schema %q (want %q)", cfg.Schema, Schema)
	}
	lines := familyLines(doc)
	for k, v := range keyLines(doc) {
		lines[k] = v
	}
	reg := DefaultRegistry()
	for _, name := range cfg.Names() {
		f := cfg.Families[name]
		if f == nil { // `name:` with nothing under it
			add(lines[name], "families."+name, "empty family definition")
			continue
		}
		f.Name, f.Line = name, lines[name]
		c := &familyCheck{f: f, field: "families." + name, lines: lines, add: add}
		c.required()
		c.answers(&reg)
		c.labelSpace()
		c.timeSources()
		c.bodyLimit()
		c.commands()
		c.env()
	}
	if len(probs) > 0 {
		sort.Strings(probs)
		return nil, errors.New(strings.Join(probs, "\n"))
	}
	return cfg, nil
}

// decodeConfig reads the document twice: as nodes, for the lines problems
// name, and strictly into a Config (an unknown key is a problem at its
// line).
func decodeConfig(path string, data []byte) (*Config, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s: empty document", path)
		}
		return nil, nil, fmt.Errorf("%s: yaml syntax: %w", path, err)
	}
	cfg := &Config{File: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			probs := make([]string, 0, len(te.Errors))
			for _, e := range te.Errors {
				probs = append(probs, path+":"+strings.TrimPrefix(e, "line "))
			}
			return nil, nil, errors.New(strings.Join(probs, "\n"))
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, &doc, nil
}

// familyCheck checks one family's definition; each step adds what it finds
// at the line of the key it is about (else the family's line).
type familyCheck struct {
	f     *Family
	field string // "families.<name>"
	lines map[string]int
	add   func(line int, field, format string, args ...any)
}

// at is the line of a key or list element of the family ("server[2]",
// "env.NAME"), else of its parent key, else the family's.
func (c *familyCheck) at(key string) int {
	if l, ok := c.lines[c.f.Name+"."+key]; ok {
		return l
	}
	if i := strings.LastIndexAny(key, ".["); i > 0 {
		if l, ok := c.lines[c.f.Name+"."+key[:i]]; ok {
			return l
		}
	}
	return c.f.Line
}

// keyAt is the line of one top-level key of the family, else the family's.
func (c *familyCheck) keyAt(key string) int { return at0(c.lines, c.f.Name, key, c.f.Line) }

// required: the commands, the readiness URL, the route and the endpoint
// type every family must have.
func (c *familyCheck) required() {
	f, field := c.f, c.field
	if len(f.Server) == 0 {
		c.add(f.Line, field+".server", "missing argv")
	}
	if f.Readiness == "" {
		c.add(f.Line, field+".readiness", "missing url template")
	}
	if len(f.Native) == 0 {
		c.add(f.Line, field+".native", "missing argv")
	}
	if f.Route == "" || !strings.HasPrefix(f.Route, "/") {
		c.add(f.Line, field+".route", "must be an absolute path like /v1/infer")
	}
	if _, ok := endpoint.Lookup(f.EndpointType); !ok {
		c.add(f.Line, field+".endpoint_type", "must be %s, got %q", endpoint.OneOf(endpoint.Plain), f.EndpointType)
	}
	for i, e := range f.Executables {
		if strings.TrimSpace(e.Name) == "" {
			c.add(f.Line, fmt.Sprintf("%s.executables[%d].name", field, i), "missing")
		}
	}
}

// answers: how answers are extracted and compared, and the comparator's
// own settings (min_box_iou and max_score_abs_error are boxes-iou's only).
func (c *familyCheck) answers(reg *Registry) {
	f, field := c.f, c.field
	if _, ok := reg.Extractors[f.Extractor]; !ok {
		c.add(f.Line, field+".extractor", "unknown extractor %q (known: %s)", f.Extractor, strings.Join(reg.ExtractorNames(), ", "))
	}
	if _, ok := reg.Comparators[f.Comparator]; !ok {
		c.add(f.Line, field+".comparator", "unknown comparator %q (known: %s)", f.Comparator, strings.Join(reg.ComparatorNames(), ", "))
	}
	if f.Tolerance < 0 {
		c.add(f.Line, field+".tolerance", "must be >= 0")
	}
	switch {
	case f.Comparator == "boxes-iou" && (f.MinBoxIoU <= 0 || f.MinBoxIoU > 1):
		c.add(c.keyAt("min_box_iou"), field+".min_box_iou", "boxes-iou needs min_box_iou in (0, 1], got %g", f.MinBoxIoU)
	case f.Comparator == "boxes-iou" && f.MaxScoreAbsError < 0:
		c.add(c.keyAt("max_score_abs_error"), field+".max_score_abs_error", "must be >= 0")
	case f.Comparator != "boxes-iou" && (f.MinBoxIoU != 0 || f.MaxScoreAbsError != 0):
		c.add(c.keyAt("min_box_iou"), field+".min_box_iou", "min_box_iou and max_score_abs_error are the boxes-iou comparator's; the family compares with %s", f.Comparator)
	}
	switch f.FinishReasonNull {
	case "", verdict.FinishNullIncomplete, verdict.FinishNullComplete:
	default:
		c.add(f.Line, field+".finish_reason_null", "must be %s or %s, got %q", verdict.FinishNullComplete, verdict.FinishNullIncomplete, f.FinishReasonNull)
	}
}

// labelSpace resolves a named label space into the family's labels.
func (c *familyCheck) labelSpace() {
	f := c.f
	if f.LabelSpace == "" {
		return
	}
	labels, ok := LabelSpaces[f.LabelSpace]
	switch {
	case !ok:
		c.add(f.Line, c.field+".label_space", "unknown label space %q (known: %s)", f.LabelSpace, strings.Join(keys(LabelSpaces), ", "))
	case len(f.Labels) > 0:
		c.add(f.Line, c.field+".label_space", "give labels or label_space, not both")
	default:
		f.Labels = labels
	}
}

// timeSources: where the Task time comes from, whether the server records
// requests (none needs the native answers' Task time), and the agreement
// tolerance between the two.
func (c *familyCheck) timeSources() {
	f, field := c.f, c.field
	switch f.TaskTime {
	case "", verdict.TaskTimeServer, verdict.TaskTimeNative:
	default:
		c.add(f.Line, field+".task_time", "must be %s (the server's request records' task_ms) or %s (the native answers' task_ms), got %q", verdict.TaskTimeServer, verdict.TaskTimeNative, f.TaskTime)
	}
	switch f.ServerRecords {
	case "", verdict.ServerRecordsRequired:
	case verdict.ServerRecordsNone:
		if f.TaskTimeSource() != verdict.TaskTimeNative {
			c.add(c.keyAt("server_records"), field+".server_records", "none needs task_time: native (the server's records are the default Task time source)")
		}
	default:
		c.add(c.keyAt("server_records"), field+".server_records", "must be %s or %s, got %q", verdict.ServerRecordsRequired, verdict.ServerRecordsNone, f.ServerRecords)
	}
	if a := f.TaskAgreement; a != nil && (a.AbsMS < 0 || a.Rel < 0 || a.AbsMS != a.AbsMS || a.Rel != a.Rel) {
		c.add(c.keyAt("task_agreement"), field+".task_agreement", "abs_ms and rel must be >= 0")
	}
}

// bodyLimit: each declared size limit (max_body_bytes, max_prompt_bytes)
// and the server argv's placeholder of the same name go together, so the
// server enforces the limit the harness states.
func (c *familyCheck) bodyLimit() {
	f, field := c.f, c.field
	for _, l := range []struct {
		key   string
		value int64
	}{{"max_body_bytes", f.MaxBodyBytes}, {"max_prompt_bytes", f.MaxPromptBytes}} {
		usesLimit := false
		for _, a := range f.Server {
			usesLimit = usesLimit || strings.Contains(a, "{"+l.key+"}")
		}
		switch {
		case l.value < 0:
			c.add(c.keyAt(l.key), field+"."+l.key, "must be > 0")
		case l.value > 0 && !usesLimit:
			c.add(c.keyAt(l.key), field+"."+l.key, "is declared but the server argv does not pass {"+l.key+"}: the server would keep its own limit")
		case l.value == 0 && usesLimit:
			c.add(c.keyAt("server"), field+".server", "passes {"+l.key+"} but the family declares no "+l.key)
		}
	}
}

// commands: every argv template (CheckArgv) at its element's line, and the
// readiness URL template.
func (c *familyCheck) commands() {
	f, field := c.f, c.field
	for what, argv := range map[string][]string{"server": f.Server, "correctness": f.Correctness, "native": f.Native,
		"prepare.bundle": f.Prepare.Bundle, "prepare.corpus": f.Prepare.Corpus} {
		for _, p := range CheckArgv(argv) {
			key := fmt.Sprintf("%s[%d]", what, p.Index)
			c.add(c.at(key), field+"."+key, "%s", p.Message)
		}
	}
	if f.Readiness != "" {
		if !strings.HasPrefix(f.Readiness, "http://") && !strings.HasPrefix(f.Readiness, "https://") {
			c.add(c.at("readiness"), field+".readiness", "must be an http:// or https:// URL template, got %+q", f.Readiness)
		}
		for _, msg := range checkPlaceholders(f.Readiness) {
			c.add(c.at("readiness"), field+".readiness", "%s", msg)
		}
	}
}

// env: every name of the family's environment is one a process can carry.
func (c *familyCheck) env() {
	for _, k := range sortedEnvKeys(c.f.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(c.f.Env[k], 0) {
			c.add(c.at("env."+k), c.field+".env", "%+q is not an environment variable name and value (no \"=\" or NUL in a name, no NUL in a value)", k)
		}
	}
}

// at0 is the line of a family's key, else the family's.
func at0(lines map[string]int, family, key string, def int) int {
	if l, ok := lines[family+"."+key]; ok {
		return l
	}
	return def
}

// ArgvProblem is what is wrong with one element of an argv template.
type ArgvProblem struct {
	Index   int
	Message string
}

// placeholderLike is anything in braces that reads as a name, in any
// case: {bin}, {BIN}, {Bundle}, {nope}, {PATH}. JSON such as {"a":1} is
// not.
var placeholderLike = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// CheckArgv checks one argv template before anything runs, so a template
// that cannot run is a configuration error at its file:line rather than a
// setup failure at run time (issue 13, finding 6):
//   - argv[0] names the program: not empty, no whitespace (a template
//     written as one string, "sh -c '...'", is a shell command line, and
//     argv is a list with one argument per element);
//   - no element holds a NUL byte (no argument can carry one);
//   - every lower-case {name} is one of Placeholders, and a placeholder
//     written in another case ({BIN}) is named with its lower-case form;
//     other names in braces ({PATH} in "${PATH}") are literal text.
//
// An empty template is not checked here (the caller knows whether it is
// required).
func CheckArgv(argv []string) []ArgvProblem {
	var out []ArgvProblem
	if len(argv) == 0 {
		return nil
	}
	switch a0 := argv[0]; {
	case a0 == "":
		out = append(out, ArgvProblem{0, "is empty: argv[0] names the program to run"})
	case strings.IndexFunc(a0, unicode.IsSpace) >= 0:
		out = append(out, ArgvProblem{0, fmt.Sprintf("%+q holds whitespace: argv is a list with one argument per element, "+
			"never a shell command line (write [\"sh\", \"-c\", \"...\"] to run a shell on purpose)", a0)})
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			out = append(out, ArgvProblem{i, "holds a NUL byte, which no argument can carry"})
		}
		for _, msg := range checkPlaceholders(a) {
			out = append(out, ArgvProblem{i, msg})
		}
	}
	return out
}

// checkPlaceholders reports every {name} in s that is not a placeholder.
func checkPlaceholders(s string) []string {
	var out []string
	for _, m := range placeholderLike.FindAllStringSubmatch(s, -1) {
		switch {
		case known(m[1]):
		case known(strings.ToLower(m[1])):
			out = append(out, fmt.Sprintf("placeholder {%s} must be lower case: {%s}", m[1], strings.ToLower(m[1])))
		case placeholderRE.MatchString(m[0]):
			out = append(out, fmt.Sprintf("unknown placeholder {%s} (known: %s)", m[1], strings.Join(Placeholders, ", ")))
			// Other names in braces ({PATH} of "${PATH}") are literal text:
			// only lower-case names are placeholders.
		}
	}
	return out
}

func sortedEnvKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keyLines maps "<family>.<key>" and "<family>.<key>[i]" (and one level
// deeper: prepare.bundle[i], env.NAME) to their lines.
func keyLines(doc *yaml.Node) map[string]int {
	out := map[string]int{}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	root := doc.Content[0]
	var walk func(prefix string, n *yaml.Node, depth int)
	walk = func(prefix string, n *yaml.Node, depth int) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := prefix + "." + n.Content[i].Value
				out[k] = n.Content[i].Line
				if depth < 2 {
					walk(k, n.Content[i+1], depth+1)
				}
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				out[fmt.Sprintf("%s[%d]", prefix, i)] = e.Line
			}
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "families" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		fam := root.Content[i+1]
		for j := 0; j+1 < len(fam.Content); j += 2 {
			walk(fam.Content[j].Value, fam.Content[j+1], 0)
		}
	}
	return out
}

func known(p string) bool {
	for _, k := range Placeholders {
		if k == p {
			return true
		}
	}
	return false
}

func familyLines(doc *yaml.Node) map[string]int {
	out := map[string]int{}
	if len(doc.Content) == 0 {
		return out
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "families" {
			continue
		}
		fam := root.Content[i+1]
		for j := 0; j+1 < len(fam.Content); j += 2 {
			out[fam.Content[j].Value] = fam.Content[j].Line
		}
	}
	return out
}

// Names returns the family names, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Families))
	for n := range c.Families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Has reports whether a family is configured.
func (c *Config) Has(name string) bool {
	_, ok := c.Families[name]
	return ok
}

// Expand substitutes {placeholders} in an argv template. Each element stays
// one argument whatever it contains: no shell ever sees it. An unknown or
// unset placeholder is an error rather than an empty string.
func Expand(argv []string, vars map[string]string) ([]string, error) {
	out := make([]string, len(argv))
	for i, a := range argv {
		var err error
		out[i] = placeholderRE.ReplaceAllStringFunc(a, func(m string) string {
			key := m[1 : len(m)-1]
			v, ok := vars[key]
			if !ok && err == nil {
				err = fmt.Errorf("argv[%d] %q: placeholder {%s} has no value here", i, a, key)
			}
			return v
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
