package reports

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How the HTML report marks the difference between a mismatch's two
// answers: word by word (a word is a run of letters, digits and "_"; a
// run of spaces and each other character are tokens of their own, so a
// changed number, comma or space is marked alone), by the shortest edit
// script (middleOps, the diff's one implementation), with the common text
// far from a change elided and each side capped.
const (
	// diffContextTokens is the common text kept on each side of a change.
	diffContextTokens = 24
	// maxAnswerShownRunes caps what each side shows; the full answers are
	// in mismatches.jsonl.
	maxAnswerShownRunes = 1500
)

// tokenize splits s into words (letters, digits, "_"), runs of spaces
// and single other runes.
func tokenize(s string) []string {
	var out []string
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			return 1
		case unicode.IsSpace(r):
			return 2
		}
		return 0
	}
	for start := 0; start < len(s); {
		r, size := utf8.DecodeRuneInString(s[start:])
		end := start + size
		if c := class(r); c != 0 {
			for end < len(s) {
				r2, n := utf8.DecodeRuneInString(s[end:])
				if class(r2) != c {
					break
				}
				end += n
			}
		}
		out = append(out, s[start:end])
		start = end
	}
	return out
}

// tokenOp is one token of the edit script from the native answer to the
// HTTP answer: ' ' in both, '-' only in the native answer, '+' only in
// the HTTP answer.
type tokenOp struct {
	kind byte
	text string
}

// wordOps is the edit script from a to b over tokens: the common head and
// tail walked, the differing middle searched by middleOps.
func wordOps(a, b string) []tokenOp {
	ta, tb := tokenize(a), tokenize(b)
	p := 0
	for p < len(ta) && p < len(tb) && ta[p] == tb[p] {
		p++
	}
	s := 0
	for s < len(ta)-p && s < len(tb)-p && ta[len(ta)-1-s] == tb[len(tb)-1-s] {
		s++
	}
	ops := make([]tokenOp, 0, len(ta)+len(tb)-p-s)
	for _, t := range ta[:p] {
		ops = append(ops, tokenOp{' ', t})
	}
	for _, o := range middleOps(byteTokens(ta[p:len(ta)-s]), byteTokens(tb[p:len(tb)-s]), 0) {
		ops = append(ops, tokenOp{o.kind, string(o.text)})
	}
	for _, t := range ta[len(ta)-s:] {
		ops = append(ops, tokenOp{' ', t})
	}
	return ops
}

func byteTokens(ts []string) [][]byte {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		out[i] = []byte(t)
	}
	return out
}

// keptOps marks which common tokens a side shows: all of them when
// nothing differs, else those within diffContextTokens of a change.
func keptOps(ops []tokenOp) []bool {
	keep := make([]bool, len(ops))
	last := -1 << 30 // index of the last change seen
	for i, o := range ops {
		if o.kind != ' ' {
			last = i
		}
		keep[i] = o.kind != ' ' || i-last <= diffContextTokens
	}
	next := 1 << 30
	changed := false
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].kind != ' ' {
			next, changed = i, true
		}
		keep[i] = keep[i] || next-i <= diffContextTokens
	}
	if !changed {
		for i := range keep {
			keep[i] = true
		}
	}
	return keep
}

// writeAnswerSide writes one side of the diff, escaped: the tokens of
// kind ' ' and mark (marked with tag: del for the native side, ins for
// the HTTP side), common text far from a change as one "…", at most
// maxAnswerShownRunes; clipped adds that the stored answer was cut.
func writeAnswerSide(b *strings.Builder, ops []tokenOp, keep []bool, mark byte, tag string, clipped bool) {
	e := html.EscapeString
	runes, open, elided := 0, false, false
	closeTag := func() {
		if open {
			b.WriteString("</" + tag + ">")
			open = false
		}
	}
	for i, o := range ops {
		if o.kind != ' ' && o.kind != mark {
			continue
		}
		if !keep[i] {
			closeTag()
			if !elided {
				b.WriteString(`<span class="elided">…</span>`)
			}
			elided = true
			continue
		}
		elided = false
		if runes >= maxAnswerShownRunes {
			closeTag()
			b.WriteString(`<span class="elided">… (cut here: the whole answer is in ` + MismatchesFile + `)</span>`)
			return
		}
		switch {
		case o.kind == mark && !open:
			b.WriteString("<" + tag + ">")
			open = true
		case o.kind == ' ':
			closeTag()
		}
		b.WriteString(e(o.text))
		runes += utf8.RuneCountInString(o.text)
		if o.text == "," || o.text == "/" || o.text == "}" || o.text == "]" {
			b.WriteString("<wbr>")
		}
	}
	closeTag()
	if clipped {
		b.WriteString(`<span class="elided">… (longer than the report keeps: the whole answer is in ` + MismatchesFile + `)</span>`)
	}
}
