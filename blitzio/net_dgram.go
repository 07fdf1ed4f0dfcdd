//go:build linux || darwin || freebsd

package blitzio

import (
	"net"

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
	n, err, ready := fd.pollIO(cx, dirWrite, w, func(s int) (int, error) {
		return unix.SendmsgN(s, p, nil, sa, unix.MSG_NOSIGNAL)
	})
	if !ready {
		return Result[int]{}, false
	}
	*w = Waker{}
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
}

func (f *sendToFuture) Poll(cx *Context) (Result[int], bool) {
	if f.err != nil {
		return Result[int]{Err: f.err}, true
	}
	return f.fd.pollSendTo(cx, &f.w, f.p, f.sa, f.dest)
}

func (f *sendToFuture) Drop() { f.fd.forget(dirWrite, &f.w) }
