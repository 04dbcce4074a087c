package streamjoin

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
)

// TestNativeFieldsAreNativeAnswer keeps the streaming reader of
// native_answers.jsonl on the format's one declaration,
// families.NativeAnswer: the reader knows exactly its json names, and
// reads back every field of what encoding/json writes from it.
func TestNativeFieldsAreNativeAnswer(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[families.NativeAnswer]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		require.NotEmpty(t, name, "families.NativeAnswer.%s has no json name", typ.Field(i).Name)
		tags = append(tags, name)
	}
	slices.Sort(tags)
	got := slices.Clone(nativeFields.names)
	slices.Sort(got)
	assert.Equal(t, tags, got, "nativeFields (parse.go) against families.NativeAnswer's json names")

	ms := 12.5
	for _, a := range []families.NativeAnswer{
		{RequestID: "a", Answer: json.RawMessage(`{"text":"hi","completion_tokens":2}`), TaskMS: &ms},
		{RequestID: "b", Answer: json.RawMessage(`[{"box":[1,2,3,4]}]`)},
		{RequestID: "c", Error: "payload image is not a PNG or JPEG", TaskMS: &ms},
		{RequestID: "d", Error: "worker gone"},
	} {
		line, err := json.Marshal(a)
		require.NoError(t, err)
		id, answer, taskMS, failed, err := readNativeLine(line)
		require.NoError(t, err, "%s", line)
		assert.Equal(t, a.RequestID, string(id), "%s", line)
		assert.Equal(t, string(a.Answer), string(answer), "%s", line)
		assert.Equal(t, a.Error != "", failed, "%s", line)
		if a.TaskMS == nil {
			assert.True(t, math.IsNaN(taskMS), "%s: task_ms %v, want none", line, taskMS)
		} else {
			assert.Equal(t, *a.TaskMS, taskMS, "%s", line)
		}
	}
}
