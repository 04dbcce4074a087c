//go:build linux

package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHexAddrPort(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"0A00020F:C350":                         "15.2.0.10:50000",
		"00000000000000000000000001000000:01BB": "[::1]:443",
		"00000000000000000000000000000000:1F90": "[::]:8080",
		"0000000000000000FFFF00000100007F:1F90": "[::ffff:127.0.0.1]:8080",
	} {
		got, err := parseHexAddrPort(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got.String(), in)
	}
	for _, bad := range []string{"", "0100007F", "XYZ:0050", "0100007F:ZZ", "01007F:0050"} {
		_, err := parseHexAddrPort(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseListeningKeepsOnlyListenRowsOfTheGroup(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0
   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 100 0 0 10 0
   2: 0100007F:1F92 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0
   3: 00000000:1F93 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 444 1 0 100 0 0 10 0
`
	got, err := parseListening(strings.NewReader(table), map[string]bool{"111": true, "222": true, "333": true})
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:8080"), netip.MustParseAddrPort("127.0.0.1:8081")}, got,
		"an established socket and another process's listener are not the group's")
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:8080")}, OffLoopback(got))
}

// TestListenHelper is the child of TestListenAddrsOfARealGroup: it listens
// on the addresses in TRTMC_LISTEN, starts a child of its own (same
// process group) listening on TRTMC_LISTEN_CHILD, prints their ports and
// waits to be killed.
func TestListenHelper(t *testing.T) {
	addrs := os.Getenv("TRTMC_LISTEN")
	if addrs == "" {
		return // only as the helper process
	}
	var ports []string
	for _, a := range strings.Split(addrs, ",") {
		l, err := net.Listen("tcp", a)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		defer l.Close()
		ports = append(ports, l.Addr().String())
	}
	if child := os.Getenv("TRTMC_LISTEN_CHILD"); child != "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestListenHelper$")
		cmd.Env = append(os.Environ(), "TRTMC_LISTEN="+child, "TRTMC_LISTEN_CHILD=")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			os.Exit(2)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		ports = append(ports, strings.TrimSpace(strings.TrimPrefix(line, "listening ")))
	}
	fmt.Println("listening " + strings.Join(ports, " "))
	select {}
}

// ListenAddrs finds what every process of a real process group listens
// on — the leader and a child it forked — and OffLoopback names the
// wildcard ones.
func TestListenAddrsOfARealGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	p, err := OS{}.Start(ctx, Spec{Name: "listener", Argv: []string{os.Args[0], "-test.run=^TestListenHelper$"},
		Env: []string{"TRTMC_LISTEN=127.0.0.1:0,0.0.0.0:0", "TRTMC_LISTEN_CHILD=[::]:0"}, Stdout: pw, Grace: time.Second})
	require.NoError(t, err)
	defer p.Stop()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "listening "), line)
	want := strings.Fields(strings.TrimPrefix(line, "listening "))
	require.Len(t, want, 3)

	got, err := ListenAddrs(p.Pid())
	require.NoError(t, err)
	var gotS []string
	for _, a := range got {
		gotS = append(gotS, a.String())
	}
	assert.ElementsMatch(t, want, gotS)
	var off []string
	for _, a := range OffLoopback(got) {
		off = append(off, a.String())
	}
	assert.ElementsMatch(t, want[1:], off, "0.0.0.0 and :: are off loopback; 127.0.0.1 is not")
}
