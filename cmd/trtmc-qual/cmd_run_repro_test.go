package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual"
)

// TestReproCommandCarriesEverything: every flag and setting that shaped a
// run is in its reproduce command, paths absolute, quoted so that a shell
// gives back exactly these words; a secret is referenced, never written.
func TestReproCommandCarriesEverything(t *testing.T) {
	env := map[string]string{"TRTMC_SERVE_TOKEN": "hunter2", "TRTMC_REFSERVER_FAULT": "slow-ms=5; rm -rf /"}
	cfg := &Config{File: "/etc/q.yaml", Inventory: []string{"/inv/a.yaml", "/inv/b b.yaml"}, Families: "/f/families.yaml",
		AIPerf: "/venv/bin/aiperf", AIPerfVersion: "0.14.0", AllowMismatch: true, Tokenizer: "/tok", BinDir: "/bin dir",
		AllowNonLoopback: true, AllowHardwareMismatch: true, Secrets: []string{"TRTMC_SERVE_TOKEN"}}
	cmd := reproCommand(&runOptions{Config: cfg, Getenv: func(k string) string { return env[k] },
		Group: "vlm", Out: "/out/it's here", GPUs: "0,1", Host: "0.0.0.0"})
	assert.NotContains(t, cmd, "hunter2")
	// What a shell makes of it (echoing each word instead of running it).
	sh := exec.Command("bash", "-c", `args() { printf '%s\n' "$@"; }; `+strings.Replace(cmd, "trtmc-qual", "env | grep -E '^TRTMC_(SERVE_TOKEN|REFSERVER_FAULT)=' | sort; args", 1))
	sh.Env = []string{"TRTMC_SERVE_TOKEN=from-caller"}
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, strings.Join([]string{
		"TRTMC_REFSERVER_FAULT=slow-ms=5; rm -rf /", "TRTMC_SERVE_TOKEN=from-caller",
		"--config", "/etc/q.yaml", "--inventory", "/inv/a.yaml", "--inventory", "/inv/b b.yaml",
		"--families", "/f/families.yaml", "--aiperf", "/venv/bin/aiperf", "--aiperf-version", "0.14.0",
		"--allow-aiperf-version-mismatch", "--tokenizer", "/tok", "--bin-dir", "/bin dir",
		"run", "--group", "vlm", "--out", "/out/it's here", "--gpus", "0,1", "--host", "0.0.0.0",
		"--allow-hardware-mismatch", "--allow-non-loopback",
	}, "\n")+"\n", string(out))
}

// reproCommand is the reproduce command a run records: run's flags
// (reproArgv) with the environment before them, as qual.RunBuilder
// assembles it.
func reproCommand(o *runOptions) string {
	return qual.CommandLine(reproArgv(o), o.Getenv, o.Config.Secrets)
}
