package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestMakeBundleIsDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	digest := func(args ...string) (string, []byte) {
		out := filepath.Join(dir, fmt.Sprintf("b%d.bundle", len(args))+strings.Join(args, ""))
		r := runBinary(t, nil, append([]string{"make-bundle", "--out", out}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(sum[:])+"\n", r.stdout, "stdout is the sha256")
		return strings.TrimSpace(r.stdout), data
	}
	a, dataA := digest("--family", "ref-detect")
	b, dataB := digest("--family", "ref-detect", "--seed", "1", "--precision", "fp32")
	assert.Equal(t, a, b)
	assert.Equal(t, dataA, dataB)
	c, _ := digest("--family", "ref-detect", "--seed", "2")
	d, _ := digest("--family", "ref-detect", "--precision", "fp16")
	e, _ := digest("--family", "ref-vlm")
	assert.Len(t, map[string]bool{a: true, c: true, d: true, e: true}, 4)

	for _, args := range [][]string{
		{"make-bundle", "--family", "ref-ocr", "--out", filepath.Join(dir, "x")},
		{"make-bundle", "--family", "ref-vlm"},
		{"make-bundle", "--family", "ref-vlm", "--out", filepath.Join(dir, "x"), "--precision", "int4"},
		{"make-bundle", "--bogus"},
		{"make-bundle", "extra-arg", "--family", "ref-vlm", "--out", filepath.Join(dir, "x")},
	} {
		r := runBinary(t, nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "trtmc-refserver: ")
	}
}

func TestCorpusAndCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, family := range []string{"ref-detect", "ref-vlm"} {
		bundle := makeBundle(t, dir, family)
		corpus := makeCorpus(t, dir, family, 21)
		out := filepath.Join(dir, family+"-result.json")
		r := runBinary(t, nil, "check", "--bundle", bundle, "--corpus", corpus, "--out", out)
		require.Equal(t, exitOK, r.code, r.stderr)
		var res struct {
			Schema       string             `json:"schema"`
			Family       string             `json:"family"`
			BundleSHA256 string             `json:"bundle_sha256"`
			Passed       bool               `json:"passed"`
			Metrics      map[string]float64 `json:"metrics"`
			Gates        []struct {
				Name      string  `json:"name"`
				Value     float64 `json:"value"`
				Op        string  `json:"op"`
				Threshold float64 `json:"threshold"`
				Passed    bool    `json:"passed"`
			} `json:"gates"`
		}
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &res))
		assert.Equal(t, "trtmc-ref/check/v1", res.Schema)
		assert.Equal(t, family, res.Family)
		assert.True(t, res.Passed)
		bundleBytes, err := os.ReadFile(bundle)
		require.NoError(t, err)
		sum := sha256.Sum256(bundleBytes)
		assert.Equal(t, hex.EncodeToString(sum[:]), res.BundleSHA256)
		require.NotEmpty(t, res.Gates)
		if family == "ref-detect" {
			assert.Contains(t, res.Metrics, "map_50_95")
			assert.Contains(t, res.Metrics, "map_50")
		} else {
			assert.Contains(t, res.Metrics, "accuracy")
		}
	}

	// A broken detector (red and blue labels swapped) fails its gates: exit 1.
	good, err := os.ReadFile(filepath.Join(dir, "ref-detect.bundle"))
	require.NoError(t, err)
	broken := strings.Replace(strings.Replace(strings.Replace(string(good), `"name":"red"`, `"name":"tmp"`, 1), `"name":"blue"`, `"name":"red"`, 1), `"name":"tmp"`, `"name":"blue"`, 1)
	require.NotEqual(t, string(good), broken)
	brokenPath := filepath.Join(dir, "broken.bundle")
	require.NoError(t, os.WriteFile(brokenPath, []byte(broken), 0o644))
	out := filepath.Join(dir, "broken-result.json")
	r := runBinary(t, nil, "check", "--bundle", brokenPath, "--corpus", filepath.Join(dir, "ref-detect-corpus"), "--out", out)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "check FAILED")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"passed": false`)

	// Input errors: exit 2, naming the file.
	malformed := filepath.Join(dir, "malformed.bundle")
	require.NoError(t, os.WriteFile(malformed, []byte(`{"format":"nope"}`), 0o644))
	r = runBinary(t, nil, "check", "--bundle", malformed, "--corpus", filepath.Join(dir, "ref-detect-corpus"), "--out", out)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, malformed)
	r = runBinary(t, nil, "check", "--bundle", filepath.Join(dir, "ref-vlm.bundle"), "--corpus", filepath.Join(dir, "ref-detect-corpus"), "--out", out)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "is for family ref-detect")
}

// answersOverHTTP posts each payload and returns the answer in the native
// runner's form: the infer data array's raw bytes, or for chat
// {"text": message content, "completion_tokens": usage.completion_tokens}.
func answersOverHTTP(t *testing.T, s *serverProc, family string, payloads []string) []string {
	t.Helper()
	route := "/v1/infer"
	if family == "ref-vlm" {
		route = "/v1/chat/completions"
	}
	var answers []string
	for _, p := range payloads {
		r := s.post(route, p, 10*time.Second)
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		if family == "ref-detect" {
			var body struct{ Data json.RawMessage }
			require.NoError(t, json.Unmarshal(r.body, &body))
			answers = append(answers, string(body.Data))
			continue
		}
		var body struct {
			Choices []struct {
				Message struct{ Content string }
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		require.NoError(t, json.Unmarshal(r.body, &body))
		require.Len(t, body.Choices, 1)
		b, err := json.Marshal(struct {
			Text             string `json:"text"`
			CompletionTokens int    `json:"completion_tokens"`
		}{body.Choices[0].Message.Content, body.Usage.CompletionTokens})
		require.NoError(t, err)
		answers = append(answers, string(b))
	}
	return answers
}

func nativeAnswers(t *testing.T, dir, bundle, family string, payloads []string) []string {
	t.Helper()
	route := "/v1/infer"
	if family == "ref-vlm" {
		route = "/v1/chat/completions"
	}
	var in bytes.Buffer
	for i, p := range payloads {
		fmt.Fprintf(&in, `{"request_id":"r%d","route":"%s","payload":%s}`+"\n", i, route, p)
	}
	inPath, outPath := filepath.Join(dir, family+"-native-in.jsonl"), filepath.Join(dir, family+"-native-out.jsonl")
	require.NoError(t, os.WriteFile(inPath, in.Bytes(), 0o644))
	r := runBinary(t, nil, "native", "--bundle", bundle, "--requests", inPath, "--out", outPath)
	require.Equal(t, exitOK, r.code, r.stderr)
	data, err := os.ReadFile(outPath)
	require.NoError(t, err)
	var answers []string
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var resp struct {
			RequestID string          `json:"request_id"`
			Answer    json.RawMessage `json:"answer"`
			TaskMs    float64         `json:"task_ms"`
			Error     string          `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &resp))
		assert.Equal(t, fmt.Sprintf("r%d", i), resp.RequestID)
		assert.Empty(t, resp.Error)
		assert.Positive(t, resp.TaskMs)
		answers = append(answers, string(resp.Answer))
	}
	return answers
}

