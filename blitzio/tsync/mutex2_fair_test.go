package tsync

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// setMutexClock replaces the Mutex starvation clock for one test. Call it before
// starting runtimes or goroutines (their cleanup then runs first, so nothing reads the
// clock while it is restored).
func setMutexClock(t *testing.T, now func() int64) {
	t.Helper()
	old := mutexClock
	mutexClock = now
	t.Cleanup(func() { mutexClock = old })
}

// fakeClock is a clock the test advances by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64       { return c.ns.Load() }
func (c *fakeClock) advance(ns int64) { c.ns.Add(ns) }

// TestMutexNoStarvation: a task that re-locks in a loop (TryLock right after each Unlock,
// as a running task's next LockAsync does) keeps beating a woken waiter in normal mode,
// but once the waiter has waited past the threshold it switches the lock to hand-off
// mode and gets it within two of the looper's iterations. The clock is driven by hand,
// so nothing here depends on timing.
func TestMutexNoStarvation(t *testing.T) {
	clk := &fakeClock{}
	setMutexClock(t, clk.now)
	var m Mutex
	tc := newTestCx()
	g, _ := m.TryLock()
	w := m.LockAsync()
	if _, ok := w.Poll(tc.cx); ok {
		t.Fatal("waiter got a held lock")
	}
	// iteration releases the looper's lock, lets the waiter poll (as its task would when
	// woken), and re-locks; it reports whether the looper got the lock back.
	var wg MutexGuard
	waiterHas := false
	iteration := func() bool {
		g.Unlock()
		relocked := false
		if ng, ok := m.TryLock(); ok {
			g, relocked = ng, true
		}
		if !waiterHas && tc.wakes.Load() > 0 {
			if got, ok := w.Poll(tc.cx); ok {
				wg, waiterHas = got, true
			}
		}
		if !relocked && waiterHas {
			return false
		}
		if !relocked {
			t.Fatal("the lock is neither the looper's nor the waiter's")
		}
		return true
	}
	const below = 1000
	for i := range below {
		clk.advance(starvationThreshold / (2 * below)) // half the threshold in all
		if !iteration() {
			t.Fatalf("normal mode: the looper lost the lock at iteration %d before the waiter starved", i)
		}
	}
	if waiterHas {
		t.Fatal("the waiter got the lock in normal mode although the looper re-locked at once")
	}
	if s := m.state.Load(); s&mHandOff != 0 {
		t.Fatalf("hand-off mode (state %#x) before the threshold", s)
	}
	clk.advance(starvationThreshold)
	n := 0
	for iteration() {
		n++
		if n > 2 {
			t.Fatalf("the waiter, past the threshold, still lost to the looper %d times", n)
		}
	}
	if !waiterHas {
		t.Fatal("the looper stopped but the waiter has no lock")
	}
	// The waiter was the last one: hand-off mode ended with the hand-off.
	if s := m.state.Load(); s&(mHandOff|mWaiters|mWoken) != 0 {
		t.Fatalf("state %#x after the starving waiter got the lock, want normal mode", s)
	}
	wg.Unlock()
	if _, ok := m.TryLock(); !ok {
		t.Fatal("lock not free after the waiter unlocked")
	}
}

// enterHandOff switches m, held by g with waiters queued, to hand-off mode the way a
// starving waiter does: Unlock wakes the oldest, a newcomer takes the lock first, the
// waiter (past the threshold on clk) loses and re-queues at the front. It returns the
// newcomer's guard.
func enterHandOff(t *testing.T, m *Mutex, g MutexGuard, oldest *LockFuture, cx *blitzio.Context) MutexGuard {
	t.Helper()
	g.Unlock()
	b, ok := m.TryLock()
	if !ok {
		t.Fatal("TryLock refused a free lock in normal mode")
	}
	if _, ok := oldest.Poll(cx); ok {
		t.Fatal("woken waiter took a held lock")
	}
	if s := m.state.Load(); s&mHandOff == 0 {
		t.Fatalf("state %#x: a starving waiter that lost did not switch to hand-off mode", s)
	}
	return b
}

