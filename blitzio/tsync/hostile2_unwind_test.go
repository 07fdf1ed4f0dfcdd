package tsync

import (
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// panicOnPoll is a future that panics when polled.
func panicOnPoll[T any]() blitzio.Future[T] {
	return blitzio.PollFn(func(*blitzio.Context) (T, bool) { panic("sibling failed") })
}

// TestHostile2PanicInAwaitedSelectBreaksMutex: an Async function awaits a Select of a
// LockFuture and another future; the lock is held, so the LockFuture queues, then the
// other branch panics. The panic unwinds the Async function (its task reports it), but
// nothing drops the Select, so the LockFuture stays linked in the Mutex's queue with the
// waker of a finished task. The next Unlock wakes that dead waiter and sets mWoken, which
// is never cleared: every later Unlock leaves the wake to the "woken waiter on its way",
// and the live waiter queued behind it sleeps for ever while the lock is free.
//
// In Rust the unwinding would drop the Select and with it the lock future. Here Await
// (blitzio/async.go) does not drop f when f.Poll panics, and Async's Drop after a panic
// does nothing: tsync's "dropping never loses a wake" guarantee needs that Drop.
func TestHostile2PanicInAwaitedSelectBreaksMutex(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	g := m.Lock()
	_, err := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		blitzio.Await(co, blitzio.Select2[MutexGuard, int](m.LockAsync(), panicOnPoll[int]()))
		return 0
	})).Wait()
	if err == nil {
		t.Fatal("no panic reported")
	}
	before := mutexQueued(&m) // 1 today: the dead LockFuture
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		g := blitzio.Await(co, m.LockAsync())
		g.Unlock()
		return 1
	}))
	waitMutexQueued(t, &m, before+1) // the live waiter queued (behind the dead one)
	g.Unlock()
	done := make(chan error, 1)
	go func() { _, err := h.Wait(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("live waiter never got the free lock: %s", m.debugState())
	}
}

func mutexQueued(m *Mutex) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waiters.n
}

func waitMutexQueued(t *testing.T, m *Mutex, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); mutexQueued(m) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", mutexQueued(m), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
