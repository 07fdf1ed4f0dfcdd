package tsync

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

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

// TestMutexConcurrentDoubleUnlock: two goroutines unlocking copies of one guard at once
// race on the fast path's CAS; exactly one releases the lock and the other panics, and
// the Mutex is left free and usable (not released twice into a corrupt state).
func TestMutexConcurrentDoubleUnlock(t *testing.T) {
	stop := watchdog(t, 20*time.Second)
	defer stop()
	for range stressScale(2000) {
		var m Mutex
		g, _ := m.TryLock()
		var panics atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func(g MutexGuard) {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						if !strings.Contains(fmt.Sprint(r), "unlocked twice") {
							t.Errorf("unexpected panic: %v", r)
						}
						panics.Add(1)
					}
				}()
				<-start
				g.Unlock()
			}(g)
		}
		close(start)
		wg.Wait()
		if panics.Load() != 1 {
			t.Fatalf("%d of 2 concurrent Unlocks of one hold panicked, want exactly 1", panics.Load())
		}
		if m.IsLocked() {
			t.Fatal("locked after the hold was released")
		}
		g2, ok := m.TryLock()
		if !ok {
			t.Fatal("TryLock failed on the freed Mutex")
		}
		g2.Unlock()
		if m.IsLocked() {
			t.Fatal("locked after a fresh lock and unlock")
		}
	}
}

// TestMutexStateAligned checks that the state word, a plain uint64 used with the
// sync/atomic functions (see mutexState), is 64-bit aligned wherever a Mutex lives,
// even in a struct after a smaller field on a 32-bit platform, where a misaligned
// 64-bit atomic operation panics. (On 64-bit platforms it holds trivially; run the
// test with GOARCH=386 to see it matter.)
func TestMutexStateAligned(t *testing.T) {
	var x struct {
		b byte
		m Mutex
	}
	var y struct {
		b [3]byte
		m MutexOf[byte]
	}
	for _, p := range []*uint64{&x.m.state.v, &y.m.mu.state.v} {
		if a := uintptr(unsafe.Pointer(p)); a%8 != 0 {
			t.Fatalf("Mutex state word at %#x is not 64-bit aligned", a)
		}
	}
	// And the atomics work on it there.
	g := x.m.Lock()
	g.Unlock()
	gy := y.m.Lock()
	gy.Unlock()
}