// TestMutexHandOffModeFIFO: in hand-off mode every Unlock hands the lock to the oldest
// waiter (the lock never looks free, so TryLock and newcomers queue behind), in arrival
// order, and the mode ends when a waiter that waited less than the threshold gets the lock
// or the queue runs dry.
func TestMutexHandOffModeFIFO(t *testing.T) {
	clk := &fakeClock{}
	setMutexClock(t, clk.now)
	var m Mutex
	tc := newTestCx()
	g, _ := m.TryLock()
	const old, young = 6, 2
	var fs []*LockFuture
	for i := range old {
		fs = append(fs, m.LockAsync())
		if _, ok := fs[i].Poll(tc.cx); ok {
			t.Fatalf("waiter %d got a held lock", i)
		}
	}
	clk.advance(2 * starvationThreshold)
	g = enterHandOff(t, &m, g, fs[0], tc.cx)
	// Newcomers arriving in hand-off mode, so they have waited no time when served.
	for i := range young {
		fs = append(fs, m.LockAsync())
		if _, ok := fs[old+i].Poll(tc.cx); ok {
			t.Fatalf("newcomer %d got the lock in hand-off mode", i)
		}
	}
	for i, f := range fs {
		wakes := tc.wakes.Load()
		g.Unlock()
		if tc.wakes.Load() != wakes+1 {
			t.Fatalf("hand-off to waiter %d: %d wakes, want 1", i, tc.wakes.Load()-wakes)
		}
		if i < old+1 {
			// Handed over: still locked, nobody barges in.
			if !m.IsLocked() {
				t.Fatalf("hand-off to waiter %d: the lock looked free", i)
			}
			if _, ok := m.TryLock(); ok {
				t.Fatalf("TryLock barged in ahead of waiter %d in hand-off mode", i)
			}
		}
		for _, later := range fs[i+1:] {
			if _, ok := later.Poll(tc.cx); ok {
				t.Fatalf("a later waiter got the lock before waiter %d", i)
			}
		}
		var ok bool
		// The last waiter is woken in normal mode (the young waiter before it ended
		// hand-off mode) and takes the lock, free by then, when it polls.
		if g, ok = f.Poll(tc.cx); !ok {
			t.Fatalf("waiter %d not served in arrival order", i)
		}
		// A starved waiter handed the lock keeps hand-off mode (others wait behind it);
		// the first young one ends it.
		switch s := m.state.Load(); {
		case i < old && s&mHandOff == 0:
			t.Fatalf("starved waiter %d got the lock and hand-off mode ended with waiters behind it (state %#x)", i, s)
		case i >= old && s&mHandOff != 0:
			t.Fatalf("young waiter %d got the lock and hand-off mode did not end (state %#x)", i, s)
		}
	}
	g.Unlock()
	if s := m.state.Load(); s&(mLocked|mHandOff|mWaiters|mWoken) != 0 {
		t.Fatalf("state %#x after the last unlock, want free", s)
	}
}

