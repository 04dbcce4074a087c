package trtmc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRuleTokens: names, AND, OR and parentheses; a comparison after a
// name is that name's gate and is dropped; anything else is refused,
// naming what it met.
func TestRuleTokens(t *testing.T) {
	for rule, want := range map[string][]string{
		"non_empty_output AND (normalized_text_edit_distance OR token_agreement_rate)": {
			"non_empty_output", "AND", "(", "normalized_text_edit_distance", "OR", "token_agreement_rate", ")"},
		"ned <= threshold AND cosine >= T": {"ned", "AND", "cosine"},
		"map50 >= 0.5":                     {"map50"},
		"a.b_c":                            {"a.b_c"},
		"":                                 nil,
	} {
		got, err := ruleTokens(rule)
		assert.NoError(t, err, rule)
		assert.Equal(t, want, got, rule)
	}
	for rule, msg := range map[string]string{
		">= 0.5":        `a comparison ">= 0.5" that follows no metric name`,
		"a AND >= T":    `a comparison ">= T" that follows no metric name`,
		"( >= T":        `a comparison ">= T" that follows no metric name`,
		"a >= ":         `a comparison ">= " that follows no metric name`,
		"a + b":         `"+" is not part of a rule over metric names`,
		"ned <= 1 ; rm": `";" is not part of a rule over metric names`,
	} {
		_, err := ruleTokens(rule)
		assert.EqualError(t, err, msg, rule)
	}
	e, err := parseRule("a AND (b OR c >= T)")
	assert.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, e.names)
}
