//go:build linux || darwin || freebsd

package blitzio

import (
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Interest is the readiness an AsyncIO waits for between its calls.
type Interest uint8

const (
	// InterestRead waits until the socket is readable: data, a connection to
	// accept, the end of the stream, or an error.
	InterestRead Interest = iota + 1
	// InterestWrite waits until the socket has room to write, or an error.
	InterestWrite
)

func (i Interest) direction() direction {
	switch i {
	case InterestRead:
		return dirRead
	case InterestWrite:
		return dirWrite
	}
	panic("blitzio: AsyncIO with an Interest that is neither InterestRead nor InterestWrite")
}

// asyncIO is the future of every socket's AsyncIO, and the wait of its RawConn's Read
// and Write: f runs on the descriptor, which stays open meanwhile, and an f that fails
// with EAGAIN clears the readiness it ran on and waits for the next (as Tokio's
// async_io does, and the way the runtime's own reads wait), so that a caller's own
// system calls (recvmmsg, sendmsg with ancillary data, ioctl) never spin.
func asyncIO(fd *netFD, i Interest, op string, f func(fd uintptr) error) Future[error] {
	if f == nil {
		panic("blitzio: AsyncIO with a nil function")
	}
	return &asyncIOFuture{fd: fd, d: i.direction(), op: op, f: f}
}

type asyncIOFuture struct {
	fd *netFD
	d  direction
	op string
	f  func(fd uintptr) error
	w  Waker
}

func (a *asyncIOFuture) Poll(cx *Context) (error, bool) {
	var ferr error
	_, err, ok := a.fd.pollIO(cx, a.d, &a.w, func(s int) (int, error) {
		ferr = a.f(uintptr(s))
		if errors.Is(ferr, syscall.EAGAIN) {
			return 0, unix.EAGAIN
		}
		return 0, nil
	})
	if !ok {
		return nil, false
	}
	a.w = Waker{}
	if err != nil {
		return a.fd.opError(a.op, "", err), true
	}
	return ferr, true
}

func (a *asyncIOFuture) Drop() { a.fd.forget(a.d, &a.w) }

// rawConn is a socket's syscall.RawConn (see TCPStream.SyscallConn).
type rawConn struct{ fd *netFD }

// Control runs f on the descriptor, which stays open until f returns.
func (c rawConn) Control(f func(fd uintptr)) error {
	err := c.fd.control(func(s int) error {
		f(uintptr(s))
		return nil
	})
	if err != nil {
		return c.fd.opError("raw-control", "", err)
	}
	return nil
}

// Read runs f until it returns true, waiting for the socket to be readable between
// calls; see TCPStream.SyscallConn.
func (c rawConn) Read(f func(fd uintptr) (done bool)) error {
	return c.wait(InterestRead, "raw-read", f)
}

// Write runs f until it returns true, waiting for room to write between calls.
func (c rawConn) Write(f func(fd uintptr) (done bool)) error {
	return c.wait(InterestWrite, "raw-write", f)
}

// rawPollInterval bounds each poll(2) of a RawConn wait on a socket no runtime has
// registered, so that a Close made meanwhile is seen.
const rawPollInterval = 50 * time.Millisecond

func (c rawConn) wait(i Interest, op string, f func(uintptr) bool) error {
	switch onRuntimeGoroutine() {
	case onWorker:
		panic("blitzio: cannot block from within a runtime: syscall.RawConn's " + op[4:] +
			" called by a task's code on a worker goroutine would block the worker; use the socket's AsyncIO future instead")
	case onCoroutine:
		panic("blitzio: cannot block from within a runtime: syscall.RawConn's " + op[4:] +
			" called inside an Async function would block the goroutine polling it; await the socket's AsyncIO future instead")
	}
	g := func(fd uintptr) error {
		if f(fd) {
			return nil
		}
		return syscall.EAGAIN
	}
	if c.fd.sio.Load() != nil {
		// Registered with a runtime's driver: wait on it, parking this goroutine on
		// a channel its waker signals (no thread held); Close wakes the wait.
		ch := make(chan struct{}, 1)
		cx := NewContext(nil, WakerFunc(func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		}))
		fut := asyncIO(c.fd, i, op, g)
		for {
			if err, ok := fut.Poll(cx); ok {
				return err
			}
			<-ch
		}
	}
	// No runtime has used the socket yet (a UDP socket fresh from ListenUDP): nothing
	// reports its readiness, so poll(2) waits for it, in bounded steps so that a Close
	// made meanwhile ends the wait. The descriptor is not held during poll(2): a
	// number closed and reused meanwhile costs at most one wasted step, and f itself
	// always runs on the socket, held open (control).
	events := int16(unix.POLLIN) // also set at the end of the stream
	if i == InterestWrite {
		events = unix.POLLOUT
	}
	for {
		var done bool
		if err := c.fd.control(func(s int) error {
			done = f(uintptr(s))
			return nil
		}); err != nil {
			return c.fd.opError(op, "", err)
		}
		if done {
			return nil
		}
		if s := c.fd.sio.Load(); s != nil {
			// A runtime took it meanwhile: its driver now reports readiness.
			return c.wait(i, op, f)
		}
		pfd := []unix.PollFd{{Fd: c.fd.fd, Events: events}}
		for {
			if c.fd.closed.Load() {
				return c.fd.opError(op, "", net.ErrClosed)
			}
			n, err := unix.Poll(pfd, int(rawPollInterval/time.Millisecond))
			if n > 0 || (err != nil && err != unix.EINTR) {
				break
			}
		}
	}
}

