//go:build linux

package blitzio

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// The addresses sockets report, against package net's: the same type, the same IP
// form (4 or 16 bytes, IPv4-mapped or not), zone, port role and Unix name, for
// listeners, dialed and accepted streams, connected UDP sockets and the sender a
// datagram receive reports.

// h12AddrEnv normalises what differs between the two sides of a scenario by design:
// the ports the system picked and the directory and abstract name each side used.
type h12AddrEnv struct {
	ports map[int]string // port -> role
	names map[string]string
}

func (e *h12AddrEnv) port(p int, role string) {
	if e.ports == nil {
		e.ports = map[int]string{}
	}
	e.ports[p] = role
}

func (e *h12AddrEnv) name(n, role string) {
	if e.names == nil {
		e.names = map[string]string{}
	}
	e.names[n] = role
}

func (e *h12AddrEnv) shape(a any) string {
	if a == nil {
		return "nil"
	}
	portRole := func(p int) string {
		if r, ok := e.ports[p]; ok {
			return r
		}
		if p == 0 {
			return "0"
		}
		return "ephemeral"
	}
	switch a := a.(type) {
	case *net.TCPAddr:
		if a == nil {
			return "(*net.TCPAddr)(nil)"
		}
		return fmt.Sprintf("*net.TCPAddr{IP: %d bytes %v, Port: %s, Zone: %q}", len(a.IP), a.IP, portRole(a.Port), a.Zone)
	case *net.UDPAddr:
		if a == nil {
			return "(*net.UDPAddr)(nil)"
		}
		return fmt.Sprintf("*net.UDPAddr{IP: %d bytes %v, Port: %s, Zone: %q}", len(a.IP), a.IP, portRole(a.Port), a.Zone)
	case *net.UnixAddr:
		if a == nil {
			return "(*net.UnixAddr)(nil)"
		}
		n := a.Name
		if r, ok := e.names[n]; ok {
			n = r
		}
		return fmt.Sprintf("*net.UnixAddr{Name: %q, Net: %q}", n, a.Net)
	case netip.AddrPort:
		return fmt.Sprintf("netip.AddrPort{%v, Port: %s}", a.Addr(), portRole(int(a.Port())))
	}
	return fmt.Sprintf("%T(%v)", a, a)
}

// h12AddrSet is what one side reported: role -> address.
type h12AddrSet struct {
	env   h12AddrEnv
	addrs map[string]any
}

func (s *h12AddrSet) put(role string, a any) {
	if s.addrs == nil {
		s.addrs = map[string]any{}
	}
	s.addrs[role] = a
}

