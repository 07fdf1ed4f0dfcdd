package tsync

import (
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile9LastWakerIsWoken: a future polled again with a different Waker (moved to
// another task, polled by a combinator that gives each child its own waker, or by
// BlockOn after a task) must wake the last Waker it was polled with: the earlier one may
// belong to a task that no longer polls it. Checked for every future of the package, in
// the state where the second poll finds it still waiting.
func TestHostile9LastWakerIsWoken(t *testing.T) {
	type tc struct {
		name string
		// arm returns the future's poll and the release that should wake it.
		arm func() (poll func(cx *blitzio.Context) bool, release func())
	}
	pollOf := func(f interface {
		Poll(*blitzio.Context) (struct{}, bool)
	}) func(cx *blitzio.Context) bool {
		return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }
	}
	cases := []tc{
		{"LockFuture", func() (func(*blitzio.Context) bool, func()) {
			m := new(Mutex)
			g := m.Lock()
			f := m.LockAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, g.Unlock
		}},
		{"AcquireFuture", func() (func(*blitzio.Context) bool, func()) {
			s := NewSemaphore(0)
			f := s.AcquireAsync(2)
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { s.AddPermits(2) }
		}},
		{"RwLockFuture read", func() (func(*blitzio.Context) bool, func()) {
			l := new(RwLock)
			g := l.Write()
			f := l.ReadAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, g.Unlock
		}},
		{"RwLockFuture write", func() (func(*blitzio.Context) bool, func()) {
			l := new(RwLock)
			g := l.Read()
			f := l.WriteAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, g.Unlock
		}},
		{"NotifiedFuture", func() (func(*blitzio.Context) bool, func()) {
			n := new(Notify)
			return pollOf(n.Notified()), n.NotifyOne
		}},
		{"BarrierFuture", func() (func(*blitzio.Context) bool, func()) {
			b := NewBarrier(2)
			f := b.WaitAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { b.Wait() }
		}},
		{"CancelledFuture", func() (func(*blitzio.Context) bool, func()) {
			tok := NewCancelToken().Child()
			return pollOf(tok.Cancelled()), tok.Cancel
		}},
		{"OnceFuture waiting", func() (func(*blitzio.Context) bool, func()) {
			c := new(OnceCell[int])
			hold := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
			hold.Poll(newTestCx().cx)
			f := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(1) })
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, hold.Drop
		}},
		{"OnceTryFuture waiting", func() (func(*blitzio.Context) bool, func()) {
			c := new(OnceCell[int])
			hold := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
			hold.Poll(newTestCx().cx)
			f := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] { return blitzio.Ready(blitzio.Result[int]{}) })
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, hold.Drop
		}},
		{"RecvFuture", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewChannel[int](1)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _ = tx.Send(1) }
		}},
		{"SendFuture", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewChannel[int](1)
			_ = tx.TrySend(0)
			f := tx.SendAsync(1)
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _, _ = rx.TryRecv() }
		}},
		{"SourceFuture unbounded", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewUnbounded[int]()
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _ = tx.Send(1) }
		}},
		{"SourceFuture broadcast", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewBroadcast[int](2)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _ = tx.Send(1) }
		}},
		{"ChangedFuture", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewWatch(0)
			f := rx.ChangedAsync()
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _ = tx.Send(1) }
		}},
		{"OneshotReceiver", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewOneshot[int]()
			return func(cx *blitzio.Context) bool { _, ok := rx.Poll(cx); return ok }, func() { _ = tx.Send(1) }
		}},
		{"OneshotReceiver closed sender", func() (func(*blitzio.Context) bool, func()) {
			tx, rx := NewOneshot[int]()
			return func(cx *blitzio.Context) bool { _, ok := rx.Poll(cx); return ok }, tx.Close
		}},
		{"RecvAnyFuture", func() (func(*blitzio.Context) bool, func()) {
			txA, rxA := NewChannel[int](1)
			_, rxB := NewUnbounded[int]()
			f := RecvAny[int](rxA, rxB, rxA)
			return func(cx *blitzio.Context) bool { _, ok := f.Poll(cx); return ok }, func() { _ = txA.Send(1) }
		}},
	}
	for _, c := range cases {
		poll, release := c.arm()
		first, second := newTestCx(), newTestCx()
		if poll(first.cx) {
			t.Fatalf("%s: ready at once", c.name)
		}
		if poll(second.cx) {
			t.Fatalf("%s: ready at the second poll", c.name)
		}
		release()
		if second.wakes.Load() == 0 {
			t.Fatalf("%s: the release woke the first waker %d times and the last one never",
				c.name, first.wakes.Load())
		}
		if !poll(second.cx) {
			t.Fatalf("%s: not ready after the release woke it", c.name)
		}
	}
}
