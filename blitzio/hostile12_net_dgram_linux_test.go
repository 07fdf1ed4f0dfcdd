//go:build linux

package blitzio

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// Datagram sockets (UDP and unixgram) against package net: see
// hostile12_net_errors_linux_test.go for the comparison.

type h12UDPRow struct {
	name    string
	network string
	// connected dials the socket to a closed port; closed closes it first.
	connected, closed bool
	net               func(t *testing.T, c *net.UDPConn, peer *net.UDPAddr) (net.Addr, error)
	ours              func(t *testing.T, rt *Runtime, c *UDPConn, peer *net.UDPAddr) (net.Addr, error)
}

func h12UDPLoopback(network string) net.IP {
	if network == "udp6" {
		return net.IPv6loopback
	}
	return net.IPv4(127, 0, 0, 1)
}

// TestHostile12NetUDPErrors: UDP errors as net's, unconnected and connected, before and
// after Close: WriteTo without an address, to an address of the other family, too
// large a datagram; ReadFrom, WriteTo and Close after Close; a connected socket's read
// after its datagram met a closed port (ECONNREFUSED), WriteTo on it
// (ErrWriteToConnected, Addr the address given).
func TestHostile12NetUDPErrors(t *testing.T) {
	big := make([]byte, 70000)
	netWriteTo := func(p []byte, dst func(peer *net.UDPAddr) *net.UDPAddr) func(*testing.T, *net.UDPConn, *net.UDPAddr) (net.Addr, error) {
		return func(t *testing.T, c *net.UDPConn, peer *net.UDPAddr) (net.Addr, error) {
			d := dst(peer)
			_, err := c.WriteToUDP(p, d)
			if d == nil {
				return nil, err
			}
			return d, err
		}
	}
	oursSendTo := func(p []byte, dst func(peer *net.UDPAddr) *net.UDPAddr) func(*testing.T, *Runtime, *UDPConn, *net.UDPAddr) (net.Addr, error) {
		return func(t *testing.T, rt *Runtime, c *UDPConn, peer *net.UDPAddr) (net.Addr, error) {
			d := dst(peer)
			_, err := h12Await(t, rt, c.SendTo(p, d))
			if d == nil {
				return nil, err
			}
			return d, err
		}
	}
	toPeer := func(peer *net.UDPAddr) *net.UDPAddr { return peer }
	toNil := func(*net.UDPAddr) *net.UDPAddr { return nil }
	toV6 := func(*net.UDPAddr) *net.UDPAddr { return &net.UDPAddr{IP: net.IPv6loopback, Port: 9} }
	// toOther is an address of the peer's family other than the peer: an error that
	// names it is told apart from one that names the connected peer.
	toOther := func(peer *net.UDPAddr) *net.UDPAddr { return &net.UDPAddr{IP: peer.IP, Port: 9} }
	netRead := func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) {
		_, _, err := c.ReadFromUDP(make([]byte, 8))
		return nil, err
	}
	oursRecvFrom := func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) {
		_, err := h12Await(t, rt, c.RecvFrom(make([]byte, 8)))
		return nil, err
	}
	netClose := func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) { return nil, c.Close() }
	oursClose := func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) { return nil, c.Close() }
	var rows []h12UDPRow
	for _, network := range []string{"udp4", "udp6", "udp"} {
		rows = append(rows,
			h12UDPRow{name: "WriteTo nil", network: network, net: netWriteTo([]byte("x"), toNil), ours: oursSendTo([]byte("x"), toNil)},
			h12UDPRow{name: "WriteTo too large", network: network,
				net: netWriteTo(big, toPeer), ours: oursSendTo(big, toPeer)},
			h12UDPRow{name: "WriteToUDPAddrPort too large", network: network,
				net: func(t *testing.T, c *net.UDPConn, peer *net.UDPAddr) (net.Addr, error) {
					_, err := c.WriteToUDPAddrPort(big, peer.AddrPort())
					return peer, err
				},
				ours: func(t *testing.T, rt *Runtime, c *UDPConn, peer *net.UDPAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, Future[Result[int]](PollFn(func(cx *Context) (Result[int], bool) {
						return c.PollSendToAddrPort(cx, big, peer.AddrPort())
					})))
					return peer, err
				}},
			h12UDPRow{name: "ReadFromUDPAddrPort after Close", network: network, closed: true,
				net: func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, _, err := c.ReadFromUDPAddrPort(make([]byte, 8))
					return nil, err
				},
				ours: func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, Future[Result[AddrPortDatagram]](PollFn(func(cx *Context) (Result[AddrPortDatagram], bool) {
						return c.PollRecvFromAddrPort(cx, make([]byte, 8))
					})))
					return nil, err
				}},
			h12UDPRow{name: "ReadFrom after Close", network: network, closed: true, net: netRead, ours: oursRecvFrom},
			h12UDPRow{name: "WriteTo after Close", network: network, closed: true,
				net: netWriteTo([]byte("x"), toPeer), ours: oursSendTo([]byte("x"), toPeer)},
			h12UDPRow{name: "Close after Close", network: network, closed: true, net: netClose, ours: oursClose},
			h12UDPRow{name: "connected: Read after a closed port", network: network, connected: true,
				net: func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					if _, err := c.Write([]byte("x")); err != nil {
						t.Fatal(err)
					}
					_, err := c.Read(make([]byte, 8))
					return nil, err
				},
				ours: func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					if _, err := h12Await(t, rt, c.Send([]byte("x"))); err != nil {
						t.Fatal(err)
					}
					_, err := h12Await(t, rt, c.Recv(make([]byte, 8)))
					return nil, err
				}},
			h12UDPRow{name: "connected: WriteTo", network: network, connected: true,
				net: netWriteTo([]byte("x"), toOther), ours: oursSendTo([]byte("x"), toOther)},
			h12UDPRow{name: "connected: Write too large", network: network, connected: true,
				net: func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, err := c.Write(big)
					return nil, err
				},
				ours: func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, c.Send(big))
					return nil, err
				}},
			h12UDPRow{name: "connected: Read after Close", network: network, connected: true, closed: true,
				net: func(t *testing.T, c *net.UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, err := c.Read(make([]byte, 8))
					return nil, err
				},
				ours: func(t *testing.T, rt *Runtime, c *UDPConn, _ *net.UDPAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, c.Recv(make([]byte, 8)))
					return nil, err
				}},
			h12UDPRow{name: "connected: Close after Close", network: network, connected: true, closed: true, net: netClose, ours: oursClose},
		)
		if network == "udp4" {
			rows = append(rows, h12UDPRow{name: "WriteTo an IPv6 address", network: network,
				net: netWriteTo([]byte("x"), toV6), ours: oursSendTo([]byte("x"), toV6)})
		}
	}
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for _, r := range rows {
			t.Run(r.network+"/"+r.name, func(t *testing.T) {
				ip := h12UDPLoopback(r.network)
				if r.network == "udp" {
					ip = nil // the dual-stack wildcard
				}
				peerIP := h12UDPLoopback(r.network)
				// A live peer for the sends, or (connected) a closed port.
				peerConn, err := net.ListenUDP(r.network, &net.UDPAddr{IP: peerIP})
				if err != nil {
					t.Skipf("no %s loopback: %v", r.network, err)
				}
				peer := peerConn.LocalAddr().(*net.UDPAddr)
				defer peerConn.Close()
				var nc *net.UDPConn
				var oc *UDPConn
				if r.connected {
					// Both dial while the peer still holds its port, and only then
					// is it closed: dialed after it, either socket could be given
					// that same ephemeral port and be connected to itself (CI saw
					// 127.0.0.1:59470->127.0.0.1:59470).
					nc, err = net.DialUDP(r.network, nil, peer)
					if err == nil {
						oc, err = DialUDP(r.network, nil, peer)
					}
					peerConn.Close()
				} else {
					nc, err = net.ListenUDP(r.network, &net.UDPAddr{IP: ip})
					if err == nil {
						oc, err = ListenUDP(r.network, &net.UDPAddr{IP: ip})
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				defer oc.Close()
				h12Deadline(t, nc)
				ref := h12Obs{local: nc.LocalAddr(), remote: nc.RemoteAddr()}
				ours := h12Obs{local: oc.LocalAddr(), remote: oc.RemoteAddr()}
				if r.closed {
					if err := nc.Close(); err != nil {
						t.Fatal(err)
					}
					if err := oc.Close(); err != nil {
						t.Fatal(err)
					}
				}
				ref.dest, ref.err = r.net(t, nc, peer)
				ours.dest, ours.err = r.ours(t, rt, oc, peer)
				h12Compare(t, r.name, ours, ref)
			})
		}
	})
}

