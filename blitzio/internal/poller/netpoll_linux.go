//go:build linux

package poller

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netpollFD is a descriptor that reports readiness itself (an epoll instance is readable
// while events are ready in it, an io_uring instance while completions wait in its CQ
// ring), registered with Go's own netpoller so that a Poll that must wait parks its
// goroutine instead of blocking its thread in epoll_wait or io_uring_enter. A goroutine
// blocked in a system call keeps its OS thread and its P until the Go scheduler's monitor
// takes the P back (20 us to 10 ms later) and must get one back when the call returns:
// with GOMAXPROCS=2, half of the machine would sit idle behind a parked worker, and each
// wait costs two thread switches, more than the whole echo of a small message. Parked
// on the netpoller, the waiting worker is an ordinary parked goroutine.
type netpollFD struct {
	file *os.File
	rc   syscall.RawConn
	// deadline is the read deadline last set on file (zero: none), so that a wait with
	// the same kind of timeout as the previous one does not set it again. Used by the
	// one polling goroutine only.
	deadline time.Time
	// refused is the File that attach made to learn that the runtime refuses the
	// descriptor. It cannot be let go: os puts the cleanup that closes the descriptor on
	// an object inside the File that no exported call reaches (runtime.SetFinalizer on
	// the *os.File itself clears nothing), so an unreachable File closes the number at
	// some garbage collection, under the poller still using it or, later, under the
	// file that reused it. It is kept, and closeUnattached closes through it.
	refused *os.File
}

// attach hands fd to Go's netpoller. It reports false, leaving fd blocking, when the
// runtime refuses the descriptor. Either way the descriptor is then closed by close
// (attached) or closeUnattached (not attached, whether attach was called or not), never
// with unix.Close.
func (n *netpollFD) attach(fd int, name string) bool {
	if err := unix.SetNonblock(fd, true); err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return false
	}
	// SetReadDeadline fails with os.ErrNoDeadline when the file is not pollable.
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		// Not pollable: back to blocking mode, and keep the File (see refused).
		unix.SetNonblock(fd, false)
		n.refused = f
		return false
	}
	n.file, n.rc = f, rc
	return true
}

// attached reports whether attach succeeded.
func (n *netpollFD) attached() bool { return n.file != nil }

// wait parks the calling goroutine until ready reports true or dl passes (zero: no
// deadline). It returns (true, nil) when ready said so, (false, nil) at the deadline, and
// the error of the File otherwise (closed under the wait).
//
// The readiness Go's netpoller records for the descriptor is an edge, and RawConn.Read
// calls ready once before it parks, after it has forgotten the readiness recorded before
// it (as every read of Go's net package tries the system call first): whatever arrives
// after that check marks the descriptor ready and the park returns at once. So the
// first check is not optional (an event that came after the caller's last look is found
// only by it), and no wake-up is lost between the check and the park.
func (n *netpollFD) wait(dl time.Time, ready func(fd uintptr) bool) (bool, error) {
	if dl != n.deadline {
		if err := n.file.SetReadDeadline(dl); err != nil {
			return false, err
		}
		n.deadline = dl
	}
	switch err := n.rc.Read(ready); {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	default:
		return false, err
	}
}

// close takes the descriptor out of Go's netpoller, waits until no wait is still inside
// its ready callback, and closes it.
func (n *netpollFD) close() error { return n.file.Close() }

// closeUnattached closes fd, which attach did not hand to Go's netpoller: through the
// File attach made if it was called (see refused), else with unix.Close.
func (n *netpollFD) closeUnattached(fd int) error {
	if f := n.refused; f != nil {
		n.refused = nil
		return f.Close()
	}
	return unix.Close(fd)
}
