package streamjoin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// A hand-rolled reader for the few known keys of AIPerf, server and native
// lines. It never builds a tree: it walks one line, reads the fields the
// join needs and skips every other value structurally (strings by their
// closing quote, containers by bracket depth). Skipping is what makes the
// raw export cheap: the base64 image inside `payload` is passed over with
// bytes.IndexByte, never decoded, copied or validated byte by byte.
//
// The fields that are read are checked strictly (type and syntax); values
// that are skipped are only checked for balance.

var (
	errSyntax = errors.New("invalid JSON")
	errEnd    = errors.New("invalid JSON: unexpected end of line")
)

// wantError is "field: got JSON <kind>, want <type>", like encoding/json's
// UnmarshalTypeError as qual/aiperf reports it.
type wantError struct {
	got  string
	want string
}

func (e *wantError) Error() string { return fmt.Sprintf("got JSON %s, want %s", e.got, e.want) }

// notJSON is the error of what is at b[i] when it begins no JSON value:
// NaN, Infinity and -Infinity (what Python's json.dumps writes for a float
// nan or inf unless allow_nan=False) named as what they are, anything else
// as the character it is. nil when a JSON value (of any kind) begins there.
func notJSON(b []byte, i int) error {
	for _, lit := range []string{"NaN", "-Infinity", "Infinity"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return fmt.Errorf("invalid JSON: %s is not a JSON number (JSON has no NaN or Infinity; Python's json.dumps writes them unless allow_nan=False)", lit)
		}
	}
	switch c := b[i]; {
	case c == '"', c == '{', c == '[', c == 't', c == 'f', c == 'n', c == '-', c >= '0' && c <= '9':
		return nil
	default:
		return fmt.Errorf("invalid JSON: %s does not begin a JSON value", strconv.QuoteRune(rune(c)))
	}
}

// typeError is the error of a value at b[i] that is not of the kind
// wanted: invalid JSON when no JSON value begins there (notJSON), else a
// wantError naming the kind it is.
func typeError(b []byte, i int, want string) error {
	if err := notJSON(b, i); err != nil {
		return err
	}
	return &wantError{got: kindOf(b[i]), want: want}
}

func kindOf(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func skipWS(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// strClass classifies string bytes for scanString: 0 ordinary, 1 the
// closing quote, 2 anything that needs decoding (backslash, control bytes,
// non-ASCII).
var strClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == '"':
			t[c] = 1
		case c == '\\' || c < 0x20 || c >= 0x80:
			t[c] = 2
		}
	}
	return t
}()

// scanString returns the index just past the string that starts at b[i]
// ('"'), and whether its content is plain ASCII that decodes to itself.
// Short strings (keys, ids) are scanned byte by byte; longer ones continue
// with stringEnd's memchr (and report plain=false: unknown).
func scanString(b []byte, i int) (end int, plain bool, err error) {
	lim := min(len(b), i+1+48)
	for j := i + 1; j < lim; j++ {
		switch strClass[b[j]] {
		case 0:
		case 1:
			return j + 1, true, nil
		default:
			end, err = stringEnd(b, i)
			return end, false, err
		}
	}
	end, err = stringEnd(b, i)
	return end, false, err
}

// stringEnd returns the index just past the string that starts at b[i]
// ('"'). The first 64 bytes are searched 8 at a time for a quote or a
// backslash (keys and ids end there); a longer string without escapes (a
// base64 image) is passed over with memchr for its closing quote. After a
// backslash the string is walked byte by byte.
func stringEnd(b []byte, i int) (int, error) {
	j := i + 1
	for lim := min(len(b)-8, j+64); j <= lim; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		if m := hasByte(x, '"') | hasByte(x, '\\'); m != 0 {
			k := j + bits.TrailingZeros64(m)/8
			if b[k] == '"' {
				return k + 1, nil
			}
			return escapedEnd(b, k)
		}
	}
	k := bytes.IndexByte(b[j:], '"')
	if k < 0 {
		return 0, errEnd
	}
	// The first quote ends the string unless a backslash escapes it.
	if q := j + k; b[q-1] != '\\' {
		return q + 1, nil
	}
	return escapedEnd(b, i+1)
}

