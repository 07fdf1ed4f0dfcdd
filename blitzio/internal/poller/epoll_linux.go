//go:build linux

package poller

import (
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// wakeToken is the token of the eventfd registration; the driver never hands it out
// (its tokens carry a slot index below 2^32 in the low half and a generation >= 1 in the
// high half, so a real token is never all ones).
const wakeToken = math.MaxUint64

// epoll is the edge-triggered epoll backend. Every fd is registered once, for read and
// write together (EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET), so one epoll_ctl per socket for
// its lifetime; readiness is then tracked by the driver, not re-armed per operation.
type epoll struct {
	epfd int
	evfd int // eventfd: Wake writes it, Poll drains it
	// woken coalesces Wakes: only the first Wake after a Poll drained the eventfd writes
	// it. Poll clears the flag before draining, so a Wake that races the drain writes
	// again (a spurious early return of the next Poll, never a lost one).
	woken atomic.Bool
	raw   []unix.EpollEvent // used by the single polling goroutine only

	closeOnce sync.Once
	closeErr  error
}

// NewEpoll opens an epoll instance and its wake-up eventfd.
func NewEpoll() (Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	p := &epoll{epfd: epfd, evfd: evfd}
	// The eventfd is level-triggered: it stays readable until Poll drains it, so a Wake
	// that lands before Poll is entered still makes that Poll return.
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEpollToken(&ev, wakeToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return p, nil
}

// setEpollToken stores token in the event's 64-bit data field. x/sys splits that field
// into two int32 (Fd, Pad) on every architecture; writing the halves keeps clear of an
// unaligned 64-bit access on amd64, where the kernel struct is packed.
func setEpollToken(ev *unix.EpollEvent, token uint64) {
	ev.Fd = int32(uint32(token))
	ev.Pad = int32(uint32(token >> 32))
}

func epollToken(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

func (p *epoll) Name() string { return "epoll" }

func (p *epoll) Register(fd int, token uint64, interest Interest) error {
	if token == wakeToken {
		return fmt.Errorf("poller: epoll Register: token %#x is reserved", token)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLET | unix.EPOLLRDHUP}
	if interest&Read != 0 {
		ev.Events |= unix.EPOLLIN
	}
	if interest&Write != 0 {
		ev.Events |= unix.EPOLLOUT
	}
	setEpollToken(&ev, token)
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (p *epoll) Deregister(fd int, token uint64) error {
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// epollMillis converts a Poll timeout to epoll_wait's milliseconds, rounding up so that a
// 300µs timer deadline does not turn into a busy loop of zero-timeout waits.
func epollMillis(timeout time.Duration) int {
	switch {
	case timeout < 0:
		return -1
	case timeout == 0:
		return 0
	case timeout >= math.MaxInt32*time.Millisecond:
		return math.MaxInt32
	}
	return int((timeout + time.Millisecond - 1) / time.Millisecond)
}

func (p *epoll) Poll(events []Event, timeout time.Duration) (int, error) {
	if len(events) == 0 {
		return 0, fmt.Errorf("poller: epoll Poll: empty events slice")
	}
	if cap(p.raw) < len(events) {
		p.raw = make([]unix.EpollEvent, len(events))
	}
	raw := p.raw[:len(events)]
	n, err := unix.EpollWait(p.epfd, raw, epollMillis(timeout))
	if err != nil {
		if err == unix.EINTR {
			return 0, nil
		}
		return 0, os.NewSyscallError("epoll_wait", err)
	}
	out := 0
	for i := range raw[:n] {
		tok := epollToken(&raw[i])
		if tok == wakeToken {
			p.woken.Store(false) // before the drain: see woken
			var buf [8]byte
			unix.Read(p.evfd, buf[:]) // EAGAIN when already drained: nothing to do
			continue
		}
		events[out] = Event{Token: tok, Ready: epollReady(raw[i].Events), Op: OpReady, Buf: -1}
		out++
	}
	return out, nil
}

// epollReady maps epoll's bits to Ready. A hang-up or an error makes both directions
// ready, so that whoever waits learns of it by trying the operation (which returns the
// error or end of file).
func epollReady(e uint32) Ready {
	var r Ready
	if e&unix.EPOLLIN != 0 {
		r |= Readable
	}
	if e&unix.EPOLLOUT != 0 {
		r |= Writable
	}
	if e&unix.EPOLLRDHUP != 0 {
		r |= Readable | ReadClosed
	}
	if e&unix.EPOLLHUP != 0 {
		r |= Readable | Writable | ReadClosed | WriteClosed
	}
	if e&unix.EPOLLERR != 0 {
		r |= Readable | Writable | Error
	}
	return r
}

func (p *epoll) Wake() error {
	if !p.woken.CompareAndSwap(false, true) {
		return nil // a write is already pending and not yet drained
	}
	one := [8]byte{1}
	for {
		_, err := unix.Write(p.evfd, one[:])
		switch err {
		case nil, unix.EAGAIN: // EAGAIN: the counter is full, so the fd is readable anyway
			return nil
		case unix.EINTR:
			continue
		}
		p.woken.Store(false)
		return os.NewSyscallError("write eventfd", err)
	}
}

func (p *epoll) Close() error {
	p.closeOnce.Do(func() {
		err1 := unix.Close(p.evfd)
		err2 := unix.Close(p.epfd)
		if err1 != nil {
			p.closeErr = os.NewSyscallError("close", err1)
		} else if err2 != nil {
			p.closeErr = os.NewSyscallError("close", err2)
		}
	})
	return p.closeErr
}
