package publish

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// The one leak scanner: what is published (an evidence pack, and the kept
// evidence of docs/evidence) is scanned by LeakScanner before it leaves the
// host, and anything it finds refuses the publication. It looks, in every
// line of every file, whole (a log cut to its tail is scanned before it is
// cut), for
//
//   - what the Scrubber maps — paths, host and user names, IP addresses —
//     raw and in every encoding a child writes text in: JSON-escaped
//     (\/ and \uXXXX), URL-encoded (%2F, once or twice), and base64 (a run
//     of base64 characters that decodes to text);
//   - the values of the configured secrets, in every encoding the
//     evidence.Redactor knows;
//   - credentials by their shape, whatever their value: a value assigned
//     to a name that says it is secret (*TOKEN*, *SECRET*, *PASSWORD*,
//     *KEY*, *API_KEY*, X-Api-Key: ...), URL userinfo (https://user:pw@host),
//     Authorization headers, the token formats of the hubs and clouds, and
//     PEM blocks — the BEGIN line, every line of the body and the END line
//     (a FileScan carries the open block from line to line);
//   - the --forbid strings, case-insensitively.
//
// Only proven data is exempt: the base64 payload of a data URL (an image
// inside a request) is not scanned for names or credential shapes, unless
// it decodes to text.

// LeakScanner finds what must not leave the host in published text.
type LeakScanner struct {
	scrub  *Scrubber
	red    *evidence.Redactor
	forbid []string // lower-case
}

// Leak is one thing found. Text is what was found, decoded ("" for a
// secret's value, which is never shown; a credential shows its start).
type Leak struct {
	Kind string
	Text string
}

// NewLeakScanner scans for what s maps, the secrets' values and the
// forbidden strings.
func NewLeakScanner(s *Scrubber, secrets, forbid []string) *LeakScanner {
	ls := &LeakScanner{scrub: s, red: evidence.NewRedactor(secrets...)}
	for _, f := range forbid {
		if f = strings.TrimSpace(f); f != "" {
			ls.forbid = append(ls.forbid, asciiLower(f))
		}
	}
	return ls
}

// FileScan scans one file, line by line, in order.
type FileScan struct {
	ls *LeakScanner
	// pem is the label of the PEM block open since an earlier line.
	pem string
}

// File starts the scan of one file.
func (ls *LeakScanner) File() *FileScan { return &FileScan{ls: ls} }

// Text scans one piece of text that is not part of a file (a file name).
func (ls *LeakScanner) Text(text string, fn func(Leak)) { ls.File().Line(text, fn) }

// view is a line as a child may have encoded it, decoded.
type view struct {
	encoding string // "" raw; "JSON-escaped", "URL-encoded", "base64"
	text     string
}

// maxViews bounds the decoded views of one line.
const maxViews = 64

// Line reports what one line holds (each thing once, in the order found).
func (f *FileScan) Line(line string, fn func(Leak)) {
	ls := f.ls
	seen := map[string]bool{} // a thing found in several views is reported once, from the first
	report := func(kind, enc, text string) {
		if key := kind + "\x00" + text; !seen[key] {
			seen[key] = true
			if enc != "" {
				kind += " (" + enc + ")"
			}
			fn(Leak{Kind: kind, Text: text})
		}
	}
	f.pemLine(line, func(l Leak) { report(l.Kind, "", l.Text) })
	if ls.red.Contains([]byte(line)) {
		report("secret (the value of a configured secret variable, in one of its encodings)", "", "")
	}
	for _, v := range views(line) {
		ls.scrub.Spans(v.text, func(sp Span) {
			kind, found, enc := sp.Kind, v.text[sp.Start:sp.End], v.encoding
			if sp.Kind == FindRoot {
				kind = "absolute path (under $" + sp.Root + ")"
			}
			if decoded := urlDecode(found); decoded != found {
				found = decoded // a URL-encoded path: shown decoded
				enc = strings.TrimPrefix(enc+", URL-encoded", ", ")
			}
			report(kind, enc, found)
		})
		credentials(v.text, func(shown string) { report("credential", v.encoding, shown) })
		if len(ls.forbid) > 0 {
			low := asciiLower(v.text) // same length: indexes hold in v.text
			for _, fb := range ls.forbid {
				for off := 0; ; {
					k := strings.Index(low[off:], fb)
					if k < 0 {
						break
					}
					if !InData(v.text, off+k) {
						report("forbidden string (--forbid)", v.encoding, v.text[off+k:off+k+len(fb)])
						break
					}
					off += k + 1
				}
			}
		}
	}
}

