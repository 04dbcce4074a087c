package qual

// ServeTokenEnv is the environment variable holding the bearer token a
// native server requires (TRTMC's convention; trtmc-refserver reads it too).
// AIPerf must send the same token, as --api-key.
const ServeTokenEnv = "TRTMC_SERVE_TOKEN"

// serveToken is the token this checkpoint's server sees: the family's env
// overrides the harness's own environment (Options.ServeToken).
func (cr *checkpointRun) serveToken() string {
	if cr.family != nil {
		if v, ok := cr.family.Env[ServeTokenEnv]; ok {
			return v
		}
	}
	return cr.gr.opts.Security.ServeToken
}

// secretValues are the values redacted from this checkpoint's evidence:
// the harness's configured secrets, the serve token, and the value of any
// configured secret variable (and the serve token) set in the family's env,
// which reaches the children without passing through the harness's own
// environment.
func secretValues(o Options, familyEnv map[string]string) []string {
	out := append([]string{}, o.Security.Secrets...)
	if o.Security.ServeToken != "" {
		out = append(out, o.Security.ServeToken)
	}
	for _, name := range append([]string{ServeTokenEnv}, o.Security.SecretEnv...) {
		if v := familyEnv[name]; v != "" {
			out = append(out, v)
		}
	}
	return out
}
