//go:build linux || darwin || freebsd

package blitzio

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sockets made by package net (or inherited: systemd's socket activation, a parent
// handing its listener to the child that replaces it) are taken over with the FromNet
// functions, as Tokio's from_std: the net value is closed, and the blitzio one owns a
// duplicate of its descriptor, registered with the runtime of the first task that uses
// it. For an inherited descriptor, net.FileListener or net.FileConn turns the
// *os.File into the net value first. On error the net value is left open, its
// owner's.

// stdSocket is what the FromNet functions take: any of package net's sockets.
type stdSocket interface {
	SyscallConn() (syscall.RawConn, error)
	Close() error
}

// adopt duplicates c's descriptor (close-on-exec, non-blocking), checks that it is a
// socket of sotype (listening or not, as listening says; a Unix socket or an IP one,
// as unixFamily says), closes c, and returns the duplicate with its address family.
// On error c is left as it was.
func adopt(what string, c stdSocket, sotype int, listening, unixFamily bool) (fd, family int, err error) {
	fail := func(err error) (int, int, error) {
		return -1, 0, fmt.Errorf("blitzio: %s: %w", what, err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fail(err)
	}
	fd = -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return fail(err)
	}
	if derr != nil {
		return fail(os.NewSyscallError("fcntl", derr))
	}
	check := func() error {
		typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		if typ != sotype {
			return errors.New("the socket is not of the kind asked for")
		}
		acc, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		if (acc != 0) != listening {
			if listening {
				return errors.New("the socket is not listening")
			}
			return errors.New("the socket is a listener")
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return os.NewSyscallError("getsockname", err)
		}
		switch sa.(type) {
		case *unix.SockaddrInet4:
			family = unix.AF_INET
		case *unix.SockaddrInet6:
			family = unix.AF_INET6
		case *unix.SockaddrUnix:
			family = unix.AF_UNIX
		default:
			return errors.New("the socket's address family is not supported")
		}
		if (family == unix.AF_UNIX) != unixFamily {
			return errors.New("the socket's address family is not the one asked for")
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			return os.NewSyscallError("setnonblock", err)
		}
		return nil
	}
	if err := check(); err != nil {
		unix.Close(fd)
		return fail(err)
	}
	if ul, ok := c.(*net.UnixListener); ok {
		// Only now that the socket is taken: a listener refused above stays as it
		// was, its owner's, and its Close still removes its socket file.
		ul.SetUnlinkOnClose(false)
	}
	c.Close()
	return fd, family, nil
}

// TCPListenerFromNet takes over l: l is closed, and the listener returned serves its
// socket (a duplicate of its descriptor) with the options it had.
func TCPListenerFromNet(l *net.TCPListener) (*TCPListener, error) {
	if l == nil {
		return nil, errors.New("blitzio: TCPListenerFromNet of a nil listener")
	}
	s, family, err := adopt("TCPListenerFromNet", l, unix.SOCK_STREAM, true, false)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, "tcp")
	fd.shared = true // an inherited socket may be open elsewhere (see netFD.shared)
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToTCP(lsa)
	}
	return &TCPListener{fd: fd, keepAlive: defaultKeepAlive}, nil
}

// TCPStreamFromNet takes over c, a connected TCP socket: c is closed, and the stream
// returned serves its connection, with the options it had and the bytes it had not
// read.
func TCPStreamFromNet(c *net.TCPConn) (*TCPStream, error) {
	if c == nil {
		return nil, errors.New("blitzio: TCPStreamFromNet of a nil connection")
	}
	s, family, err := adopt("TCPStreamFromNet", c, unix.SOCK_STREAM, false, false)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, "tcp")
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToTCP(lsa)
	}
	if rsa, err := unix.Getpeername(s); err == nil {
		fd.raddr = sockaddrToTCP(rsa)
	}
	return &TCPStream{fd: fd}, nil
}

// UDPConnFromNet takes over c, bound or connected: c is closed, and the socket
// returned serves it.
func UDPConnFromNet(c *net.UDPConn) (*UDPConn, error) {
	if c == nil {
		return nil, errors.New("blitzio: UDPConnFromNet of a nil connection")
	}
	s, family, err := adopt("UDPConnFromNet", c, unix.SOCK_DGRAM, false, false)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_DGRAM, "udp")
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUDP(lsa)
	}
	if rsa, err := unix.Getpeername(s); err == nil {
		fd.raddr = sockaddrToUDP(rsa)
	}
	return &UDPConn{fd: fd}, nil
}

