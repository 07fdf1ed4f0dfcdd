//go:build linux || darwin || freebsd

package blitzio

import (
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// readOnce is one read(2) (or a MSG_PEEK receive) into p, with Go's stream semantics:
// 0 bytes from a non-empty p is io.EOF.
func (fd *netFD) pollRead(cx *Context, w *Waker, p []byte, peek bool) (Result[int], bool) {
	if len(p) == 0 {
		// As net.Conn.Read: no system call, but a closed socket still reports
		// net.ErrClosed (internal/poll takes its read lock before it looks at len(p)).
		if fd.closed.Load() {
			return Result[int]{Err: fd.opError("read", "read", net.ErrClosed)}, true
		}
		return Result[int]{}, true
	}
	// TCP only (see pollIOShort): a short peek drains nothing, and a Unix stream read
	// also stops early after a message that carried descriptors or other credentials,
	// with more bytes queued behind it and no further edge to come for them.
	want := 0
	if !peek && fd.sotype == unix.SOCK_STREAM && (fd.family == unix.AF_INET || fd.family == unix.AF_INET6) {
		want = len(p)
	}
	n, err, ok := fd.pollIOShort(cx, dirRead, w, func(s int) (int, error) {
		if peek {
			n, _, err := unix.Recvfrom(s, p, unix.MSG_PEEK)
			return n, err
		}
		return unix.Read(s, p)
	}, want)
	if !ok {
		return Result[int]{}, false
	}
	*w = Waker{}
	if err != nil {
		sys := "read"
		if peek {
			sys = "recvfrom"
		}
		return Result[int]{Err: fd.opError("read", sys, err)}, true
	}
	if n == 0 && fd.sotype == unix.SOCK_STREAM {
		return Result[int]{Err: io.EOF}, true
	}
	return Result[int]{Value: n}, true
}

// pollWrite is one send with MSG_NOSIGNAL (a peer that has gone away gives EPIPE, never
// SIGPIPE) of p, or of bufs when p is nil (sendmsg with an iovec per buffer).
func (fd *netFD) pollWrite(cx *Context, w *Waker, p []byte, bufs [][]byte) (Result[int], bool) {
	if p != nil && len(p) == 0 {
		// As net.Conn.Write: a closed socket reports net.ErrClosed even for no bytes.
		if fd.closed.Load() {
			return Result[int]{Err: fd.opError("write", "write", net.ErrClosed)}, true
		}
		return Result[int]{}, true
	}
	n, err, ok := fd.pollIO(cx, dirWrite, w, func(s int) (int, error) {
		if p != nil {
			return sendStream(s, p)
		}
		return unix.SendmsgBuffers(s, bufs, nil, nil, unix.MSG_NOSIGNAL)
	})
	if !ok {
		return Result[int]{}, false
	}
	*w = Waker{}
	if err != nil {
		// Named as package net names them (its Write calls write, its vectored write
		// writev), whatever call made the send here (sendto or sendmsg, for
		// MSG_NOSIGNAL): code that reads the error's Op or syscall sees what it sees
		// from net.
		op := "write"
		if p == nil {
			op = "writev"
		}
		return Result[int]{Value: max(n, 0), Err: fd.opError(op, op, err)}, true
	}
	return Result[int]{Value: n}, true
}

// PollRead is the poll form of Read for hand-written futures (no allocation): it reads
// into p what is available, or leaves cx's waker registered and reports false.
func (s *TCPStream) PollRead(cx *Context, p []byte) (Result[int], bool) {
	var w Waker
	return s.fd.pollRead(cx, &w, p, false)
}

// PollWrite is the poll form of Write for hand-written futures (no allocation).
func (s *TCPStream) PollWrite(cx *Context, p []byte) (Result[int], bool) {
	var w Waker
	if p == nil {
		p = []byte{}
	}
	return s.fd.pollWrite(cx, &w, p, nil)
}

// Read returns a future that reads up to len(p) bytes into p: as many as are available
// once some are. End of stream is io.EOF. Dropped before it finishes, it has consumed
// nothing. The connection holds no buffer while it waits: the bytes go from the kernel
// straight into p.
func (s *TCPStream) Read(p []byte) Future[Result[int]] { return &readFuture{fd: s.fd, p: p} }

// Peek is Read without consuming the bytes (MSG_PEEK): the next Read returns them again.
func (s *TCPStream) Peek(p []byte) Future[Result[int]] {
	return &readFuture{fd: s.fd, p: p, peek: true}
}

// ReadFull returns a future that fills p (Tokio's read_exact): its value is len(p), or
// the count read before the error (io.ErrUnexpectedEOF when the stream ended part way,
// io.EOF when it ended before the first byte), as io.ReadFull reports. Dropped part way,
// the bytes already read are in p[:ReadFullFuture.N()].
func (s *TCPStream) ReadFull(p []byte) *ReadFullFuture { return &ReadFullFuture{fd: s.fd, p: p} }

// Write returns a future that writes some of p, at least one byte unless p is empty or
// it fails, and reports how many (a short count is not an error: see WriteAll).
func (s *TCPStream) Write(p []byte) Future[Result[int]] {
	if p == nil {
		p = []byte{}
	}
	return &writeFuture{fd: s.fd, p: p}
}

// WriteAll returns a future that writes all of p; its value is len(p), or the count
// written before the error. Dropped part way, the bytes written so far are counted by
// WriteAllFuture.Written (the rest were not sent): nothing half-done is reported done.
func (s *TCPStream) WriteAll(p []byte) *WriteAllFuture { return &WriteAllFuture{fd: s.fd, p: p} }

// WriteVectored returns a future that writes the buffers in order with one sendmsg per
// readiness (no copy into a joined buffer), all of them, like WriteAll: its value is
// the total written.
func (s *TCPStream) WriteVectored(bufs ...[]byte) *WriteAllFuture {
	return &WriteAllFuture{fd: s.fd, bufs: bufs}
}

// Readable returns a future that is ready (nil) when the stream has bytes to read, an
// end of stream or an error pending, or fails if the stream is closed. It consumes
// nothing; a Read after it may still find nothing (another reader took the bytes).
func (s *TCPStream) Readable() Future[error] { return &readyFuture2{fd: s.fd, d: dirRead} }

// Writable is Readable for writing: ready when a write would make progress.
func (s *TCPStream) Writable() Future[error] { return &readyFuture2{fd: s.fd, d: dirWrite} }

// CloseWrite shuts down the writing side (shutdown(SHUT_WR)): the peer reads io.EOF
// after the bytes already sent; this side can still read.
func (s *TCPStream) CloseWrite() error {
	return s.fd.opError("close", "shutdown", s.fd.shutdownWrite())
}

// CloseRead shuts down the reading side (shutdown(SHUT_RD)).
func (s *TCPStream) CloseRead() error {
	return s.fd.opError("close", "shutdown", s.fd.control(func(fd int) error { return unix.Shutdown(fd, unix.SHUT_RD) }))
}

// Close closes the connection. Operations waiting on it in other tasks fail with an
// error wrapping net.ErrClosed. A second Close returns such an error too.
func (s *TCPStream) Close() error {
	if err := s.fd.Close(); err != nil {
		return s.fd.opError("close", "close", err)
	}
	return nil
}

// LocalAddr returns the local address. An accepted connection looks it up (getsockname)
// the first time it is asked for, so that idle connections do not hold it; once the
// connection is closed, an address never asked for is unknown and LocalAddr returns nil.
func (s *TCPStream) LocalAddr() net.Addr { return s.fd.localAddr() }

// RemoteAddr returns the peer's address.
func (s *TCPStream) RemoteAddr() net.Addr { return s.fd.raddr }

// Split returns the reading and the writing side as two values that two tasks can own:
// one reads while the other writes. The halves share the connection; Close it (once)
// when both are done.
func (s *TCPStream) Split() (*TCPReadHalf, *TCPWriteHalf) {
	return &TCPReadHalf{s: s}, &TCPWriteHalf{s: s}
}

// TCPReadHalf is the reading side of a split TCPStream.
type TCPReadHalf struct{ s *TCPStream }

// Read is TCPStream.Read.
func (h *TCPReadHalf) Read(p []byte) Future[Result[int]] { return h.s.Read(p) }

// ReadFull is TCPStream.ReadFull.
func (h *TCPReadHalf) ReadFull(p []byte) *ReadFullFuture { return h.s.ReadFull(p) }

// Peek is TCPStream.Peek.
func (h *TCPReadHalf) Peek(p []byte) Future[Result[int]] { return h.s.Peek(p) }

// Readable is TCPStream.Readable.
func (h *TCPReadHalf) Readable() Future[error] { return h.s.Readable() }

// Stream returns the whole stream.
func (h *TCPReadHalf) Stream() *TCPStream { return h.s }

// TCPWriteHalf is the writing side of a split TCPStream.
type TCPWriteHalf struct{ s *TCPStream }

// Write is TCPStream.Write.
func (h *TCPWriteHalf) Write(p []byte) Future[Result[int]] { return h.s.Write(p) }

// WriteAll is TCPStream.WriteAll.
func (h *TCPWriteHalf) WriteAll(p []byte) *WriteAllFuture { return h.s.WriteAll(p) }

// WriteVectored is TCPStream.WriteVectored.
func (h *TCPWriteHalf) WriteVectored(bufs ...[]byte) *WriteAllFuture {
	return h.s.WriteVectored(bufs...)
}

// Writable is TCPStream.Writable.
func (h *TCPWriteHalf) Writable() Future[error] { return h.s.Writable() }

// CloseWrite is TCPStream.CloseWrite.
func (h *TCPWriteHalf) CloseWrite() error { return h.s.CloseWrite() }

// Stream returns the whole stream.
func (h *TCPWriteHalf) Stream() *TCPStream { return h.s }

// ---- options ----

func (s *TCPStream) setInt(level, opt, v int) error {
	return s.fd.opError("set", "setsockopt", s.fd.control(func(fd int) error {
		return unix.SetsockoptInt(fd, level, opt, v)
	}))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SetNoDelay sets TCP_NODELAY (on by default): true sends small writes at once instead
// of waiting to coalesce them (Nagle's algorithm).
func (s *TCPStream) SetNoDelay(noDelay bool) error {
	return s.setInt(unix.IPPROTO_TCP, unix.TCP_NODELAY, boolInt(noDelay))
}

// SetKeepAlive turns TCP keep-alive probes on or off (SO_KEEPALIVE).
func (s *TCPStream) SetKeepAlive(on bool) error {
	return s.setInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolInt(on))
}

// SetKeepAliveConfig sets keep-alive as net.TCPConn.SetKeepAliveConfig does: Enable,
// and Idle, Interval (rounded up to whole seconds) and Count; as in net, a zero field
// takes the default (15 s, 15 s, 9 probes) and a negative one leaves the option as it is.
func (s *TCPStream) SetKeepAliveConfig(c net.KeepAliveConfig) error {
	return s.fd.opError("set", "setsockopt", s.fd.control(func(fd int) error {
		return setKeepAliveConfig(fd, c)
	}))
}

// Go's net defaults for keep-alive (net/dial.go), used when a KeepAliveConfig field is
// zero and on every dialed and accepted connection.
const (
	defaultKeepAliveIdle     = 15 * time.Second
	defaultKeepAliveInterval = 15 * time.Second
	defaultKeepAliveCount    = 9
)

// defaultKeepAlive is the configuration net.DialTCP and net.TCPListener.Accept give a
// new connection (a zero Dialer.KeepAlive): probes on, with the defaults above.
var defaultKeepAlive = net.KeepAliveConfig{Enable: true}

func setKeepAliveConfig(fd int, c net.KeepAliveConfig) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolInt(c.Enable)); err != nil || !c.Enable {
		return err
	}
	secs := func(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }
	if c.Idle == 0 {
		c.Idle = defaultKeepAliveIdle
	}
	if c.Interval == 0 {
		c.Interval = defaultKeepAliveInterval
	}
	if c.Count == 0 {
		c.Count = defaultKeepAliveCount
	}
	if c.Idle > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, tcpKeepIdle, secs(c.Idle)); err != nil {
			return err
		}
	}
	if c.Interval > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs(c.Interval)); err != nil {
			return err
		}
	}
	if c.Count > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, c.Count); err != nil {
			return err
		}
	}
	return nil
}