func h12CompareAddrs(t *testing.T, ours, ref *h12AddrSet) {
	t.Helper()
	var roles []string
	for r := range ref.addrs {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	if len(roles) == 0 {
		t.Fatal("the scenario reported no address")
	}
	for _, r := range roles {
		o, okO := ours.addrs[r]
		if !okO {
			t.Errorf("%s: not reported by ours", r)
			continue
		}
		if os_, rs := ours.env.shape(o), ref.env.shape(ref.addrs[r]); os_ != rs {
			t.Errorf("%s:\n  ours %s (%v)\n  net  %s (%v)", r, os_, o, rs, ref.addrs[r])
		}
	}
}

// TestHostile12NetTCPAddrs: listener, dialed and accepted stream addresses as net's:
// IPv4 (4-byte IPs from the kernel, even when dialed with a 16-byte net.IPv4), IPv6,
// a dual-stack listener's "[::]" and the IPv4-mapped addresses of what it accepts,
// a dial by string and a dial from a local address.
func TestHostile12NetTCPAddrs(t *testing.T) {
	type cfgRow struct {
		name     string
		lnet     string
		lip      net.IP
		dnet     string
		dip      net.IP // what the dialer asks for (the listener's port)
		byString bool
		laddrIP  net.IP
	}
	v4, v6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	rows := []cfgRow{
		{name: "tcp4", lnet: "tcp4", lip: v4, dnet: "tcp4", dip: v4},
		{name: "tcp4 dialed by 4-byte IP", lnet: "tcp4", lip: v4, dnet: "tcp4", dip: v4.To4()},
		{name: "tcp6", lnet: "tcp6", lip: v6, dnet: "tcp6", dip: v6},
		{name: "dual-stack listener, IPv4 client", lnet: "tcp", dnet: "tcp4", dip: v4},
		{name: "dual-stack listener, IPv6 client", lnet: "tcp", dnet: "tcp6", dip: v6},
		{name: "dual-stack listener, mapped dial", lnet: "tcp", dnet: "tcp", dip: net.ParseIP("::ffff:127.0.0.1")},
		{name: "by string", lnet: "tcp4", lip: v4, dnet: "tcp", dip: v4, byString: true},
		{name: "by string tcp6", lnet: "tcp6", lip: v6, dnet: "tcp6", dip: v6, byString: true},
		{name: "from a local address", lnet: "tcp4", lip: v4, dnet: "tcp4", dip: v4, laddrIP: v4},
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				var ref, ours h12AddrSet
				var laddr *net.TCPAddr
				if r.laddrIP != nil {
					laddr = &net.TCPAddr{IP: r.laddrIP}
				}
				{ // package net
					l, err := net.ListenTCP(r.lnet, &net.TCPAddr{IP: r.lip})
					if err != nil {
						t.Skipf("listen %s: %v", r.lnet, err)
					}
					defer l.Close()
					port := l.Addr().(*net.TCPAddr).Port
					ref.env.port(port, "listener's")
					raddr := &net.TCPAddr{IP: r.dip, Port: port}
					var c net.Conn
					if r.byString {
						c, err = net.DialTimeout(r.dnet, raddr.String(), 10*time.Second)
					} else {
						c, err = net.DialTCP(r.dnet, laddr, raddr)
					}
					if err != nil {
						t.Skipf("dial %s %v: %v", r.dnet, raddr, err)
					}
					defer c.Close()
					s, err := l.Accept()
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					ref.put("listener", l.Addr())
					ref.put("dialed.local", c.LocalAddr())
					ref.put("dialed.remote", c.RemoteAddr())
					ref.put("accepted.local", s.LocalAddr())
					ref.put("accepted.remote", s.RemoteAddr())
				}
				{ // blitzio
					l, err := ListenTCP(r.lnet, &net.TCPAddr{IP: r.lip})
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					port := l.TCPAddr().Port
					ours.env.port(port, "listener's")
					raddr := &net.TCPAddr{IP: r.dip, Port: port}
					var c *TCPStream
					if r.byString {
						c, err = h12Await(t, rt, Dial(r.dnet, raddr.String()))
					} else {
						c, err = h12Await(t, rt, DialTCP(r.dnet, laddr, raddr))
					}
					if err != nil {
						t.Fatalf("dial %s %v: %v (net's dial succeeded)", r.dnet, raddr, err)
					}
					defer c.Close()
					a, err := h12Await(t, rt, l.Accept())
					if err != nil {
						t.Fatal(err)
					}
					defer a.Conn.Close()
					ours.put("listener", l.Addr())
					ours.put("dialed.local", c.LocalAddr())
					ours.put("dialed.remote", c.RemoteAddr())
					ours.put("accepted.local", a.Conn.LocalAddr())
					ours.put("accepted.remote", a.Conn.RemoteAddr())
					if h12AddrString(a.Peer) != h12AddrString(a.Conn.RemoteAddr()) {
						t.Errorf("Accepted.Peer %v, RemoteAddr %v", a.Peer, a.Conn.RemoteAddr())
					}
				}
				h12CompareAddrs(t, &ours, &ref)
			})
		}
	})
}

