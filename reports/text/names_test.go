package text

import (
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSafeName(t *testing.T) {
	for _, ok := range []string{"qwen3-vl-2b", "a.b_c", "InternVL3.5-1B", "_x", "9", strings.Repeat("x", 128)} {
		assert.True(t, SafeName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a b", "a\x00b", "a\nb", "-rf", ".hidden", strings.Repeat("x", 129)} {
		assert.False(t, SafeName(bad), "%q", bad)
	}
}

// Issue 13, findings 1 and 9: ids that a shell would run or expand, and
// characters that hide or reorder text, all passed the old check.
func TestCheckNameRejectsShellAndInvisible(t *testing.T) {
	cases := map[string]string{
		"$(touch${IFS}PWNED)":   `"$(touch${IFS}PWNED)" is not a valid name: it has "$" at byte 0`,
		"a;b":                   `"a;b" is not a valid name: it has ";" at byte 1`,
		"a`id`b":                "\"a`id`b\" is not a valid name: it has \"`\" at byte 1",
		"*":                     `"*" is not a valid name: it has "*" at byte 0`,
		"~":                     `"~" is not a valid name: it has "~" at byte 0`,
		"$HOME":                 `"$HOME" is not a valid name: it has "$" at byte 0`,
		"evil\u202Etxt.exe":     `"evil\u202etxt.exe" is not a valid name: it has "\u202e" at byte 4`,
		"a\u200Eb":              `"a\u200eb" is not a valid name: it has "\u200e" at byte 1`,
		"zero\u200Bwidth":       `"zero\u200bwidth" is not a valid name: it has "\u200b" at byte 4`,
		"full\uFF0Fwidth-slash": `"full\uff0fwidth-slash" is not a valid name: it has "\uff0f" at byte 4`,
		"caf\u00e9":             `"caf\u00e9" is not a valid name: it has "\u00e9" at byte 3`,
		"bad\xffutf8":           `"bad\xffutf8" is not a valid name: it has "\ufffd" at byte 3`,
		"x\x1b[2J":              `"x\x1b[2J" is not a valid name: it has "\x1b" at byte 1`,
	}
	for in, want := range cases {
		err := CheckName(in)
		require.Error(t, err, "%q", in)
		assert.ErrorIs(t, err, ErrBadName)
		assert.True(t, strings.HasPrefix(err.Error(), want), "%q:\n got %s\nwant %s...", in, err, want)
		for _, c := range []byte(err.Error()) {
			require.True(t, c >= 0x20 && c < 0x7f, "%q: the message carries byte %#x raw: %q", in, c, err)
		}
	}
}

// FuzzCheckName: the one name check accepts exactly the documented
// alphabet, and what it says about a rejected value never carries a
// non-ASCII or non-printable byte.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"ref-vlm-small", "", ".", "..", "-rf", "a/b", "$(id)", "a\u202eb", "\uff0f", "x\x00", strings.Repeat("y", 129)} {
		f.Add(s)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckName(s)
		if (err == nil) != valid.MatchString(s) {
			t.Fatalf("CheckName(%q) = %v, but the alphabet says %v", s, err, valid.MatchString(s))
		}
		if err == nil {
			if filepath.Base(s) != s || s == "." || s == ".." || strings.ContainsAny(s, "/\\ $`;|&*~<>'\"") {
				t.Fatalf("accepted %q, which is not one plain path component", s)
			}
			return
		}
		if !errors.Is(err, ErrBadName) {
			t.Fatalf("error %v does not wrap ErrBadName", err)
		}
		for _, c := range []byte(err.Error()) {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("message for %q carries byte %#x raw: %q", s, c, err)
			}
		}
		if utf8.ValidString(s) {
			if back, uerr := strconv.Unquote(Quote(s)); uerr != nil || back != s {
				t.Fatalf("Quote(%q) does not read back: %q, %v", s, back, uerr)
			}
		}
	})
}
