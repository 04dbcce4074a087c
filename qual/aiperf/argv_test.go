package aiperf

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

func baseConfig(ep string) Config {
	c := Config{
		Bin:          "/venv/bin/aiperf",
		EndpointType: ep,
		URL:          "http://127.0.0.1:8000",
		Model:        "ref-vlm",
		InputFile:    "/w/dataset.jsonl",
		ArtifactDir:  "/w/artifacts",
		Warmup:       5,
		Measured:     50,
		Concurrency:  4,
		Seed:         7,
	}
	if ep == endpoint.Chat {
		c.Tokenizer = "/repo/.venv/tokenizer"
	}
	return c
}

func TestArgvChat(t *testing.T) {
	c := baseConfig(endpoint.Chat)
	c.RequestTimeout = 90 * time.Second
	c.ExtraInputs = map[string]any{"temperature": 0, "max_tokens": 16, "seed": 3, "stop": []string{"<&>"}}
	require.NoError(t, c.Validate())
	want := []string{
		"/venv/bin/aiperf", "profile",
		"--endpoint-type", "chat",
		"--url", "http://127.0.0.1:8000",
		"--model", "ref-vlm",
		"--input-file", "/w/dataset.jsonl",
		"--custom-dataset-type", "single_turn",
		"--dataset-sampling-strategy", "sequential",
		"--warmup-request-count", "5",
		"--request-count", "50",
		"--concurrency", "4",
		"--random-seed", "7",
		"--artifact-dir", "/w/artifacts",
		"--export-level", "raw",
		"--export-http-trace",
		"--ui-type", "none",
		"--no-server-metrics",
		"--no-gpu-telemetry",
		"--request-timeout-seconds", "90",
		"--tokenizer", "/repo/.venv/tokenizer",
		"--extra-inputs", `{"max_tokens":16,"seed":3,"stop":["<&>"],"temperature":0}`,
	}
	assert.Equal(t, want, Argv(c))
	assert.Equal(t, Argv(c), Argv(c), "deterministic")
}

func TestArgvImageRetrieval(t *testing.T) {
	c := baseConfig(endpoint.ImageRetrieval)
	c.Warmup = 0
	c.RequestTimeout = 1500 * time.Millisecond
	c.OutputsJSON = true
	c.APIKey = "s3cret"
	require.NoError(t, c.Validate())
	argv := Argv(c)
	joined := strings.Join(argv, " ")
	assert.NotContains(t, joined, "--tokenizer", "image_retrieval rejects tokenizer flags")
	assert.NotContains(t, joined, "--warmup-request-count", "AIPerf wants > 0; no flag means no warmup")
	assert.NotContains(t, joined, "--extra-inputs")
	assert.Contains(t, joined, "--request-timeout-seconds 1.5")
	assert.Contains(t, joined, "--export-outputs-json")
	assert.Equal(t, []string{"--config", KeyConfigFile(c)}, argv[len(argv)-2:], "the key goes through the environment")
	assert.NotContains(t, joined, "s3cret")
	c.APIKey = "s3cret${HOME}"
	argv = Argv(c)
	assert.Equal(t, []string{"--api-key", "s3cret${HOME}"}, argv[len(argv)-2:], "a key AIPerf's config loader would expand")
	red := Redacted(argv)
	assert.Equal(t, []string{"--api-key", "<redacted>"}, red[len(red)-2:])
	assert.Equal(t, "s3cret${HOME}", argv[len(argv)-1], "Redacted copies")
	assert.Contains(t, joined, "--request-timeout-seconds 1.5")

	c.RequestTimeout = 0
	assert.Contains(t, strings.Join(Argv(c), " "), "--request-timeout-seconds 120", "default timeout")
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		modify func(c *Config)
		err    string
	}{
		{"chat without tokenizer", func(c *Config) { c.Tokenizer = "" }, "chat needs a local tokenizer"},
		{"relative tokenizer", func(c *Config) { c.Tokenizer = "tok" }, "must be an absolute path"},
		{"tokenizer for image_retrieval", func(c *Config) { c.EndpointType = endpoint.ImageRetrieval }, "must be empty for image_retrieval"},
		{"other endpoint", func(c *Config) { c.EndpointType = "embeddings" }, `endpoint type: "embeddings"`},
		{"no bin", func(c *Config) { c.Bin = "" }, "bin: empty"},
		{"no url", func(c *Config) { c.URL = "" }, "url: empty"},
		{"no model", func(c *Config) { c.Model = "" }, "model: empty"},
		{"no input", func(c *Config) { c.InputFile = "" }, "input file: empty"},
		{"no artifact dir", func(c *Config) { c.ArtifactDir = "" }, "artifact dir: empty"},
		{"negative warmup", func(c *Config) { c.Warmup = -1 }, "warmup: -1"},
		{"no measured", func(c *Config) { c.Measured = 0 }, "measured: 0"},
		{"no concurrency", func(c *Config) { c.Concurrency = 0 }, "concurrency: 0"},
		{"negative seed", func(c *Config) { c.Seed = -2 }, "seed: -2"},
		{"negative duration", func(c *Config) { c.Grace = -time.Second }, "durations must not be negative"},
		{"sub-ms timeout", func(c *Config) { c.RequestTimeout = time.Microsecond }, "request timeout"},
		{"unencodable extra input", func(c *Config) { c.ExtraInputs = map[string]any{"f": func() {}} }, "extra inputs"},
		{"dataset too short", func(c *Config) { c.Dataset = &Dataset{Sessions: make([]Session, 54)} }, "dataset: 54 lines for 5 warmup + 50 measured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := baseConfig(endpoint.Chat)
			tc.modify(&c)
			err := c.Validate()
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	c := Config{}
	err := c.Validate()
	require.Error(t, err)
	assert.GreaterOrEqual(t, strings.Count(err.Error(), "\n"), 5, "all problems reported at once")
}

// TestArgvGPUTelemetry: a GPU slot turns AIPerf's NVML collector on in
// place of --no-gpu-telemetry; an unknown collector is a config error.
func TestArgvGPUTelemetry(t *testing.T) {
	c := baseConfig(endpoint.ImageRetrieval)
	c.GPUTelemetry = GPUTelemetryPyNVML
	require.NoError(t, c.Validate())
	joined := strings.Join(Argv(c), " ")
	assert.Contains(t, joined, "--no-server-metrics --gpu-telemetry pynvml --request-timeout-seconds")
	assert.NotContains(t, joined, "--no-gpu-telemetry")

	c.GPUTelemetry = "dcgm"
	err := c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `gpu telemetry: "dcgm"`)
}