// TestHostile12NetUDPAddrs: a bound and a connected UDP socket's addresses (the peer's
// IP as the kernel reports it: 4 bytes for IPv4, even when dialed with net.IPv4's 16),
// and the sender a receive reports: 4-byte IPv4, IPv6, and IPv4-mapped on a
// dual-stack socket (also from the netip.AddrPort form).
func TestHostile12NetUDPAddrs(t *testing.T) {
	v4, v6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	rows := []struct {
		name string
		lnet string
		lip  net.IP
		dnet string
		dip  net.IP
	}{
		{"udp4", "udp4", v4, "udp4", v4},
		{"udp4 dialed by 4-byte IP", "udp4", v4, "udp4", v4.To4()},
		{"udp6", "udp6", v6, "udp6", v6},
		{"dual-stack, IPv4 sender", "udp", nil, "udp4", v4},
		{"dual-stack, IPv6 sender", "udp", nil, "udp6", v6},
		{"dual-stack, dialed as udp", "udp", nil, "udp", v4},
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				var ref, ours h12AddrSet
				msg := []byte("ping")
				{
					l, err := net.ListenUDP(r.lnet, &net.UDPAddr{IP: r.lip})
					if err != nil {
						t.Skipf("listen %s: %v", r.lnet, err)
					}
					defer l.Close()
					h12Deadline(t, l)
					port := l.LocalAddr().(*net.UDPAddr).Port
					ref.env.port(port, "listener's")
					c, err := net.DialUDP(r.dnet, nil, &net.UDPAddr{IP: r.dip, Port: port})
					if err != nil {
						t.Skipf("dial %s: %v", r.dnet, err)
					}
					defer c.Close()
					for range 2 {
						if _, err := c.Write(msg); err != nil {
							t.Fatal(err)
						}
					}
					_, from, err := l.ReadFromUDP(make([]byte, 8))
					if err != nil {
						t.Fatal(err)
					}
					_, fromAP, err := l.ReadFromUDPAddrPort(make([]byte, 8))
					if err != nil {
						t.Fatal(err)
					}
					ref.put("listener", l.LocalAddr())
					ref.put("dialed.local", c.LocalAddr())
					ref.put("dialed.remote", c.RemoteAddr())
					ref.put("from", from)
					ref.put("fromAddrPort", fromAP)
					ref.put("from is dialed.local", h12AddrString(from) == h12AddrString(c.LocalAddr()))
				}
				{
					l, err := ListenUDP(r.lnet, &net.UDPAddr{IP: r.lip})
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					port := l.UDPAddr().Port
					ours.env.port(port, "listener's")
					c, err := DialUDP(r.dnet, nil, &net.UDPAddr{IP: r.dip, Port: port})
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					for range 2 {
						if _, err := h12Await(t, rt, c.Send(msg)); err != nil {
							t.Fatal(err)
						}
					}
					d, err := h12Await(t, rt, l.RecvFrom(make([]byte, 8)))
					if err != nil {
						t.Fatal(err)
					}
					dap, err := h12Await(t, rt, Future[Result[AddrPortDatagram]](PollFn(func(cx *Context) (Result[AddrPortDatagram], bool) {
						return l.PollRecvFromAddrPort(cx, make([]byte, 8))
					})))
					if err != nil {
						t.Fatal(err)
					}
					ours.put("listener", l.LocalAddr())
					ours.put("dialed.local", c.LocalAddr())
					ours.put("dialed.remote", c.RemoteAddr())
					ours.put("from", d.From)
					ours.put("fromAddrPort", dap.From)
					ours.put("from is dialed.local", h12AddrString(d.From) == h12AddrString(c.LocalAddr()))
				}
				h12CompareAddrs(t, &ours, &ref)
			})
		}
	})
}

