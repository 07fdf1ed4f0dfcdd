//go:build linux

package blitzio

import (
	"net"
	"os"

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