func TestServeAndNativeAnswerTheSame(t *testing.T) {
	t.Parallel()
	for _, family := range []string{"ref-detect", "ref-vlm"} {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bundle := makeBundle(t, dir, family, "--precision", "fp16")
			payloads := corpusPayloads(t, makeCorpus(t, dir, family, 10), family)

			native := nativeAnswers(t, dir, bundle, family, payloads)
			s := startServer(t, bundle, nil, true)
			overHTTP := answersOverHTTP(t, s, family, payloads)
			assert.Equal(t, native, overHTTP, "byte for byte")

			recs := s.readRecords()
			require.Len(t, recs, len(payloads))
			if family == "ref-vlm" {
				assert.Equal(t, true, recs[0]["warmup_marker"])
				assert.Equal(t, false, recs[1]["warmup_marker"])
			}

			// With wrong-answer-every=3 the third HTTP answer differs; native never does.
			s.signal(syscall.SIGTERM)
			require.Equal(t, 0, s.wait(10*time.Second))
			faulty := startServer(t, bundle, nil, true, "--fault", "wrong-answer-every=3")
			corrupted := answersOverHTTP(t, faulty, family, payloads[:4])
			assert.Equal(t, native[:2], corrupted[:2])
			assert.NotEqual(t, native[2], corrupted[2])
			assert.Equal(t, native[3], corrupted[3])
		})
	}
}

func TestNativeRefusesAnotherFamilysRoute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bundle := makeBundle(t, dir, "ref-vlm")
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"request_id":"a","route":"/v1/infer","payload":{"input":[]}}`+"\n"), 0o644))
	out := filepath.Join(dir, "out.jsonl")
	r := runBinary(t, nil, "native", "--bundle", bundle, "--requests", in, "--out", out)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, in+":1: route \"/v1/infer\" is not served by family ref-vlm")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no partial output")
}
