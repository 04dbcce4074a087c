package evidence

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A secret with characters every encoding treats specially.
const awkward = `tok"en\with/slash é+space &<>=`

// Issue 13, finding 5: redaction matched only the raw bytes, so a secret
// holding " or \ leaked in its JSON-escaped form when a child printed it
// as JSON. Each form below is what a real encoder printed; every one is
// masked.
func TestRedactorCoversEncodings(t *testing.T) {
	r := NewRedactor(awkward)
	goJSON, err := json.Marshal(map[string]string{"api_key": awkward})
	require.NoError(t, err)
	printed := []string{
		string(goJSON),
		"Authorization: Bearer " + awkward,
		"GET /x?key=" + url.QueryEscape(awkward) + "&y=1",
		"GET /x/" + url.PathEscape(awkward) + "/y",
		"basic " + base64.StdEncoding.EncodeToString([]byte(awkward)),
		"jwt-ish " + base64.RawURLEncoding.EncodeToString([]byte(awkward)) + ".sig",
	}
	printed = append(printed, pythonPrints(t, awkward)...)
	for _, p := range printed {
		got := r.String(p)
		assert.Contains(t, got, Mask, "nothing masked in %q", p)
		for _, f := range Forms(awkward) {
			assert.NotContains(t, got, f, "a form survives in %q -> %q", p, got)
		}
		assert.NotContains(t, got, "tok", "the secret's start survives in %q -> %q", p, got)
	}
}

// pythonPrints is how Python's json and urllib print the secret: the
// encoders AIPerf (a Python program) would use.
func pythonPrints(t *testing.T, secret string) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 is needed (AIPerf's venv brings one)")
	out, err := exec.Command(py, "-c", `import json, sys, urllib.parse, base64
s = sys.argv[1]
print(json.dumps({"api_key": s}))
print(json.dumps({"api_key": s}, ensure_ascii=False))
print(urllib.parse.quote(s, safe=""))
print(urllib.parse.quote_plus(s))
print(urllib.parse.urlencode({"k": s}))
print(base64.b64encode(s.encode()).decode())
print(base64.urlsafe_b64encode(s.encode()).decode())`, secret).Output()
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// A secret inside a longer base64 stream (a JSON body carrying it, base64
// encoded whole) is masked at each of the three alignments it can have.
func TestRedactorBase64InsideAStream(t *testing.T) {
	secret := "serve-token-0123456789abcdef"
	r := NewRedactor(secret)
	for align := 0; align < 3; align++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			prefix := strings.Repeat("p", 30+align) // any bytes before it
			stream := enc.EncodeToString([]byte(`{"prefix":"` + prefix + `","key":"` + secret + `","tail":1}`))
			got := r.String(stream)
			require.Contains(t, got, Mask, "align %d", align)
			// What is left decodes to nothing that holds 6 consecutive
			// bytes of the secret.
			for _, part := range strings.Split(got, Mask) {
				for cut := 0; cut < 4; cut++ {
					if cut > len(part) {
						break
					}
					dec, _ := enc.WithPadding(base64.NoPadding).DecodeString(strings.TrimRight(part[cut:], "=")[:len(strings.TrimRight(part[cut:], "="))/4*4])
					for i := 0; i+6 <= len(secret); i++ {
						assert.False(t, bytes.Contains(dec, []byte(secret[i:i+6])), "align %d: %q decodes to part of the secret", align, part)
					}
				}
			}
		}
	}
}

// Secrets of any length are redacted (the old redactor skipped those
// under 4 characters and the README did not say so).
func TestRedactorShortSecrets(t *testing.T) {
	r := NewRedactor("k9")
	assert.Equal(t, "token=[REDACTED]; k8", r.String("token=k9; k8"))
	r = NewRedactor("!")
	assert.Equal(t, "a[REDACTED]b", r.String("a!b"))
	assert.Equal(t, "a[REDACTED]b", r.String("a%21b"), "URL-encoded too")
}

