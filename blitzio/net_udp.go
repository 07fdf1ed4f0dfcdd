//go:build linux || darwin || freebsd

package blitzio

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// UDPConn is a UDP socket served by a Runtime's I/O driver: bound with ListenUDP, or
// connected with DialUDP. Its methods are safe for concurrent use.
type UDPConn struct {
	fd *netFD
}

func isUDPNetwork(network string) bool {
	return network == "udp" || network == "udp4" || network == "udp6"
}

// ListenUDP opens a UDP socket bound to laddr, like net.ListenUDP ("udp", "udp4",
// "udp6"; a nil laddr or port 0 picks an ephemeral port). It is attached to the
// runtime of the first task (or BlockOn) that uses it.
func ListenUDP(network string, laddr *net.UDPAddr) (*UDPConn, error) {
	return udpSocket("listen", network, laddr, nil, nil)
}

// DialUDP opens a UDP socket connected to raddr (and bound to laddr if not nil): Send
// and Recv then talk to raddr only. A UDP connect does not wait, so this is not a
// future.
func DialUDP(network string, laddr, raddr *net.UDPAddr) (*UDPConn, error) {
	if raddr == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errMissingAddress}
	}
	return udpSocket("dial", network, laddr, raddr, nil)
}

// errMissingAddress is package net's error for a missing address. It is a plain
// error there (errors.New), so it is here too: an OpError's Unwrap chain reads the
// same as net's.
var errMissingAddress = errors.New("missing address")

// dgramError builds the *net.OpError package net gives a datagram socket: Source is the
// local address, Addr the destination of a send (dest, nil if none) or else the
// connected peer (nil for an unconnected socket). netFD.opError names an unconnected
// socket's local address as Addr instead, net's convention for a listener, which on a
// datagram socket puts the address the wrong way round ("read udp 127.0.0.1:5353"
// where net prints the local address as the source).
func (fd *netFD) dgramError(op, sys string, dest net.Addr, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && !isSyscallError(err) {
		err = os.NewSyscallError(sys, errno)
	}
	addr := fd.raddr
	if dest != nil {
		addr = dest
	}
	return &net.OpError{Op: op, Net: fd.net, Source: fd.laddr, Addr: addr, Err: err}
}

// udpDest is addr as the destination an error names: a nil interface for a nil addr,
// never a typed nil.
func udpDest(addr *net.UDPAddr) net.Addr {
	if addr == nil {
		return nil
	}
	return addr
}

// udpSocket opens a UDP socket bound to laddr (if not nil, or if raddr is nil) and
// connected to raddr (if not nil). control, if not nil, is a Dialer's Control: called
// before the bind and the connect, as net's.
func udpSocket(op, network string, laddr, raddr *net.UDPAddr, control func(network, address string, c syscall.RawConn) error) (*UDPConn, error) {
	opErr := func(err error) error {
		var src, a net.Addr
		if raddr != nil {
			a = raddr
			if laddr != nil {
				src = laddr // as net.DialUDP's: Source is the local address asked for
			}
		} else if laddr != nil {
			a = laddr
		}
		return &net.OpError{Op: op, Net: network, Source: src, Addr: a, Err: err}
	}
	if !isUDPNetwork(network) {
		return nil, opErr(net.UnknownNetworkError(network))
	}
	var ip net.IP
	if laddr != nil {
		ip = laddr.IP
	}
	if raddr != nil && len(ip) == 0 {
		ip = raddr.IP
	}
	family, dual, err := inetFamily(network, ip)
	if err != nil {
		return nil, opErr(err)
	}
	if raddr != nil && network == "udp" {
		// A dial picks as net's favoriteAddrFamily: IPv4 unless one of the addresses
		// is IPv6 (a nil IP, the local system or the system's choice of source, counts
		// as IPv4, so ":53" reaches 127.0.0.1 as net.Dial's does, not ::1), and else a
		// dual-stack IPv6 socket (which an IPv4 peer is reached from as a v4-mapped
		// address: LocalAddr "::" to 127.0.0.1).
		family, dual = unix.AF_INET, false
		if !udpAddrIsV4(laddr) || !udpAddrIsV4(raddr) {
			family, dual = unix.AF_INET6, true
		}
	}
	s, err := newSocket(family, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
	if err != nil {
		return nil, opErr(err)
	}
	fail := func(sys string, err error) (*UDPConn, error) {
		unix.Close(s)
		return nil, opErr(os.NewSyscallError(sys, err))
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, boolInt(!dual)); err != nil {
			return fail("setsockopt", err)
		}
	}
	if control != nil {
		cnet, caddr := "udp4", ""
		if family == unix.AF_INET6 {
			cnet = "udp6"
		}
		if raddr != nil {
			caddr = raddr.String()
		} else if laddr != nil {
			caddr = laddr.String()
		}
		if err := runControl(control, cnet, caddr, s); err != nil {
			return nil, opErr(err) // runControl closed s
		}
	}
	if laddr != nil || raddr == nil {
		a := laddr
		if a == nil {
			a = &net.UDPAddr{}
		}
		sa, err := ipZoneToSockaddr(family, a.IP, a.Port, a.Zone)
		if err != nil {
			unix.Close(s)
			return nil, opErr(err)
		}
		if err := unix.Bind(s, sa); err != nil {
			return fail("bind", err)
		}
	}
	fd := newNetFD(s, family, unix.SOCK_DGRAM, network)
	if raddr != nil {
		rsa, err := ipZoneToSockaddr(family, raddr.IP, raddr.Port, raddr.Zone)
		if err != nil {
			unix.Close(s)
			return nil, opErr(err)
		}
		if err := unix.Connect(s, rsa); err != nil {
			return fail("connect", err)
		}
		// RemoteAddr is the peer as the kernel names it, as net's: a 4-byte IP for
		// an IPv4 peer even when raddr holds net.IPv4's 16-byte form.
		fd.raddr = raddr
		if psa, err := unix.Getpeername(s); err == nil {
			if a := sockaddrToUDP(psa); a != nil {
				fd.raddr = a
			}
		}
	}
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUDP(lsa)
	}
	return &UDPConn{fd: fd}, nil
}

