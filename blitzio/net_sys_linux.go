//go:build linux

package blitzio

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpKeepIdle is the option for the keep-alive idle time.
const tcpKeepIdle = unix.TCP_KEEPIDLE

// newSocket opens a non-blocking, close-on-exec socket in one system call.
func newSocket(family, sotype, proto int) (int, error) {
	fd, err := unix.Socket(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	return fd, nil
}

// sysAccept accepts a connection as a non-blocking, close-on-exec socket.
func sysAccept(fd int) (int, unix.Sockaddr, error) {
	return unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
}

// joinGroupV4 joins or leaves an IPv4 multicast group (ip_mreqn: by interface index).
func joinGroupV4(fd int, ifi *net.Interface, g4 net.IP, join bool) error {
	mreq := &unix.IPMreqn{}
	copy(mreq.Multiaddr[:], g4)
	if ifi != nil {
		mreq.Ifindex = int32(ifi.Index)
	}
	opt := unix.IP_ADD_MEMBERSHIP
	if !join {
		opt = unix.IP_DROP_MEMBERSHIP
	}
	return unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, opt, mreq)
}

func setMulticastLoopV4(fd int, on bool) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, boolInt(on))
}

// rawSockaddr is the scratch a datagram system call fills or reads: pooled, so that it
// is not allocated per datagram (a local would escape through the system call).
type rawSockaddr struct {
	any unix.RawSockaddrAny
	len uint32
}

var rawSockaddrs = sync.Pool{New: func() any { return new(rawSockaddr) }}

// bufPtr is the address of p's first byte for a system call (0 for an empty p).
func bufPtr(p []byte) uintptr {
	if len(p) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&p[0]))
}

// sendStream is one send of p on a connected socket with MSG_NOSIGNAL: sendto(2) with
// no address, which spares the kernel the msghdr and iovec that sendmsg(2) copies in.
func sendStream(fd int, p []byte) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)),
		unix.MSG_NOSIGNAL, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// recvFromAddrPort is one recvfrom(2) with the sender as a netip.AddrPort, without the
// allocations of unix.Recvfrom (its sockaddr scratch and the Sockaddr it returns).
func recvFromAddrPort(fd int, p []byte) (int, netip.AddrPort, error) {
	rs := rawSockaddrs.Get().(*rawSockaddr)
	defer rawSockaddrs.Put(rs)
	rs.len = unix.SizeofSockaddrAny
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), bufPtr(p), uintptr(len(p)), 0,
		uintptr(unsafe.Pointer(&rs.any)), uintptr(unsafe.Pointer(&rs.len)))
	if errno != 0 {
		return 0, netip.AddrPort{}, errno
	}
	var from netip.AddrPort
	switch rs.any.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rs.any))
		port := (*[2]byte)(unsafe.Pointer(&sa.Port))
		from = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(port[0])<<8|uint16(port[1]))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rs.any))
		port := (*[2]byte)(unsafe.Pointer(&sa.Port))
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			a = a.WithZone(zoneName(sa.Scope_id))
		}
		from = netip.AddrPortFrom(a, uint16(port[0])<<8|uint16(port[1]))
	}
	return int(n), from, nil
}

// sendToAddrPort sends p as one datagram to addr (zone: its IPv6 scope index) on a
// socket of family, with MSG_NOSIGNAL, without allocating a unix.Sockaddr.
func sendToAddrPort(fd int, p []byte, family int, addr netip.AddrPort, zone uint32) (int, error) {
	rs := rawSockaddrs.Get().(*rawSockaddr)
	defer rawSockaddrs.Put(rs)
	rs.any = unix.RawSockaddrAny{}
	var salen uintptr
	if family == unix.AF_INET {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rs.any))
		sa.Family = unix.AF_INET
		port := (*[2]byte)(unsafe.Pointer(&sa.Port))
		port[0], port[1] = byte(addr.Port()>>8), byte(addr.Port())
		sa.Addr = addr.Addr().Unmap().As4()
		salen = unix.SizeofSockaddrInet4
	} else {
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rs.any))
		sa.Family = unix.AF_INET6
		port := (*[2]byte)(unsafe.Pointer(&sa.Port))
		port[0], port[1] = byte(addr.Port()>>8), byte(addr.Port())
		sa.Addr = addr.Addr().As16()
		sa.Scope_id = zone
		salen = unix.SizeofSockaddrInet6
	}
	n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), bufPtr(p), uintptr(len(p)), unix.MSG_NOSIGNAL,
		uintptr(unsafe.Pointer(&rs.any)), salen)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