// SetLinger sets SO_LINGER like net.TCPConn.SetLinger: sec < 0 is the default (Close
// returns at once, the system sends what is left); sec == 0 discards unsent data and
// resets the connection on Close; sec > 0 lingers that long.
func (s *TCPStream) SetLinger(sec int) error {
	l := unix.Linger{}
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(min(sec, 1<<31-1))
	}
	return s.fd.opError("set", "setsockopt", s.fd.control(func(fd int) error {
		return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &l)
	}))
}

// SetReadBuffer sets the kernel receive buffer size (SO_RCVBUF).
func (s *TCPStream) SetReadBuffer(bytes int) error {
	return s.setInt(unix.SOL_SOCKET, unix.SO_RCVBUF, bytes)
}

// SetWriteBuffer sets the kernel send buffer size (SO_SNDBUF).
func (s *TCPStream) SetWriteBuffer(bytes int) error {
	return s.setInt(unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

// SetTTL sets the IP time to live (IPv4) or unicast hop limit (IPv6). On an IPv6 socket
// it sets both, so that it also applies to a connection with an IPv4 peer accepted by a
// dual-stack listener, whose packets are IPv4.
func (s *TCPStream) SetTTL(ttl int) error {
	if s.fd.family == unix.AF_INET6 {
		return s.fd.setTTL6(ttl)
	}
	return s.setInt(unix.IPPROTO_IP, unix.IP_TTL, ttl)
}

// TTL returns the IP time to live (IPv4) or unicast hop limit (IPv6).
func (s *TCPStream) TTL() (int, error) {
	var v int
	err := s.fd.control(func(fd int) (err error) {
		if s.fd.family == unix.AF_INET6 {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS)
		} else {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL)
		}
		return err
	})
	return v, s.fd.opError("get", "getsockopt", err)
}

