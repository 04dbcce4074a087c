//go:build integration

package aiperf

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

// resolveScript resolves AIPerf's configuration the way `aiperf profile`
// does, once from flags with --api-key and once from the driver's argv
// (--config KeyConfig, the key in APIKeyEnv), and prints whether the two
// are equal, secrets included.
const resolveScript = `
import json, os, sys
from pathlib import Path
from cyclopts import App
from aiperf.config.flags import CLIConfig
from aiperf.config.flags.converter import convert_cli_to_aiperf
from aiperf.config.flags.resolver import resolve_config
app = App(result_action="return_value")
@app.default
def f(*, cli_config: CLIConfig):
    return cli_config
dump = lambda c: c.model_dump(mode="json", by_alias=True, exclude_none=True, context={"include_secrets": True})
out = []
for req in json.load(sys.stdin):
    os.environ[req["env"]] = req["key"]
    want = dump(convert_cli_to_aiperf(app(req["flag_argv"])))
    c = app(req["driver_argv"])
    got = dump(resolve_config(c, c.config_file))
    out.append({"equal": want == got, "want": want, "got": got})
print(json.dumps(out))
`

// TestKeyConfigResolvesLikeAPIKeyFlag: the config file that carries the
// key's variable makes the installed AIPerf resolve exactly the
// configuration that --api-key gives, for both endpoint types and for keys
// AIPerf's ${VAR} substitution would otherwise coerce ("12345", "true").
func TestKeyConfigResolvesLikeAPIKeyFlag(t *testing.T) {
	e := itEnv(t)
	type request struct {
		Env        string   `json:"env"`
		Key        string   `json:"key"`
		FlagArgv   []string `json:"flag_argv"`
		DriverArgv []string `json:"driver_argv"`
	}
	var reqs []request
	for _, ep := range []string{endpoint.Chat, endpoint.ImageRetrieval} {
		for _, key := range []string{"serve-token-9f8e7d", "12345", "true", `a"b\c d`, "\u00e9-\u043a\u043b\u044e\u0447"} {
			dir := t.TempDir()
			c := itConfig(e, refTarget{url: "http://127.0.0.1:9", model: "m"}, ep,
				filepath.Join(dir, "dataset.jsonl"), filepath.Join(dir, "aiperf"), nil)
			c.APIKey = key
			require.NoError(t, os.WriteFile(c.InputFile, []byte("{}\n"), 0o644))
			require.True(t, KeyViaEnv(c))
			require.NoError(t, os.WriteFile(KeyConfigFile(c), KeyConfig(c), 0o644))
			argv := Argv(c)
			require.NotContains(t, strings.Join(argv, " "), key)
			require.Equal(t, "--config", argv[len(argv)-2])
			flagArgv := append(append([]string{}, argv[2:len(argv)-2]...), "--api-key", key)
			reqs = append(reqs, request{Env: APIKeyEnv, Key: key, FlagArgv: flagArgv, DriverArgv: argv[2:]})
		}
	}
	in, err := json.Marshal(reqs)
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(filepath.Dir(e.aiperf), "python"), "-c", resolveScript)
	cmd.Env = append(os.Environ(), apiKeyEnvEnd+"=")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s\n%s", out, stderr.String())
	var res []struct {
		Equal     bool
		Want, Got map[string]any
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, len(reqs))
	for i, r := range res {
		assert.True(t, r.Equal, "key %q, argv %q:\n want %v\n  got %v", reqs[i].Key, reqs[i].DriverArgv, r.Want, r.Got)
	}
}

// TestKeyNeverInArgv: against a server that requires a bearer token, a real
// run authorises every request while no process's command line
// (/proc/PID/cmdline, readable by every local user) ever holds the key.
func TestKeyNeverInArgv(t *testing.T) {
	e := itEnv(t)
	key := "serve-token-" + strconv.FormatInt(time.Now().UnixNano(), 36) + `"\q`
	tgt := startRefserverEnv(t, e, endpoint.ImageRetrieval, "", []string{"TRTMC_SERVE_TOKEN=" + key})
	entries, err := LoadCorpus(tgt.corpus)
	require.NoError(t, err)
	work := t.TempDir()
	ds, err := WriteDataset(filepath.Join(work, "dataset.jsonl"), endpoint.ImageRetrieval, entries, itWarmup+itMeasured)
	require.NoError(t, err)
	cfg := itConfig(e, tgt, endpoint.ImageRetrieval, ds.Path, filepath.Join(work, "aiperf"), ds)
	cfg.APIKey = key

	var mu sync.Mutex
	var seen []string
	scans := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // watch every process's argv while AIPerf runs
		defer close(done)
		for {
			entries, _ := os.ReadDir("/proc")
			for _, p := range entries {
				cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				if err == nil && bytes.Contains(cmdline, []byte(key)) {
					mu.Lock()
					seen = append(seen, strings.ReplaceAll(string(cmdline), "\x00", " "))
					mu.Unlock()
				}
			}
			scans++
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	run, err := (&Driver{Runner: proc.OS{}, Stderr: testWriter{t}}).Run(context.Background(), cfg)
	close(stop)
	<-done
	require.NoError(t, err)
	require.Empty(t, run.Problems, "every request was authorised")
	assert.Len(t, run.Requests, itWarmup+itMeasured)
	for _, q := range run.Requests {
		assert.Equal(t, 200, q.HTTPStatus)
	}
	assert.Greater(t, scans, 10, "the watcher ran during the run")
	assert.Empty(t, seen, "the key appeared in a process's argv")
	data, err := os.ReadFile(KeyConfigFile(cfg))
	require.NoError(t, err)
	assert.NotContains(t, string(data), key)
	assert.Contains(t, run.Argv, "--config")
}