// asciiLower lower-cases ASCII letters only, so that byte offsets hold.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var (
	pemBeginRe = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]{1,64})-----`)
	pemEndRe   = regexp.MustCompile(`-----END ([A-Z0-9 ]{1,64})-----`)
)

// pemLine follows PEM blocks across lines: a BEGIN line, every line of an
// open block's body and an END line (with or without its BEGIN: a log cut
// to its tail may start inside the block) are each a credential.
func (f *FileScan) pemLine(line string, report func(Leak)) {
	rest := line
	if f.pem != "" {
		loc := pemEndRe.FindStringIndex(rest)
		if loc == nil {
			report(Leak{Kind: "credential (the body of a PEM block: " + f.pem + ")"})
			return
		}
		report(Leak{Kind: "credential (the END of a PEM block: " + f.pem + ")", Text: rest[loc[0]:loc[1]]})
		f.pem = ""
		rest = rest[loc[1]:]
	}
	for {
		b := pemBeginRe.FindStringSubmatchIndex(rest)
		e := pemEndRe.FindStringSubmatchIndex(rest)
		switch {
		case b == nil && e == nil:
			return
		case b == nil || e != nil && e[0] < b[0]:
			report(Leak{Kind: "credential (the END of a PEM block: " + rest[e[2]:e[3]] + ")", Text: rest[e[0]:e[1]]})
			rest = rest[e[1]:]
		default:
			label := rest[b[2]:b[3]]
			report(Leak{Kind: "credential (a PEM block: " + label + ")", Text: rest[b[0]:b[1]]})
			rest = rest[b[1]:]
			if end := pemEndRe.FindStringIndex(rest); end != nil {
				rest = rest[end[1]:] // the whole block on this line
				continue
			}
			f.pem = label
			return
		}
	}
}

// views are the line raw and as each encoding it holds decodes: JSON
// escapes, URL escapes (twice: %252F), and every run of base64 characters
// (16 or more) that decodes to text; each decoded view is decoded again,
// up to maxViews views.
func views(line string) []view {
	out := []view{{text: line}}
	for i := 0; i < len(out) && len(out) < maxViews; i++ {
		v := out[i]
		add := func(enc, text string) {
			if text != v.text && len(out) < maxViews {
				if v.encoding != "" {
					enc = v.encoding + ", " + enc
				}
				out = append(out, view{encoding: enc, text: text})
			}
		}
		if strings.IndexByte(v.text, '\\') >= 0 {
			add("JSON-escaped", jsonUnescape(v.text))
		}
		if strings.IndexByte(v.text, '%') >= 0 {
			add("URL-encoded", urlDecode(v.text))
		}
		for _, t := range base64Texts(v.text) {
			add("base64", t)
		}
	}
	return out
}

// jsonUnescape decodes the JSON string escapes in s (\" \\ \/ \b \f \n
// \r \t \uXXXX, surrogate pairs joined); anything else is kept.
func jsonUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n := hexRune(s[i+2:])
			if n == 0 {
				b.WriteByte('\\')
				continue
			}
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+2+n:], `\u`) {
				if r2, n2 := hexRune(s[i+4+n:]); n2 > 0 {
					r = utf16.DecodeRune(r, r2)
					n += 2 + n2
				}
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte('\\')
			continue
		}
		i++
	}
	return b.String()
}

// hexRune reads four hex digits.
func hexRune(s string) (rune, int) {
	if len(s) < 4 {
		return 0, 0
	}
	var r rune
	for i := 0; i < 4; i++ {
		if !isHex(s[i]) {
			return 0, 0
		}
		r = r<<4 | rune(unhex(s[i]))
	}
	return r, 4
}

// urlDecode decodes every %XX escape of s ("+" is kept: a plus in text is
// more often a plus than a space).
func urlDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if escapeAt(s, i) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// base64Min is the shortest run of base64 characters decoded for text.
const base64Min = 16

// base64Probe is how much of a run is decoded to tell text from binary
// data before the whole run is decoded.
const base64Probe = 3 << 10

// base64Texts are the texts that the runs of base64 characters in s
// (standard or URL alphabet, padded or not) decode to; runs that decode to
// binary data (images) are left out.
func base64Texts(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if !isB64Char(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64Char(s[j]) {
			j++
		}
		if j-i >= base64Min {
			if t, ok := decodeText(s[i:j]); ok {
				out = append(out, t)
			}
		}
		i = j
	}
	return out
}

func isB64Char(c byte) bool { return isB64Byte(c) || c == '-' || c == '_' }

// decodeText decodes a run of base64 characters when it is text: its
// first base64Probe characters, then the whole run, decode to valid UTF-8
// with no control characters but tabs and line breaks.
func decodeText(run string) (string, bool) {
	run = strings.TrimRight(run, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	probe := run
	if len(probe) > base64Probe {
		probe = probe[:base64Probe]
	}
	if len(probe)%4 == 1 {
		probe = probe[:len(probe)-1]
	}
	data, err := enc.DecodeString(probe)
	if err != nil || !isText(data, len(probe) < len(run)) {
		return "", false
	}
	if len(probe) < len(run) {
		full := run
		if len(full)%4 == 1 {
			full = full[:len(full)-1] // not a whole last byte
		}
		if data, err = enc.DecodeString(full); err != nil || !isText(data, false) {
			return "", false
		}
	}
	return string(data), true
}

// isText reports whether data is text: valid UTF-8 (a rune cut at the end
// allowed when cut is set) without control characters but \t, \n, \r.
func isText(data []byte, cut bool) bool {
	for i := 0; i < len(data); {
		r, w := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && w <= 1 {
			return cut && len(data)-i < utf8.UTFMax && !utf8.FullRune(data[i:])
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return false
		}
		i += w
	}
	return true
}

// credentialShapes are shapes of credentials whatever their value:
// authorisation headers, the token formats of the hubs and clouds a
// release engineer uses, and URL userinfo with a password. (PEM blocks and
// names that say a value is secret are found apart.) A shape's regexp runs
// only around each place its literals (lower-cased) occur — from back
// bytes before to credentialWindow after —, which keeps the scan of large
// files linear.
var credentialShapes = []struct {
	literals []string
	back     int
	re       *regexp.Regexp
}{
	{[]string{"authoriz"}, len("proxy-"), regexp.MustCompile(`(?i)\b(?:authorization|proxy-authorization)["']?\s*[:=]\s*["']?(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}`)},
	{[]string{"hf_"}, 0, regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}\b`)},
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, 0, regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`)},
	{[]string{"github_pat_"}, 0, regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}\b`)},
	{[]string{"glpat-"}, 0, regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`)},
	{[]string{"nvapi-"}, 0, regexp.MustCompile(`\bnvapi-[A-Za-z0-9_-]{20,}\b`)},
	{[]string{"akia"}, 0, regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)},
	{[]string{"xox"}, 0, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`)},
	{[]string{"sk-"}, 0, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}\b`)},
	// scheme://user:password@host.
	{[]string{"://"}, 16, regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{0,15}://[^\s/?#@:"'<>\\]+:[^\s/?#@"'<>\\]+@`)},
}

