package qual

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/families"
)

// Secrets set only in a family's env reach the children without passing
// through the harness's environment; they are redacted all the same, and
// the family's serve token is the one AIPerf sends.
func TestSecretValuesAndServeToken(t *testing.T) {
	o := Options{Security: SecurityOptions{Secrets: []string{"from-harness-env"}, SecretEnv: []string{"TRTMC_SERVE_TOKEN", "VENDOR_KEY"}, ServeToken: "harness-token"}}
	famEnv := map[string]string{"VENDOR_KEY": "vendor-secret", "TRTMC_SERVE_TOKEN": "family-token", "PLAIN": "not-secret"}
	assert.ElementsMatch(t, []string{"from-harness-env", "harness-token", "family-token", "vendor-secret", "family-token"},
		secretValues(o, famEnv))

	cr := &checkpointRun{gr: &groupRun{opts: o}, family: &families.Family{Env: famEnv}}
	assert.Equal(t, "family-token", cr.serveToken(), "the family's env overrides the harness's")
	cr.family = &families.Family{}
	assert.Equal(t, "harness-token", cr.serveToken())
	cr.family = nil
	assert.Equal(t, "harness-token", cr.serveToken())
}
