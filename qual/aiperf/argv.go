package aiperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

// DefaultVersion is the AIPerf version trtmc-qual is written against.
const DefaultVersion = "0.13.0"

// Defaults used when a Config leaves them zero.
const (
	DefaultRequestTimeout = 120 * time.Second
	DefaultGrace          = 10 * time.Second
	DefaultFinalizeWait   = 10 * time.Second
)

// Config is one AIPerf profile run.
type Config struct {
	// Bin is the aiperf executable (the project venv's .venv/bin/aiperf).
	Bin string
	// Version, when set, is the group's version check: Run skips its own.
	Version *VersionCheck
	// ExpectedVersion is what `aiperf --version` must print (default
	// DefaultVersion); AllowVersionMismatch turns a mismatch from a setup
	// error into a recorded fact.
	ExpectedVersion      string
	AllowVersionMismatch bool

	EndpointType string // a registered endpoint type (inventory/endpoint)
	URL          string // base URL, e.g. http://127.0.0.1:8000
	Model        string
	InputFile    string // the single_turn JSONL from WriteDataset
	// ArtifactDir must not exist or be empty: every run gets a fresh one.
	ArtifactDir string
	// Tokenizer is a local Hugging Face tokenizer directory; required for
	// a type that needs one (chat), forbidden for the others
	// (image_retrieval: AIPerf rejects it).
	Tokenizer string

	Warmup      int // warmup requests (0: no warmup phase)
	Measured    int // profiling requests
	Concurrency int
	Seed        int

	RequestTimeout time.Duration // per request (default DefaultRequestTimeout)
	// Deadline bounds the whole run (0: none but the context's). When it
	// passes, AIPerf gets SIGINT, then SIGKILL after Grace.
	Deadline time.Duration
	Grace    time.Duration // default DefaultGrace
	// FinalizeWait bounds the wait for final exports after AIPerf exits
	// (default DefaultFinalizeWait).
	FinalizeWait time.Duration

	// ExtraInputs are merged into every request body (generation controls
	// such as max_tokens, temperature; threshold for image_retrieval).
	ExtraInputs map[string]any
	// APIKey is sent as a bearer token; it is redacted from recorded argv.
	APIKey string
	// OutputsJSON adds --export-outputs-json (outputs.json is parsed and
	// cross-checked when present).
	OutputsJSON bool
	// Env is added to the child's environment after the driver's own
	// hermetic settings, so it can override them.
	Env []string
	// TempDir is where AIPerf's hermetic home (its caches) is made: the
	// run's private directory; the system's temporary directory when "".
	TempDir string
	// Dataset, when set, is the written dataset: every conversation_id must
	// map to one of its lines.
	Dataset *Dataset
	// GPUTelemetry is AIPerf's GPU telemetry collector: "" turns telemetry
	// off (--no-gpu-telemetry, for CPU slots), GPUTelemetryPyNVML collects
	// utilisation, memory and power of the host's GPUs through NVML
	// (nvidia-ml-py, part of the pinned AIPerf environment) into the
	// summary's telemetry_data and gpu_telemetry_export.jsonl.
	GPUTelemetry string
}

// GPUTelemetryPyNVML is AIPerf 0.13.0's local NVML collector: no DCGM
// exporter needed on the host.
const GPUTelemetryPyNVML = "pynvml"

