//go:build darwin || freebsd

package blitzio

import (
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// newSocket opens a non-blocking, close-on-exec socket. macOS has no SOCK_NONBLOCK, so
// the flags are set after socket(2) (under syscall.ForkLock, so that a concurrent
// fork/exec does not inherit it), and SO_NOSIGPIPE stands beside MSG_NOSIGNAL.
func newSocket(family, sotype, proto int) (int, error) {
	unixForkLock.RLock()
	fd, err := unix.Socket(family, sotype, proto)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	unixForkLock.RUnlock()
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := setupBSDSocket(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func setupBSDSocket(fd int) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_NOSIGPIPE, 1)
	return nil
}

// sysAccept accepts a connection as a non-blocking, close-on-exec socket.
func sysAccept(fd int) (int, unix.Sockaddr, error) {
	unixForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	unixForkLock.RUnlock()
	if err != nil {
		return -1, nil, err
	}
	if err := setupBSDSocket(nfd); err != nil {
		unix.Close(nfd)
		return -1, nil, unix.EINTR // retried: the next connection is taken instead
	}
	return nfd, sa, nil
}

// joinGroupV4 joins or leaves an IPv4 multicast group. The BSDs take an ip_mreq, which
// names the interface by one of its IPv4 addresses (INADDR_ANY: the system's choice).
func joinGroupV4(fd int, ifi *net.Interface, g4 net.IP, join bool) error {
	mreq := &unix.IPMreq{}
	copy(mreq.Multiaddr[:], g4)
	if ifi != nil {
		addrs, err := ifi.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				copy(mreq.Interface[:], ipn.IP.To4())
				break
			}
		}
	}
	opt := unix.IP_ADD_MEMBERSHIP
	if !join {
		opt = unix.IP_DROP_MEMBERSHIP
	}
	return unix.SetsockoptIPMreq(fd, unix.IPPROTO_IP, opt, mreq)
}

// setMulticastLoopV4 sets IP_MULTICAST_LOOP, a one-byte option on the BSDs.
func setMulticastLoopV4(fd int, on bool) error {
	return unix.SetsockoptByte(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, byte(boolInt(on)))
}

// sendStream is one send of p on a connected socket (SIGPIPE is off: setupBSDSocket).
func sendStream(fd int, p []byte) (int, error) {
	return unix.SendmsgN(fd, p, nil, nil, unix.MSG_NOSIGNAL)
}

// recvFromAddrPort is one recvfrom(2) with the sender as a netip.AddrPort.
func recvFromAddrPort(fd int, p []byte) (int, netip.AddrPort, error) {
	n, sa, err := unix.Recvfrom(fd, p, 0)
	if err != nil {
		return n, netip.AddrPort{}, err
	}
	return n, sockaddrAddrPort(sa), nil
}

// sendToAddrPort sends p as one datagram to addr on a socket of family.
func sendToAddrPort(fd int, p []byte, family int, addr netip.AddrPort, zone uint32) (int, error) {
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().Unmap().As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16(), ZoneId: zone}
	}
	return unix.SendmsgN(fd, p, nil, sa, unix.MSG_NOSIGNAL)
}
