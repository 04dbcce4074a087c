package qual

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Servers bind to loopback unless a wider bind is allowed explicitly; a
// host name that merely looks like loopback is not loopback.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "localhost": true, "::1": true, "[::1]": true,
		"0.0.0.0": false, "": false, "10.0.0.1": false, "::": false, "example.com": false,
		"127.example.com": false, "127.0.0.1.nip.io": false, "localhost.example.com": false,
	} {
		assert.Equal(t, want, IsLoopback(host), host)
	}
}
