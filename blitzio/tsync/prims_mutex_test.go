package tsync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestMutexTryLockAndGuardMisuse(t *testing.T) {
	var m Mutex
	g, ok := m.TryLock()
	if !ok || !m.IsLocked() {
		t.Fatal("TryLock on a free Mutex failed")
	}
	if _, ok := m.TryLock(); ok {
		t.Fatal("TryLock on a held Mutex succeeded")
	}
	copyOfG := g
	g.Unlock()
	if m.IsLocked() {
		t.Fatal("still locked after Unlock")
	}
	expectPanic(t, "unlocked twice", g.Unlock)
	// A copy of the unlocked guard panics even once the lock is held again by someone
	// else: the generation tells the holds apart.
	g2, ok := m.TryLock()
	if !ok {
		t.Fatal("relock failed")
	}
	expectPanic(t, "unlocked twice", copyOfG.Unlock)
	if !m.IsLocked() {
		t.Fatal("a stale guard's Unlock released the new holder's lock")
	}
	g2.Unlock()
	expectPanic(t, "zero MutexGuard", MutexGuard{}.Unlock)
	var nm *Mutex
	expectPanic(t, "nil *Mutex", func() { nm.LockAsync() })
	expectPanic(t, "nil *Mutex", func() { nm.TryLock() })
}

// TestMutexNormalModeWakesInOrder: in normal mode an Unlock frees the lock and wakes the
// oldest waiter; a running caller may take the lock first (barging), and the woken waiter
// that loses goes back to the front of the queue, so waiters are still woken in arrival
// order and only one wake is outstanding at a time. (The clock is frozen so nobody
// starves; mutex2_fair_test.go covers hand-off mode.)
func TestMutexNormalModeWakesInOrder(t *testing.T) {
	setMutexClock(t, func() int64 { return 0 })
	var m Mutex
	tc := newTestCx()
	g, _ := m.TryLock()
	const n = 8
	fs := make([]*LockFuture, n)
	for i := range fs {
		fs[i] = m.LockAsync()
		if _, ok := fs[i].Poll(tc.cx); ok {
			t.Fatalf("waiter %d got a held lock", i)
		}
	}
	g.Unlock()
	if m.IsLocked() || tc.wakes.Load() != 1 {
		t.Fatalf("after Unlock with waiters: locked=%v, %d wakes; want a free lock and 1 wake", m.IsLocked(), tc.wakes.Load())
	}
	// A running caller barges in ahead of the woken waiter 0, twice; the second Unlock
	// wakes nobody, since waiter 0's wake is still outstanding.
	for range 2 {
		b, ok := m.TryLock()
		if !ok {
			t.Fatal("TryLock refused a free lock in normal mode")
		}
		b.Unlock()
	}
	if got := tc.wakes.Load(); got != 1 {
		t.Fatalf("%d wakes, want 1: a second waiter was woken while a wake was outstanding", got)
	}
	b, _ := m.TryLock()
	// Waiter 0 loses the race and goes back to the front.
	if _, ok := fs[0].Poll(tc.cx); ok {
		t.Fatal("woken waiter took a held lock")
	}
	b.Unlock()
	if got := tc.wakes.Load(); got != 2 {
		t.Fatalf("%d wakes, want 2", got)
	}
	for i := range fs {
		for j := i + 1; j < n; j++ {
			if _, ok := fs[j].Poll(tc.cx); ok {
				t.Fatalf("waiter %d got the lock before waiter %d", j, i)
			}
		}
		var ok bool
		if g, ok = fs[i].Poll(tc.cx); !ok {
			t.Fatalf("waiter %d, woken with the lock free, did not take it", i)
		}
		g.Unlock()
		if want := int64(i + 3); i < n-1 && tc.wakes.Load() != want {
			t.Fatalf("after waiter %d unlocked: %d wakes, want %d", i, tc.wakes.Load(), want)
		}
	}
	if m.IsLocked() || m.state.Load()&(mWaiters|mWoken|mHandOff) != 0 {
		t.Fatalf("state %#x after the last unlock, want free with no flags", m.state.Load())
	}
}