// SyscallConn returns the socket's syscall.RawConn, as net.TCPConn's does, for options
// and system calls this package does not wrap. Control runs its function on the
// descriptor, which stays open until it returns; call it from anywhere. Read and Write
// run their function until it returns true, waiting between calls for the socket to
// be readable (or writable): like BlockOn they block the calling goroutine, parked on
// a channel that the runtime's driver signals, and they panic if called from a task or
// an Async function, which await AsyncIO instead. A socket no runtime has used yet has
// no driver to report its readiness: the wait is then a poll(2) on the calling
// goroutine's thread. Close makes a waiting Read or Write return net.ErrClosed, and
// waits for a function that is running to return.
func (s *TCPStream) SyscallConn() (syscall.RawConn, error) { return rawConn{s.fd}, nil }

// AsyncIO returns a future that runs f on the socket's descriptor once it is ready for
// interest, for a system call of your own (Tokio's async_io): f returning an error
// that is syscall.EAGAIN (errors.Is) means it would block; the readiness it saw is then
// cleared and f runs again at the next readiness. Any other result of f is the
// future's. The descriptor stays open while f runs; f must not close it or change its
// non-blocking mode, and must not block: it runs on a worker, and the socket's Close
// waits for it to return. A socket closed meanwhile ends the future with
// net.ErrClosed.
func (s *TCPStream) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(s.fd, interest, "asyncio", f)
}

// SyscallConn returns the listener's syscall.RawConn; see TCPStream.SyscallConn.
func (l *TCPListener) SyscallConn() (syscall.RawConn, error) { return rawConn{l.fd}, nil }

// AsyncIO runs f on the listener's descriptor when ready; see TCPStream.AsyncIO.
func (l *TCPListener) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(l.fd, interest, "asyncio", f)
}

// SyscallConn returns the socket's syscall.RawConn; see TCPStream.SyscallConn.
func (c *UDPConn) SyscallConn() (syscall.RawConn, error) { return rawConn{c.fd}, nil }

// AsyncIO runs f on the socket's descriptor when ready (recvmmsg, sendmmsg, a read of
// ancillary data); see TCPStream.AsyncIO.
func (c *UDPConn) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(c.fd, interest, "asyncio", f)
}

// SyscallConn returns the socket's syscall.RawConn; see TCPStream.SyscallConn.
func (s *UnixStream) SyscallConn() (syscall.RawConn, error) { return rawConn{s.fd}, nil }

// AsyncIO runs f on the socket's descriptor when ready (passing descriptors with
// SCM_RIGHTS, say); see TCPStream.AsyncIO.
func (s *UnixStream) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(s.fd, interest, "asyncio", f)
}

// SyscallConn returns the listener's syscall.RawConn; see TCPStream.SyscallConn.
func (l *UnixListener) SyscallConn() (syscall.RawConn, error) { return rawConn{l.fd}, nil }

// AsyncIO runs f on the listener's descriptor when ready; see TCPStream.AsyncIO.
func (l *UnixListener) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(l.fd, interest, "asyncio", f)
}

// SyscallConn returns the socket's syscall.RawConn; see TCPStream.SyscallConn.
func (c *UnixConn) SyscallConn() (syscall.RawConn, error) { return rawConn{c.fd}, nil }

// AsyncIO runs f on the socket's descriptor when ready; see TCPStream.AsyncIO.
func (c *UnixConn) AsyncIO(interest Interest, f func(fd uintptr) error) Future[error] {
	return asyncIO(c.fd, interest, "asyncio", f)
}

// setupRawConn is the syscall.RawConn a ListenConfig or Dialer Control function gets:
// the socket before it is bound or connected, which no driver serves yet.
type setupRawConn int

var errSetupRawIO = errors.New("blitzio: syscall.RawConn Read and Write are not available in a Control function")

func (c setupRawConn) Control(f func(fd uintptr)) error { f(uintptr(c)); return nil }

func (c setupRawConn) Read(func(fd uintptr) bool) error { return errSetupRawIO }

func (c setupRawConn) Write(func(fd uintptr) bool) error { return errSetupRawIO }
