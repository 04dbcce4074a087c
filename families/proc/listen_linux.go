//go:build linux

package proc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ListenAddrs returns the TCP addresses on which any process of process
// group pgid listens. It needs no ss, lsof or netstat (the GPU hosts have
// none): it finds the group's processes in /proc/*/stat, their socket
// inodes in /proc/PID/fd, and matches those against the LISTEN (state 0A)
// rows of /proc/PID/net/tcp and tcp6, read in the group's own network
// namespace. A process that left the group (setsid, setpgid) is not seen.
func ListenAddrs(pgid int) ([]netip.AddrPort, error) {
	return listenAddrs("/proc", pgid)
}

func listenAddrs(procRoot string, pgid int) ([]netip.AddrPort, error) {
	pids, err := groupPids(procRoot, pgid)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process of group %d in %s", pgid, procRoot)
	}
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, err := os.ReadDir(filepath.Join(procRoot, pid, "fd"))
		if err != nil {
			continue // exited meanwhile
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(procRoot, pid, "fd", fd.Name()))
			if err == nil && strings.HasPrefix(target, "socket:[") && strings.HasSuffix(target, "]") {
				inodes[target[len("socket:["):len(target)-1]] = true
			}
		}
	}
	var out []netip.AddrPort
	seen := map[netip.AddrPort]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, pids[0], "net", table))
		if err != nil {
			if table == "tcp6" && os.IsNotExist(err) {
				continue // no IPv6 in this kernel
			}
			return nil, fmt.Errorf("listen check: %w", err)
		}
		addrs, err := parseListening(f, inodes)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("listen check: %s: %w", table, err)
		}
		for _, a := range addrs {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// groupPids lists the processes whose process group is pgid, leader
// first; a zombie is dead and not listed.
func groupPids(procRoot string, pgid int) ([]string, error) {
	procs, err := readProcs(procRoot)
	if err != nil {
		return nil, fmt.Errorf("listen check: %w", err)
	}
	var pids []string
	for _, p := range procs {
		if p.pgrp == pgid && p.state != 'Z' {
			pids = append(pids, strconv.Itoa(p.pid))
		}
	}
	sort.SliceStable(pids, func(i, j int) bool { return pids[i] == strconv.Itoa(pgid) && pids[j] != strconv.Itoa(pgid) })
	return pids, nil
}

// parseListening reads a /proc/net/tcp or tcp6 table and returns the local
// addresses of LISTEN sockets whose inode is in inodes.
func parseListening(r io.Reader, inodes map[string]bool) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		a, err := parseHexAddrPort(f[1])
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// parseHexAddrPort parses the kernel's "0100007F:1F90" (IPv4) or
// 32-hex-digit (IPv6) address: each 32-bit word printed in host byte
// order, the port in plain hex.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	host, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port in %q", s)
	}
	raw, err := hex.DecodeString(host)
	if err != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	b := make([]byte, len(raw))
	for w := 0; w < len(raw); w += 4 {
		binary.NativeEndian.PutUint32(b[w:], binary.BigEndian.Uint32(raw[w:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
