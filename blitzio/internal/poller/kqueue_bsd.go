//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package poller

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// kqueue is the backend for macOS and the BSDs: EVFILT_READ and EVFILT_WRITE with
// EV_CLEAR (edge-triggered, like the epoll backend), and a wake-up event (EVFILT_USER
// where the system has it, a pipe elsewhere; see kqueueWaker).
//
// Tokens are kept in a map by fd instead of the kevent udata field, whose type differs
// between the BSDs. An event still queued for an fd that was deregistered and then
// registered again (a reused fd number) is reported with the new token: at worst a
// spurious readiness, which an edge-triggered user absorbs by getting EAGAIN.
type kqueue struct {
	kq     int
	mu     sync.Mutex
	tokens map[int]uint64
	raw    []unix.Kevent_t // used by the polling goroutine only
	waker  kqueueWaker

	closeOnce sync.Once
	closeErr  error
}

// NewKqueue opens a kqueue and its wake-up event.
func NewKqueue() (Poller, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(kq)
	p := &kqueue{kq: kq, tokens: make(map[int]uint64)}
	if err := p.waker.init(kq); err != nil {
		unix.Close(kq)
		return nil, err
	}
	return p, nil
}

func (p *kqueue) Name() string { return "kqueue" }

func (p *kqueue) Register(fd int, token uint64, interest Interest) error {
	var changes [2]unix.Kevent_t
	n := 0
	if interest&Read != 0 {
		unix.SetKevent(&changes[n], fd, unix.EVFILT_READ, unix.EV_ADD|unix.EV_CLEAR)
		n++
	}
	if interest&Write != 0 {
		unix.SetKevent(&changes[n], fd, unix.EVFILT_WRITE, unix.EV_ADD|unix.EV_CLEAR)
		n++
	}
	if n == 0 {
		return fmt.Errorf("poller: kqueue Register: no interest")
	}
	p.mu.Lock()
	p.tokens[fd] = token
	p.mu.Unlock()
	if _, err := unix.Kevent(p.kq, changes[:n], nil, nil); err != nil {
		p.mu.Lock()
		delete(p.tokens, fd)
		p.mu.Unlock()
		return os.NewSyscallError("kevent", err)
	}
	return nil
}

func (p *kqueue) Deregister(fd int, token uint64) error {
	p.mu.Lock()
	if t, ok := p.tokens[fd]; ok && t == token {
		delete(p.tokens, fd)
	}
	p.mu.Unlock()
	var changes [2]unix.Kevent_t
	unix.SetKevent(&changes[0], fd, unix.EVFILT_READ, unix.EV_DELETE)
	unix.SetKevent(&changes[1], fd, unix.EVFILT_WRITE, unix.EV_DELETE)
	// ENOENT for a filter that was never added is expected; closing the fd removes the
	// filters anyway.
	unix.Kevent(p.kq, changes[:], nil, nil)
	return nil
}

func (p *kqueue) Poll(events []Event, timeout time.Duration) (int, error) {
	if len(events) == 0 {
		return 0, fmt.Errorf("poller: kqueue Poll: empty events slice")
	}
	if cap(p.raw) < len(events) {
		p.raw = make([]unix.Kevent_t, len(events))
	}
	raw := p.raw[:len(events)]
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	n, err := unix.Kevent(p.kq, nil, raw, ts)
	if err != nil {
		if err == unix.EINTR {
			return 0, nil
		}
		return 0, os.NewSyscallError("kevent", err)
	}
	out := 0
	p.mu.Lock()
	for i := range raw[:n] {
		ev := &raw[i]
		if p.waker.isWake(ev) {
			p.waker.drain()
			continue
		}
		tok, ok := p.tokens[int(ev.Ident)]
		if !ok {
			continue
		}
		var r Ready
		switch ev.Filter {
		case unix.EVFILT_READ:
			r = Readable
			if ev.Flags&unix.EV_EOF != 0 {
				r |= ReadClosed
			}
		case unix.EVFILT_WRITE:
			r = Writable
			if ev.Flags&unix.EV_EOF != 0 {
				r |= WriteClosed
			}
		}
		if ev.Flags&unix.EV_ERROR != 0 {
			r |= Readable | Writable | Error
		}
		events[out] = Event{Token: tok, Ready: r, Op: OpReady, Buf: -1}
		out++
	}
	p.mu.Unlock()
	return out, nil
}

func (p *kqueue) Wake() error { return p.waker.wake(p.kq) }

func (p *kqueue) Close() error {
	p.closeOnce.Do(func() {
		p.waker.close()
		if err := unix.Close(p.kq); err != nil {
			p.closeErr = os.NewSyscallError("close", err)
		}
	})
	return p.closeErr
}