// TestMutexDropInEveryMode drops waiters that were woken (normal mode), woken and then
// beaten, handed the lock (hand-off mode), or queued last in hand-off mode: whatever they
// held passes on, and the lock ends up free.
func TestMutexDropInEveryMode(t *testing.T) {
	t.Run("woken, then dropped while a newcomer holds the lock", func(t *testing.T) {
		setMutexClock(t, func() int64 { return 0 })
		var m Mutex
		tc := newTestCx()
		g, _ := m.TryLock()
		a, b := m.LockAsync(), m.LockAsync()
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		g.Unlock() // wakes a
		x, ok := m.TryLock()
		if !ok {
			t.Fatal("TryLock refused a free lock")
		}
		a.Drop() // the lock is held: x's Unlock will wake b
		if tc.wakes.Load() != 1 {
			t.Fatalf("%d wakes, want 1 (nobody to wake while the lock is held)", tc.wakes.Load())
		}
		x.Unlock()
		gb, ok := b.Poll(tc.cx)
		if !ok {
			t.Fatal("wake lost: b not woken after a dropped woken waiter")
		}
		gb.Unlock()
		if s := m.state.Load(); s&(mLocked|mWaiters|mWoken) != 0 {
			t.Fatalf("state %#x, want free", s)
		}
	})
	t.Run("woken, beaten, re-queued, dropped", func(t *testing.T) {
		setMutexClock(t, func() int64 { return 0 })
		var m Mutex
		tc := newTestCx()
		g, _ := m.TryLock()
		a, b := m.LockAsync(), m.LockAsync()
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		g.Unlock()
		x, _ := m.TryLock()
		if _, ok := a.Poll(tc.cx); ok {
			t.Fatal("a took a held lock")
		}
		a.Drop()
		x.Unlock() // wakes b, now the oldest
		gb, ok := b.Poll(tc.cx)
		if !ok {
			t.Fatal("b not woken")
		}
		gb.Unlock()
	})
	t.Run("handed the lock in hand-off mode, then dropped: passes on", func(t *testing.T) {
		clk := &fakeClock{}
		setMutexClock(t, clk.now)
		var m Mutex
		tc := newTestCx()
		g, _ := m.TryLock()
		a, b, c := m.LockAsync(), m.LockAsync(), m.LockAsync()
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		c.Poll(tc.cx)
		clk.advance(2 * starvationThreshold)
		g = enterHandOff(t, &m, g, a, tc.cx)
		g.Unlock() // hands to a
		a.Drop()   // a never saw it: hands to b (starved too, c behind: mode stays)
		if _, ok := m.TryLock(); ok {
			t.Fatal("the lock a dropped was freed instead of handed on")
		}
		if _, ok := c.Poll(tc.cx); ok {
			t.Fatal("c got the lock ahead of b")
		}
		gb, ok := b.Poll(tc.cx)
		if !ok {
			t.Fatal("hand-off lost: a dropped waiter did not pass the lock on")
		}
		b.Drop() // done: Drop of a finished future leaves the guard alone
		if !m.IsLocked() {
			t.Fatal("Drop of a finished future released its guard")
		}
		gb.Unlock() // hands to c, the last: mode ends
		c.Drop()    // handed, dropped, nobody behind: freed
		if s := m.state.Load(); s&(mLocked|mWaiters|mWoken|mHandOff) != 0 {
			t.Fatalf("state %#x, want free in normal mode", s)
		}
		if g, ok := m.TryLock(); !ok {
			t.Fatal("lock lost")
		} else {
			g.Unlock()
		}
	})
	t.Run("last queued waiter dropped in hand-off mode: mode ends", func(t *testing.T) {
		clk := &fakeClock{}
		setMutexClock(t, clk.now)
		var m Mutex
		tc := newTestCx()
		g, _ := m.TryLock()
		a := m.LockAsync()
		a.Poll(tc.cx)
		clk.advance(2 * starvationThreshold)
		g = enterHandOff(t, &m, g, a, tc.cx)
		a.Drop()
		if s := m.state.Load(); s&(mWaiters|mHandOff) != 0 {
			t.Fatalf("state %#x: the queue is empty but hand-off mode (or mWaiters) remains", s)
		}
		g.Unlock()
		if _, ok := m.TryLock(); !ok {
			t.Fatal("lock not free")
		}
	})
}

// TestMutexStressClockModes runs tasks on two runtimes and goroutines (blocking and
// context forms) on one Mutex, some waiters cancelling at random, with three clocks: the
// real one, one frozen (never starving: pure normal mode), and one that jumps a whole
// threshold at every read (every waiter that loses a race starves: hand-off mode all the
// time, entered and left constantly). Critical sections must never overlap (a plain
// counter, checked by the race detector and the final count) and no wake or hand-off may
// be lost (the watchdog).
func TestMutexStressClockModes(t *testing.T) {
	var jump atomic.Int64
	clocks := map[string]func() int64{
		"real":     nil,
		"frozen":   func() int64 { return 0 },
		"starving": func() int64 { return jump.Add(starvationThreshold) },
	}
	for name, clk := range clocks {
		t.Run(name, func(t *testing.T) {
			if clk != nil {
				setMutexClock(t, clk)
			}
			defer watchdog(t, 60*time.Second)()
			rt1, rt2 := newRT(t, 2), newRT(t, 1)
			var m Mutex
			counter := 0
			per := stressScale(1000)
			const tasks, gor = 16, 8
			var hs []blitzio.JoinHandle[int]
			for i := range tasks {
				rt := rt1
				if i%3 == 0 {
					rt = rt2
				}
				hs = append(hs, blitzio.Spawn(rt, &lockLoop{f: m.LockAsync(), n: per, counter: &counter, drops: i%2 == 0,
					rng: rand.New(rand.NewPCG(uint64(i), 2))}))
			}
			var wg sync.WaitGroup
			for i := range gor {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range per {
						var g MutexGuard
						if i%2 == 0 && j%3 == 0 {
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(30))*time.Microsecond)
							var err error
							g, err = m.LockContext(ctx)
							cancel()
							if err != nil {
								if !errors.Is(err, context.DeadlineExceeded) {
									t.Errorf("LockContext: %v", err)
								}
								g = m.Lock()
							}
						} else if tg, ok := m.TryLock(); ok {
							g = tg
						} else {
							g = m.Lock()
						}
						counter++
						if j%5 == 0 {
							runtime.Gosched()
						}
						g.Unlock()
					}
				}()
			}
			waitAll(t, hs)
			wg.Wait()
			if want := (tasks + gor) * per; counter != want {
				t.Fatalf("counter = %d, want %d: critical sections overlapped", counter, want)
			}
			if s := m.state.Load(); s&(mLocked|mWaiters|mWoken|mHandOff) != 0 {
				t.Fatalf("state %#x at the end, want free with no waiters: a wake or hand-off was lost", s)
			}
		})
	}
}

