package poller

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// portable is the fallback for platforms without epoll or kqueue (windows, plan9, wasm,
// solaris...): it supports Wake and timeouts, so the runtime can park its last worker in
// it and drive timers, but it cannot watch sockets: Register returns an error wrapping
// ErrUnsupported. Networking needs epoll, io_uring or kqueue.
type portable struct {
	wake chan struct{} // capacity 1: a pending Wake
	done chan struct{}
	once sync.Once
}

// NewPortable returns the portable Poller. It never fails.
func NewPortable() Poller {
	return &portable{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (p *portable) Name() string { return "portable" }

func (p *portable) Register(fd int, token uint64, interest Interest) error {
	return fmt.Errorf("%w: the portable poller cannot watch file descriptors on %s", ErrUnsupported, runtime.GOOS)
}

func (p *portable) Deregister(fd int, token uint64) error {
	return fmt.Errorf("%w: the portable poller cannot watch file descriptors on %s", ErrUnsupported, runtime.GOOS)
}

func (p *portable) Poll(events []Event, timeout time.Duration) (int, error) {
	if timeout == 0 {
		select {
		case <-p.wake:
		default:
		}
		return 0, nil
	}
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-p.wake:
	case <-tc:
	case <-p.done:
	}
	return 0, nil
}

func (p *portable) Wake() error {
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

func (p *portable) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}
