package proc

import (
	"errors"
	"net/netip"
)

// ErrListenUnchecked is returned by ListenAddrs where the listening
// sockets of a process group cannot be found (anything but Linux). A row
// is never qualified on such a host unless non-loopback servers are
// explicitly allowed.
var ErrListenUnchecked = errors.New("listen check unavailable on this platform")

// OffLoopback returns the addresses that are not loopback (127.0.0.0/8,
// ::1, and IPv4-mapped loopback). 0.0.0.0 and :: (every interface) are off
// loopback.
func OffLoopback(addrs []netip.AddrPort) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		if !a.Addr().Unmap().IsLoopback() {
			out = append(out, a)
		}
	}
	return out
}