// TestHostile12NetUnixAddrs: Unix stream addresses as net's: a path and an abstract
// listener, an unnamed and a bound client, a client that dials the listener by another
// spelling of its path (RemoteAddr is the name the kernel reports, as net's), and the
// sender a unixgram receive reports for a named sender.
func TestHostile12NetUnixAddrs(t *testing.T) {
	rows := []struct {
		name     string
		abstract bool
		bound    bool
		respell  bool
	}{
		{name: "path, unnamed client"},
		{name: "path, bound client", bound: true},
		{name: "abstract, unnamed client", abstract: true},
		{name: "abstract, bound client", abstract: true, bound: true},
		{name: "path spelled otherwise", respell: true},
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for i, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				var ref, ours h12AddrSet
				names := func(env *h12AddrEnv, side string) (srv, dial, cli string) {
					dir := t.TempDir()
					srv, cli = filepath.Join(dir, "srv.sock"), filepath.Join(dir, "cli.sock")
					if r.abstract {
						srv = fmt.Sprintf("@h12-%d-%d-%s-%s-%d", os.Getpid(), time.Now().UnixNano(), cfg.Backend, side, i)
						cli = srv + "-cli"
					}
					dial = srv
					if r.respell {
						dial = dir + "/./srv.sock"
						env.name(dial, "$DIAL")
					}
					env.name(srv, "$SRV")
					env.name(cli, "$CLI")
					if !r.bound {
						cli = ""
					}
					return srv, dial, cli
				}
				ua := func(n string) *net.UnixAddr {
					if n == "" {
						return nil
					}
					return &net.UnixAddr{Name: n, Net: "unix"}
				}
				{
					srv, dial, cli := names(&ref.env, "net")
					l, err := net.ListenUnix("unix", ua(srv))
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					c, err := net.DialUnix("unix", ua(cli), ua(dial))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					s, err := l.Accept()
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					ref.put("listener", l.Addr())
					ref.put("dialed.local", c.LocalAddr())
					ref.put("dialed.remote", c.RemoteAddr())
					ref.put("accepted.local", s.LocalAddr())
					ref.put("accepted.remote", s.RemoteAddr())
				}
				{
					srv, dial, cli := names(&ours.env, "ours")
					l, err := ListenUnix("unix", ua(srv))
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					c, err := DialUnix("unix", ua(cli), ua(dial))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					s, err := h12Await(t, rt, l.Accept())
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					ours.put("listener", l.Addr())
					ours.put("dialed.local", c.LocalAddr())
					ours.put("dialed.remote", c.RemoteAddr())
					ours.put("accepted.local", s.LocalAddr())
					ours.put("accepted.remote", s.RemoteAddr())
				}
				h12CompareAddrs(t, &ours, &ref)
			})
		}
		t.Run("unixgram named sender", func(t *testing.T) {
			var ref, ours h12AddrSet
			for _, side := range []string{"net", "ours"} {
				dir := t.TempDir()
				a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
				ua := func(n string) *net.UnixAddr { return &net.UnixAddr{Name: n, Net: "unixgram"} }
				if side == "net" {
					ref.env.name(a, "$A")
					ref.env.name(b, "$B")
					ra, err := net.ListenUnixgram("unixgram", ua(a))
					if err != nil {
						t.Fatal(err)
					}
					defer ra.Close()
					h12Deadline(t, ra)
					rb, err := net.ListenUnixgram("unixgram", ua(b))
					if err != nil {
						t.Fatal(err)
					}
					defer rb.Close()
					if _, err := rb.WriteToUnix([]byte("x"), ua(a)); err != nil {
						t.Fatal(err)
					}
					_, from, err := ra.ReadFromUnix(make([]byte, 8))
					if err != nil {
						t.Fatal(err)
					}
					ref.put("local", ra.LocalAddr())
					ref.put("from", from)
					continue
				}
				ours.env.name(a, "$A")
				ours.env.name(b, "$B")
				oa, err := ListenUnixgram("unixgram", ua(a))
				if err != nil {
					t.Fatal(err)
				}
				defer oa.Close()
				ob, err := ListenUnixgram("unixgram", ua(b))
				if err != nil {
					t.Fatal(err)
				}
				defer ob.Close()
				if _, err := h12Await(t, rt, ob.SendTo([]byte("x"), ua(a))); err != nil {
					t.Fatal(err)
				}
				d, err := h12Await(t, rt, oa.RecvFrom(make([]byte, 8)))
				if err != nil {
					t.Fatal(err)
				}
				ours.put("local", oa.LocalAddr())
				ours.put("from", d.From)
			}
			h12CompareAddrs(t, &ours, &ref)
		})
	})
}
