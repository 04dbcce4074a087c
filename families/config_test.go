package families

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShippedFamiliesLoad(t *testing.T) {
	cfg, err := Load("families.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"ref-detect", "ref-vlm", "ref-vlm-gpu"}, cfg.Names())
	f := cfg.Families["ref-vlm"]
	assert.Equal(t, "chat", f.EndpointType)
	assert.Equal(t, 8, f.Line)
	assert.False(t, f.NeedsGPU)
	g := cfg.Families["ref-vlm-gpu"]
	assert.True(t, g.NeedsGPU, "the GPU family never runs on a CPU slot")
	assert.Contains(t, g.Server, "{families_dir}/refgpu/run.py")
}

func TestParseReportsEveryProblem(t *testing.T) {
	doc := `schema: trtmc-qual/families/v1
families:
  broken:
    endpoint_type: grpc
    route: v1/infer
    server: ["{bin}/srv", "{nope}"]
    extractor: magic
    comparator: fuzzy
`
	_, err := Parse("fam.yaml", []byte(doc))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"fam.yaml:3: families.broken.endpoint_type: must be chat or image_retrieval",
		"fam.yaml:3: families.broken.route: must be an absolute path",
		"fam.yaml:3: families.broken.server: unknown placeholder {nope}",
		"fam.yaml:3: families.broken.extractor: unknown extractor \"magic\"",
		"fam.yaml:3: families.broken.comparator: unknown comparator \"fuzzy\"",
		"fam.yaml:3: families.broken.readiness: missing url template",
		"fam.yaml:3: families.broken.native: missing argv",
	} {
		assert.Contains(t, msg, want)
	}
}

func TestParseRejectsUnknownFieldsWithLine(t *testing.T) {
	doc := "schema: trtmc-qual/families/v1\nfamilies:\n  a:\n    servr: [x]\n"
	_, err := Parse("f.yaml", []byte(doc))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "f.yaml:4: field servr not found")
}

func TestExpandKeepsArgumentsWhole(t *testing.T) {
	argv, err := Expand([]string{"{bin}/srv", "--name", "{model}", "x{port}y"},
		map[string]string{"bin": "/b", "model": "a b; rm -rf / $(x) `y`", "port": "80"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/b/srv", "--name", "a b; rm -rf / $(x) `y`", "x80y"}, argv)
	_, err = Expand([]string{"{records}"}, map[string]string{})
	assert.ErrorContains(t, err, "placeholder {records} has no value")
}