// escapedEnd finds a string's end from j, honouring escapes: it jumps
// from one quote or backslash to the next 8 bytes at a time (an escaped
// answer has one every few bytes, a long text few).
func escapedEnd(b []byte, j int) (int, error) {
	for j < len(b) {
		if j+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[j:])
			m := hasByte(x, '"') | hasByte(x, '\\')
			if m == 0 {
				j += 8
				continue
			}
			j += bits.TrailingZeros64(m) / 8
		}
		switch b[j] {
		case '\\':
			j += 2
		case '"':
			return j + 1, nil
		default:
			j++
		}
	}
	return 0, errEnd
}

const lsb, msb = 0x0101010101010101, 0x8080808080808080

// hasByte sets the high bit of each byte of x equal to c; the lowest set
// bit is exact (borrows only disturb bytes above it).
func hasByte(x uint64, c byte) uint64 {
	y := x ^ (lsb * uint64(c))
	return (y - lsb) &^ y & msb
}

// skipValue returns the index just past the value that starts at b[i]
// (after whitespace).
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errEnd
	}
	switch c := b[i]; c {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := stringEnd(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errEnd
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	default:
		if err := notJSON(b, i); err != nil {
			return 0, err
		}
		return numberEnd(b, i), nil
	}
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

var numberByte = func() (t [256]bool) {
	for _, c := range "0123456789-+.eE" {
		t[c] = true
	}
	return t
}()

func numberEnd(b []byte, i int) int {
	for i < len(b) && numberByte[b[i]] {
		i++
	}
	return i
}

// objectOpen expects '{' at b[i] (after whitespace) and returns the index
// after it; empty reports an immediately closed object.
func objectOpen(b []byte, i int) (next int, empty bool, err error) {
	return containerOpen(b, i, '{', '}', "object")
}

// containerOpen expects the opening bracket at b[i] (after whitespace) and
// returns the index after it; empty reports an immediately closed one.
func containerOpen(b []byte, i int, open, close byte, want string) (next int, empty bool, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, false, errEnd
	}
	if b[i] != open {
		return 0, false, typeError(b, i, want)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, true, nil
	}
	return i, false, nil
}

// objectKey reads `"key" :` at b[i] and returns the key's raw bytes
// (undecoded; see fieldSet.match and keyIs) and the index of the value.
func objectKey(b []byte, i int) (key []byte, next int, err error) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '"' {
		return nil, 0, errSyntax
	}
	end, err := stringEnd(b, i)
	if err != nil {
		return nil, 0, err
	}
	key = b[i+1 : end-1]
	i = end
	if i < len(b) && b[i] == ':' {
		return key, i + 1, nil
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return nil, 0, errSyntax
	}
	return key, i + 1, nil
}