// ---- futures ----

type readFuture struct {
	fd   *netFD
	p    []byte
	peek bool
	w    Waker
}

func (f *readFuture) Poll(cx *Context) (Result[int], bool) {
	return f.fd.pollRead(cx, &f.w, f.p, f.peek)
}

func (f *readFuture) Drop() { f.fd.forget(dirRead, &f.w) }

type writeFuture struct {
	fd *netFD
	p  []byte
	w  Waker
}

func (f *writeFuture) Poll(cx *Context) (Result[int], bool) {
	return f.fd.pollWrite(cx, &f.w, f.p, nil)
}

func (f *writeFuture) Drop() { f.fd.forget(dirWrite, &f.w) }

// ReadFullFuture fills a buffer; see TCPStream.ReadFull.
type ReadFullFuture struct {
	fd   *netFD
	p    []byte
	n    int
	w    Waker
	done bool
}

// N returns how many bytes are in the buffer so far.
func (f *ReadFullFuture) N() int { return f.n }

// Poll reads until the buffer is full, the stream ends or fails.
func (f *ReadFullFuture) Poll(cx *Context) (Result[int], bool) {
	for f.n < len(f.p) {
		r, ok := f.fd.pollRead(cx, &f.w, f.p[f.n:], false)
		if !ok {
			return Result[int]{}, false
		}
		f.n += r.Value
		if r.Err != nil {
			err := r.Err
			if err == io.EOF && f.n > 0 {
				err = io.ErrUnexpectedEOF
			}
			f.done = true
			return Result[int]{Value: f.n, Err: err}, true
		}
	}
	f.done = true
	return Result[int]{Value: f.n}, true
}

