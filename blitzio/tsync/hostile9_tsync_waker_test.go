package tsync

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// runExpectingGoexit runs f on a goroutine of its own and waits for that goroutine to
// end, failing the test if f returned normally or panicked instead of calling
// runtime.Goexit (through a waker), or if it did not end within 10 s.
func runExpectingGoexit(t *testing.T, what string, f func()) {
	t.Helper()
	type outcome struct {
		returned bool
		panicked any
	}
	res := make(chan outcome, 1)
	go func() {
		o := outcome{}
		defer func() {
			o.panicked = recover()
			res <- o
		}()
		f()
		o.returned = true
	}()
	select {
	case o := <-res:
		if o.returned || o.panicked != nil {
			t.Fatalf("%s: want the goroutine to exit through runtime.Goexit, got returned=%v panic=%v",
				what, o.returned, o.panicked)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: did not finish within 10s", what)
	}
}

// TestHostile9GoexitWakerStrandsNobody: a waker that calls runtime.Goexit (a WakerFunc
// breaking its contract, as badly as one that panics) must not strand the waiters that
// a release woke together with it. A panicking waker was already survived (every waiter
// woken, the panic re-raised); runtime.Goexit cannot be recovered, so the group wake
// stopped at it and every waiter after it in the group slept for ever: the waiters of a
// NotifyWaiters, a Barrier generation, a broadcast Send, a watch change, a
// CancelToken.Cancel. Each case puts the exiting waker(s) among good ones and checks
// that every good waiter is woken (those after an exiting waker on another goroutine).
func TestHostile9GoexitWakerStrandsNobody(t *testing.T) {
	exiting := blitzio.NewContext(nil, blitzio.WakerFunc(func() { runtime.Goexit() }))
	type group struct {
		name string
		// setup queues a waiter with each Context in cxs and returns the release.
		setup func(cxs []*blitzio.Context) (release func())
	}
	groups := []group{
		{"Notify.NotifyWaiters", func(cxs []*blitzio.Context) func() {
			n := new(Notify)
			for _, cx := range cxs {
				n.Notified().Poll(cx)
			}
			return n.NotifyWaiters
		}},
		{"Barrier generation", func(cxs []*blitzio.Context) func() {
			b := NewBarrier(len(cxs) + 1)
			for _, cx := range cxs {
				b.WaitAsync().Poll(cx)
			}
			return func() { b.WaitAsync().Poll(newTestCx().cx) }
		}},
		{"CancelToken.Cancel", func(cxs []*blitzio.Context) func() {
			tok := NewCancelToken()
			for _, cx := range cxs {
				tok.Cancelled().Poll(cx)
			}
			return tok.Cancel
		}},
		{"Semaphore.AddPermits", func(cxs []*blitzio.Context) func() {
			s := NewSemaphore(0)
			for _, cx := range cxs {
				s.AcquireAsync(1).Poll(cx)
			}
			return func() { s.AddPermits(int64(len(cxs))) }
		}},
		{"RwLock write unlock", func(cxs []*blitzio.Context) func() {
			l := new(RwLock)
			g, _ := l.TryWrite()
			for _, cx := range cxs {
				l.ReadAsync().Poll(cx)
			}
			return g.Unlock
		}},
		{"BroadcastSender.Send", func(cxs []*blitzio.Context) func() {
			tx, rx := NewBroadcast[int](4)
			for _, cx := range cxs {
				rx.Clone().RecvAsync().Poll(cx)
			}
			return func() { _ = tx.Send(1) }
		}},
		{"WatchSender.Send", func(cxs []*blitzio.Context) func() {
			tx, rx := NewWatch(0)
			for _, cx := range cxs {
				rx.Clone().ChangedAsync().Poll(cx)
			}
			return func() { _ = tx.Send(1) }
		}},
		{"Sender.Close", func(cxs []*blitzio.Context) func() {
			tx, rx := NewChannel[int](1)
			for _, cx := range cxs {
				rx.RecvAsync().Poll(cx)
			}
			return tx.Close
		}},
	}
	// Where the exiting wakers go among 9 waiters: first, in the middle, last but one,
	// and two of them (the second Goexit happens while the first one unwinds).
	layouts := [][]int{{0}, {4}, {7}, {0, 5}, {1, 2, 8}}
	for _, g := range groups {
		for _, bad := range layouts {
			var woken atomic.Int64
			good := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woken.Add(1) }))
			cxs := make([]*blitzio.Context, 9)
			for i := range cxs {
				cxs[i] = good
			}
			for _, i := range bad {
				cxs[i] = exiting
			}
			release := g.setup(cxs)
			runExpectingGoexit(t, g.name, release)
			// The wakers after an exiting one may run on another goroutine: wait for them.
			want := int64(len(cxs) - len(bad))
			for deadline := time.Now().Add(10 * time.Second); woken.Load() < want && time.Now().Before(deadline); {
				time.Sleep(100 * time.Microsecond)
			}
			if woken.Load() != want {
				t.Fatalf("%s with exiting wakers at %v: %d of %d good waiters woken",
					g.name, bad, woken.Load(), want)
			}
		}
	}
}