// udpAddrIsV4 is net's UDPAddr.family() == AF_INET: nil, a nil (or short) IP, or an
// IPv4 address.
func udpAddrIsV4(a *net.UDPAddr) bool {
	return a == nil || len(a.IP) <= net.IPv4len || a.IP.To4() != nil
}

// LocalAddr returns the local address.
func (c *UDPConn) LocalAddr() net.Addr { return c.fd.laddr }

// UDPAddr is LocalAddr as a *net.UDPAddr.
func (c *UDPConn) UDPAddr() *net.UDPAddr { a, _ := c.fd.laddr.(*net.UDPAddr); return a }

// RemoteAddr returns the connected peer (DialUDP), or nil.
func (c *UDPConn) RemoteAddr() net.Addr { return c.fd.raddr }

// Close closes the socket; operations waiting in other tasks fail with net.ErrClosed.
//
// On the io_uring backend, a socket closed while a task waits on it keeps its address
// for a moment after Close returns (normally a few milliseconds): the kernel lets the
// socket go when the cancelled readiness poll completes on the thread that armed it. A
// program that binds the same address again at once may get EADDRINUSE there, and should
// retry for a moment. epoll frees it before Close returns.
func (c *UDPConn) Close() error {
	if err := c.fd.Close(); err != nil {
		return c.fd.dgramError("close", "close", nil, err)
	}
	return nil
}

func (c *UDPConn) sockaddr(addr *net.UDPAddr) (unix.Sockaddr, error) {
	if c.fd.raddr != nil {
		// As net.UDPConn.WriteTo: a connected socket sends to its peer only (the
		// kernel would send to addr).
		return nil, c.fd.dgramError("write", "sendto", udpDest(addr), net.ErrWriteToConnected)
	}
	if addr == nil {
		return nil, c.fd.dgramError("write", "sendto", nil, errMissingAddress)
	}
	family := int(c.fd.family)
	ip := addr.IP
	if family == unix.AF_INET6 && ip.To4() != nil {
		ip = ip.To16() // a v4-mapped address on a dual-stack socket
	}
	sa, err := ipZoneToSockaddr(family, ip, addr.Port, addr.Zone)
	if err != nil {
		return nil, c.fd.dgramError("write", "sendto", addr, err)
	}
	return sa, nil
}

// SendTo returns a future that sends p as one datagram to addr. On a socket made by
// DialUDP it fails with net.ErrWriteToConnected, as net.UDPConn.WriteTo does.
func (c *UDPConn) SendTo(p []byte, addr *net.UDPAddr) Future[Result[int]] {
	sa, err := c.sockaddr(addr)
	return &sendToFuture{fd: c.fd, p: p, sa: sa, dest: udpDest(addr), err: err}
}

// Send returns a future that sends p as one datagram to the connected peer.
func (c *UDPConn) Send(p []byte) Future[Result[int]] { return &sendToFuture{fd: c.fd, p: p} }

// RecvFrom returns a future of the next datagram, stored in p (truncated to len(p)),
// and its sender. Dropped while waiting, it has consumed nothing.
func (c *UDPConn) RecvFrom(p []byte) Future[Result[Datagram[*net.UDPAddr]]] {
	return &recvFromFuture[*net.UDPAddr]{fd: c.fd, p: p, conv: sockaddrToUDP}
}

