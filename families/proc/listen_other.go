//go:build !linux

package proc

import "net/netip"

// ListenAddrs is unavailable here (see ErrListenUnchecked).
func ListenAddrs(int) ([]netip.AddrPort, error) { return nil, ErrListenUnchecked }