// Drop forgets the waiting read; the bytes already read stay in the buffer (see N).
func (f *ReadFullFuture) Drop() { f.fd.forget(dirRead, &f.w) }

// WriteAllFuture writes a whole buffer (or a list of buffers); see TCPStream.WriteAll.
type WriteAllFuture struct {
	fd   *netFD
	p    []byte
	bufs [][]byte
	n    int
	w    Waker
}

// Written returns how many bytes have been handed to the kernel so far.
func (f *WriteAllFuture) Written() int { return f.n }

// Poll writes until everything is written or a write fails.
func (f *WriteAllFuture) Poll(cx *Context) (Result[int], bool) {
	for {
		var r Result[int]
		var ok bool
		if f.bufs != nil {
			for len(f.bufs) > 0 && len(f.bufs[0]) == 0 {
				f.bufs = f.bufs[1:]
			}
			if len(f.bufs) == 0 {
				return Result[int]{Value: f.n}, true
			}
			bufs := f.bufs
			if len(bufs) > 1024 { // IOV_MAX
				bufs = bufs[:1024]
			}
			r, ok = f.fd.pollWrite(cx, &f.w, nil, bufs)
			if ok {
				consume(&f.bufs, r.Value)
			}
		} else {
			if f.n == len(f.p) {
				return Result[int]{Value: f.n}, true
			}
			r, ok = f.fd.pollWrite(cx, &f.w, f.p[f.n:], nil)
		}
		if !ok {
			return Result[int]{}, false
		}
		f.n += r.Value
		if r.Err != nil {
			return Result[int]{Value: f.n, Err: r.Err}, true
		}
	}
}

// consume drops n written bytes from the front of bufs.
func consume(bufs *[][]byte, n int) {
	for n > 0 && len(*bufs) > 0 {
		b := (*bufs)[0]
		if n < len(b) {
			(*bufs)[0] = b[n:]
			return
		}
		n -= len(b)
		*bufs = (*bufs)[1:]
	}
}

// Drop forgets the waiting write.
func (f *WriteAllFuture) Drop() { f.fd.forget(dirWrite, &f.w) }

type readyFuture2 struct {
	fd *netFD
	d  direction
	w  Waker
}

func (f *readyFuture2) Poll(cx *Context) (error, bool) {
	s, err := f.fd.bind(cx)
	if err != nil {
		return f.fd.opError("wait", "", err), true
	}
	ev, ok := s.pollReady(cx, f.d)
	if !ok {
		f.w = cx.Waker()
		return nil, false
	}
	f.w = Waker{}
	if ev&shutdownBit != 0 {
		return f.fd.opError("wait", "", net.ErrClosed), true
	}
	if !cx.ConsumeBudget() {
		return nil, false
	}
	return nil, true
}

func (f *readyFuture2) Drop() { f.fd.forget(f.d, &f.w) }
