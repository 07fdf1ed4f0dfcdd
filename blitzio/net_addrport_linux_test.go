//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The AddrPort poll forms receive a datagram with its sender's address and send one
// back to it, on IPv4, IPv6 and dual-stack sockets, on both backends.
func TestUDPAddrPortPollForms(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, tc := range []struct{ name, network, listen, client string }{
			{"v4", "udp4", "127.0.0.1", "127.0.0.1"},
			{"v6", "udp6", "::1", "::1"},
			{"dual-stack v4 client", "udp", "", "127.0.0.1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var la *net.UDPAddr
				if tc.listen != "" {
					la = &net.UDPAddr{IP: net.ParseIP(tc.listen)}
				}
				c, err := ListenUDP(tc.network, la)
				if err != nil {
					t.Skipf("listen %s: %v", tc.network, err)
				}
				defer c.Close()
				port := c.UDPAddr().Port
				cl, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(tc.client), Port: port})
				if err != nil {
					t.Skipf("dial %s: %v", tc.client, err)
				}
				defer cl.Close()
				msg := []byte("datagram " + tc.name)
				if _, err := cl.Write(msg); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 64)
				r := blockOn(t, rt, PollFn(func(cx *Context) (Result[AddrPortDatagram], bool) {
					return c.PollRecvFromAddrPort(cx, buf)
				}))
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				want := cl.LocalAddr().(*net.UDPAddr).AddrPort()
				if got := r.Value.From; got.Addr().Unmap() != want.Addr().Unmap() || got.Port() != want.Port() {
					t.Fatalf("sender = %v, want %v", got, want)
				}
				if !bytes.Equal(buf[:r.Value.N], msg) {
					t.Fatalf("received %q, want %q", buf[:r.Value.N], msg)
				}
				s := blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
					return c.PollSendToAddrPort(cx, buf[:r.Value.N], r.Value.From)
				}))
				if s.Err != nil || s.Value != len(msg) {
					t.Fatalf("send = %d, %v", s.Value, s.Err)
				}
				cl.SetReadDeadline(time.Now().Add(10 * time.Second))
				got := make([]byte, 64)
				n, err := cl.Read(got)
				if err != nil || !bytes.Equal(got[:n], msg) {
					t.Fatalf("echo = %q, %v; want %q", got[:n], err, msg)
				}
			})
		}
	})
}

// Bad destinations fail with clear errors and send nothing: no address, an IPv6
// address on an IPv4 socket, an unknown zone.
func TestUDPAddrPortBadDestinations(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	c, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(c *UDPConn, a netip.AddrPort) error {
		return blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
			return c.PollSendToAddrPort(cx, []byte("x"), a)
		})).Err
	}
	var ae *net.AddrError
	if err := send(c, netip.AddrPort{}); !errors.Is(err, errMissingAddress) {
		t.Fatalf("zero AddrPort: %v, want errMissingAddress", err)
	}
	if err := send(c, netip.MustParseAddrPort("[::1]:9")); !errors.As(err, &ae) {
		t.Fatalf("IPv6 destination on an IPv4 socket: %v, want a *net.AddrError", err)
	}
	c6, err := ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6: %v", err)
	}
	defer c6.Close()
	if err := send(c6, netip.MustParseAddrPort("[fe80::1%no-such-interface-x]:9")); !errors.As(err, &ae) {
		t.Fatalf("unknown zone: %v, want a *net.AddrError", err)
	}
}

// The per-datagram system calls of the AddrPort forms allocate nothing.
func TestUDPAddrPortSyscallsAllocs(t *testing.T) {
	fds := make([]int, 2)
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		fds[i] = fd
	}
	sa, err := unix.Getsockname(fds[1])
	if err != nil {
		t.Fatal(err)
	}
	dst := sockaddrAddrPort(sa)
	out, in := []byte("ping"), make([]byte, 16)
	allocs := testing.AllocsPerRun(50, func() {
		if n, err := sendToAddrPort(fds[0], out, unix.AF_INET, dst, 0); err != nil || n != len(out) {
			t.Fatalf("sendto = %d, %v", n, err)
		}
		n, from, err := recvFromAddrPort(fds[1], in)
		if err != nil || n != len(out) || !from.Addr().Is4() {
			t.Fatalf("recvfrom = %d, %v, %v", n, from, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a datagram round costs %v allocations", allocs)
	}
}