// decodeKey returns the key encoding/json would match: raw bytes decoded
// when they hold escapes or anything but plain ASCII.
func decodeKey(raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 && plain(raw) {
		return raw, nil
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	return decodeString(nil, q)
}

// keyIs reports whether a raw map key decodes to name (map keys match
// exactly).
func keyIs(raw []byte, name string) bool {
	if string(raw) == name {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	k, err := decodeKey(raw)
	return err == nil && string(k) == name
}

// objectNext consumes ',' (more=true) or '}' (more=false) after a value.
func objectNext(b []byte, i int) (next int, more bool, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, false, errEnd
	}
	switch b[i] {
	case ',':
		return i + 1, true, nil
	case '}':
		return i + 1, false, nil
	}
	return 0, false, errSyntax
}

// fields walks the members of one object, for a parser that reads a few
// known fields:
//
//	o := walkObject(b, i, set)
//	for o.next() {
//		switch o.name {
//		case "id":
//			o.str(&id)
//		default:
//			o.skip()
//		}
//	}
//	return o.end()
//
// Inside the loop o.i is the index of the current value; the value's reader
// moves it past the value and leaves its error in o.err, which next reports
// inside the field's name. Key and separator errors are reported as they are.
type fields struct {
	b     []byte
	set   *fieldSet // nil: a map, o.name stays ""
	guess *keyGuess // nil: no guesses
	n     int       // members read so far (the guess's position)
	i     int
	key   []byte // the current raw key
	name  string // the field set's match for key
	err   error
	more  bool // another member follows
	in    bool // a value is being read
}

// walkObject starts a walk of the object at b[i].
func walkObject(b []byte, i int, set *fieldSet) fields {
	i, empty, err := objectOpen(b, i)
	return fields{b: b, set: set, i: i, err: err, more: err == nil && !empty}
}

// walkGuessing is walkObject with guesses of the keys (g may be nil).
func walkGuessing(b []byte, i int, set *fieldSet, g *keyGuess) fields {
	o := walkObject(b, i, set)
	o.guess = g
	return o
}

// walkNullable is walkObject where null is an object without members.
func walkNullable(b []byte, i int, set *fieldSet) fields {
	if j, isnull := isNull(b, i); isnull {
		return fields{b: b, i: j}
	}
	return walkObject(b, i, set)
}

// next finishes the current member and reads the next key; it is false at
// the end of the object and on an error.
func (o *fields) next() bool {
	if o.in {
		o.in = false
		if o.err != nil {
			o.err = inField(o.field(), o.err)
			return false
		}
		if o.i, o.more, o.err = objectNext(o.b, o.i); o.err != nil {
			return false
		}
	}
	if !o.more {
		return false
	}
	o.in = true
	if key, name, next, ok := o.guess.at(o.b, o.i, o.n); ok {
		o.key, o.name, o.i = key, name, next
		o.n++
		return true
	}
	at := skipWS(o.b, o.i)
	if o.key, o.i, o.err = objectKey(o.b, o.i); o.err != nil {
		o.in = false
		return false
	}
	if o.set != nil {
		o.name = o.set.match(o.key)
	}
	o.guess.learn(o.n, o.b[at:o.i], o.name)
	o.n++
	return true
}

// field names the current member in an error: its field's name, or for a
// member the set does not read, its key when that is a plain word.
func (o *fields) field() string {
	if o.name != "" || len(o.key) > 64 {
		return o.name
	}
	for _, c := range o.key {
		if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return ""
		}
	}
	return string(o.key)
}

// keyGuess holds the keys of the last object of one kind a worker read,
// in order, as `"key":` and the field each matched: fields.next,
// parseMetadata and parseMetrics compare the bytes at hand with the guess
// for that place first (at), and read the key only when they differ.
// Writers put their keys in one order, so the guess mostly holds; when it
// holds the key is the same byte for byte, so nothing is accepted or
// rejected differently.
type keyGuess struct {
	quoted []string
	names  []string
}

// at reports whether the bytes at b[i] are the key guessed for place n,
// `"key":` byte for byte, and then returns the key (raw, as objectKey
// returns it), the field it matched when it was read, and the index of
// its value. A nil guess guesses nothing.
func (g *keyGuess) at(b []byte, i, n int) (key []byte, name string, next int, ok bool) {
	if g == nil || n >= len(g.quoted) {
		return nil, "", 0, false
	}
	q := g.quoted[n]
	if len(b)-i < len(q) || string(b[i:i+len(q)]) != q {
		return nil, "", 0, false
	}
	return b[i+1 : i+len(q)-2], g.names[n], i + len(q), true
}

// learn records the key read at place n (quoted: from its opening quote
// to its colon) in place of the guesses from n on (a nil guess learns
// nothing).
func (g *keyGuess) learn(n int, quoted []byte, name string) {
	if g == nil || n > len(g.quoted) {
		return // an earlier place has no guess: the places no longer line up
	}
	g.quoted, g.names = g.quoted[:n], g.names[:n]
	// Only `"key":` without a space before the colon, so that the key is
	// quoted[1:len-2] (fields.next slices it so).
	if len(quoted) >= 3 && quoted[len(quoted)-2] == '"' && len(g.quoted) < 64 {
		g.quoted, g.names = append(g.quoted, string(quoted)), append(g.names, name)
	}
}

// end returns the index after the object, or the walk's error.
func (o *fields) end() (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	return o.i, nil
}

