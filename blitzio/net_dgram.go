//go:build linux || darwin || freebsd

package blitzio

import (
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Datagram operations shared by UDPConn and UnixConn (unixgram).

// pollRecvFrom receives one datagram into p (truncated to len(p), as recvfrom does).
func (fd *netFD) pollRecvFrom(cx *Context, w *Waker, p []byte, peek bool) (n int, from unix.Sockaddr, err error, ready bool) {
	flags := 0
	if peek {
		flags = unix.MSG_PEEK
	}
	n, err, ready = fd.pollIO(cx, dirRead, w, func(s int) (int, error) {
		var e error
		var got int
		got, from, e = unix.Recvfrom(s, p, flags)
		return got, e
	})
	if !ready {
		return 0, nil, nil, false
	}
	*w = Waker{}
	if err != nil {
		return 0, nil, fd.dgramError("read", "recvfrom", nil, err), true
	}
	return n, from, nil, true
}

// pollSendTo sends p as one datagram to sa (nil on a connected socket); dest is sa as
// the address an error names.
func (fd *netFD) pollSendTo(cx *Context, w *Waker, p []byte, sa unix.Sockaddr, dest net.Addr) (Result[int], bool) {
	unixDgram := fd.family == unix.AF_UNIX && fd.sotype == unix.SOCK_DGRAM
	n, err, ready := fd.pollIO(cx, dirWrite, w, func(s int) (int, error) {
		var n int
		var err error
		if u, ok := sa.(*unix.SockaddrUnix); ok {
			// syscall's sockaddr, not x/sys/unix's, for a Unix name: x/sys/unix keeps
			// a byte for a NUL that an abstract name filling sun_path does not have,
			// and refuses that name, which net's sends (as unixSocket's bind).
			n, err = syscall.SendmsgN(s, p, nil, &syscall.SockaddrUnix{Name: u.Name}, unix.MSG_NOSIGNAL)
		} else {
			n, err = unix.SendmsgN(s, p, nil, sa, unix.MSG_NOSIGNAL)
		}
		if err == unix.EAGAIN && unixDgram {
			// The receiver's queue is full while our own buffer has room: poll says
			// writable, and no wake-up comes when the receiver drains (the failed send
			// even wakes this socket itself, freeing its buffer): waiting for
			// readiness would spin. The caller backs off on a timer instead.
			pfd := []unix.PollFd{{Fd: int32(s), Events: unix.POLLOUT}}
			if k, _ := unix.Poll(pfd, 0); k == 1 && pfd[0].Revents&unix.POLLOUT != 0 {
				return 0, errPeerQueueFull
			}
		}
		return n, err
	})
	if !ready {
		return Result[int]{}, false
	}
	*w = Waker{}
	if err == errPeerQueueFull {
		return Result[int]{Err: err}, true
	}
	if err != nil {
		// As package net: sendto with a destination (the error names it), write on a
		// connected socket.
		if sa != nil {
			return Result[int]{Err: fd.dgramError("write", "sendto", dest, err)}, true
		}
		return Result[int]{Err: fd.dgramError("write", "write", nil, err)}, true
	}
	return Result[int]{Value: n}, true
}

// Datagram is a received datagram: how many bytes were stored and who sent them.
type Datagram[A net.Addr] struct {
	N    int
	From A
}

type recvFromFuture[A net.Addr] struct {
	fd   *netFD
	p    []byte
	peek bool
	conv func(unix.Sockaddr) A
	w    Waker
}

func (f *recvFromFuture[A]) Poll(cx *Context) (Result[Datagram[A]], bool) {
	n, sa, err, ok := f.fd.pollRecvFrom(cx, &f.w, f.p, f.peek)
	if !ok {
		return Result[Datagram[A]]{}, false
	}
	if err != nil {
		return Result[Datagram[A]]{Err: err}, true
	}
	return Result[Datagram[A]]{Value: Datagram[A]{N: n, From: f.conv(sa)}}, true
}

func (f *recvFromFuture[A]) Drop() { f.fd.forget(dirRead, &f.w) }

type sendToFuture struct {
	fd   *netFD
	p    []byte
	sa   unix.Sockaddr
	dest net.Addr // sa as an error names it
	err  error
	w    Waker

	backoff time.Duration
	sleep   *SleepFuture
}

var errPeerQueueFull = errors.New("blitzio: receiver's queue full")

func (f *sendToFuture) Poll(cx *Context) (Result[int], bool) {
	if f.err != nil {
		return Result[int]{Err: f.err}, true
	}
	for {
		if f.sleep != nil {
			if _, ok := f.sleep.Poll(cx); !ok {
				return Result[int]{}, false
			}
			f.sleep = nil
		}
		r, ok := f.fd.pollSendTo(cx, &f.w, f.p, f.sa, f.dest)
		if ok && r.Err == errPeerQueueFull {
			f.backoff = min(max(2*f.backoff, 100*time.Microsecond), 20*time.Millisecond)
			f.sleep = Sleep(f.backoff)
			continue
		}
		return r, ok
	}
}

func (f *sendToFuture) Drop() {
	if f.sleep != nil {
		Drop(f.sleep)
		f.sleep = nil
	}
	f.fd.forget(dirWrite, &f.w)
}
