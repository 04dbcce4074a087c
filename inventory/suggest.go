package inventory

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Suggest returns the candidates a misspelled word most likely meant: those
// at the smallest edit distance from it, if that distance is small for the
// word's length (1 for a word of up to 4 characters, else 2), compared
// without regard to case; at most three, in order. None when the word is a
// candidate itself.
//
// The distance is Levenshtein's with adjacent transpositions counted as one
// edit (the optimal string alignment distance): "chekcpoint" is one edit
// from "checkpoint", as "rtdetr" is from "rt-detr". It is a few lines over
// short names, so no library is taken for it (cobra's own "Did you mean
// this?" is such a function, unexported).
func Suggest(word string, candidates []string) []string {
	if slices.Contains(candidates, word) || word == "" {
		return nil
	}
	limit := 2
	if utf8.RuneCountInString(word) <= 4 {
		limit = 1
	}
	best, out := limit+1, []string(nil)
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := editDistance(lw, strings.ToLower(c))
		switch {
		case d < best:
			best, out = d, []string{c}
		case d == best && !slices.Contains(out, c):
			out = append(out, c)
		}
	}
	slices.Sort(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

// DidYouMean is Suggest's answer as a question, `did you mean "a"?` or
// `did you mean "a" or "b"?` (each quoted by text.Quote), or "" when
// nothing is close.
func DidYouMean(word string, candidates []string) string {
	s := Suggest(word, candidates)
	if len(s) == 0 {
		return ""
	}
	q := make([]string, len(s))
	for i, c := range s {
		q[i] = text.Quote(c)
	}
	last := q[len(q)-1]
	if len(q) == 1 {
		return "did you mean " + last + "?"
	}
	return "did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + last + "?"
}

// WithHint ends a message with DidYouMean's question ("MSG; did you mean
// "a"?"), or leaves it as it is when nothing is close.
func WithHint(msg, word string, candidates []string) string {
	if h := DidYouMean(word, candidates); h != "" {
		return msg + "; " + h
	}
	return msg
}

// IDs are the profile ids of every group, in group then file order.
func (inv *Inventory) IDs() []string {
	var ids []string
	for _, p := range inv.Profiles() {
		ids = append(ids, p.ID)
	}
	return ids
}

// IDs are the group's profile ids, in file order.
func (g *Group) IDs() []string {
	ids := make([]string, len(g.Profiles))
	for i, p := range g.Profiles {
		ids[i] = p.ID
	}
	return ids
}

// editDistance is the optimal string alignment distance of a and b, by
// runes: insertions, deletions, substitutions and transpositions of two
// adjacent runes each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the table: two back (for transpositions), one back,
	// and the current one.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