// ConfigError is an invalid Config: a usage problem, not a setup one.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return "aiperf config: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks the config without touching the filesystem.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Bin == "" {
		add("bin: empty")
	}
	typ, known := endpoint.Lookup(c.EndpointType)
	switch {
	case !known:
		add("endpoint type: %q, want %s", c.EndpointType, endpoint.OneOf(endpoint.Plain))
	case !typ.NeedsTokenizer():
		if c.Tokenizer != "" {
			add("tokenizer: must be empty for %s (AIPerf rejects tokenizer flags there)", typ.Name())
		}
	case c.Tokenizer == "":
		add("tokenizer: %s needs a local tokenizer directory (the model hub is unreachable)", typ.Name())
	case !filepath.IsAbs(c.Tokenizer):
		add("tokenizer: %q must be an absolute path (AIPerf treats other names as hub ids)", c.Tokenizer)
	}
	if c.URL == "" {
		add("url: empty")
	}
	if c.Model == "" {
		add("model: empty")
	}
	if c.InputFile == "" {
		add("input file: empty")
	}
	if c.ArtifactDir == "" {
		add("artifact dir: empty")
	}
	if c.Warmup < 0 {
		add("warmup: %d, want >= 0", c.Warmup)
	}
	if c.Measured <= 0 {
		add("measured: %d, want > 0", c.Measured)
	}
	if c.Concurrency <= 0 {
		add("concurrency: %d, want > 0", c.Concurrency)
	}
	if c.Seed < 0 {
		add("seed: %d, want >= 0", c.Seed)
	}
	if c.RequestTimeout < 0 || c.Deadline < 0 || c.Grace < 0 || c.FinalizeWait < 0 {
		add("durations must not be negative")
	}
	if c.RequestTimeout > 0 && c.RequestTimeout < time.Millisecond {
		add("request timeout: %s, want >= 1ms", c.RequestTimeout)
	}
	if _, err := extraInputsJSON(c.ExtraInputs); err != nil {
		add("extra inputs: %v", err)
	}
	if c.GPUTelemetry != "" && c.GPUTelemetry != GPUTelemetryPyNVML {
		add("gpu telemetry: %q, want %q or empty (off)", c.GPUTelemetry, GPUTelemetryPyNVML)
	}
	if c.Dataset != nil && len(c.Dataset.Sessions) < c.Warmup+c.Measured {
		add("dataset: %d lines for %d warmup + %d measured requests; every request needs its own line",
			len(c.Dataset.Sessions), c.Warmup, c.Measured)
	}
	if len(errs) > 0 {
		return &ConfigError{Err: errors.Join(errs...)}
	}
	return nil
}

func (c *Config) requestTimeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return DefaultRequestTimeout
}

func (c *Config) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return DefaultGrace
}

func (c *Config) finalizeWait() time.Duration {
	if c.FinalizeWait > 0 {
		return c.FinalizeWait
	}
	return DefaultFinalizeWait
}

func (c *Config) expectedVersion() string {
	if c.ExpectedVersion != "" {
		return c.ExpectedVersion
	}
	return DefaultVersion
}

// Argv is the exact command line for one run, in a fixed order. It is pure:
// the same Config always gives the same argv. Call Validate first; Argv
// does not check the config.
func Argv(c Config) []string {
	argv := []string{
		c.Bin, "profile",
		"--endpoint-type", c.EndpointType,
		"--url", c.URL,
		"--model", c.Model,
		"--input-file", c.InputFile,
		"--custom-dataset-type", "single_turn",
		// single_turn's default already, made explicit: line i of the file
		// is the i-th request across warmup and profiling.
		"--dataset-sampling-strategy", "sequential",
	}
	if c.Warmup > 0 {
		argv = append(argv, "--warmup-request-count", strconv.Itoa(c.Warmup))
	}
	argv = append(argv,
		"--request-count", strconv.Itoa(c.Measured),
		"--concurrency", strconv.Itoa(c.Concurrency),
		"--random-seed", strconv.Itoa(c.Seed),
		"--artifact-dir", c.ArtifactDir,
		"--export-level", "raw",
		// Each record's trace_data: the response headers (the server's
		// X-Request-ID echo, the join's proof of identity) and the
		// send / wait / receive timestamps of the HTTP exchange.
		"--export-http-trace",
		"--ui-type", "none",
		"--no-server-metrics",
	)
	if c.GPUTelemetry != "" {
		argv = append(argv, "--gpu-telemetry", c.GPUTelemetry)
	} else {
		argv = append(argv, "--no-gpu-telemetry")
	}
	argv = append(argv,
		"--request-timeout-seconds", strconv.FormatFloat(c.requestTimeout().Seconds(), 'f', -1, 64),
	)
	if typ, ok := endpoint.Lookup(c.EndpointType); ok {
		argv = append(argv, typ.Argv(c.Tokenizer)...)
	}
	if extra, _ := extraInputsJSON(c.ExtraInputs); extra != "" {
		argv = append(argv, "--extra-inputs", extra)
	}
	if c.OutputsJSON {
		argv = append(argv, "--export-outputs-json")
	}
	switch {
	case c.APIKey == "":
	case KeyViaEnv(c):
		argv = append(argv, "--config", KeyConfigFile(c))
	default:
		argv = append(argv, "--api-key", c.APIKey)
	}
	return argv
}

