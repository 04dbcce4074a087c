package inventory

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// source is an inventory file's bytes with the offsets of its lines, to
// turn the positions yaml.v3 gives nodes (1-based line, and column in
// characters) into byte offsets. Edits are made on the bytes, so every
// byte not edited — comments, blank lines, order, quoting, flow or block
// style — stays as it was.
type source struct {
	data  []byte
	lines []int // byte offset of the start of each line
}

func newSource(data []byte) *source {
	s := &source{data: data, lines: []int{0}}
	for i, b := range data {
		if b == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

// offset is the byte offset of a node's first character.
func (s *source) offset(line, column int) int {
	if line < 1 || line > len(s.lines) {
		return len(s.data)
	}
	off := s.lines[line-1]
	for c := 1; c < column && off < len(s.data) && s.data[off] != '\n'; c++ {
		_, n := utf8.DecodeRune(s.data[off:])
		off += n
	}
	return off
}

// lineEnd is the offset just after the newline that ends the line holding
// off (the end of the data on its last line).
func (s *source) lineEnd(off int) int {
	if i := strings.IndexByte(string(s.data[off:]), '\n'); i >= 0 {
		return off + i + 1
	}
	return len(s.data)
}

// editError is a place the edit cannot change byte-exactly: the problem is
// named, to be edited by hand.
type editError struct {
	line int
	msg  string
}

func (e *editError) Error() string { return e.msg }

func cannot(n *yaml.Node, format string, args ...any) *editError {
	return &editError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// span is the byte range of a node's text: a scalar token, or a flow
// collection from its opening to its closing bracket. A block collection
// spans to the end of its last child.
func (s *source) span(n *yaml.Node) (start, end int, err error) {
	start = s.offset(n.Line, n.Column)
	switch {
	case n.Kind == yaml.ScalarNode:
		end, err = s.scalarEnd(n, start)
	case n.Kind == yaml.AliasNode:
		end = start + 1 + len(n.Value)
	case n.Style&yaml.FlowStyle != 0:
		end, err = s.flowEnd(n, start)
	case len(n.Content) == 0:
		return start, start, cannot(n, "an empty block collection")
	default:
		_, end, err = s.span(n.Content[len(n.Content)-1])
	}
	return start, end, err
}

// scalarEnd is the offset after a scalar token that starts at start.
func (s *source) scalarEnd(n *yaml.Node, start int) (int, error) {
	rest := s.data[start:]
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, cannot(n, "a block scalar (| or >)")
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1, nil
			case '\n':
				return 0, cannot(n, "a quoted value over several lines")
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch {
			case rest[i] == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
				i++
			case rest[i] == '\'':
				return start + i + 1, nil
			case rest[i] == '\n':
				return 0, cannot(n, "a quoted value over several lines")
			}
		}
	case n.ShortTag() == "!!null" && n.Value == "":
		return start, nil // `key:` with nothing after it
	case strings.HasPrefix(string(rest), n.Value) && !strings.ContainsRune(n.Value, '\n'):
		return start + len(n.Value), nil
	}
	return 0, cannot(n, "a value written over several lines")
}

// flowEnd is the offset after the bracket that closes the flow collection
// opened at start, quoted text skipped.
func (s *source) flowEnd(n *yaml.Node, start int) (int, error) {
	depth := 0
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '"', '\'':
			j, err := s.scalarEnd(&yaml.Node{Kind: yaml.ScalarNode, Style: quoteStyle(c), Line: n.Line}, i)
			if err != nil {
				return 0, err
			}
			i = j - 1
		case '#':
			if i > 0 && (s.data[i-1] == ' ' || s.data[i-1] == '\t') {
				i = s.lineEnd(i) - 1 // a comment inside a flow collection over lines
			}
		}
	}
	return 0, cannot(n, "a flow collection that does not close")
}

func quoteStyle(c byte) yaml.Style {
	if c == '"' {
		return yaml.DoubleQuotedStyle
	}
	return yaml.SingleQuotedStyle
}

// replace is the data with [start, end) replaced by text.
func (s *source) replace(start, end int, text string) []byte {
	out := make([]byte, 0, len(s.data)-(end-start)+len(text))
	out = append(out, s.data[:start]...)
	out = append(out, text...)
	return append(out, s.data[end:]...)
}

// setValue replaces the value node v (of key k) with text: a scalar token
// or a flow collection in place; `key:` with no value gets one.
func (s *source) setValue(k, v *yaml.Node, text string) ([]byte, error) {
	if v.Kind != yaml.ScalarNode && v.Style&yaml.FlowStyle == 0 {
		return nil, cannot(k, "%s is a block %s", k.Value, kindName(v))
	}
	start, end, err := s.span(v)
	if err != nil {
		return nil, err
	}
	if v.ShortTag() == "!!null" && v.Value == "" {
		// yaml.v3 puts an empty value just after the colon.
		return s.replace(start, end, " "+text), nil
	}
	return s.replace(start, end, text), nil
}

// insertKey adds `key: text` to mapping m: in a flow mapping before its
// closing brace; in a block mapping on a line of its own, at the
// mapping's indentation, after the value of the key named after (or of
// its last key when after is absent).
func (s *source) insertKey(m *yaml.Node, after, key, text string) ([]byte, error) {
	if m.Style&yaml.FlowStyle != 0 {
		start, end, err := s.span(m)
		if err != nil {
			return nil, err
		}
		at := end - 1 // the closing brace
		for at > start+1 && strings.ContainsRune(" \t\r\n", rune(s.data[at-1])) {
			at--
		}
		sep := ", "
		if len(m.Content) == 0 {
			sep = ""
		}
		return s.replace(at, at, sep+key+": "+text), nil
	}
	if len(m.Content) == 0 {
		return nil, cannot(m, "an empty block mapping")
	}
	prev := len(m.Content) - 2
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == after {
			prev = i
		}
	}
	_, end, err := s.span(m.Content[prev+1])
	if err != nil {
		return nil, err
	}
	at := s.lineEnd(end)
	line := strings.Repeat(" ", m.Content[0].Column-1) + key + ": " + text + "\n"
	if at == len(s.data) && (at == 0 || s.data[at-1] != '\n') {
		line = "\n" + line
	}
	return s.replace(at, at, line), nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// plain reports whether s can be written as a plain scalar in both block
// and flow context and read back as the same string: yaml.v3 itself is
// asked.
func plain(s string) bool {
	if s == "" || strings.ContainsAny(s, ",[]{}#\"'`\t") || strings.ContainsRune(s, '\n') {
		return false
	}
	for _, doc := range []string{"k: " + s + "\n", "{k: " + s + "}\n"} {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil || len(n.Content) == 0 {
			return false
		}
		m := n.Content[0]
		if len(m.Content) != 2 || m.Content[1].ShortTag() != "!!str" || m.Content[1].Value != s || m.Content[1].Style != 0 {
			return false
		}
	}
	return true
}