// TestMutexDropAtEveryAwaitPoint drops a LockFuture in each of its states.
func TestMutexDropAtEveryAwaitPoint(t *testing.T) {
	tc := newTestCx()
	t.Run("never polled", func(t *testing.T) {
		var m Mutex
		f := m.LockAsync()
		f.Drop()
		f.Drop() // idempotent
		if m.IsLocked() {
			t.Fatal("locked")
		}
	})
	t.Run("queued", func(t *testing.T) {
		var m Mutex
		g, _ := m.TryLock()
		a, b := m.LockAsync(), m.LockAsync()
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		a.Drop()
		g.Unlock()
		if _, ok := b.Poll(tc.cx); !ok {
			t.Fatal("the waiter behind a dropped one did not get the lock")
		}
	})
	t.Run("queued, last waiter", func(t *testing.T) {
		var m Mutex
		g, _ := m.TryLock()
		a := m.LockAsync()
		a.Poll(tc.cx)
		a.Drop()
		g.Unlock()
		if _, ok := m.TryLock(); !ok {
			t.Fatal("lock not free after the only waiter left and the holder unlocked")
		}
	})
	t.Run("woken, then dropped: the wake passes on", func(t *testing.T) {
		var m Mutex
		g, _ := m.TryLock()
		a, b := m.LockAsync(), m.LockAsync()
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		g.Unlock() // wakes a
		a.Drop()   // a never saw it: must wake b
		gb, ok := b.Poll(tc.cx)
		if !ok {
			t.Fatal("wake lost: a dropped waiter did not pass its wake on")
		}
		gb.Unlock()
		if m.IsLocked() {
			t.Fatal("locked")
		}
	})
	t.Run("woken, then dropped, nobody behind", func(t *testing.T) {
		var m Mutex
		g, _ := m.TryLock()
		a := m.LockAsync()
		a.Poll(tc.cx)
		g.Unlock()
		a.Drop()
		if _, ok := m.TryLock(); !ok {
			t.Fatal("lock lost")
		}
	})
	t.Run("ready, then dropped: guard stays the caller's", func(t *testing.T) {
		var m Mutex
		f := m.LockAsync()
		g, ok := f.Poll(tc.cx)
		if !ok {
			t.Fatal("free lock not taken")
		}
		f.Drop()
		if !m.IsLocked() {
			t.Fatal("Drop of a finished future released the caller's guard")
		}
		g.Unlock()
		expectPanic(t, "after Drop", func() { m.LockAsync().dropThenPoll(tc.cx) })
	})
}

func (f *LockFuture) dropThenPoll(cx *blitzio.Context) { f.Drop(); f.Poll(cx) }

// TestMutexWaitAllocatesNothing: once the future exists, waiting (re-polls) and the
// reuse cycle Reset, Poll, Unlock allocate nothing.
func TestMutexWaitAllocatesNothing(t *testing.T) {
	var m Mutex
	tc := newTestCx()
	g, _ := m.TryLock()
	f := m.LockAsync()
	f.Poll(tc.cx)
	if a := testing.AllocsPerRun(100, func() { f.Poll(tc.cx) }); a != 0 {
		t.Fatalf("re-polling a waiting LockFuture: %v allocs", a)
	}
	g.Unlock()
	g, _ = f.Poll(tc.cx)
	g.Unlock()
	if a := testing.AllocsPerRun(100, func() {
		f.Reset()
		g, _ := f.Poll(tc.cx)
		g.Unlock()
	}); a != 0 {
		t.Fatalf("Reset+Poll+Unlock: %v allocs", a)
	}
	// A contended cycle: queue, wake, take.
	h, _ := m.TryLock()
	if a := testing.AllocsPerRun(100, func() {
		f.Reset()
		f.Poll(tc.cx)
		h.Unlock()
		h, _ = f.Poll(tc.cx)
	}); a != 0 {
		t.Fatalf("queue+wake cycle: %v allocs", a)
	}
	h.Unlock()
}

// lockLoop is a task that locks m n times with one reused future and increments a plain
// (unsynchronised) counter inside: the race detector and the final count catch any
// overlap of critical sections.
type lockLoop struct {
	f       *LockFuture
	n       int
	counter *int
	drops   bool
	rng     *rand.Rand
	left    *atomic.Int64 // if set, n is published here for a watchdog
}

func (l *lockLoop) Poll(cx *blitzio.Context) (int, bool) {
	for l.n > 0 {
		g, ok := l.f.Poll(cx)
		if !ok {
			if l.drops && l.rng.IntN(4) == 0 {
				// Give up the wait and queue again: a cancelled waiter that may
				// have been handed the lock meanwhile (it must pass it on).
				l.f.Reset()
				cx.Yield()
			}
			return 0, false
		}
		*l.counter++
		l.n--
		if l.left != nil {
			l.left.Store(int64(l.n))
		}
		if l.n%2 == 0 {
			g.UnlockFrom(cx)
		} else {
			g.Unlock()
		}
		l.f.Reset()
		if l.n%16 == 0 {
			cx.Yield()
			return 0, false
		}
	}
	return 0, true
}

