package evidence

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Mask is what a secret is replaced with.
const Mask = "[REDACTED]"

// minBase64Chars is the shortest base64 form of a secret that is redacted:
// a shorter run of base64 characters occurs by chance in the base64 images
// that AIPerf's exports carry, and masking it would corrupt them.
const minBase64Chars = 8

// Redactor replaces secret values wherever the harness records text. A
// child may print a secret in another encoding than the raw bytes, so
// every secret is matched in each form a child is likely to print:
//
//   - raw;
//   - JSON-escaped, as Go (with and without HTML escaping), Python
//     (ensure_ascii, \u escapes in lower or upper case) and encoders that
//     escape "/" as "\/" write it;
//   - URL-encoded, query style ("+" for space) and path style ("%20"),
//     with upper- or lower-case hex;
//   - base64, standard and URL alphabets, padded or not, as a whole value
//     and at each of the three alignments it can have inside a longer
//     base64 stream (the characters that depend on the secret alone), when
//     that form is at least 8 characters long (see minBase64Chars).
//
// Secrets of any length are redacted, raw and escaped forms included: a
// short secret may also mask unrelated text that happens to equal it (see
// docs/reliability.md); the caller warns about those.
type Redactor struct {
	forms  [][]byte // every form of every secret, longest first
	maxLen int
	// byFirst lists the forms by first byte, longest first; pair marks the
	// first two bytes of every form of two bytes or more, so the scan
	// looks closer only where a form can start.
	byFirst [256][][]byte
	first   [256]bool
	single  [256]bool // a one-byte form starts (and ends) here
	pair    []uint64  // bitmap of 65536 two-byte prefixes
}

// NewRedactor redacts the given values; empty ones are ignored.
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, f := range Forms(v) {
			if !seen[f] {
				seen[f] = true
				r.forms = append(r.forms, []byte(f))
				r.maxLen = max(r.maxLen, len(f))
			}
		}
	}
	// Longest first: at one position the longest form wins, so a padded
	// base64 form is masked whole rather than leaving its "=".
	sort.SliceStable(r.forms, func(i, j int) bool { return len(r.forms[i]) > len(r.forms[j]) })
	r.pair = make([]uint64, 65536/64)
	for _, f := range r.forms {
		r.byFirst[f[0]] = append(r.byFirst[f[0]], f)
		r.first[f[0]] = true
		if len(f) == 1 {
			r.single[f[0]] = true
		} else {
			k := int(f[0])<<8 | int(f[1])
			r.pair[k/64] |= 1 << (k % 64)
		}
	}
	return r
}

// match returns the longest form at buf[i:], or nil. All of buf[i:] up to
// the longest form must be present (the caller ensures it).
func (r *Redactor) match(buf []byte, i int) []byte {
	c := buf[i]
	if !r.first[c] {
		return nil
	}
	if !r.single[c] {
		if i+1 >= len(buf) {
			return nil
		}
		k := int(c)<<8 | int(buf[i+1])
		if r.pair[k/64]&(1<<(k%64)) == 0 {
			return nil
		}
	}
	for _, f := range r.byFirst[c] {
		if bytes.HasPrefix(buf[i:], f) {
			return f
		}
	}
	return nil
}

