//go:build linux

package blitzio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostile18DialUDPEmptyHostIsIPv4: Dialer.DialUDP("udp", ":port") dials the local
// system as net.Dial does, over IPv4 (127.0.0.1), with Control told "udp4". Before, the
// socket was a dual-stack IPv6 one, which the kernel connects to ::1: a server on
// 127.0.0.1 only never got the datagrams (the TCP dial already picked IPv4 here).
func TestHostile18DialUDPEmptyHostIsIPv4(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		echo4 := h18UDPEcho(t, "udp4", net.IPv4(127, 0, 0, 1))
		address := fmt.Sprintf(":%d", echo4.Port)
		nc, err := net.Dial("udp", address)
		if err != nil {
			t.Fatal(err)
		}
		want := nc.RemoteAddr().String()
		nc.Close()
		var ctrl string
		d := &Dialer{Control: func(network, _ string, _ syscall.RawConn) error { ctrl = network; return nil }}
		r := blockOn(t, rt, d.DialUDP(context.Background(), "udp", address))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		defer r.Value.Close()
		if got := r.Value.RemoteAddr().String(); got != want || ctrl != "udp4" {
			t.Fatalf("DialUDP(udp, %q): connected to %s with Control told %q; net.Dial connects to %s (udp4)", address, got, ctrl, want)
		}
		h18UDPRoundTrip(t, rt, r.Value, "to the local system")
	})
}

// TestHostile18DialUDPWildcardLocalAddr: a LocalAddr with a wildcard IP (0.0.0.0 or ::)
// restricts nothing, as net.Dialer's: an address of the other family is dialed (from a
// dual-stack IPv6 socket). Before, DialUDP failed with "no suitable address found".
func TestHostile18DialUDPWildcardLocalAddr(t *testing.T) {
	if !ipv6Supported() {
		t.Skip("no IPv6 here")
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		echo4 := h18UDPEcho(t, "udp4", net.IPv4(127, 0, 0, 1))
		echo6 := h18UDPEcho(t, "udp6", net.IPv6loopback)
		for _, tc := range []struct {
			local net.IP
			to    *net.UDPAddr
		}{
			{net.IPv4zero, echo6},
			{net.IPv6unspecified, echo4},
			{net.IPv4zero, echo4},
			{net.IPv6unspecified, echo6},
		} {
			nd := &net.Dialer{LocalAddr: &net.UDPAddr{IP: tc.local}}
			nc, nerr := nd.Dial("udp", tc.to.String())
			if nerr != nil {
				t.Fatalf("net.Dial from %v to %v: %v", tc.local, tc.to, nerr)
			}
			want := nc.RemoteAddr().String()
			nc.Close()
			d := &Dialer{LocalAddr: &net.TCPAddr{IP: tc.local}}
			r := blockOn(t, rt, d.DialUDP(context.Background(), "udp", tc.to.String()))
			if r.Err != nil {
				t.Fatalf("DialUDP from %v to %v: %v; net.Dial connects to %s", tc.local, tc.to, r.Err, want)
			}
			if got := r.Value.RemoteAddr().String(); got != want {
				t.Fatalf("DialUDP from %v to %v: connected to %s, net.Dial to %s", tc.local, tc.to, got, want)
			}
			h18UDPRoundTrip(t, rt, r.Value, fmt.Sprintf("from %v", tc.local))
			r.Value.Close()
		}
	})
}

