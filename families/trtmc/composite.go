package trtmc

import (
	"fmt"
	"strings"
	"unicode"
)

// TRTMC's e2e result.json lets a stage pass under a composite rule
// (tests/e2e_harness/result_schema.py and contracts.py CompareResult at
// e9132e79: `composite_rule`, "Human-readable description of the composite
// gating logic", e.g. the vision-language comparators'
// "non_empty_output AND (normalized_text_edit_distance OR
// token_agreement_rate)", tests/e2e/models/qwen_vl/e2e_plugins/comparators/
// vision_language.py): one thresholded metric may say passed: false while
// the stage passes. The rule is honoured as TRTMC defines it — metric names
// joined by AND and OR, with parentheses, each name standing for that
// metric's gate ("name >= T" is the same gate) — and evaluated here over
// the stage's own gates, each checked against its value, operator and
// threshold. What the harness cannot evaluate fails closed: a rule that is
// not such an expression (free text other than "all metrics must pass"),
// or a name the stage does not record with a threshold, whose outcome
// would decide it.

// allPassRules are the rules that mean every metric must pass.
var allPassRules = map[string]bool{"": true, "all metrics must pass": true, "all invariant metrics must pass": true}

// ruleExpr is a parsed composite rule.
type ruleExpr struct {
	op    string // "and", "or", or "" for a metric
	name  string
	kids  []*ruleExpr
	names []string // every metric the rule names, in order (root only)
}

// parseRule parses a composite rule into an expression over metric names.
func parseRule(rule string) (*ruleExpr, error) {
	toks, err := ruleTokens(rule)
	if err != nil {
		return nil, err
	}
	p := &ruleParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	var names []string
	var walk func(*ruleExpr)
	walk = func(x *ruleExpr) {
		if x.op == "" {
			names = append(names, x.name)
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(e)
	e.names = names
	return e, nil
}

// ruleTokens splits a rule into names, AND, OR and parentheses; a
// comparison after a name ("ned <= threshold", "cosine >= T") is that
// name's gate and is dropped.
func ruleTokens(rule string) ([]string, error) {
	var out []string
	rs := []rune(rule)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(' || r == ')':
			out = append(out, string(r))
			i++
		case isComparison(r):
			k, operand := comparisonEnd(rs, i)
			if !operand || len(out) == 0 || isRuleWord(out[len(out)-1]) || out[len(out)-1] == "(" {
				return nil, fmt.Errorf("a comparison %q that follows no metric name", string(rs[i:k]))
			}
			i = k
		case unicode.IsLetter(r) || r == '_':
			j := scanWord(rs, i+1)
			out = append(out, string(rs[i:j]))
			i = j
		default:
			return nil, fmt.Errorf("%q is not part of a rule over metric names", string(r))
		}
	}
	return out, nil
}

func isComparison(r rune) bool { return r == '<' || r == '>' || r == '=' || r == '!' }

// comparisonEnd is where the comparison starting at rs[i] ends: its
// operator, spaces, and its operand (T, threshold, or a number), and
// whether it has an operand.
func comparisonEnd(rs []rune, i int) (end int, operand bool) {
	j := i + 1
	for j < len(rs) && (rs[j] == '=' || rs[j] == '<' || rs[j] == '>') {
		j++
	}
	for j < len(rs) && unicode.IsSpace(rs[j]) {
		j++
	}
	k := scanWord(rs, j)
	return k, k > j
}

// scanWord is the end of the name or number of letters, digits, "_" and
// "." from rs[j].
func scanWord(rs []rune, j int) int {
	for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_' || rs[j] == '.') {
		j++
	}
	return j
}

func isRuleWord(t string) bool { return t == "AND" || t == "OR" }

type ruleParser struct {
	toks []string
	i    int
}

func (p *ruleParser) or() (*ruleExpr, error) {
	return p.list("OR", "or", p.and)
}

func (p *ruleParser) and() (*ruleExpr, error) {
	return p.list("AND", "and", p.atom)
}

func (p *ruleParser) list(word, op string, next func() (*ruleExpr, error)) (*ruleExpr, error) {
	first, err := next()
	if err != nil {
		return nil, err
	}
	kids := []*ruleExpr{first}
	for p.i < len(p.toks) && p.toks[p.i] == word {
		p.i++
		k, err := next()
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &ruleExpr{op: op, kids: kids}, nil
}

func (p *ruleParser) atom() (*ruleExpr, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("the rule ends where a metric name is expected")
	}
	t := p.toks[p.i]
	p.i++
	switch {
	case t == "(":
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.toks) || p.toks[p.i] != ")" {
			return nil, fmt.Errorf("an unclosed parenthesis")
		}
		p.i++
		return e, nil
	case t == ")" || isRuleWord(t) || strings.EqualFold(t, "and") || strings.EqualFold(t, "or"):
		return nil, fmt.Errorf("%q where a metric name is expected", t)
	}
	// A word that is no metric name (free text) is caught by evaluation:
	// the stage does not record it.
	return &ruleExpr{name: t}, nil
}

// tri is a three-valued outcome: a metric whose gate the stage does not
// record is unknown.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

// eval evaluates the rule; outcome gives each name's gate outcome.
func (e *ruleExpr) eval(outcome func(name string) tri) tri {
	switch e.op {
	case "":
		return outcome(e.name)
	case "and":
		res := triTrue
		for _, k := range e.kids {
			switch k.eval(outcome) {
			case triFalse:
				return triFalse
			case triUnknown:
				res = triUnknown
			}
		}
		return res
	default: // or
		res := triFalse
		for _, k := range e.kids {
			switch k.eval(outcome) {
			case triTrue:
				return triTrue
			case triUnknown:
				res = triUnknown
			}
		}
		return res
	}
}
