//go:build linux || darwin || freebsd

package blitzio

import (
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// AddrPortDatagram is a received datagram with its sender as a netip.AddrPort: how
// many bytes were stored and who sent them (see UDPConn.PollRecvFromAddrPort).
type AddrPortDatagram struct {
	N    int
	From netip.AddrPort
}

// PollRecvFromAddrPort is the poll form of RecvFrom for hand-written futures, with the
// sender as a netip.AddrPort (as net.UDPConn.ReadFromUDPAddrPort): it receives one
// datagram into p (truncated to len(p)), or leaves cx's waker registered and reports
// false. On Linux it allocates nothing per datagram. On a dual-stack socket an IPv4
// sender is reported as an IPv4-mapped IPv6 address (use netip.Addr.Unmap), as Go's net
// does.
func (c *UDPConn) PollRecvFromAddrPort(cx *Context, p []byte) (Result[AddrPortDatagram], bool) {
	var w Waker
	var from netip.AddrPort
	n, err, ok := c.fd.pollIO(cx, dirRead, &w, func(s int) (int, error) {
		var n int
		var err error
		n, from, err = recvFromAddrPort(s, p)
		return n, err
	})
	if !ok {
		return Result[AddrPortDatagram]{}, false
	}
	if err != nil {
		return Result[AddrPortDatagram]{Err: c.fd.dgramError("read", "recvfrom", nil, err)}, true
	}
	return Result[AddrPortDatagram]{Value: AddrPortDatagram{N: n, From: from}}, true
}

// PollSendToAddrPort is the poll form of SendTo for hand-written futures, with the
// destination as a netip.AddrPort (as net.UDPConn.WriteToUDPAddrPort): it sends p as
// one datagram to addr, or leaves cx's waker registered and reports false. On Linux it
// allocates nothing per datagram. An IPv4 destination on an IPv6 socket is sent to its
// IPv4-mapped address; an IPv6 one on an IPv4 socket fails with a *net.AddrError.
func (c *UDPConn) PollSendToAddrPort(cx *Context, p []byte, addr netip.AddrPort) (Result[int], bool) {
	if c.fd.raddr != nil { // as net.UDPConn.WriteToUDPAddrPort
		return Result[int]{Err: c.sendToError(addr, net.ErrWriteToConnected)}, true
	}
	if !addr.IsValid() {
		return Result[int]{Err: c.sendToError(addr, errMissingAddress)}, true
	}
	ip := addr.Addr()
	if c.fd.family == unix.AF_INET && !ip.Unmap().Is4() {
		return Result[int]{Err: c.sendToError(addr, &net.AddrError{Err: "non-IPv4 address", Addr: ip.String()})}, true
	}
	var zone uint32
	if z := ip.Zone(); z != "" && c.fd.family == unix.AF_INET6 {
		id, err := zoneIndex(z)
		if err != nil {
			return Result[int]{Err: c.sendToError(addr, err)}, true
		}
		zone = id
	}
	var w Waker
	n, err, ok := c.fd.pollIO(cx, dirWrite, &w, func(s int) (int, error) {
		return sendToAddrPort(s, p, int(c.fd.family), addr, zone)
	})
	if !ok {
		return Result[int]{}, false
	}
	if err != nil {
		return Result[int]{Err: c.sendToError(addr, err)}, true
	}
	return Result[int]{Value: n}, true
}

// sendToError is the error of a failed PollSendToAddrPort as net.UDPConn's
// WriteToUDPAddrPort builds it: the system call is sendto (as the one made), Source
// the local address and Addr the destination (see netFD.dgramError). The destination
// is converted only here, on the error path, so a send allocates nothing.
func (c *UDPConn) sendToError(addr netip.AddrPort, err error) error {
	var dest net.Addr
	if addr.IsValid() {
		dest = net.UDPAddrFromAddrPort(addr)
	}
	return c.fd.dgramError("write", "sendto", dest, err)
}

// zoneIndex turns an IPv6 zone (an interface name or number) into its index.
func zoneIndex(zone string) (uint32, error) {
	if id, err := strconv.ParseUint(zone, 10, 32); err == nil { // see ipZoneToSockaddr
		return uint32(id), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, &net.AddrError{Err: "unknown zone", Addr: zone}
	}
	return uint32(ifi.Index), nil
}

// sockaddrAddrPort converts a unix.Sockaddr (the portable, allocating path) to a
// netip.AddrPort.
func sockaddrAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.ZoneId != 0 {
			a = a.WithZone(zoneName(sa.ZoneId))
		}
		return netip.AddrPortFrom(a, uint16(sa.Port))
	}
	return netip.AddrPort{}
}
