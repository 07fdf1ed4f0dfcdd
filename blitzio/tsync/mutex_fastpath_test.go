package tsync

import "testing"

// TestMutexUnlockFastPathWithWaiters: the one-CAS fast path of Unlock succeeds only when
// the state word is exactly the guard's hold. With a waiter queued it must fail over to
// the slow path, which frees the lock and wakes the waiter; a stale guard must panic
// without releasing the current holder's lock or waking anyone, through Unlock and
// UnlockFrom alike.
func TestMutexUnlockFastPathWithWaiters(t *testing.T) {
	setMutexClock(t, func() int64 { return 0 })
	for _, from := range []bool{false, true} {
		var m Mutex
		tc := newTestCx()
		unlock := func(g MutexGuard) {
			if from {
				g.UnlockFrom(tc.cx)
			} else {
				g.Unlock()
			}
		}
		g1, _ := m.TryLock()
		stale := g1
		f := m.LockAsync()
		if _, ok := f.Poll(tc.cx); ok {
			t.Fatal("LockAsync succeeded on a held Mutex")
		}
		unlock(g1) // waiter queued: the fast path's CAS fails, the slow path wakes it
		if tc.wakes.Load() != 1 {
			t.Fatalf("UnlockFrom=%v: the queued waiter was woken %d times, want 1", from, tc.wakes.Load())
		}
		g2, ok := f.Poll(tc.cx)
		if !ok {
			t.Fatalf("UnlockFrom=%v: the woken waiter did not get the free lock", from)
		}
		// A second waiter queues behind g2; the stale guard must not release g2's hold.
		f2 := m.LockAsync()
		if _, ok := f2.Poll(tc.cx); ok {
			t.Fatal("LockAsync succeeded on a held Mutex")
		}
		expectPanic(t, "unlocked twice", func() { unlock(stale) })
		if !m.IsLocked() || tc.wakes.Load() != 1 {
			t.Fatalf("UnlockFrom=%v: a stale guard's Unlock released the lock (%v) or woke a waiter (%d wakes)",
				from, m.IsLocked(), tc.wakes.Load())
		}
		unlock(g2)
		if tc.wakes.Load() != 2 {
			t.Fatalf("UnlockFrom=%v: second waiter woken %d times in all, want 2", from, tc.wakes.Load())
		}
		g3, ok := f2.Poll(tc.cx)
		if !ok {
			t.Fatalf("UnlockFrom=%v: second waiter did not get the lock", from)
		}
		unlock(g3)
		if m.IsLocked() {
			t.Fatalf("UnlockFrom=%v: still locked after the last Unlock", from)
		}
		expectPanic(t, "zero MutexGuard", func() { unlock(MutexGuard{}) })
	}
}