// TestHostile12NetUnixgramErrors: unixgram errors as net's: WriteTo a missing path
// (ENOENT from "sendto"), WriteTo nil, ReadFrom and Close after Close.
func TestHostile12NetUnixgramErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		rows := []struct {
			name   string
			closed bool
			net    func(c *net.UnixConn, dst *net.UnixAddr) (net.Addr, error)
			ours   func(t *testing.T, c *UnixConn, dst *net.UnixAddr) (net.Addr, error)
		}{
			{name: "WriteTo a missing path",
				net: func(c *net.UnixConn, dst *net.UnixAddr) (net.Addr, error) {
					_, err := c.WriteToUnix([]byte("x"), dst)
					return dst, err
				},
				ours: func(t *testing.T, c *UnixConn, dst *net.UnixAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, c.SendTo([]byte("x"), dst))
					return dst, err
				}},
			{name: "WriteTo nil",
				net: func(c *net.UnixConn, _ *net.UnixAddr) (net.Addr, error) {
					_, err := c.WriteToUnix([]byte("x"), nil)
					return nil, err
				},
				ours: func(t *testing.T, c *UnixConn, _ *net.UnixAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, c.SendTo([]byte("x"), nil))
					return nil, err
				}},
			{name: "ReadFrom after Close", closed: true,
				net: func(c *net.UnixConn, _ *net.UnixAddr) (net.Addr, error) {
					_, _, err := c.ReadFromUnix(make([]byte, 8))
					return nil, err
				},
				ours: func(t *testing.T, c *UnixConn, _ *net.UnixAddr) (net.Addr, error) {
					_, err := h12Await(t, rt, c.RecvFrom(make([]byte, 8)))
					return nil, err
				}},
			{name: "Close after Close", closed: true,
				net:  func(c *net.UnixConn, _ *net.UnixAddr) (net.Addr, error) { return nil, c.Close() },
				ours: func(t *testing.T, c *UnixConn, _ *net.UnixAddr) (net.Addr, error) { return nil, c.Close() }},
		}
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				dir := t.TempDir()
				ua := func(n string) *net.UnixAddr { return &net.UnixAddr{Name: filepath.Join(dir, n), Net: "unixgram"} }
				nc, err := net.ListenUnixgram("unixgram", ua("net"))
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				oc, err := ListenUnixgram("unixgram", ua("ours"))
				if err != nil {
					t.Fatal(err)
				}
				defer oc.Close()
				ref := h12Obs{local: nc.LocalAddr()}
				ours := h12Obs{local: oc.LocalAddr()}
				if r.closed {
					nc.Close()
					oc.Close()
				}
				ref.dest, ref.err = r.net(nc, ua("missing"))
				ours.dest, ours.err = r.ours(t, oc, ua("missing"))
				h12Compare(t, r.name, ours, ref)
			})
		}
	})
}