// TestMutexStressTasksAndGoroutines: more tasks than workers and more goroutines than
// cores on one Mutex, tasks on two runtimes, some waiters cancelling at random.
func TestMutexStressTasksAndGoroutines(t *testing.T) {
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	var m Mutex
	counter := 0
	per := stressScale(2000)
	const tasks, gor = 32, 16
	// Progress for the watchdog: locks left per task, and per goroutine (atomics: the
	// watchdog reads them while the test runs).
	var taskLeft [tasks]atomic.Int64
	var gorLeft [gor]atomic.Int64
	var phase atomic.Value // what the test goroutine is waiting for
	phase.Store("running")
	progress := func() int64 {
		var left int64
		for i := range taskLeft {
			left += taskLeft[i].Load()
		}
		for i := range gorLeft {
			left += gorLeft[i].Load()
		}
		return -left
	}
	defer watchdogProgress(t, 30*time.Second, progress, func() string {
		var tl, gl []int64
		for i := range taskLeft {
			tl = append(tl, taskLeft[i].Load())
		}
		for i := range gorLeft {
			gl = append(gl, gorLeft[i].Load())
		}
		return fmt.Sprintf("test %s; %s; locks left per task %v, per goroutine %v", phase.Load(), m.debugState(), tl, gl)
	})()
	var hs []blitzio.JoinHandle[int]
	for i := range tasks {
		rt := rt1
		if i%3 == 0 {
			rt = rt2
		}
		taskLeft[i].Store(int64(per))
		hs = append(hs, blitzio.Spawn(rt, &lockLoop{f: m.LockAsync(), n: per, counter: &counter, drops: i%2 == 0,
			rng: rand.New(rand.NewPCG(uint64(i), 1)), left: &taskLeft[i]}))
	}
	var wg sync.WaitGroup
	for i := range gor {
		wg.Add(1)
		gorLeft[i].Store(int64(per))
		go func() {
			defer wg.Done()
			defer gorLeft[i].Store(0)
			for j := range per {
				gorLeft[i].Store(int64(per - j))
				if i%2 == 0 && j%3 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(50))*time.Microsecond)
					g, err := m.LockContext(ctx)
					cancel()
					if err != nil {
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("LockContext: %v", err)
						}
						g = m.Lock()
					}
					counter++
					g.Unlock()
					continue
				}
				g := m.Lock()
				counter++
				if j%7 == 0 {
					runtime.Gosched()
				}
				g.Unlock()
			}
		}()
	}
	phase.Store("waiting for the tasks")
	waitAll(t, hs)
	phase.Store("waiting for the goroutines")
	wg.Wait()
	phase.Store("in the final Lock")
	g := m.Lock()
	if want := (tasks + gor) * per; counter != want {
		t.Fatalf("counter = %d, want %d: critical sections overlapped", counter, want)
	}
	g.Unlock()
	if _, ok := m.TryLock(); !ok {
		t.Fatal("lock not free at the end: a wake or hand-off was lost")
	}
}

// TestMutexPanicAndGoexitWhileHolding: a task that panics or calls runtime.Goexit while
// holding a guard with a deferred Unlock releases the lock; so does an Async function
// dropped (aborted) while holding one.
func TestMutexPanicAndGoexitWhileHolding(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	for _, mode := range []string{"panic", "goexit"} {
		h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			g := blitzio.Await(co, m.LockAsync())
			defer g.Unlock()
			if mode == "panic" {
				panic("boom")
			}
			runtime.Goexit()
			return 0
		}))
		if _, err := h.Wait(); err == nil {
			t.Fatalf("%s: no error", mode)
		}
		g := m.Lock() // hangs (watchdog) if the lock leaked
		g.Unlock()
	}
	// Aborted while holding, and while waiting behind a holder.
	g := m.Lock()
	holding := make(chan struct{})
	waiter := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		g := blitzio.Await(co, m.LockAsync())
		defer g.Unlock()
		close(holding)
		blitzio.Await(co, blitzio.Pending[int]())
		return 0
	}))
	g.Unlock()
	<-holding
	waiter.Abort()
	waiter.Wait()
	g = m.Lock()
	g.Unlock()
}

// TestMutexLockContext: an expired context gives up the wait, the lock is not lost, and
// a cancelled context before the call fails fast.
func TestMutexLockContext(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	var m Mutex
	g, _ := m.TryLock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := m.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	g.Unlock()
	g, err := m.LockContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g.Unlock()
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	g, _ = m.TryLock()
	if _, err := m.LockContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	g.Unlock()
}

func TestMutexOf(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	rt := newRT(t, 2)
	m := NewMutexOf(map[string]int{})
	var hs []blitzio.JoinHandle[int]
	for i := range 16 {
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			for range 100 {
				g := blitzio.Await(co, m.LockAsync())
				(*g.Value())["k"]++
				g.Unlock()
			}
			return i
		})))
	}
	waitAll(t, hs)
	g := m.Lock()
	if got := (*g.Value())["k"]; got != 1600 {
		t.Fatalf("k = %d, want 1600", got)
	}
	g.Unlock()
	if g, ok := m.TryLock(); !ok || (*g.Value())["k"] != 1600 {
		t.Fatal("TryLock")
	} else {
		g.Unlock()
	}
}

// TestMutexManyWaitersCounted: 10^6 lock operations (10^5 under -race) between tasks on
// a 2-worker runtime: every hand-off arrives (the count), or the watchdog fires.
func TestMutexManyWaitersCounted(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	counter := 0
	const tasks = 8
	per := stressScale(1_000_000) / tasks
	var done atomic.Int64
	var hs []blitzio.JoinHandle[int]
	for range tasks {
		hs = append(hs, blitzio.Spawn(rt, &lockLoop{f: m.LockAsync(), n: per, counter: &counter}))
	}
	waitAll(t, hs)
	done.Add(1)
	g := m.Lock()
	defer g.Unlock()
	if counter != tasks*per {
		t.Fatalf("counter = %d, want %d", counter, tasks*per)
	}
}