// PeekFrom is RecvFrom without consuming the datagram.
func (c *UDPConn) PeekFrom(p []byte) Future[Result[Datagram[*net.UDPAddr]]] {
	return &recvFromFuture[*net.UDPAddr]{fd: c.fd, p: p, peek: true, conv: sockaddrToUDP}
}

// Recv returns a future of the next datagram's size, stored in p (from the connected
// peer only).
func (c *UDPConn) Recv(p []byte) Future[Result[int]] { return &readFuture{fd: c.fd, p: p} }

// Readable returns a future that is ready when a datagram can be received.
func (c *UDPConn) Readable() Future[error] { return &readyFuture2{fd: c.fd, d: dirRead} }

// Writable returns a future that is ready when a datagram can be sent.
func (c *UDPConn) Writable() Future[error] { return &readyFuture2{fd: c.fd, d: dirWrite} }

func (c *UDPConn) setInt(level, opt, v int) error {
	return c.fd.opError("set", "setsockopt", c.fd.control(func(fd int) error {
		return unix.SetsockoptInt(fd, level, opt, v)
	}))
}

// SetBroadcast sets SO_BROADCAST: whether datagrams may be sent to a broadcast address.
func (c *UDPConn) SetBroadcast(on bool) error {
	return c.setInt(unix.SOL_SOCKET, unix.SO_BROADCAST, boolInt(on))
}

// SetTTL sets the IP time to live (IPv4) or unicast hop limit (IPv6). On an IPv6 socket
// it sets both, so that it also applies to what a dual-stack socket (ListenUDP("udp",
// nil)) sends to IPv4 addresses.
func (c *UDPConn) SetTTL(ttl int) error {
	if c.fd.family == unix.AF_INET6 {
		return c.fd.setTTL6(ttl)
	}
	return c.setInt(unix.IPPROTO_IP, unix.IP_TTL, ttl)
}

// SetReadBuffer sets SO_RCVBUF.
func (c *UDPConn) SetReadBuffer(bytes int) error {
	return c.setInt(unix.SOL_SOCKET, unix.SO_RCVBUF, bytes)
}

// SetWriteBuffer sets SO_SNDBUF.
func (c *UDPConn) SetWriteBuffer(bytes int) error {
	return c.setInt(unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

// SetMulticastLoopback sets whether multicast datagrams sent by this socket are looped
// back to local listeners. On an IPv6 socket it sets the IPv4 option as well (best
// effort), which governs what a dual-stack socket sends to IPv4 groups.
func (c *UDPConn) SetMulticastLoopback(on bool) error {
	if c.fd.family == unix.AF_INET6 {
		return c.fd.opError("set", "setsockopt", c.fd.control(func(fd int) error {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP, boolInt(on)); err != nil {
				return err
			}
			setMulticastLoopV4(fd, on) // see netFD.setTTL6 for why IPv4 too
			return nil
		}))
	}
	return c.fd.opError("set", "setsockopt", c.fd.control(func(fd int) error {
		return setMulticastLoopV4(fd, on)
	}))
}

// JoinGroup joins the multicast group on ifi (nil: the system's choice). The group's
// family must match the socket's: an IPv4 group on an AF_INET socket (IP_ADD_MEMBERSHIP),
// an IPv6 group on an AF_INET6 one (IPV6_JOIN_GROUP).
func (c *UDPConn) JoinGroup(ifi *net.Interface, group net.IP) error {
	return c.membership(ifi, group, true)
}

// LeaveGroup leaves a group joined with JoinGroup.
func (c *UDPConn) LeaveGroup(ifi *net.Interface, group net.IP) error {
	return c.membership(ifi, group, false)
}

func (c *UDPConn) membership(ifi *net.Interface, group net.IP, join bool) error {
	if group == nil || !group.IsMulticast() {
		return c.fd.opError("set", "setsockopt", &net.AddrError{Err: "not a multicast address", Addr: group.String()})
	}
	err := c.fd.control(func(fd int) error {
		if g4 := group.To4(); g4 != nil && c.fd.family == unix.AF_INET {
			return joinGroupV4(fd, ifi, g4, join)
		}
		if c.fd.family != unix.AF_INET6 || group.To4() != nil {
			return &net.AddrError{Err: "multicast group family does not match the socket", Addr: group.String()}
		}
		mreq := &unix.IPv6Mreq{}
		copy(mreq.Multiaddr[:], group.To16())
		if ifi != nil {
			mreq.Interface = uint32(ifi.Index)
		}
		opt := unix.IPV6_JOIN_GROUP
		if !join {
			opt = unix.IPV6_LEAVE_GROUP
		}
		return unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, opt, mreq)
	})
	return c.fd.opError("set", "setsockopt", err)
}
