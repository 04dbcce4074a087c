package bundle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
)

func encode(t *testing.T, family, precision string, seed int64) []byte {
	t.Helper()
	b, err := bundle.New(family, precision, seed)
	require.NoError(t, err)
	data, err := b.Encode()
	require.NoError(t, err)
	return data
}

func TestSameFlagsGiveSameBytes(t *testing.T) {
	t.Parallel()
	digests := map[string]string{}
	for _, family := range bundle.Families() {
		for _, precision := range []string{bundle.PrecisionFP32, bundle.PrecisionFP16} {
			for _, seed := range []int64{1, 2} {
				a, b := encode(t, family, precision, seed), encode(t, family, precision, seed)
				require.Equal(t, a, b)
				key := fmt.Sprintf("%s/%s/%d", family, precision, seed)
				digests[key] = bundle.Digest(a)
			}
		}
	}
	seen := map[string]string{}
	for key, d := range digests {
		assert.Empty(t, seen[d], "%s has the same sha256 as %s", key, seen[d])
		seen[d] = key
	}
}

func TestCanonicalEncoding(t *testing.T) {
	t.Parallel()
	data := encode(t, bundle.FamilyVLM, bundle.PrecisionFP16, 1)
	s := string(data)
	assert.True(t, strings.HasPrefix(s, `{"family":"ref-vlm","format":"trtmc-ref-bundle/v1","params":{"confidence_floor":`), s)
	assert.True(t, strings.HasSuffix(s, `"precision":"fp16","seed":1,"task":"vision_language_generation"}`+"\n"), s)
	assert.NotContains(t, strings.TrimSuffix(s, "\n"), "\n")

	b, err := bundle.Parse(data)
	require.NoError(t, err)
	assert.Equal(t, bundle.Digest(data), b.SHA256)
	again, err := b.Encode()
	require.NoError(t, err)
	assert.Equal(t, data, again, "parse and encode round-trips")
	assert.Equal(t, bundle.RoundFP16(b.Params.SquareMinFill), b.Params.SquareMinFill, "fp16 params are fp16 values")
}

func TestLoadRejectsBadBundles(t *testing.T) {
	t.Parallel()
	good := string(encode(t, bundle.FamilyDetect, bundle.PrecisionFP32, 1))
	tests := []struct {
		name, data, wantErr string
	}{
		{"not json", "hello", "malformed bundle"},
		{"unknown field", strings.Replace(good, `"seed":1`, `"seed":1,"extra":true`, 1), `unknown field "extra"`},
		{"trailing data", good + "{}", "trailing data"},
		{"wrong format", strings.Replace(good, "trtmc-ref-bundle/v1", "v0", 1), `format is "v0"`},
		{"unknown family", strings.Replace(good, `"family":"ref-detect"`, `"family":"ref-ocr"`, 1), `unknown family "ref-ocr"`},
		{"task mismatch", strings.Replace(good, "object_detection", "vision_language_generation", 1), "family ref-detect needs"},
		{"bad precision", strings.Replace(good, `"fp32"`, `"int8"`, 1), `unknown precision "int8"`},
		{"bad min area", strings.Replace(good, `"min_area":12`, `"min_area":0`, 1), "params.min_area"},
		{"bad colour", strings.Replace(good, `"rgb":[209,37,38]`, `"rgb":[300,37,38]`, 1), "outside 0..255"},
		{"empty palette", good[:strings.Index(good, `"palette":[`)] + `"palette":[],` + good[strings.Index(good, `"square_min_fill"`):], "palette is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.bundle")
			require.NoError(t, os.WriteFile(path, []byte(tt.data), 0o644))
			_, err := bundle.Load(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), path, "errors name the file")
		})
	}
	_, err := bundle.Load(filepath.Join(t.TempDir(), "missing.bundle"))
	assert.ErrorContains(t, err, "missing.bundle")
}

func TestNewRejectsUnknownChoices(t *testing.T) {
	t.Parallel()
	_, err := bundle.New("ref-ocr", bundle.PrecisionFP32, 1)
	assert.ErrorContains(t, err, "valid values are ref-detect, ref-vlm")
	_, err = bundle.New(bundle.FamilyVLM, "bf16", 1)
	assert.ErrorContains(t, err, "valid values are fp32, fp16")
}

func TestRoundFP16(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]float64{
		0: 0, 1: 1, 0.5: 0.5, 0.1: 0.0999755859375, 0.88: 0.8798828125, 100: 100, 0.9128: 0.912597656250,
	} {
		assert.Equal(t, want, bundle.RoundFP16(in), "%v", in)
	}
}
