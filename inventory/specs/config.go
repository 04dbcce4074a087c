package specs

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// ConfigSchema is the value of the `schema` key of a spec-groups file.
const ConfigSchema = "trtmc-qual/spec-groups/v1"

//go:embed groups.yaml
var defaultConfigYAML []byte

// Config maps TRTMC task strategies to groups and holds the classification
// and drift rules. It is data (a YAML file), not code.
type Config struct {
	Schema           string                  `yaml:"schema"`
	ModelsRoot       string                  `yaml:"models_root"`
	FamiliesRoot     string                  `yaml:"families_root"`
	DefaultPrecision string                  `yaml:"default_precision"`
	Groups           map[string]*GroupConfig `yaml:"groups"`
	Classify         ClassifyConfig          `yaml:"classify"`
	Drift            DriftConfig             `yaml:"drift"`

	// File is where the config came from ("<builtin>" for the default).
	File string `yaml:"-"`

	partialCheckpoints []compiledRule
	variantNames       []*regexp.Regexp
	driftGlobs         []compiledGlob
}

// GroupConfig is one group: the task strategies whose manifests form it.
type GroupConfig struct {
	Description    string   `yaml:"description"`
	TaskStrategies []string `yaml:"task_strategies"`
}

// ClassifyConfig holds the knobs of the classifier.
type ClassifyConfig struct {
	Partial PartialRules `yaml:"partial"`
	Variant VariantRules `yaml:"variant"`
	// NormalProfiles pins the normal profile of a checkpoint (checkpoint →
	// profile name) where several full profiles share it and the name
	// heuristics pick the wrong one.
	NormalProfiles map[string]string `yaml:"normal_profiles"`
}

// PartialRules mark reduced, random-weight, regression and smoke profiles.
type PartialRules struct {
	NameTokens         []NameToken `yaml:"name_tokens"`
	CheckpointPatterns []Pattern   `yaml:"checkpoint_patterns"`
	TestcaseCategories []string    `yaml:"testcase_categories"`
}

// NameToken is a run of name tokens ("l0", "tiny-random") and the rule it is.
type NameToken struct {
	Token  string `yaml:"token"`
	Rule   string `yaml:"rule"`
	Reason string `yaml:"reason"`
}

// Pattern is a regular expression and the rule it is.
type Pattern struct {
	Pattern string `yaml:"pattern"`
	Rule    string `yaml:"rule"`
	Reason  string `yaml:"reason"`
}

// VariantRules mark precision, quantisation, parallel and build variants.
type VariantRules struct {
	BuildArgs          []string `yaml:"build_args"`
	Keys               []string `yaml:"keys"`
	DistributedRuntime bool     `yaml:"distributed_runtime"`
	NamePatterns       []string `yaml:"name_patterns"`
}

// DriftConfig names the categories of family files a drift check reports.
type DriftConfig struct {
	Categories []DriftCategory `yaml:"categories"`
}

// DriftCategory maps a glob (relative to a family folder) to a category.
type DriftCategory struct {
	Category string `yaml:"category"`
	Glob     string `yaml:"glob"`
}

type compiledRule struct {
	re *regexp.Regexp
	Pattern
}

type compiledGlob struct {
	re       *regexp.Regexp
	category string
}

// DefaultConfig returns the shipped configuration.
func DefaultConfig() *Config {
	c, err := ParseConfig("<builtin>", defaultConfigYAML)
	if err != nil {
		panic("specs: the embedded groups.yaml is invalid: " + err.Error())
	}
	return c
}

// LoadConfig reads a spec-groups file; an empty path means the default.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxConfigBytes)
	if err != nil {
		return nil, &ConfigError{File: path, Problems: []string{fileio.ReadProblem("the spec-groups file", path, err)}}
	}
	return ParseConfig(path, data)
}

// ConfigError lists every problem of a spec-groups file: a configuration
// error (cmd/trtmc-qual's exit-code table says which status).
type ConfigError struct {
	File     string
	Problems []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("spec groups %s: %s", e.File, strings.Join(e.Problems, "; "))
}