// credentialWindow is how far after its literal a credential's shape is
// looked for.
const credentialWindow = 1024

// secretWords are the words that may name a secret, for assignedSecrets.
var secretWords = []string{"token", "secret", "passw", "pwd", "passphrase", "credential", "key"}

// credentials calls fn with what may be shown of every credential in text
// outside data-URL payloads (its start, or the name a value is assigned
// to; never the value).
func credentials(text string, fn func(shown string)) {
	low := asciiLower(text)
	done := map[int]bool{}
	for _, c := range credentialShapes {
		for _, lit := range c.literals {
			for off := 0; ; {
				k := strings.Index(low[off:], lit)
				if k < 0 {
					break
				}
				k += off
				off = k + len(lit)
				// The window starts a byte before the shape can, so \b
				// sees the byte before it.
				lo, hi := max(0, k-c.back-1), min(len(text), k+credentialWindow)
				for _, loc := range c.re.FindAllStringIndex(text[lo:hi], -1) {
					start, end := lo+loc[0], lo+loc[1]
					if done[start] || InData(text, start) || strings.Contains(text[start:end], evidence.Mask) {
						continue
					}
					done[start] = true
					fn(credentialShape(text[start:end]))
				}
			}
		}
	}
	assignedSecrets(text, low, fn)
}

// secretWordsAt are the positions of every secret word in low, in order.
func secretWordsAt(low string) [][2]int {
	var at [][2]int
	for _, w := range secretWords {
		for off := 0; ; {
			k := strings.Index(low[off:], w)
			if k < 0 {
				break
			}
			at = append(at, [2]int{off + k, off + k + len(w)})
			off += k + len(w)
		}
	}
	slices.SortFunc(at, func(a, b [2]int) int { return a[0] - b[0] })
	return at
}

