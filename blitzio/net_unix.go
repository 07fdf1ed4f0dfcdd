//go:build linux || darwin || freebsd

package blitzio

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Unix domain sockets: stream (ListenUnix, DialUnix) and datagram (ListenUnixgram). A
// name starting with '@' is a Linux abstract address (no file is created).

func sockaddrToUnix(sa unix.Sockaddr, network string) *net.UnixAddr {
	if s, ok := sa.(*unix.SockaddrUnix); ok && s.Name != "" {
		return &net.UnixAddr{Name: s.Name, Net: network}
	}
	return &net.UnixAddr{Net: network}
}

// unixSocket opens a Unix socket of sotype bound to laddr and connected to raddr (each
// if not nil). control, if not nil, is a Dialer's Control: called before the bind and
// the connect, as net's.
func unixSocket(op, network string, sotype int, laddr, raddr *net.UnixAddr, control func(network, address string, c syscall.RawConn) error) (*netFD, error) {
	opErr := func(err error) error {
		var a net.Addr
		if raddr != nil {
			a = raddr
		} else if laddr != nil {
			a = laddr
		}
		return &net.OpError{Op: op, Net: network, Addr: a, Err: err}
	}
	s, err := newSocket(unix.AF_UNIX, sotype, 0)
	if err != nil {
		return nil, opErr(err)
	}
	if control != nil {
		caddr := ""
		if raddr != nil {
			caddr = raddr.Name
		} else if laddr != nil {
			caddr = laddr.Name
		}
		if err := runControl(control, network, caddr, s); err != nil {
			return nil, opErr(err) // runControl closed s
		}
	}
	// syscall's Bind and Connect, not x/sys/unix's: its SockaddrUnix refuses an
	// abstract name that fills sun_path (it keeps a byte for a NUL that an abstract
	// name does not have), which net's, built on syscall's, accepts.
	if laddr != nil && laddr.Name != "" {
		if err := syscall.Bind(s, &syscall.SockaddrUnix{Name: laddr.Name}); err != nil {
			unix.Close(s)
			return nil, opErr(os.NewSyscallError("bind", err))
		}
	}
	fd := newNetFD(s, unix.AF_UNIX, sotype, network)
	if raddr != nil {
		if err := syscall.Connect(s, &syscall.SockaddrUnix{Name: raddr.Name}); err != nil {
			// A full backlog is EAGAIN for Unix sockets: reported, as Go's net does.
			unix.Close(s)
			return nil, opErr(os.NewSyscallError("connect", err))
		}
		// RemoteAddr is the listener's name as the kernel reports it, as net's: the
		// name it bound, whatever spelling of the path the caller dialed.
		fd.raddr = raddr
		if psa, err := unix.Getpeername(s); err == nil {
			if a := sockaddrToUnix(psa, network); a.Name != "" {
				fd.raddr = a
			}
		}
	}
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToUnix(lsa, network)
	}
	return fd, nil
}

// UnixListener is a listening Unix stream socket.
type UnixListener struct {
	fd     *netFD
	unlink string
	// closing: as TCPListener's.
	closing atomic.Bool
}

// ListenUnix listens on laddr (network "unix"), like net.ListenUnix. Close removes the
// socket file it created (not for an abstract '@' name). A nil laddr or an empty Name
// fails with a missing address error (net.ListenUnix would bind an empty Name to an
// abstract address the kernel picks).
func ListenUnix(network string, laddr *net.UnixAddr) (*UnixListener, error) {
	if network != "unix" {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: net.UnknownNetworkError(network)}
	}
	if laddr == nil || laddr.Name == "" {
		return nil, &net.OpError{Op: "listen", Net: network, Err: errMissingAddress}
	}
	fd, err := unixSocket("listen", network, unix.SOCK_STREAM, laddr, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := unix.Listen(int(fd.fd), listenBacklog()); err != nil {
		unix.Close(int(fd.fd))
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: os.NewSyscallError("listen", err)}
	}
	l := &UnixListener{fd: fd}
	if laddr.Name[0] != '@' {
		l.unlink = laddr.Name
	}
	return l, nil
}

// Addr returns the listener's address.
func (l *UnixListener) Addr() net.Addr { return l.fd.laddr }