// UnixListenerFromNet takes over l, a Unix stream listener: l is closed without
// removing its socket file, and the listener returned does not remove it either (the
// file is the caller's, as for a listener from net.FileListener).
func UnixListenerFromNet(l *net.UnixListener) (*UnixListener, error) {
	if l == nil {
		return nil, errors.New("blitzio: UnixListenerFromNet of a nil listener")
	}
	s, family, err := adopt("UnixListenerFromNet", l, unix.SOCK_STREAM, true, true)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, "unix")
	fd.shared = true // see TCPListenerFromNet
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUnix(lsa, "unix")
	}
	return &UnixListener{fd: fd}, nil
}

// UnixStreamFromNet takes over c, a connected Unix stream socket: c is closed, and
// the stream returned serves it.
func UnixStreamFromNet(c *net.UnixConn) (*UnixStream, error) {
	if c == nil {
		return nil, errors.New("blitzio: UnixStreamFromNet of a nil connection")
	}
	s, family, err := adopt("UnixStreamFromNet", c, unix.SOCK_STREAM, false, true)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, "unix")
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUnix(lsa, "unix")
	}
	if rsa, err := unix.Getpeername(s); err == nil {
		fd.raddr = sockaddrToUnix(rsa, "unix")
	}
	return &UnixStream{fd: fd}, nil
}

// UnixConnFromNet takes over c, a Unix datagram socket ("unixgram"): c is closed, and
// the socket returned serves it.
func UnixConnFromNet(c *net.UnixConn) (*UnixConn, error) {
	if c == nil {
		return nil, errors.New("blitzio: UnixConnFromNet of a nil connection")
	}
	s, family, err := adopt("UnixConnFromNet", c, unix.SOCK_DGRAM, false, true)
	if err != nil {
		return nil, err
	}
	fd := newNetFD(s, family, unix.SOCK_DGRAM, "unixgram")
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUnix(lsa, "unixgram")
	}
	if rsa, err := unix.Getpeername(s); err == nil {
		fd.raddr = sockaddrToUnix(rsa, "unixgram")
	}
	return &UnixConn{fd: fd}, nil
}

// file returns a duplicate of fd's descriptor as an *os.File (close-on-exec), as
// package net's File methods: for a child process (os/exec's ExtraFiles, Command's), or
// net.FileListener and net.FileConn. The duplicate shares the socket, its options and
// its non-blocking mode, which must stay on: the runtime's reads rely on it.
func (fd *netFD) file(name string) (*os.File, error) {
	var nfd int
	err := fd.control(func(s int) error {
		var err error
		nfd, err = unix.FcntlInt(uintptr(s), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("fcntl", err)
		}
		return nil
	})
	if err != nil {
		return nil, fd.opError("file", "fcntl", err)
	}
	fd.setShared()
	return os.NewFile(uintptr(nfd), name), nil
}

func (fd *netFD) fileName() string {
	a := fd.localAddr()
	if fd.raddr != nil {
		return fd.net + ":" + addrString(a) + "->" + fd.raddr.String()
	}
	return fd.net + ":" + addrString(a)
}

func addrString(a net.Addr) string {
	if a == nil {
		return "<nil>"
	}
	return a.String()
}

// File returns a duplicate of the listener's descriptor, as net.TCPListener.File: to
// hand the socket to a child process (a graceful restart), where net.FileListener (or
// TCPListenerFromNet after it) serves it. Closing one does not close the other: once
// File has been called, Close leaves the socket listening for the duplicate's holders
// (as does the Close of a listener from TCPListenerFromNet, whose socket systemd, say,
// also holds).
func (l *TCPListener) File() (*os.File, error) { return l.fd.file(l.fd.fileName()) }

// File returns a duplicate of the connection's descriptor; see TCPListener.File.
func (s *TCPStream) File() (*os.File, error) { return s.fd.file(s.fd.fileName()) }

// File returns a duplicate of the socket's descriptor; see TCPListener.File.
func (c *UDPConn) File() (*os.File, error) { return c.fd.file(c.fd.fileName()) }

// File returns a duplicate of the listener's descriptor; see TCPListener.File.
func (l *UnixListener) File() (*os.File, error) { return l.fd.file(l.fd.fileName()) }

// File returns a duplicate of the connection's descriptor; see TCPListener.File.
func (s *UnixStream) File() (*os.File, error) { return s.fd.file(s.fd.fileName()) }

// File returns a duplicate of the socket's descriptor; see TCPListener.File.
func (c *UnixConn) File() (*os.File, error) { return c.fd.file(c.fd.fileName()) }