// RedactFile streams: a secret across a chunk boundary is found, the
// result equals redacting the whole file at once, and a file without a
// secret is not rewritten.
func TestRedactFileStreamsAcrossChunks(t *testing.T) {
	secret := `a"secret\value`
	r := NewRedactor(secret)
	escaped := `a\"secret\\value`
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	for _, at := range []int{0, redactChunk - len(escaped) + 1, redactChunk - 3, redactChunk, 2*redactChunk - 1} {
		data := make([]byte, 2*redactChunk+100)
		for i := range data {
			data[i] = "abcdefgh \n"[rng.Intn(10)]
		}
		copy(data[at:], escaped)
		p := filepath.Join(dir, "log")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		require.NoError(t, r.RedactFile(p))
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NotContains(t, string(got), escaped, "offset %d", at)
		assert.Equal(t, string(r.Bytes(data)), string(got), "offset %d", at)
	}
	clean := filepath.Join(dir, "clean")
	require.NoError(t, os.WriteFile(clean, []byte("nothing here"), 0o600))
	before, err := os.Stat(clean)
	require.NoError(t, err)
	require.NoError(t, r.RedactFile(clean))
	after, err := os.Stat(clean)
	require.NoError(t, err)
	assert.Equal(t, before.Mode(), after.Mode(), "untouched")
	assert.True(t, os.SameFile(before, after), "not rewritten")
}

// Streaming and whole-buffer redaction agree on random text dense with
// overlapping secrets.
func TestRedactorStreamAgreesWithBytes(t *testing.T) {
	r := NewRedactor("abab", "ba", "aab")
	rng := rand.New(rand.NewSource(2))
	for n := 0; n < 200; n++ {
		data := make([]byte, rng.Intn(64))
		for i := range data {
			data[i] = "ab%"[rng.Intn(3)]
		}
		want := r.Bytes(data)
		var out bytes.Buffer
		st := r.newScan()
		for rest := data; ; {
			k := min(len(rest), rng.Intn(5))
			require.NoError(t, st.feed(&out, rest[:k], k == len(rest)))
			rest = rest[k:]
			if len(rest) == 0 && k == 0 {
				break
			}
			if len(rest) == 0 {
				require.NoError(t, st.feed(&out, nil, true))
				break
			}
		}
		require.Equal(t, string(want), out.String(), "input %q", data)
	}
}

// BenchmarkRedactFile measures redaction of a 32 MiB export holding no
// secret (the common case: one scanning pass) against copying it, with
// three secrets configured: go test -bench RedactFile ./reports/evidence.
func BenchmarkRedactFile(b *testing.B) {
	dir := b.TempDir()
	data := bytes.Repeat([]byte(`{"request_id":"0b9e","payload":"iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAAAl","status":200}`+"\n"), 32<<20/90)
	p := filepath.Join(dir, "profile_export_raw.jsonl")
	require.NoError(b, os.WriteFile(p, data, 0o644))
	b.Run("copy-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			in, err := os.ReadFile(p)
			require.NoError(b, err)
			require.NoError(b, os.WriteFile(p+".copy", in, 0o644))
		}
	})
	r := NewRedactor("serve-token-4f1c2a9e77d0", "vendor-secret-0c8b5e", `a"b\c`)
	b.Run("redact", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			require.NoError(b, r.RedactFile(p))
		}
	})
}

func TestRedactor(t *testing.T) {
	r := NewRedactor("s3cret-token", "", "ab")
	assert.Equal(t, "key=[REDACTED] [REDACTED]", r.String("key=s3cret-token ab"), "short secrets too")
	assert.Equal(t, []string{"aiperf", "--api-key", "[REDACTED]", "--api-key=[REDACTED]", "-u", "x[REDACTED]"},
		r.Argv([]string{"aiperf", "--api-key", "anything", "--api-key=other", "-u", "xs3cret-token"}))
	var nilR *Redactor
	assert.Equal(t, "s3cret-token", nilR.String("s3cret-token"))

	dir := t.TempDir()
	p := filepath.Join(dir, "log")
	require.NoError(t, os.WriteFile(p, []byte("token s3cret-token here"), 0o644))
	require.NoError(t, r.RedactTree(dir))
	data, _ := os.ReadFile(p)
	assert.Equal(t, "token [REDACTED] here", string(data))
}
