package publish

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// pngDataURL is a real image as AIPerf sends it.
const pngDataURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAABfUlEQVR4nOyaPVLzMBBAv4/JEeipXaSmouYYnI1jUFNRp3BNzx1MkRnzY6wny7ZWM36vxCLyvlmttEpOwzD8k3luol+gdRQEKAhQEHAKmfXj7S5n2O39+/7vAphBwIIMunRdwQTnvi/4r3YwgwAFAQoCFAQoCFAQoCBAQYCCAAUBMc1qC11oJmYQoCBAQYCCAAUBCgL++8VhGjMIUBCgICCm1Rjpnh9+/aV/eg16l7+JKdJTL1MaMRWwxHLs5A/bm9qCFoXdgqOqS6ws4D3WWvd4+fr8l3NiZD1Ba9JhQ0ff1fyYYkbTsbb5OTuJR8cSVEAlQSvL7SbVOpE+iQFmEKAgQEHAgQSlzztzAw4kqIxKglae9LY6KCaSaO5R8HVHfa4i8luNwwm6gvVohHsxPF/lT9xOs5pP1SJdEGr4tVntXWxRwOF2Yrb5zLBbsBNWpMfg27+0D97FWtMxxZM0oCBAQYCCAAUBCgIUBCgIUBDgbxQBMwhQEPAZAAD//+xtZAJQMjOiAAAAAElFTkSuQmCC"

func testLeakScanner() *LeakScanner {
	return NewLeakScanner(testScrubber(), []string{"s3cr3t-T0KEN-value"}, []string{"Bluebird"})
}