// TestMutexLoopersDoNotStarveWaiters: goroutines and a task that lock in a tight loop and
// never stop on their own share the lock with waiters that each need it once; every
// waiter gets it (else the watchdog fails the test), with the real clock. The loopers
// stop only once every waiter is served.
func TestMutexLoopersDoNotStarveWaiters(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	var stop atomic.Bool
	counter := 0
	var loopers sync.WaitGroup
	for range 2 {
		loopers.Add(1)
		go func() {
			defer loopers.Done()
			for !stop.Load() {
				g := m.Lock()
				counter++
				g.Unlock()
			}
		}()
	}
	looperTask := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		f := m.LockAsync()
		for !stop.Load() {
			f.Reset()
			g := blitzio.Await(co, f)
			counter++
			g.Unlock()
		}
		return 0
	}))
	const waiters = 16
	var served sync.WaitGroup
	served.Add(waiters)
	var hs []blitzio.JoinHandle[int]
	for i := range waiters {
		if i%2 == 0 {
			go func() {
				defer served.Done()
				g := m.Lock()
				counter++
				g.Unlock()
			}()
			continue
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			defer served.Done()
			g := blitzio.Await(co, m.LockAsync())
			counter++
			g.Unlock()
			return i
		})))
	}
	served.Wait()
	stop.Store(true)
	waitAll(t, hs)
	loopers.Wait()
	if _, err := looperTask.Wait(); err != nil {
		t.Fatal(err)
	}
	g := m.Lock()
	defer g.Unlock()
	if counter < waiters {
		t.Fatalf("counter = %d, want at least %d", counter, waiters)
	}
}

// TestMutexHandOffAllocatesNothing: the starvation path (queue, woken, beaten, re-queued
// at the front in hand-off mode, handed the lock) allocates nothing once the future
// exists, as the normal path does (TestMutexWaitAllocatesNothing).
func TestMutexHandOffAllocatesNothing(t *testing.T) {
	clk := &fakeClock{}
	setMutexClock(t, clk.now)
	var m Mutex
	tc := newTestCx()
	f := m.LockAsync()
	g, _ := m.TryLock()
	handOffs := 0
	cycle := func() {
		f.Reset()
		f.Poll(tc.cx) // queues behind g
		clk.advance(2 * starvationThreshold)
		g.Unlock()          // wakes f
		b, _ := m.TryLock() // a running caller barges in
		f.Poll(tc.cx)       // f loses, starving: hand-off mode
		if m.state.Load()&mHandOff != 0 {
			handOffs++
		}
		b.Unlock() // hands the lock to f
		var ok bool
		if g, ok = f.Poll(tc.cx); !ok {
			panic("starving waiter not handed the lock")
		}
	}
	cycle()
	if a := testing.AllocsPerRun(100, cycle); a != 0 {
		t.Fatalf("hand-off cycle: %v allocs", a)
	}
	if handOffs != 102 { // AllocsPerRun runs the function once more to warm up
		t.Fatalf("%d of 102 cycles went through hand-off mode", handOffs)
	}
	g.Unlock()
	if _, ok := m.TryLock(); !ok {
		t.Fatal("lock not free")
	}
}
