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
	// woken coalesces Wakes: it is set by the Wake that writes the eventfd, and the
	// Wakes that find it set write nothing. Poll clears it after draining the eventfd,
	// never before: cleared first, a Wake between the clear and the drain set it and
	// wrote, the drain swallowed that write, and the flag stayed set over an empty
	// eventfd, so that every later Wake wrote nothing and a parked Poll was never woken
	// again (a runtime's Close then hung). A Wake that finds the flag still set between
	// the drain and the clear writes nothing, which is right: the Poll that drains is
	// returning, which is all a Wake asks for; a Wake after the clear writes again. The Promela
	// model blitzio/spin/epollwake.pml checks this order (and its broken twin the old one).
	woken atomic.Bool
	raw   []unix.EpollEvent // used by the single polling goroutine only

	// np is epfd registered with Go's netpoller (see netpollFD): a Poll that must wait
	// parks its goroutine until epfd is readable, then collects the events with a
	// zero-timeout epoll_wait. Not attached when Go refuses epfd (then Poll blocks in
	// epoll_wait).
	np netpollFD
	// collect is p.collectNow as a func value made once (a closure made per Poll would
	// allocate), with its arguments and results in the fields below; all used by the
	// polling goroutine only.
	collect func(fd uintptr) bool
	cRaw    []unix.EpollEvent
	cN      int
	cErr    error

	// life guards the descriptors against Close: Register, Deregister and Wake hold it
	// shared across their system call and fail once closed is set, and Close sets
	// closed under it exclusively before closing them. Without it a call racing Close,
	// or coming after it (the runtime may Wake a worker it saw polling while shutting
	// down), used a number that may name another file by then: a Wake wrote 8 bytes
	// into it, a Register added an fd to another poller's interest list.
	life   sync.RWMutex
	closed atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var errEpollClosed = fmt.Errorf("poller: epoll: %w", os.ErrClosed)

// NewEpoll opens an epoll instance and its wake-up eventfd. A Poll that waits parks its
// goroutine on Go's netpoller until the epoll descriptor is readable, instead of
// blocking its thread in epoll_wait (see the epoll type); if the Go runtime refuses the
// descriptor, Poll blocks in epoll_wait.
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
	// The eventfd is level-triggered: it stays readable until Poll drains it, so a Wake
	// that lands before Poll is entered still makes that Poll return.
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEpollToken(&ev, wakeToken)
	if err := epollCtlWake(epfd, evfd, &ev); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	p := &epoll{epfd: epfd, evfd: evfd}
	// Last: once attached, epfd belongs to an os.File and may be closed only through it.
	p.attachNetpoll()
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

// attachNetpoll hands epfd to Go's netpoller (see epoll.np). It leaves np unattached,
// and Poll blocking in epoll_wait, if the runtime refuses the descriptor.
func (p *epoll) attachNetpoll() {
	if epollTestNoNetpoll {
		return
	}
	if p.np.attach(p.epfd, "epoll") {
		p.collect = p.collectNow
	}
}

// collectNow is the RawConn.Read callback of waitNetpoll: one epoll_wait that does not
// wait; true (done) when it found events or failed.
func (p *epoll) collectNow(fd uintptr) bool {
	p.cN, p.cErr = unix.EpollWait(int(fd), p.cRaw, 0)
	return p.cN > 0 || p.cErr != nil
}

// epollTestAfterDrain, when set, runs inside Poll between the drain of the wake eventfd
// and the clear of woken, so that tests can put a racing Wake there. Set only by tests.
var epollTestAfterDrain func(p *epoll)

// epollTestCtlWake, when set, replaces the registration of the wake eventfd in
// NewEpoll, so that tests can make it fail. Set only by tests.
var epollTestCtlWake func(epfd int) error

func epollCtlWake(epfd, evfd int, ev *unix.EpollEvent) error {
	if epollTestCtlWake != nil {
		return epollTestCtlWake(epfd)
	}
	return unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, ev)
}

// epollTestNoNetpoll makes NewEpoll leave epfd out of Go's netpoller, so that tests can
// run the blocking epoll_wait path. Set only by tests.
var epollTestNoNetpoll bool

func (p *epoll) Name() string { return "epoll" }

func (p *epoll) Register(fd int, token uint64, interest Interest) error {
	if token == wakeToken {
		return fmt.Errorf("poller: epoll Register: token %#x is reserved", token)
	}
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed.Load() {
		return errEpollClosed
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
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed.Load() {
		return errEpollClosed
	}
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
	if p.closed.Load() {
		return 0, errEpollClosed
	}
	if cap(p.raw) < len(events) {
		p.raw = make([]unix.EpollEvent, len(events))
	}
	raw := p.raw[:len(events)]
	var n int
	var err error
	if timeout == 0 || !p.np.attached() {
		n, err = unix.EpollWait(p.epfd, raw, epollMillis(timeout))
	} else {
		n, err = p.waitNetpoll(raw, timeout)
	}
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
			var buf [8]byte
			// Under life: a Close that ran while this Poll collected (it ends a wait
			// on the netpoller) may have closed the eventfd, whose number may name
			// another file by now.
			p.life.RLock()
			if !p.closed.Load() {
				unix.Read(p.evfd, buf[:]) // EAGAIN when already drained: nothing to do
			}
			p.life.RUnlock()
			if epollTestAfterDrain != nil {
				epollTestAfterDrain(p)
			}
			p.woken.Store(false) // after the drain: see woken
			continue
		}
		events[out] = Event{Token: tok, Ready: epollReady(raw[i].Events), Op: OpReady, Buf: -1}
		out++
	}
	return out, nil
}

// waitNetpoll is a waiting Poll through Go's netpoller (see netpollFD.wait): collect
// what is ready without waiting; if nothing is, park until epfd is readable or the
// timeout passes, and collect again.
func (p *epoll) waitNetpoll(raw []unix.EpollEvent, timeout time.Duration) (int, error) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	p.cRaw, p.cN = raw, 0
	ok, err := p.np.wait(dl, p.collect)
	n, werr := p.cN, p.cErr
	p.cRaw, p.cErr = nil, nil
	switch {
	case werr != nil:
		return 0, werr
	case err != nil:
		return 0, errEpollClosed // the descriptor was closed under the wait
	case !ok:
		return 0, nil // the timeout passed (maybe before any collection)
	}
	return n, nil
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
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed.Load() {
		return errEpollClosed
	}
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
		p.life.Lock()
		p.closed.Store(true)
		p.life.Unlock()
		err1 := unix.Close(p.evfd)
		var err2 error
		if p.np.attached() {
			err2 = p.np.close() // closes epfd, after taking it out of Go's netpoller
		} else {
			err2 = p.np.closeUnattached(p.epfd)
		}
		if err1 != nil {
			p.closeErr = os.NewSyscallError("close", err1)
		} else if err2 != nil {
			p.closeErr = os.NewSyscallError("close", err2)
		}
	})
	return p.closeErr
}
