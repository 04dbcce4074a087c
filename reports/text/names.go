package text

import (
	"errors"
	"fmt"
)

// MaxNameLen is the longest profile id or group name accepted. Evidence
// directories are <id> and <id>.<UTC timestamp>, well inside the 255 bytes
// a path component may have.
const MaxNameLen = 128

// ErrBadName is wrapped by every error CheckName returns.
var ErrBadName = errors.New("is not a valid name")

// NameRule is the one alphabet of profile ids and group names, in words.
const NameRule = `ASCII letters, digits, ".", "_", "-"; no leading "-" or "."; at most 128`

// CheckName is the one check of profile ids, group names and family names
// (the inventory's, the loader's, the flags'): anything that becomes a
// directory name, a table cell or a word of a command a person pastes. Only ASCII letters, digits, ".", "_" and "-"
// are allowed, never leading "-" (an option to every tool) or "." (hidden,
// "." and ".."), at most MaxNameLen bytes. So no shell metacharacter,
// separator, control, bidirectional or invisible character, and no
// look-alike of "/" can be part of one. The error quotes the value with
// every non-ASCII and non-printable character escaped.
func CheckName(s string) error {
	problem := ""
	switch {
	case s == "":
		problem = "it is empty"
	case len(s) > MaxNameLen:
		problem = fmt.Sprintf("it is %d bytes long", len(s))
	case s[0] == '-':
		problem = `it starts with "-"`
	case s[0] == '.':
		problem = `it starts with "."`
	default:
		for i := 0; i < len(s); i++ {
			if !nameByte(s[i]) {
				r := []rune(s[i:])[0]
				problem = fmt.Sprintf("it has %s at byte %d", Quote(string(r)), i)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	return fmt.Errorf("%s %w: %s (%s)", Quote(s), ErrBadName, problem, NameRule)
}

// SafeName reports whether s passes CheckName.
func SafeName(s string) bool { return CheckName(s) == nil }

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
