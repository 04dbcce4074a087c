package verdict

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReadCorrectness carries a gate's reference (the reference
// implementation's value of the same metric) when the case states one,
// and reads a reference that is not a number as bad input naming its line
// and field; a gate without one has none (never 0).
func TestReadCorrectnessReference(t *testing.T) {
	write := func(t *testing.T, body string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), CorrectnessFile)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	c, err := ReadCorrectness(write(t, `{"passed": true,
 "gates": [{"name": "map_50_95", "value": 0.468307, "op": ">=", "threshold": 0.448189, "passed": true, "reference": 0.468189},
           {"name": "map_50", "value": 0.628337, "op": ">=", "threshold": 0.606492, "passed": true, "reference": null},
           {"name": "accuracy", "value": 1, "op": ">=", "threshold": 0.9, "passed": true}]}`))
	require.NoError(t, err)
	require.Len(t, c.Gates, 3)
	require.NotNil(t, c.Gates[0].Reference)
	assert.Equal(t, 0.468189, *c.Gates[0].Reference)
	assert.Nil(t, c.Gates[1].Reference, "null is no reference")
	assert.Nil(t, c.Gates[2].Reference, "no reference stated is none, never 0")

	_, err = ReadCorrectness(write(t, `{"passed": true,
 "gates": [{"name": "map_50_95", "value": 0.46, "op": ">=", "threshold": 0.44, "passed": true,
            "reference": "0.468"}]}`))
	var ee *EvidenceError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, 3, ee.Line)
	assert.Equal(t, "gates.reference", ee.Field)
	assert.Contains(t, err.Error(), "is string, want float64")
}