// endLine is end for a line's top-level object: only whitespace may
// follow it.
func (o *fields) endLine() error {
	i, err := o.end()
	if err != nil {
		return err
	}
	return lineEnd(o.b, i)
}

// skip passes over the current value.
func (o *fields) skip() { o.i, o.err = skipValue(o.b, o.i) }

// check type-checks the current value with one of the check functions.
func (o *fields) check(f func([]byte, int) (int, error)) { o.i, o.err = f(o.b, o.i) }

// str reads an optional string into *dst (see readOptString).
func (o *fields) str(dst *[]byte) { o.i, o.err = readOptString(o.b, o.i, dst) }

// int32 reads an optional integer into *dst; null leaves *dst as it is.
func (o *fields) int32(dst *int32) {
	v, i, isnull, err := readInt64(o.b, o.i)
	if !isnull {
		*dst = int32(v)
	}
	o.i, o.err = i, err
}

// arrayOpen expects '[' and returns the index after it; empty reports "[]".
func arrayOpen(b []byte, i int) (next int, empty bool, err error) {
	return containerOpen(b, i, '[', ']', "array")
}

func arrayNext(b []byte, i int) (next int, more bool, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, false, errEnd
	}
	switch b[i] {
	case ',':
		return i + 1, true, nil
	case ']':
		return i + 1, false, nil
	}
	return 0, false, errSyntax
}

// isNull reports whether the value at b[i] is null, returning the index
// after it when it is.
func isNull(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
		return i + 4, true
	}
	return i, false
}

// stringValue finds the string (or null) at b[i]: raw is its content
// between the quotes, and q the whole quoted string when the content needs
// decoding (nil when it decodes to itself).
func stringValue(b []byte, i int) (raw, q []byte, next int, isnull bool, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return nil, nil, 0, false, errEnd
	}
	if b[i] == 'n' {
		next, err = literal(b, i, "null")
		return nil, nil, next, true, err
	}
	if b[i] != '"' {
		return nil, nil, 0, false, typeError(b, i, "string")
	}
	end, simple, err := scanString(b, i)
	if err != nil {
		return nil, nil, 0, false, err
	}
	raw = b[i+1 : end-1]
	if simple || (bytes.IndexByte(raw, '\\') < 0 && plain(raw)) {
		return raw, nil, end, false, nil
	}
	return raw, b[i:end], end, false, nil
}

// readString reads a JSON string (or null, as empty) and returns its
// decoded bytes: the line's own bytes when nothing needs decoding, else a
// new slice. Decoding follows encoding/json exactly: invalid UTF-8 and lone
// surrogates become U+FFFD.
func readString(dst, b []byte, i int) (s []byte, next int, isnull bool, err error) {
	raw, q, next, isnull, err := stringValue(b, i)
	if err != nil || q == nil {
		return raw, next, isnull, err
	}
	s, err = decodeString(dst, q)
	return s, next, false, err
}

// readOptString reads a string into *dst; null leaves *dst as it is.
func readOptString(b []byte, i int, dst *[]byte) (int, error) {
	s, next, isnull, err := readString(nil, b, i)
	if !isnull && err == nil {
		*dst = s
	}
	return next, err
}

// appendString appends the decoded string (or nothing for null) at b[i]
// to dst.
func appendString(dst, b []byte, i int) (out []byte, next int, isnull bool, err error) {
	raw, q, next, isnull, err := stringValue(b, i)
	if err != nil {
		return dst, next, isnull, err
	}
	if q == nil {
		return append(dst, raw...), next, isnull, nil
	}
	out, err = decodeString(dst, q)
	return out, next, false, err
}

// decodeString appends the decoded quoted string q to dst.
func decodeString(dst, q []byte) ([]byte, error) {
	n := len(dst)
	if out, ok := unescape(dst, q[1:len(q)-1]); ok {
		return out, nil
	}
	// Rare shapes (surrogates, invalid UTF-8, control bytes): let
	// encoding/json decide, so the bytes are exactly what it gives.
	var v string
	if err := json.Unmarshal(q, &v); err != nil {
		return dst[:n], errSyntax
	}
	return append(dst[:n], v...), nil
}

