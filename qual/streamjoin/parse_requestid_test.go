package streamjoin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// A server record or a native answer without its request id can be joined
// to nothing (issue 25, item 18): 1000 such records were "1 request id the
// client never reported (e.g. )". Now the join fails on the first one,
// naming file, line and field: malformed evidence, never a count.
func TestJoinRefusesALineWithoutItsRequestID(t *testing.T) {
	for _, c := range []struct {
		file, want string
		edit       func(map[string]any)
	}{
		{synth.FileServer, synth.FileServer + ":1: request_id: missing", func(l map[string]any) { delete(l, "request_id") }},
		{synth.FileServer, synth.FileServer + ":1: request_id: missing", func(l map[string]any) { l["request_id"] = "" }},
		{synth.FileNative, synth.FileNative + ":1: request_id: missing", func(l map[string]any) { delete(l, "request_id") }},
	} {
		t.Run(c.want, func(t *testing.T) {
			ck := cleanCheckpoint(t, synth.FamilyDetect)
			ck.edit(c.file, func(ls []map[string]any) []map[string]any {
				for _, l := range ls {
					c.edit(l)
				}
				for range 1000 - len(ls) {
					x := clone(ls[0])
					ls = append(ls, x)
				}
				return ls
			})
			_, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(ck.dir), options(t, synth.FamilyDetect, 5, 50))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