// assignedSecrets finds values assigned to a name that says it is secret:
// NAME=VALUE, NAME: VALUE, "NAME": "VALUE", --name VALUE, in any case,
// the name's words split at _, -, . and camelCase. A name with a secret
// word (secret, password, passwd, pwd, passphrase, credential(s)), or an
// API, access, private or auth key or token, takes any value that is not a
// placeholder; a name whose word is key or token alone (max_tokens,
// token_source, run_key) takes only a value that looks random: 8
// characters or more with letters and digits.
func assignedSecrets(text, low string, fn func(string)) {
	last := -1
	for _, loc := range secretWordsAt(low) {
		start, end := loc[0], loc[1]
		for start > 0 && isNameByte(text[start-1]) {
			start--
		}
		for end < len(text) && isNameByte(text[end]) {
			end++
		}
		if start <= last || InData(text, start) {
			continue
		}
		last = start
		strength := secretName(strings.TrimLeft(text[start:end], "-"))
		if strength == 0 {
			continue
		}
		value, ok := assignedValue(text, end, strings.HasPrefix(text[start:end], "--"))
		if !ok || placeholder(value) || strength == 1 && !randomLooking(value) {
			continue
		}
		fn(text[start:end] + "=…")
	}
}

func isNameByte(c byte) bool { return isWordByte(c) || c == '.' }

// secretName is 2 for a name that says its value is secret, 1 for a
// name whose only secret word is key or token, 0 otherwise.
func secretName(name string) int {
	words := nameWords(name)
	if len(words) == 0 || name == "run_key" {
		return 0 // run_key: the harness's digest of a run's inputs
	}
	strength := 0
	for i, w := range words {
		switch w {
		case "secret", "secrets", "password", "passwd", "pwd", "passphrase", "credential", "credentials",
			"apikey", "accesskey", "secretkey", "privatekey", "authtoken", "accesstoken", "refreshtoken":
			return 2
		case "key", "token":
			if i > 0 && (words[i-1] == "api" || words[i-1] == "access" || words[i-1] == "private" || words[i-1] == "auth" ||
				words[i-1] == "refresh" || words[i-1] == "session" || words[i-1] == "bearer" || words[i-1] == "client") {
				return 2
			}
			strength = 1
		}
	}
	return strength
}

// nameWords splits a name at _, -, . and lower-to-upper case changes,
// lower-cased.
func nameWords(name string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, strings.ToLower(cur.String()))
			cur.Reset()
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.':
			flush()
			continue
		case c >= 'A' && c <= 'Z' && i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z':
			flush()
		}
		cur.WriteByte(c)
	}
	flush()
	return words
}

// assignedValue is the value assigned after a name ending at text[i]:
// optional closing quote, spaces, = or : (or a space after a --flag),
// spaces, an optional opening quote, then the value up to a space, quote
// or delimiter.
func assignedValue(text string, i int, flag bool) (string, bool) {
	j := i
	if j < len(text) && (text[j] == '"' || text[j] == '\'') {
		j++
	}
	k := j
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	switch {
	case k < len(text) && (text[k] == '=' || text[k] == ':'):
		k++
	case flag && k < len(text) && text[k] == ',' && j > i: // "--api-key", "VALUE" (an argv as JSON)
		k++
	case flag && k > j:
	default:
		return "", false
	}
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if k < len(text) && (text[k] == '"' || text[k] == '\'') {
		k++
	}
	v := k
	for v < len(text) && text[v] > ' ' && strings.IndexByte("\"',;{}[]()<>\\", text[v]) < 0 {
		v++
	}
	return text[k:v], v > k
}

// placeholder reports whether a value is no secret: a mask, a variable
// reference, a format verb, null, a boolean, stars or x's.
func placeholder(v string) bool {
	switch strings.ToLower(v) {
	case "null", "none", "nil", "true", "false", "yes", "no", "redacted", "***", "xxx", "changeme", "unset", "empty":
		return true
	}
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") || strings.Contains(v, evidence.Mask) {
		return true
	}
	return strings.Trim(v, "*xX.") == ""
}

// randomLooking reports whether a value looks like a generated secret: 8
// characters or more, letters and digits both.
func randomLooking(v string) bool {
	if len(v) < 8 {
		return false
	}
	letter, digit := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit = digit || c >= '0' && c <= '9'
	}
	return letter && digit
}

// credentialShape shows a credential's start only.
func credentialShape(s string) string {
	if len(s) > 12 {
		return s[:8] + "…"
	}
	return s
}