// ParseConfig parses and checks a spec-groups document.
func ParseConfig(file string, data []byte) (*Config, error) {
	c := &Config{File: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nil, &ConfigError{File: file, Problems: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	c.File = file
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if c.Schema != ConfigSchema {
		add("schema must be %q, got %q", ConfigSchema, c.Schema)
	}
	c.ModelsRoot = strings.Trim(c.ModelsRoot, "/")
	c.FamiliesRoot = strings.Trim(c.FamiliesRoot, "/")
	if c.ModelsRoot == "" {
		add("models_root: missing")
	}
	if c.FamiliesRoot != "" && c.FamiliesRoot == c.ModelsRoot {
		add("families_root: %q is also models_root; the two layouts need their own roots", c.FamiliesRoot)
	}
	if c.DefaultPrecision == "" {
		add("default_precision: missing")
	}
	if len(c.Groups) == 0 {
		add("groups: at least one group is needed")
	}
	owner := map[string]string{}
	for _, name := range c.GroupNames() {
		g := c.Groups[name]
		if g == nil || len(g.TaskStrategies) == 0 {
			add("groups.%s.task_strategies: at least one task strategy is needed", name)
			continue
		}
		for _, ts := range g.TaskStrategies {
			if prev, dup := owner[ts]; dup {
				add("groups.%s: task strategy %q already belongs to group %s", name, ts, prev)
			}
			owner[ts] = name
		}
	}
	for i, nt := range c.Classify.Partial.NameTokens {
		if len(nameTokens(nt.Token)) == 0 || nt.Rule == "" {
			add("classify.partial.name_tokens[%d]: token and rule are required", i)
		}
	}
	for i, p := range c.Classify.Partial.CheckpointPatterns {
		re, err := regexp.Compile(p.Pattern)
		if err != nil || p.Rule == "" {
			add("classify.partial.checkpoint_patterns[%d]: a valid pattern and a rule are required", i)
			continue
		}
		c.partialCheckpoints = append(c.partialCheckpoints, compiledRule{re: re, Pattern: p})
	}
	for i, p := range c.Classify.Variant.NamePatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			add("classify.variant.name_patterns[%d]: %v", i, err)
			continue
		}
		c.variantNames = append(c.variantNames, re)
	}
	for i, dc := range c.Drift.Categories {
		re, err := globRegexp(dc.Glob)
		if err != nil || dc.Category == "" {
			add("drift.categories[%d]: a category and a valid glob are required", i)
			continue
		}
		c.driftGlobs = append(c.driftGlobs, compiledGlob{re: re, category: dc.Category})
	}
	if len(probs) > 0 {
		return nil, &ConfigError{File: file, Problems: probs}
	}
	return c, nil
}

// GroupNames returns the configured group names, sorted.
func (c *Config) GroupNames() []string {
	names := make([]string, 0, len(c.Groups))
	for n := range c.Groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GroupOf returns the group a task strategy belongs to, or "".
func (c *Config) GroupOf(taskStrategy string) string {
	for _, name := range c.GroupNames() {
		for _, ts := range c.Groups[name].TaskStrategies {
			if ts == taskStrategy {
				return name
			}
		}
	}
	return ""
}

// CheckGroup returns a usage error naming the valid groups when g is not one.
func (c *Config) CheckGroup(g string) error {
	if _, ok := c.Groups[g]; ok {
		return nil
	}
	err := fmt.Errorf("%w %q: valid groups are %s (spec groups %s)", ErrUnknownGroup, g, strings.Join(c.GroupNames(), ", "), c.File)
	if h := inventory.DidYouMean(g, c.GroupNames()); h != "" {
		err = fmt.Errorf("%w; %s", err, h)
	}
	return err
}

// ErrUnknownGroup is a group name that the spec-groups file does not define.
var ErrUnknownGroup = errors.New("unknown group")

// Category returns the drift category of a path relative to a family folder.
func (c *Config) Category(rel string) string {
	for _, g := range c.driftGlobs {
		if g.re.MatchString(rel) {
			return g.category
		}
	}
	return "other"
}

// globRegexp turns a glob with *, ? and ** into an anchored regexp.
func globRegexp(glob string) (*regexp.Regexp, error) {
	if glob == "" {
		return nil, errors.New("empty glob")
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch ch := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case ch == '*':
			b.WriteString("[^/]*")
		case ch == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// nameTokens splits a profile name into lower-case tokens on - _ and .
func nameTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
}

// containsRun reports whether run appears contiguously in tokens.
func containsRun(tokens, run []string) bool {
	if len(run) == 0 {
		return false
	}
	for i := 0; i+len(run) <= len(tokens); i++ {
		match := true
		for j := range run {
			if tokens[i+j] != run[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
