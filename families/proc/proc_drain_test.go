package proc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A child whose output cannot be written (a full disk under its log) keeps
// running to its own end: its output is drained and dropped, and the error
// is reported, instead of the child dying of SIGPIPE on its next write.
func TestOutputWriteFailureDoesNotKillTheChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := OS{}.Run(ctx, Spec{Name: "chatty",
		Argv:   []string{"sh", "-c", "for i in 1 2 3 4 5; do echo line $i >&2; echo out $i; sleep 0.02; done; exit 7"},
		Stdout: failingWriter{}, Stderr: failingWriter{}})
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 7, res.ExitCode, "the child ran to its own end")
	assert.Empty(t, res.Signal)
	assert.Equal(t, "no space left on device", res.OutputErr)
	assert.Contains(t, res.StderrTail, "line 5", "the tail is still kept")
}