// Close stops listening and removes the socket file.
//
// On the io_uring backend, a listener on an abstract name ('@') closed while a task waits
// on it keeps its name for a moment after Close returns (normally a few milliseconds): the kernel lets the
// socket go when the cancelled readiness poll completes on the thread that armed it. A
// program that binds the same address again at once may get EADDRINUSE there, and should
// retry for a moment. epoll frees it before Close returns.
func (l *UnixListener) Close() error {
	// The first Close claims the closing before it wakes the accepts: see
	// TCPListener.Close.
	if !l.closing.CompareAndSwap(false, true) {
		return l.fd.opError("close", "close", net.ErrClosed)
	}
	l.fd.stopListening()
	if err := l.fd.Close(); err != nil {
		return l.fd.opError("close", "close", err)
	}
	if l.unlink != "" {
		os.Remove(l.unlink)
	}
	return nil
}

// Accept returns a future of the next connection; dropped while waiting it loses none.
func (l *UnixListener) Accept() Future[Result[*UnixStream]] { return &unixAcceptFuture{l: l} }

type unixAcceptFuture struct {
	l *UnixListener
	w Waker
}

func (f *unixAcceptFuture) Poll(cx *Context) (Result[*UnixStream], bool) {
	nfd, err, ok := f.l.fd.pollIO(cx, dirRead, &f.w, func(fd int) (int, error) {
		n, _, err := sysAccept(fd)
		if err == unix.ECONNABORTED {
			return -1, unix.EINTR
		}
		if err == unix.EINVAL && f.l.closing.Load() {
			return -1, net.ErrClosed // woken by Close's shutdown(2)
		}
		return n, err
	})
	if !ok {
		return Result[*UnixStream]{}, false
	}
	f.w = Waker{}
	if err != nil {
		return Result[*UnixStream]{Err: f.l.fd.opError("accept", "accept4", err)}, true
	}
	c := newNetFD(nfd, unix.AF_UNIX, unix.SOCK_STREAM, "unix")
	c.laddr = f.l.fd.laddr
	if rsa, err := unix.Getpeername(nfd); err == nil {
		c.raddr = sockaddrToUnix(rsa, "unix")
	}
	if _, err := c.bindTo(cx.rt); err != nil {
		unix.Close(nfd)
		return Result[*UnixStream]{Err: f.l.fd.opError("accept", "accept4", err)}, true
	}
	return Result[*UnixStream]{Value: &UnixStream{fd: c}}, true
}

func (f *unixAcceptFuture) Drop() { f.l.fd.forget(dirRead, &f.w) }

// UnixStream is a Unix stream connection; its operations are those of TCPStream.
type UnixStream struct {
	fd *netFD
}

// DialUnix connects to raddr (network "unix"). A Unix connect completes (or fails) at
// once, so this is not a future: the connection is attached to the runtime of the
// first task that uses it.
func DialUnix(network string, laddr, raddr *net.UnixAddr) (*UnixStream, error) {
	return dialUnix(network, laddr, raddr, nil)
}

func dialUnix(network string, laddr, raddr *net.UnixAddr, control func(network, address string, c syscall.RawConn) error) (*UnixStream, error) {
	if network != "unix" {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: net.UnknownNetworkError(network)}
	}
	if raddr == nil || raddr.Name == "" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errMissingAddress}
	}
	fd, err := unixSocket("dial", network, unix.SOCK_STREAM, laddr, raddr, control)
	if err != nil {
		return nil, err
	}
	return &UnixStream{fd: fd}, nil
}

// PollRead is the poll form of Read for hand-written futures and the stream helpers:
// UnixStream is a blitzio.AsyncReader.
func (s *UnixStream) PollRead(cx *Context, p []byte) (Result[int], bool) {
	var w Waker
	return s.fd.pollRead(cx, &w, p, false)
}

// PollWrite is the poll form of Write: UnixStream is an AsyncWriter.
func (s *UnixStream) PollWrite(cx *Context, p []byte) (Result[int], bool) {
	var w Waker
	if p == nil {
		p = []byte{}
	}
	return s.fd.pollWrite(cx, &w, p, nil)
}

// Read is TCPStream.Read.
func (s *UnixStream) Read(p []byte) Future[Result[int]] { return &readFuture{fd: s.fd, p: p} }

// ReadFull is TCPStream.ReadFull.
func (s *UnixStream) ReadFull(p []byte) *ReadFullFuture { return &ReadFullFuture{fd: s.fd, p: p} }

