package tsync

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// inlinePoller polls a future from inside its own waker, as an executor that runs a
// woken future at once on the waking goroutine would (a WakerFunc is allowed to run any
// code). A primitive that calls wakers while it holds one of its locks deadlocks there.
type inlinePoller struct {
	mu   sync.Mutex // serialises the polls (the waker may run on any goroutine)
	poll func(cx *blitzio.Context) bool
	cx   *blitzio.Context
	done chan struct{}
	once sync.Once
}

func newInlinePoller(poll func(cx *blitzio.Context) bool) *inlinePoller {
	p := &inlinePoller{poll: poll, done: make(chan struct{})}
	p.cx = blitzio.NewContext(nil, blitzio.WakerFunc(p.step))
	return p
}

func (p *inlinePoller) step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.poll(p.cx) {
		p.once.Do(func() { close(p.done) })
	}
}

// start polls once; it must be pending.
func (p *inlinePoller) start(t *testing.T, name string) {
	t.Helper()
	p.mu.Lock()
	ready := p.poll(p.cx)
	p.mu.Unlock()
	if ready {
		t.Fatalf("%s: ready at the first poll, want pending", name)
	}
}

// releaseAndWait runs release on a goroutine of its own and fails if it does not return,
// or the inline poll does not complete, within 10 s.
func releaseAndWait(t *testing.T, name string, p *inlinePoller, release func()) {
	t.Helper()
	returned := make(chan struct{})
	go func() { release(); close(returned) }()
	deadline := time.After(10 * time.Second)
	select {
	case <-returned:
	case <-deadline:
		t.Fatalf("%s: the release deadlocked: it calls a waker under one of its own locks", name)
	}
	select {
	case <-p.done:
	case <-deadline:
		t.Fatalf("%s: the inline poll never completed", name)
	}
}

// TestHostile9WakerPollsInline: for every release of every primitive and channel, a
// waker that polls the woken future at once, on the releasing goroutine, completes it.
// BroadcastReceiver.Close called the wakers of the waiting receives while it held the
// receiver's own lock, so a receive through that receiver, polled by its waker,
// deadlocked the Close (and every later use of the receiver).
func TestHostile9WakerPollsInline(t *testing.T) {
	type tc struct {
		name string
		// arm makes the future, returns its poll (true once it is ready, checking its
		// result) and the release that should complete it.
		arm func(t *testing.T) (poll func(cx *blitzio.Context) bool, release func())
	}
	cases := []tc{
		{"BroadcastReceiver.Close", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewBroadcast[int](4)
			t.Cleanup(tx.Close)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool {
				r, ok := f.Poll(cx)
				if ok && !errors.Is(r.Err, ErrClosed) {
					t.Errorf("receive through the closed receiver = %v", r)
				}
				if ok {
					// The waker looks at the receiver again, as a loop would.
					if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
						t.Errorf("TryRecv through the closed receiver = %v", err)
					}
				}
				return ok
			}, rx.Close
		}},
		{"BroadcastSender.Close", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewBroadcast[int](4)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				return ok
			}, tx.Close
		}},
		{"BroadcastSender.Send", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewBroadcast[int](4)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool {
				r, ok := f.Poll(cx)
				if ok && (r.Err != nil || r.Value != 7) {
					t.Errorf("received %v", r)
				}
				return ok
			}, func() { _ = tx.Send(7) }
		}},
		{"WatchReceiver.Close", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewWatch(0)
			t.Cleanup(tx.Close)
			f := rx.ChangedAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					rx.Borrow(func(*int) {})
				}
				return ok
			}, rx.Close
		}},
		{"WatchSender.Send", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewWatch(0)
			f := rx.ChangedAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok && rx.Get() != 1 {
					t.Error("value not seen")
				}
				return ok
			}, func() { _ = tx.Send(1) }
		}},
		{"Sender.Send", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewChannel[int](1)
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				return ok
			}, func() { _ = tx.Send(1) }
		}},
		{"Receiver.Recv frees room", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewChannel[int](1)
			_ = tx.TrySend(0)
			f := tx.SendAsync(1)
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				return ok
			}, func() { _, _ = rx.Recv() }
		}},
		{"Receiver.Close (not last)", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			_, rx := NewChannel[int](1)
			f := rx.RecvAsync()
			rx2 := rx.Clone()
			t.Cleanup(rx2.Close)
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				return ok
			}, rx.Close
		}},
		{"UnboundedSender.Close", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewUnbounded[int]()
			f := rx.RecvAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					_ = rx.Len()
				}
				return ok
			}, tx.Close
		}},
		{"OneshotSender.Send", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewOneshot[int]()
			return func(cx *blitzio.Context) bool {
				_, ok := rx.Poll(cx)
				return ok
			}, func() { _ = tx.Send(1) }
		}},
		{"Mutex.Unlock", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			m := new(Mutex)
			g := m.Lock()
			f := m.LockAsync()
			return func(cx *blitzio.Context) bool {
				g2, ok := f.Poll(cx)
				if ok {
					g2.Unlock()
				}
				return ok
			}, g.Unlock
		}},
		{"Semaphore.Release", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			s := NewSemaphore(1)
			p, _ := s.TryAcquire(1)
			f := s.AcquireAsync(1)
			return func(cx *blitzio.Context) bool {
				r, ok := f.Poll(cx)
				if ok {
					r.Value.Release()
				}
				return ok
			}, p.Release
		}},
		{"Semaphore.Close", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			s := NewSemaphore(0)
			f := s.AcquireAsync(1)
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					_ = s.Available()
				}
				return ok
			}, s.Close
		}},
		{"RwLock write Unlock", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			l := new(RwLock)
			g := l.Write()
			f := l.ReadAsync()
			return func(cx *blitzio.Context) bool {
				r, ok := f.Poll(cx)
				if ok {
					r.Unlock()
				}
				return ok
			}, g.Unlock
		}},
		{"Notify.NotifyOne", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			n := new(Notify)
			f := n.Notified()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					n.NotifyWaiters()
				}
				return ok
			}, n.NotifyOne
		}},
		{"Barrier last party", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			b := NewBarrier(2)
			f := b.WaitAsync()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				return ok
			}, func() { b.Wait() }
		}},
		{"OnceCell.Set", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			c := new(OnceCell[int])
			hold := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
			hold.Poll(newTestCx().cx)
			f := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(2) })
			return func(cx *blitzio.Context) bool {
				v, ok := f.Poll(cx)
				if ok && v != 2 {
					t.Errorf("value %d", v)
				}
				return ok
			}, hold.Drop // the turn passes to f, whose initialiser runs inline
		}},
		{"CancelToken.Cancel", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tok := NewCancelToken()
			f := tok.Cancelled()
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					_ = tok.Child()
					_ = tok.Context().Err()
				}
				return ok
			}, tok.Cancel
		}},
		{"RecvAny over a closing broadcast", func(t *testing.T) (func(*blitzio.Context) bool, func()) {
			tx, rx := NewBroadcast[int](2)
			t.Cleanup(tx.Close)
			_, rx2 := NewChannel[int](1)
			f := RecvAny[int](rx, rx2)
			return func(cx *blitzio.Context) bool {
				_, ok := f.Poll(cx)
				if ok {
					_, _ = rx.TryRecv()
				}
				return ok
			}, rx.Close
		}},
	}
	for _, c := range cases {
		poll, release := c.arm(t)
		p := newInlinePoller(poll)
		p.start(t, c.name)
		releaseAndWait(t, c.name, p, release)
	}
}
