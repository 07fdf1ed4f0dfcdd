//go:build linux

package blitzio

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestHostile17DialLocalAddrNoIPRaces: a Dialer whose LocalAddr has no IP (a source
// port, or just the zero address) keeps both address families of a name, so their
// attempts race as without a LocalAddr (Happy Eyeballs), as net.Dialer's do: net
// partitions the addresses whatever the LocalAddr. Before, any LocalAddr turned the race
// off, and a silent first address held the dial until the kernel gave up on it
// (minutes) before the live address of the other family was tried.
func TestHostile17DialLocalAddrNoIPRaces(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		silent6, live4 := h16Blackhole(t, net.IPv6loopback), h16Live(t, net.IPv4(127, 0, 0, 1))
		f := &dialFuture{ctx: context.Background(), network: "tcp", addrs: []*net.TCPAddr{silent6, live4},
			laddr: &net.TCPAddr{}, keepAlive: defaultKeepAlive}
		// Far above the 300 ms fallback delay; a dial stuck on the silent address
		// would take minutes.
		r := blockOn(t, rt, Timeout(10*time.Second, f))
		if r.Err != nil {
			t.Fatalf("dial of a silent IPv6 address and a live IPv4 one with LocalAddr %v: %v; want the IPv4 one after the fallback delay", f.laddr, r.Err)
		}
		if r.Value.Err != nil {
			t.Fatal(r.Value.Err)
		}
		got := r.Value.Value.RemoteAddr().String()
		r.Value.Value.Close()
		if got != live4.String() {
			t.Fatalf("connected to %v, want %v", got, live4)
		}
	})
}
