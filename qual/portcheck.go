package qual

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
)

// portInUse reports whether the address of a readiness URL is already bound
// by another process, just before the server is started. A readiness probe
// cannot tell our server from a stale one (or anything else) answering on
// the same port, so the harness must not start polling a port it does not
// own: it would measure the impostor.
func portInUse(readiness string) error {
	u, err := url.Parse(readiness)
	if err != nil || u.Port() == "" {
		return nil // nothing to check; the probe reports a bad URL itself
	}
	l, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), u.Port()))
	if err == nil {
		return l.Close()
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %s on %s is already in use by another process (a stale server?); "+
			"refusing to start the server and probe %s, which would measure whatever answers there", u.Port(), u.Hostname(), readiness)
	}
	return nil
}
