package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	assert.Equal(t, []string{"detection", "vlm"}, c.GroupNames())
	assert.Equal(t, "vlm", c.GroupOf("vision_language_generation"))
	assert.Equal(t, "detection", c.GroupOf("object_detection"))
	assert.Equal(t, "", c.GroupOf("text_generation_causal"))
	assert.Equal(t, "tests/e2e/models", c.ModelsRoot)
	assert.Equal(t, "fp32", c.DefaultPrecision)
	assert.NoError(t, c.CheckGroup("vlm"))
	err := c.CheckGroup("audio")
	assert.ErrorIs(t, err, ErrUnknownGroup)
	assert.ErrorContains(t, err, "valid groups are detection, vlm")
	assert.NotContains(t, err.Error(), "did you mean")
	err = c.CheckGroup("detections")
	assert.ErrorIs(t, err, ErrUnknownGroup)
	assert.ErrorContains(t, err, `; did you mean "detection"?`, "a misspelled group (issue 36)")

	for rel, want := range map[string]string{
		"MODEL.toml":                         "model_toml",
		"manifests/a.json":                   "manifest",
		"thresholds/a.json":                  "threshold",
		"data/x/y.jpeg":                      "reference",
		"e2e_plugins/references/hf.py":       "reference",
		"hf_reference.py":                    "reference",
		"e2e_plugins/comparators/vl.py":      "test",
		"test_family_e2e.py":                 "test",
		"README.md":                          "other",
		"sub/test_nested.py":                 "other",
		"e2e_plugins/references/deep/x/y.py": "reference",
	} {
		assert.Equal(t, want, c.Category(rel), rel)
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	custom := strings.Replace(string(defaultConfigYAML), "task_strategies: [object_detection]",
		"task_strategies: [object_detection, document_layout_detection]", 1)
	p := filepath.Join(dir, "groups.yaml")
	require.NoError(t, os.WriteFile(p, []byte(custom), 0o644))
	c, err := LoadConfig(p)
	require.NoError(t, err)
	assert.Equal(t, "detection", c.GroupOf("document_layout_detection"), "the mapping is data")
	assert.Equal(t, p, c.File)

	c, err = LoadConfig("")
	require.NoError(t, err)
	assert.Equal(t, "<builtin>", c.File)

	_, err = LoadConfig(filepath.Join(dir, "missing.yaml"))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
}

func TestParseConfigReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown key", "schema: trtmc-qual/spec-groups/v1\nbogus: 1\n", []string{"field bogus not found"}},
		{"everything wrong", `schema: other
models_root: ""
groups:
  a: {task_strategies: [x]}
  b: {task_strategies: [x]}
  c: {}
classify:
  partial:
    name_tokens: [{token: "", rule: ""}]
    checkpoint_patterns: [{pattern: "(", rule: r}]
  variant:
    name_patterns: ["["]
drift:
  categories: [{category: "", glob: x}]
`, []string{
			`schema must be "trtmc-qual/spec-groups/v1", got "other"`,
			"models_root: missing",
			"default_precision: missing",
			`groups.b: task strategy "x" already belongs to group a`,
			"groups.c.task_strategies: at least one task strategy is needed",
			"classify.partial.name_tokens[0]: token and rule are required",
			"classify.partial.checkpoint_patterns[0]: a valid pattern and a rule are required",
			"classify.variant.name_patterns[0]: error parsing regexp",
			"drift.categories[0]: a category and a valid glob are required",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("g.yaml", []byte(tt.doc))
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Len(t, ce.Problems, len(tt.want), strings.Join(ce.Problems, "\n"))
			for i, w := range tt.want {
				assert.Contains(t, ce.Problems[i], w)
			}
		})
	}
}

func TestNameTokens(t *testing.T) {
	assert.Equal(t, []string{"qwen3", "0", "6b", "tiny", "random"}, nameTokens("Qwen3-0.6B_tiny-random"))
	assert.True(t, containsRun(nameTokens("a-tiny-random-b"), []string{"tiny", "random"}))
	assert.False(t, containsRun(nameTokens("a-tiny-b-random"), []string{"tiny", "random"}))
	assert.False(t, containsRun(nameTokens("internvl3-2b"), []string{"l0"}), "l0 is a token, not a substring")
}
