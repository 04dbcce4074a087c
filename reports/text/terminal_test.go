package text

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrintable(t *testing.T) {
	assert.Equal(t, "plain ≥ text\nnext", Printable("plain ≥ text\nnext"))
	assert.Equal(t, `a\u{202e}b\u{200b}c\u{1b}[2J`, Printable("a\u202eb\u200bc\x1b[2J"))
}