// Forms returns the encodings of secret that are redacted (raw first).
func Forms(secret string) []string {
	out := []string{secret}
	add := func(f string) {
		if f != "" {
			out = append(out, f)
		}
	}
	// JSON string contents.
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(secret)
		add(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`))
	}
	ascii := jsonASCII(secret, "%04x")
	add(ascii)
	add(jsonASCII(secret, "%04X"))
	if strings.Contains(secret, "/") {
		add(strings.ReplaceAll(ascii, "/", `\/`))
	}
	textual := slices.Clone(out) // raw and JSON-escaped
	// URL encodings.
	for _, e := range []string{url.QueryEscape(secret), url.PathEscape(secret), strings.ReplaceAll(url.QueryEscape(secret), "+", "%20")} {
		add(e)
		add(lowerHex(e))
	}
	// base64 of the raw secret and of its JSON-escaped forms (a JSON body
	// carrying the secret, base64-encoded whole).
	for _, t := range textual {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for _, f := range []string{enc.EncodeToString([]byte(t)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(t))} {
				if len(f) >= minBase64Chars {
					add(f)
				}
			}
			for a := 0; a < 3; a++ {
				if f := base64Inside(enc, []byte(t), a); len(f) >= minBase64Chars {
					add(f)
				}
			}
		}
	}
	// Distinct, in a stable order.
	seen := map[string]bool{}
	uniq := out[:0]
	for _, f := range out {
		if !seen[f] {
			seen[f] = true
			uniq = append(uniq, f)
		}
	}
	return uniq
}

// jsonASCII escapes s as Python's json.dumps(ensure_ascii=True) does, with
// hexFmt for \u escapes.
func jsonASCII(s, hexFmt string) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r >= 0x7f:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u`+hexFmt+`\u`+hexFmt, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u`+hexFmt, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lowerHex lower-cases the hex digits of %XX escapes.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = bytes.ToLower(b[i+1 : i+2])[0], bytes.ToLower(b[i+2 : i+3])[0]
		}
	}
	return string(b)
}

// base64Inside is the part of the base64 encoding of a stream that
// depends on secret alone when secret starts at a byte offset ≡ align
// (mod 3) in that stream: the characters whose 6 bits all fall inside the
// secret's bytes.
func base64Inside(enc *base64.Encoding, secret []byte, align int) string {
	padded := make([]byte, align, align+len(secret)+2)
	padded = append(padded, secret...)
	padded = append(padded, 0, 0)
	s := enc.WithPadding(base64.NoPadding).EncodeToString(padded)
	lo, hi := 8*align, 8*(align+len(secret)) // the secret's bits
	var b strings.Builder
	for j := 0; j < len(s); j++ {
		if 6*j >= lo && 6*j+6 <= hi {
			b.WriteByte(s[j])
		}
	}
	return b.String()
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil || len(r.forms) == 0 {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Contains reports whether b holds a form of a secret.
func (r *Redactor) Contains(b []byte) bool {
	if r == nil || len(r.forms) == 0 {
		return false
	}
	st := r.newScan()
	_ = st.feed(io.Discard, b, true)
	return st.changed
}

// Bytes redacts b.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(r.forms) == 0 {
		return b
	}
	var out bytes.Buffer
	st := r.newScan()
	st.feed(&out, b, true)
	if !st.changed {
		return b
	}
	return out.Bytes()
}

// scan is one pass of the redactor over a stream: it emits everything
// that cannot start a secret any more and keeps the rest (at most
// maxLen-1 bytes) until more data or the end is known. At each position
// the longest form wins, and the leftmost position first.
type scan struct {
	r       *Redactor
	pending []byte
	changed bool
}

func (r *Redactor) newScan() *scan { return &scan{r: r} }

func (s *scan) feed(w io.Writer, data []byte, eof bool) error {
	s.pending = append(s.pending, data...)
	buf := s.pending
	safe := len(buf) - (s.r.maxLen - 1) // a form starting here or later may not be complete yet
	if eof {
		safe = len(buf)
	}
	pos := 0
	r := s.r
	for i := 0; i < safe; i++ {
		c := buf[i]
		if !r.first[c] {
			continue
		}
		if !r.single[c] {
			if i+1 >= len(buf) {
				continue
			}
			if k := int(c)<<8 | int(buf[i+1]); r.pair[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
		}
		f := r.match(buf, i)
		if f == nil {
			continue
		}
		if _, err := w.Write(buf[pos:i]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, Mask); err != nil {
			return err
		}
		s.changed = true
		pos = i + len(f)
		i = pos - 1
	}
	emit := max(pos, min(safe, len(buf)))
	if _, err := w.Write(buf[pos:emit]); err != nil {
		return err
	}
	s.pending = append(s.pending[:0], buf[emit:]...)
	return nil
}

// Argv redacts every argument, and the value after flags that carry
// secrets (--api-key X, --api-key=X) whatever it is.
func (r *Redactor) Argv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i > 0 && isSecretFlag(argv[i-1]):
			out[i] = Mask
		case strings.Contains(a, "=") && isSecretFlag(a[:strings.Index(a, "=")]):
			out[i] = a[:strings.Index(a, "=")+1] + Mask
		default:
			out[i] = r.String(a)
		}
	}
	return out
}

func isSecretFlag(a string) bool {
	a = strings.ToLower(a)
	return a == "--api-key" || a == "--token" || a == "--password" || strings.HasSuffix(a, "-token") || strings.HasSuffix(a, "-secret")
}

// redactChunk is how much of a file is read at a time.
const redactChunk = 1 << 20

// RedactFile rewrites a file with secrets redacted, streaming it (memory
// stays at about one chunk whatever the file's size) and atomically (a
// temporary file renamed over it), only when a secret is found. Anything
// but a regular file is left alone.
func (r *Redactor) RedactFile(path string) error {
	if r == nil || len(r.forms) == 0 {
		return nil
	}
	found, err := r.stream(path, io.Discard)
	if err != nil || !found {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("redact %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := r.stream(path, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("redact %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("redact %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("redact %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("redact %s: %w", path, err)
	}
	return fileio.SyncDir(dir)
}

// stream copies path to w with secrets redacted and reports whether any
// was found.
func (r *Redactor) stream(path string, w io.Writer) (bool, error) {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		if _, notRegular := err.(*fileio.NotRegularError); notRegular {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	st := r.newScan()
	buf := make([]byte, redactChunk)
	for {
		n, rerr := f.Read(buf)
		eof := rerr == io.EOF
		if rerr != nil && !eof {
			return false, fmt.Errorf("redact %s: %w", path, rerr)
		}
		if err := st.feed(w, buf[:n], eof); err != nil {
			return false, fmt.Errorf("redact %s: %w", path, err)
		}
		if eof {
			return st.changed, nil
		}
	}
}

// RedactTree redacts every regular file under dir (links are not
// followed).
func (r *Redactor) RedactTree(dir string) error {
	if r == nil || len(r.forms) == 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			return r.RedactFile(p)
		}
		return nil
	})
}