// plain reports whether b is valid UTF-8 with no control bytes, i.e.
// what encoding/json would decode to the same bytes.
func plain(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x20 {
			return false
		}
		if c >= utf8.RuneSelf {
			return utf8.Valid(b[i:]) && noControl(b[i:])
		}
	}
	return true
}

func noControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// unescape decodes the common escapes of valid UTF-8 text; ok is false for
// anything it leaves to encoding/json (\u surrogates, invalid UTF-8,
// control bytes, malformed escapes).
func unescape(dst, raw []byte) ([]byte, bool) {
	run := 0 // start of the pending run of ordinary bytes
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c >= 0x80:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			i += size
			continue
		case c < 0x20:
			return nil, false
		case c != '\\':
			i++
			continue
		}
		dst = append(dst, raw[run:i]...)
		if i+1 >= len(raw) {
			return nil, false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			if i+6 > len(raw) {
				return nil, false
			}
			var v rune
			for _, h := range raw[i+2 : i+6] {
				d, ok := hexValue(h)
				if !ok {
					return nil, false
				}
				v = v<<4 | rune(d)
			}
			if v >= 0xD800 && v <= 0xDFFF {
				return nil, false
			}
			dst = utf8.AppendRune(dst, v)
			i += 6
			run = i
			continue
		default:
			return nil, false
		}
		i += 2
		run = i
	}
	return append(dst, raw[run:]...), true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// readNumber returns the raw bytes of a number at b[i]; isnull when null.
func readNumber(b []byte, i int) (num []byte, next int, isnull bool, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return nil, 0, false, errEnd
	}
	c := b[i]
	if c == 'n' {
		next, err = literal(b, i, "null")
		return nil, next, true, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return nil, 0, false, typeError(b, i, "number")
	}
	if err := notJSON(b, i); err != nil { // -Infinity
		return nil, 0, false, err
	}
	end := numberEnd(b, i)
	return b[i:end], end, false, nil
}

// readInt64 reads an integer (or null) like encoding/json into an int64.
func readInt64(b []byte, i int) (v int64, next int, isnull bool, err error) {
	num, next, isnull, err := readNumber(b, i)
	if err != nil || isnull {
		return 0, next, isnull, err
	}
	if v, ok := smallInt(num); ok {
		return v, next, false, nil
	}
	v, perr := strconv.ParseInt(string(num), 10, 64)
	if perr != nil {
		return 0, 0, false, &wantError{got: "number " + string(num), want: "int64"}
	}
	return v, next, false, nil
}

// smallInt parses up to 19 digits with an optional minus sign into an
// int64 (nanosecond timestamps have 19); anything else is left to strconv.
func smallInt(num []byte) (int64, bool) {
	neg := len(num) > 0 && num[0] == '-'
	d := num
	if neg {
		d = num[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	case neg && v <= math.MaxInt64+1:
		return int64(-v), true
	}
	return 0, false
}

// readFloat reads a number (or null) into a float64.
func readFloat(b []byte, i int) (v float64, next int, isnull bool, err error) {
	num, next, isnull, err := readNumber(b, i)
	if err != nil || isnull {
		return 0, next, isnull, err
	}
	v, perr := strconv.ParseFloat(string(num), 64)
	if perr != nil {
		return 0, 0, false, &wantError{got: "number " + string(num), want: "float64"}
	}
	return v, next, false, nil
}

// readBool reads true, false or null (false).
func readBool(b []byte, i int) (v bool, next int, err error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return false, 0, errEnd
	}
	switch b[i] {
	case 't':
		next, err = literal(b, i, "true")
		return true, next, err
	case 'f':
		next, err = literal(b, i, "false")
		return false, next, err
	case 'n':
		next, err = literal(b, i, "null")
		return false, next, err
	}
	return false, 0, typeError(b, i, "bool")
}

// lineEnd checks that nothing but whitespace follows the top-level value.
func lineEnd(b []byte, i int) error {
	if skipWS(b, i) != len(b) {
		return errors.New("invalid JSON: data after the top-level value")
	}
	return nil
}