// scan is every leak of a file's lines, as "line: kind text".
func scan(ls *LeakScanner, lines ...string) []string {
	f := ls.File()
	var out []string
	for n, l := range lines {
		f.Line(l, func(k Leak) { out = append(out, fmt.Sprintf("%d: %s %s", n+1, k.Kind, k.Text)) })
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// One leak scanner, every encoding, whole input (issue 32, items 7–10):
// each line holds one thing that must not leave the host, written as a
// child may write it; each is found, and named with its encoding.
func TestLeakScannerFindsEveryEncoding(t *testing.T) {
	ls := testLeakScanner()
	longPath := "/home/jdoe/" + strings.Repeat("abcdefghij/", 12) + "model.bin"
	for name, tc := range map[string]struct{ line, want string }{
		"a path of 100+ path characters (item 7)":  {"load " + longPath, "absolute path outside the named roots " + longPath},
		"a path where a data URL's payload starts": {`"url": "data:image/png;base64,` + longPath + `"`, "absolute path outside the named roots " + longPath},
		"a URL-encoded path (item 8)":              {"GET /f?p=%2Fhome%2Fjdoe%2Fx.txt", "absolute path outside the named roots (URL-encoded) /home/jdoe/x.txt"},
		"a twice URL-encoded path":                 {"GET /f?p=%252Fdata%252Fset%252Fx", "absolute path outside the named roots (URL-encoded, URL-encoded) /data/set/x"},
		"a URL-encoded user name":                  {"q=owner%3Djdoe", "user name jdoe"},
		"a path with escaped slashes":              {`{"p": "\/opt\/cache\/x"}`, "absolute path outside the named roots (JSON-escaped) /opt/cache/x"},
		"a path with \\u escapes":                  {`{"p": "\u002fhome\u002fjdoe\u002fy"}`, "absolute path outside the named roots (JSON-escaped) /home/jdoe/y"},
		"a base64 path":                            {"blob " + b64("/scratch/run/a.log") + " end", "absolute path outside the named roots (base64) /scratch/run/a.log"},
		"a base64 host name":                       {`{"ctx": "` + b64(`{"host": "gpu-node-17"}`) + `"}`, "host name (base64) gpu-node-17"},
		"a text data URL holding a path":           {"data:text/plain;base64," + b64("see /home/jdoe/notes.txt"), "absolute path outside the named roots (base64) /home/jdoe/notes.txt"},
		"a secret, URL-encoded":                    {"t=s3cr3t-T0KEN-value", "secret (the value of a configured secret variable, in one of its encodings) "},
		"AWS_SECRET_ACCESS_KEY (item 9)":           {"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "credential AWS_SECRET_ACCESS_KEY=…"},
		"WANDB_API_KEY":                            {"env: WANDB_API_KEY=0123456789abcdef0123", "credential WANDB_API_KEY=…"},
		"a *_PASSWORD":                             {"DB_PASSWORD=hunter", "credential DB_PASSWORD=…"},
		"a password in JSON":                       {`{"password": "correcthorse"}`, "credential password=…"},
		"a camelCase client secret":                {`clientSecret: 'abcdefgh'`, "credential clientSecret=…"},
		"URL userinfo":                             {"cloning https://user:pw@git.example/x.git", "credential https://…"},
		"URL userinfo, URL-encoded":                {"u=https%3A%2F%2Fbob%3Ahunter2%40host", "credential (URL-encoded) https://…"},
		"an X-Api-Key header":                      {"X-Api-Key: abcdefgh", "credential X-Api-Key=…"},
		"an --api-key flag":                        {"aiperf profile --api-key abc123def", "credential --api-key=…"},
		"an --api-key flag in an argv as JSON":     {`["aiperf", "--api-key", "abc123def"]`, "credential --api-key=…"},
		"a bearer token":                           {"Authorization: Bearer abcdefghijklmnop", "credential Authoriz…"},
		"a hub token":                              {"HF hf_abcdefghijklmnopqrstuvwxyz012345", "credential hf_abcde…"},
		"a forbidden string":                       {"project BLUEBIRD-2", "forbidden string (--forbid) BLUEBIRD"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, scan(ls, tc.line), "1: "+tc.want)
		})
	}
}

// What a run's evidence holds by the thousand is never taken for a leak.
func TestLeakScannerLeavesEvidenceAlone(t *testing.T) {
	ls := testLeakScanner()
	for _, line := range []string{
		`{"url": "` + pngDataURL + `"}`,
		`{"max_tokens": 32, "token_source":"whitespace_words", "prompt_tokens":5, "tokenizer": {}}`,
		`"run_key": "ee113752dfb51b2641b12aa6ee5f6911d76ee66191b2296949c57f7837305884"`,
		`"X-Session-Affinity":"<redacted>", "X-Request-ID":"95618998-10f9-465f-8c31-9ac23354395c"`,
		`--header 'Authorization:Bearer [REDACTED]' --api-key [REDACTED]`,
		`{"api_key": "[REDACTED]", "password": null, "token": ""}`,
		`PASSWORD=$DB_PASSWORD TOKEN=${HF_TOKEN} key=%s`,
		`http://127.0.0.1:41234/v1/chat/completions and /v1/infer`,
		`usage_prompt_tokens_diff_pct 0.0 "output_token_count":{"value":5}`,
		`tokenizers: {'ref-vlm-small': 'whitespace'}`,
		`$OUT/vlm/ref-vlm-small/server.log [private]/x [host] [user] [ip]`,
	} {
		assert.Empty(t, scan(ls, line), line)
	}
}

// A PEM block is a credential from its BEGIN line to its END line, every
// line of its body included; the END line alone (a log cut to its tail)
// is one too (issue 32, item 10).
func TestLeakScannerPEMBlocks(t *testing.T) {
	ls := testLeakScanner()
	body := "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
	got := scan(ls, "starting", "-----BEGIN PRIVATE KEY-----", body, body, "-----END PRIVATE KEY-----", "done")
	assert.Equal(t, []string{
		"2: credential (a PEM block: PRIVATE KEY) -----BEGIN PRIVATE KEY-----",
		"3: credential (the body of a PEM block: PRIVATE KEY) ",
		"4: credential (the body of a PEM block: PRIVATE KEY) ",
		"5: credential (the END of a PEM block: PRIVATE KEY) -----END PRIVATE KEY-----",
	}, got)
	assert.Equal(t, []string{"1: credential (the END of a PEM block: RSA PRIVATE KEY) -----END RSA PRIVATE KEY-----"},
		scan(ls, "-----END RSA PRIVATE KEY-----"))
	// A whole block on one line (JSON-escaped newlines).
	assert.Contains(t, scan(ls, `{"k": "-----BEGIN OPENSSH PRIVATE KEY-----\n`+body+`\n-----END OPENSSH PRIVATE KEY-----"}`, "next"),
		"1: credential (a PEM block: OPENSSH PRIVATE KEY) -----BEGIN OPENSSH PRIVATE KEY-----")
	assert.Len(t, scan(ls, `{"k": "-----BEGIN OPENSSH PRIVATE KEY-----\n`+body+`\n-----END OPENSSH PRIVATE KEY-----"}`, "next"), 1,
		"the block ends on its line: the next line is no body")
}

// FuzzLeakScanner: any line, as any line of a file, is scanned without a
// panic (the decoders index into what they decode), each finding names a
// kind, and what the scrubber writes for a line holds no root path and no
// host name in its raw form.
func FuzzLeakScanner(f *testing.F) {
	for _, s := range []string{`{"p": "\u002fhome\u002fjdoe\u002f"}`, "%2Fhome%2Fjdoe%2", "%252F%25", "-----BEGIN X-----",
		"data:image/png;base64,/home/jdoe/x", b64("/scratch/x") + "=", `\ud83d\ude00 \u12`, "api_key=\"", "--api-key", "https://a:b@c",
		"X-Api-Key:", "DB_PASSWORD=hunter2", "\\", "%", "data:;base64,"} {
		f.Add(s)
	}
	ls := testLeakScanner()
	s := testScrubber()
	f.Fuzz(func(t *testing.T, line string) {
		scan := ls.File()
		for range 2 {
			scan.Line(line, func(l Leak) {
				if l.Kind == "" {
					t.Fatalf("a finding without a kind in %q", line)
				}
			})
		}
		out := s.Text(line)
		s.Spans(out, func(sp Span) {
			if (sp.Kind == FindRoot || sp.Kind == FindHost) && !strings.Contains(out[sp.Start:sp.End], "%") {
				t.Fatalf("%s %q left in %q (from %q)", sp.Kind, out[sp.Start:sp.End], out, line)
			}
		})
	})
}
