package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDifferences(t *testing.T) {
	base := []Field{{"bundle", "9186b9"}, {"precision", "fp32"}, {"aiperf", "0.13.0"}, {"hardware", "h200"}, {"bundle", "ignored"}}
	cur := []Field{{"bundle", "9186b9"}, {"precision", "fp16"}, {"hardware", "h200"}, {"task_source", "server"}}
	d := Differences(base, cur)
	assert.Equal(t, []Difference{
		{Name: "precision", Base: "fp32", Current: "fp16"},
		{Name: "aiperf", Base: "0.13.0", MissingCurrent: true},
		{Name: "task_source", Current: "server", MissingBase: true},
	}, d)
	assert.Equal(t, `precision: "fp32" in the baseline, "fp16" now`, d[0].String())
	assert.Equal(t, `aiperf: "0.13.0" in the baseline, (none) now`, d[1].String())
	assert.Equal(t, `task_source: (none) in the baseline, "server" now`, d[2].String())
	assert.Empty(t, Differences(cur, cur))
	assert.Empty(t, Differences(nil, nil))
}