// TestHostile18DialUDPErrorNamesLocalAddr: a dial whose LocalAddr cannot be bound (its
// port is in use) fails with net's error, whose Source is the local address: before,
// the *net.OpError left Source out ("dial udp 127.0.0.1:53: bind: address already in
// use", which does not say which address was in use).
func TestHostile18DialUDPErrorNamesLocalAddr(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := newRT(t, Config{Workers: 2})
	echo4 := h18UDPEcho(t, "udp4", net.IPv4(127, 0, 0, 1))
	busy, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	la := busy.LocalAddr().(*net.UDPAddr)
	_, nerr := (&net.Dialer{LocalAddr: la}).Dial("udp", echo4.String())
	r := blockOn(t, rt, (&Dialer{LocalAddr: &net.TCPAddr{IP: la.IP, Port: la.Port}}).DialUDP(context.Background(), "udp", echo4.String()))
	if r.Err == nil || nerr == nil {
		t.Fatalf("DialUDP from a port in use: %v; net.Dial: %v; want both to fail", r.Err, nerr)
	}
	var oe *net.OpError
	if !errors.As(r.Err, &oe) || oe.Source == nil || oe.Source.String() != la.String() || r.Err.Error() != nerr.Error() {
		t.Fatalf("DialUDP from a port in use: %v; net.Dial: %v", r.Err, nerr)
	}
	// The package's DialUDP names it too, as net.DialUDP.
	_, nerr = net.DialUDP("udp", la, echo4)
	if _, err := DialUDP("udp", la, echo4); err == nil || err.Error() != nerr.Error() {
		t.Fatalf("DialUDP from a port in use: %v; net.DialUDP: %v", err, nerr)
	}
}

// TestHostile18DialEmptyAddress: an empty address fails as net.Dial's does, with a
// missing address error (before: "missing port in address", from splitting "").
func TestHostile18DialEmptyAddress(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := newRT(t, Config{Workers: 2})
	var d Dialer
	for _, network := range []string{"udp", "udp6", "tcp"} {
		_, nerr := net.Dial(network, "")
		var err error
		if network == "tcp" {
			err = blockOn(t, rt, d.Dial(network, "")).Err
		} else {
			err = blockOn(t, rt, d.DialUDP(context.Background(), network, "")).Err
		}
		if err == nil || nerr == nil || err.Error() != nerr.Error() {
			t.Fatalf("dial %s to \"\": %v; net.Dial: %v", network, err, nerr)
		}
	}
}

// TestHostile18DialUnixAbstractFullLength: an abstract name that fills sun_path (a
// '@' and 107 bytes: the kernel does not NUL-terminate abstract names) is dialed as
// net.Dial does. Before, x/sys/unix's sockaddr conversion refused it with EINVAL
// (it reserves a byte for a NUL, as for a path); one byte longer fails in both.
func TestHostile18DialUnixAbstractFullLength(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := newRT(t, Config{Workers: 2})
	prefix := fmt.Sprintf("@blitzio-h18-%d-%d-", syscall.Getpid(), time.Now().UnixNano())
	name := prefix + strings.Repeat("n", 108-len(prefix))
	nl, err := net.Listen("unix", name)
	if err != nil {
		t.Skipf("net cannot listen on a full-length abstract name here: %v", err)
	}
	defer nl.Close()
	go func() {
		for {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	var d Dialer
	r := blockOn(t, rt, d.DialUnix(context.Background(), "unix", name))
	if r.Err != nil {
		t.Fatalf("DialUnix to a full-length abstract name: %v", r.Err)
	}
	b := make([]byte, 2)
	if rr := blockOn(t, rt, r.Value.ReadFull(b)); rr.Err != nil || string(b) != "hi" {
		t.Fatalf("read over a full-length abstract name: %q, %v", b, rr.Err)
	}
	if got := r.Value.RemoteAddr().String(); got != name {
		t.Fatalf("RemoteAddr %q, want %q", got, name)
	}
	r.Value.Close()
	tooLong := name + "x"
	_, nerr := net.Dial("unix", tooLong)
	if r := blockOn(t, rt, d.DialUnix(context.Background(), "unix", tooLong)); r.Err == nil || nerr == nil || r.Err.Error() != nerr.Error() {
		t.Fatalf("DialUnix to a name longer than sun_path: %v; net.Dial: %v", r.Err, nerr)
	}
}
