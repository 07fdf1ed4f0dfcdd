//go:build linux

package blitzio

import (
	"net"
	"testing"
	"time"
)

// TestHostile18ListenIPv4WildcardIsDualStack: "tcp" and "udp" on 0.0.0.0 listen on
// both families, as net's do (0.0.0.0 on an IPv6 socket is the IPv6 wildcard); on
// "tcp6" it is the IPv6 wildcard alone. Before, the socket was bound to the v4-mapped
// ::ffff:0.0.0.0: IPv4 only on "tcp" and "udp", where net accepts ::1 too.
func TestHostile18ListenIPv4WildcardIsDualStack(t *testing.T) {
	if !ipv6Supported() {
		t.Skip("no IPv6 here")
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for _, tc := range []struct {
			network string
			v4, v6  bool
		}{{"tcp", true, true}, {"tcp6", false, true}} {
			l, err := ListenTCP(tc.network, &net.TCPAddr{IP: net.IPv4zero})
			if err != nil {
				t.Fatalf("ListenTCP(%s, 0.0.0.0): %v", tc.network, err)
			}
			ref, err := net.ListenTCP(tc.network, &net.TCPAddr{IP: net.IPv4zero})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := l.Addr().(*net.TCPAddr).IP.String(), ref.Addr().(*net.TCPAddr).IP.String(); got != want {
				t.Fatalf("ListenTCP(%s, 0.0.0.0) listens on %s, net's on %s", tc.network, got, want)
			}
			ref.Close()
			port := l.TCPAddr().Port
			for _, to := range []struct {
				network string
				ip      net.IP
				want    bool
			}{{"tcp4", net.IPv4(127, 0, 0, 1), tc.v4}, {"tcp6", net.IPv6loopback, tc.v6}} {
				c, err := net.DialTCP(to.network, nil, &net.TCPAddr{IP: to.ip, Port: port})
				if (err == nil) != to.want {
					t.Fatalf("%s on 0.0.0.0, dialed from %v: %v; want connected %v", tc.network, to.ip, err, to.want)
				}
				if err != nil {
					continue
				}
				a := blockOn(t, rt, l.Accept())
				if a.Err != nil {
					t.Fatal(a.Err)
				}
				a.Value.Conn.Close()
				c.Close()
			}
			l.Close()
		}

		u, err := ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback} {
			c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: ip, Port: u.UDPAddr().Port})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 8)
			r := blockOn(t, rt, u.RecvFrom(b))
			if r.Err != nil || string(b[:r.Value.N]) != "hi" {
				t.Fatalf("udp on 0.0.0.0 from %v: %q, %v", ip, b[:r.Value.N], r.Err)
			}
			c.Close()
		}
	})
}

// TestHostile18DialerWildcardLocalAddrTCP: a Dialer whose LocalAddr is a wildcard
// (0.0.0.0 or ::, a port at most) dials either family on "tcp", as net.Dialer's. Before,
// it kept only the addresses of the wildcard's family ("no suitable address found").
func TestHostile18DialerWildcardLocalAddrTCP(t *testing.T) {
	if !ipv6Supported() {
		t.Skip("no IPv6 here")
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		live4, live6 := h16Live(t, net.IPv4(127, 0, 0, 1)), h16Live(t, net.IPv6loopback)
		for _, local := range []net.IP{net.IPv4zero, net.IPv6unspecified} {
			for _, to := range []*net.TCPAddr{live4, live6} {
				nd := &net.Dialer{LocalAddr: &net.TCPAddr{IP: local}}
				nc, nerr := nd.Dial("tcp", to.String())
				if nerr == nil {
					nc.Close()
				}
				d := &Dialer{LocalAddr: &net.TCPAddr{IP: local}}
				r := blockOn(t, rt, d.Dial("tcp", to.String()))
				if (r.Err == nil) != (nerr == nil) {
					t.Fatalf("Dialer{LocalAddr: %v}.Dial(tcp, %v): %v; net.Dialer's: %v", local, to, r.Err, nerr)
				}
				if r.Err == nil {
					if got := r.Value.RemoteAddr().(*net.TCPAddr); got.Port != to.Port {
						t.Fatalf("connected to %v, want %v", got, to)
					}
					r.Value.Close()
				}
			}
		}
	})
}