// Write is TCPStream.Write.
func (s *UnixStream) Write(p []byte) Future[Result[int]] {
	if p == nil {
		p = []byte{}
	}
	return &writeFuture{fd: s.fd, p: p}
}

// WriteAll is TCPStream.WriteAll.
func (s *UnixStream) WriteAll(p []byte) *WriteAllFuture { return &WriteAllFuture{fd: s.fd, p: p} }

// WriteVectored is TCPStream.WriteVectored.
func (s *UnixStream) WriteVectored(bufs ...[]byte) *WriteAllFuture {
	return &WriteAllFuture{fd: s.fd, bufs: bufs}
}

// Readable is TCPStream.Readable.
func (s *UnixStream) Readable() Future[error] { return &readyFuture2{fd: s.fd, d: dirRead} }

// Writable is TCPStream.Writable.
func (s *UnixStream) Writable() Future[error] { return &readyFuture2{fd: s.fd, d: dirWrite} }

// CloseWrite shuts down the writing side.
func (s *UnixStream) CloseWrite() error {
	return s.fd.opError("close", "shutdown", s.fd.shutdownWrite())
}

// CloseRead shuts down the reading side (shutdown(SHUT_RD)), as net.UnixConn.CloseRead:
// reads then end with io.EOF.
func (s *UnixStream) CloseRead() error {
	return s.fd.opError("close", "shutdown", s.fd.control(func(fd int) error { return unix.Shutdown(fd, unix.SHUT_RD) }))
}

// Close closes the connection.
func (s *UnixStream) Close() error {
	if err := s.fd.Close(); err != nil {
		return s.fd.opError("close", "close", err)
	}
	return nil
}

// LocalAddr returns the local address.
func (s *UnixStream) LocalAddr() net.Addr { return s.fd.laddr }

// RemoteAddr returns the peer's address.
func (s *UnixStream) RemoteAddr() net.Addr { return s.fd.raddr }

// UnixConn is a Unix datagram socket (network "unixgram").
type UnixConn struct {
	fd *netFD
}

// ListenUnixgram opens a Unix datagram socket bound to laddr, like net.ListenUnixgram.
// Unlike it, a nil laddr (or an empty Name) is allowed and gives an unbound socket, as
// Tokio's UnixDatagram::unbound: it can SendTo named sockets, which see its datagrams
// come from an empty Name and cannot reply.
func ListenUnixgram(network string, laddr *net.UnixAddr) (*UnixConn, error) {
	if network != "unixgram" {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: net.UnknownNetworkError(network)}
	}
	fd, err := unixSocket("listen", network, unix.SOCK_DGRAM, laddr, nil, nil)
	if err != nil {
		return nil, err
	}
	return &UnixConn{fd: fd}, nil
}

// LocalAddr returns the local address.
func (c *UnixConn) LocalAddr() net.Addr { return c.fd.laddr }

// Close closes the socket (it does not remove its file: the binder owns that name). On
// io_uring its address may stay bound for a moment after Close: see UDPConn.Close.
func (c *UnixConn) Close() error {
	if err := c.fd.Close(); err != nil {
		return c.fd.dgramError("close", "close", nil, err) // see netFD.dgramError
	}
	return nil
}

// SendTo returns a future that sends p as one datagram to addr. While addr's receive
// queue is full the future retries on a timer (0.1 ms, doubling up to 20 ms): the
// kernel wakes no unconnected sender when a receiver drains its queue.
func (c *UnixConn) SendTo(p []byte, addr *net.UnixAddr) Future[Result[int]] {
	if addr == nil || addr.Name == "" {
		var dest net.Addr
		if addr != nil {
			dest = addr
		}
		return &sendToFuture{err: c.fd.dgramError("write", "sendto", dest, errMissingAddress)}
	}
	return &sendToFuture{fd: c.fd, p: p, sa: &unix.SockaddrUnix{Name: addr.Name}, dest: addr}
}

// RecvFrom returns a future of the next datagram and its sender (an unnamed sender has
// an empty Name).
func (c *UnixConn) RecvFrom(p []byte) Future[Result[Datagram[*net.UnixAddr]]] {
	return &recvFromFuture[*net.UnixAddr]{fd: c.fd, p: p, conv: func(sa unix.Sockaddr) *net.UnixAddr {
		return sockaddrToUnix(sa, "unixgram")
	}}
}