// APIKeyEnv is the environment variable through which Run hands the API
// key to AIPerf, so that it never appears in a process's argv (readable by
// every local user in /proc/PID/cmdline). AIPerf 0.13.0's `profile` takes a
// key only from --api-key or from a --config file, which may name an
// environment variable; Run writes that file (KeyConfig).
const APIKeyEnv = "TRTMC_AIPERF_API_KEY"

// apiKeyEnvEnd is an always-empty second variable after APIKeyEnv in the
// config: AIPerf turns a value that is one whole ${VAR} into a number or a
// boolean when it reads as one ("12345", "true"); two references keep the
// key a string, byte for byte.
const apiKeyEnvEnd = "TRTMC_AIPERF_API_KEY_END"

// KeyViaEnv reports whether the key reaches AIPerf through APIKeyEnv and
// KeyConfig. AIPerf's config loader expands ${...} and then Jinja
// templates ({{ }}, {% %}) in every value of a config file, so a key or an
// input path holding "$", "{" or "}" would be altered: those are passed as
// --api-key, as before, and Run logs it.
func KeyViaEnv(c Config) bool {
	return c.APIKey != "" && !strings.ContainsAny(c.APIKey, "${}") && !strings.ContainsAny(c.InputFile, "${}")
}

// KeyConfigFile is where Run writes KeyConfig: beside the artifact
// directory (<artifact dir>-config.yaml), kept as evidence; it holds no
// secret.
func KeyConfigFile(c Config) string {
	dir := filepath.Clean(c.ArtifactDir)
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-config.yaml")
}

// KeyConfig is the --config file that names the key's variable. AIPerf
// 0.13.0 requires datasets and phases in any config file and then overlays
// the command line on it; the values below repeat the flags, so the
// resolved configuration is exactly the one --api-key gives (checked
// against the installed AIPerf by TestKeyConfigResolvesLikeAPIKeyFlag).
func KeyConfig(c Config) []byte {
	path, _ := json.Marshal(c.InputFile) // a JSON string is a YAML double-quoted scalar
	return []byte(fmt.Sprintf(`# Written by trtmc-qual. The API key reaches AIPerf through the environment
# (%[1]s), never through a command line. Every other setting is on the
# command line; datasets and phases repeat it because AIPerf 0.13.0 wants them
# in a config file.
benchmark:
  endpoint:
    apiKey: "${%[1]s}${%[2]s:}"
  datasets:
  - name: main
    type: file
    path: %[3]s
    format: single_turn
    entries: %[4]d
  phases:
  - name: profiling
    type: concurrency
    requests: %[4]d
    concurrency: %[5]d
`, APIKeyEnv, apiKeyEnvEnd, path, c.Measured, c.Concurrency))
}

// Redacted is the argv safe to record: the API key value is replaced.
func Redacted(argv []string) []string {
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--api-key" {
			out[i+1] = "<redacted>"
		}
	}
	return out
}

// extraInputsJSON renders extra inputs as one compact JSON object with
// sorted keys (encoding/json sorts map keys), or "" for none. AIPerf
// accepts a JSON object string for --extra-inputs and merges it into every
// request body as is; the key:value form would coerce types.
func extraInputsJSON(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), nil
}
