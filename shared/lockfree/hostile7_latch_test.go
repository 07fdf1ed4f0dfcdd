package lockfree

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile review of the latches: many waiters arriving before, during and after the
// set, two setters, reuse through Reset, and the misuse the CountLatch documents as
// panicking, done concurrently.

// h7WaitAll waits for wg, failing the test with what (and the round) after
// stressTimeout instead of hanging.
func h7WaitAll(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitOrFail(t, done, what)
}

// TestHostile7OnceLatchWaitersAndSetters reuses one OnceLatch for many rounds (Reset
// between rounds, when nobody uses it, as documented). In each round 8 waiters arrive
// at random moments, some before any set, some after, and two setters call SetDone (the
// second call must be harmless). Waiters yield at random steps of Wait (the package's
// test hook) so the setters land between the UNSET, SLEEPY, SLEEPING and park steps.
// Checked: every Wait returns (a lost wake fails by timeout), returns only once the
// latch is set; and after the round the park mutex is unlocked again. A mutex left locked would make a later round's
// waiter, the next user of the recycled latch, block forever.
func TestHostile7OnceLatchWaitersAndSetters(t *testing.T) {
	rounds := scale(4_000)
	const waiters = 8
	var steps atomic.Uint64
	testHookWaitStep = func() {
		if (steps.Add(1)*0x9E3779B97F4A7C15)>>61 == 0 {
			runtime.Gosched()
		}
	}
	defer func() { testHookWaitStep = nil }()
	var l OnceLatch
	rng := NewXorShift64Star(3)
	var parkedRounds int
	for r := range rounds {
		var wg sync.WaitGroup
		var sawSleeping atomic.Bool
		for w := range waiters {
			wg.Add(1)
			delay := rng.Intn(2048)
			sleep := rng.Intn(64) == 0
			go func() {
				defer wg.Done()
				if sleep {
					time.Sleep(time.Duration(delay%50) * time.Microsecond)
				} else {
					spin(uint32(delay))
				}
				l.Wait()
				if !l.Probe() {
					t.Errorf("round %d waiter %d: Wait returned before the latch was set", r, w)
				}
			}()
		}
		for range 2 {
			wg.Add(1)
			delay := rng.Intn(4096)
			yield := rng.Intn(4) == 0
			go func() {
				defer wg.Done()
				spin(uint32(delay))
				if yield {
					runtime.Gosched()
				}
				if l.state.Load() == latchSleeping {
					sawSleeping.Store(true)
				}
				l.SetDone()
			}()
		}
		h7WaitAll(t, &wg, fmt.Sprintf("round %d: %d waiters and 2 setters of one latch", r, waiters))
		if !l.park.TryLock() {
			t.Fatalf("round %d: the park mutex is still locked after every waiter returned", r)
		}
		l.park.Unlock()
		if !l.Probe() {
			t.Fatalf("round %d: latch not set after both SetDone calls", r)
		}
		if sawSleeping.Load() {
			parkedRounds++
		}
		l.Reset()
		if l.Probe() {
			t.Fatalf("round %d: Probe true after Reset", r)
		}
	}
	t.Logf("%d rounds; a setter met a parked waiter in %d", rounds, parkedRounds)
}

// TestHostile7CountLatchIncrementDuringAnotherUndo is the interleaving that
// TestHostile7CountLatchConcurrentIncrementAfterRelease catches at random, made
// deterministic: on a released latch, incrementer A has added its 1 but not yet seen
// that the latch is released and undone it (the count is 1 for a moment); incrementer
// B increments in that moment. B must panic like A, and once A undoes its add the
// released latch must be back at zero.
func TestHostile7CountLatchIncrementDuringAnotherUndo(t *testing.T) {
	l := NewCountLatch(1)
	l.Decrement() // released
	// A: its add, frozen before its check and undo.
	l.count.Add(1)
	// B.
	mustPanic(t, "Increment after the count reached zero", l.Increment)
	// A: its undo (A then panics as well).
	l.count.Add(-1)
	if l.Count() != 0 || !l.Probe() {
		t.Fatalf("released latch after two Increments that panicked: count %d, Probe %v; want 0, true", l.Count(), l.Probe())
	}
}

// TestHostile7CountLatchConcurrentIncrementAfterRelease: "Increment after that panics"
// (the count came back to zero and the latch was released). Done by two goroutines at
// once, both must panic, and the released latch must stay at zero: a silent success
// leaves a released latch with a positive count, whose Probe reports false forever
// although Wait returns at once, and its caller believes it holds a count that nobody
// waits for. The race window is a few nanoseconds (between one Increment's add and its
// undo), so one incrementer spins on a flag on the other core while the test goroutine
// raises the flag and increments after a random delay that sweeps the alignment.
func TestHostile7CountLatchConcurrentIncrementAfterRelease(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two goroutines running at the same time")
	}
	rounds := scale(200_000)
	if raceEnabled {
		rounds /= 20 // a goroutine per round is slow under the detector; the deterministic test above is the guard
	}
	silent := 0
	rng := NewXorShift64Star(23)
	incrementPanics := func(l *CountLatch) (panicked bool) {
		defer func() { panicked = recover() != nil }()
		l.Increment()
		return false
	}
	for r := range rounds {
		l := NewCountLatch(1)
		l.Decrement() // released
		var start atomic.Bool
		other := make(chan bool)
		go func() {
			for i := 0; !start.Load(); i++ {
				if i%(1<<16) == 0 {
					runtime.Gosched() // never starve the test goroutine
				}
			}
			other <- incrementPanics(l)
		}()
		delay := uint32(rng.Intn(160))
		start.Store(true)
		spin(delay)
		mine := incrementPanics(l)
		var theirs bool
		select {
		case theirs = <-other:
		case <-time.After(stressTimeout):
			t.Fatalf("round %d: the other incrementer never finished", r)
		}
		if !mine || !theirs || l.Count() != 0 || !l.Probe() {
			if silent < 3 {
				t.Errorf("round %d: Increments on a released latch panicked: %v and %v; count now %d, Probe %v",
					r, mine, theirs, l.Count(), l.Probe())
			}
			silent++
		}
	}
	if silent > 0 {
		t.Fatalf("%d of %d rounds let an Increment after the release succeed silently", silent, rounds)
	}
}

// TestHostile7CountLatchWaiters: many waiters on one CountLatch, decrementers with
// random delays; every waiter returns, after every write the decrementers made before
// their Decrement (the race detector checks the happens-before edge).
func TestHostile7CountLatchWaiters(t *testing.T) {
	rounds := scale(2_000)
	rng := NewXorShift64Star(17)
	for r := range rounds {
		k := 1 + rng.Intn(6)
		l := NewCountLatch(k)
		wrote := make([]int, k)
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w%2 == 0 {
					runtime.Gosched()
				}
				l.Wait()
				for i, v := range wrote {
					if v != r+1 {
						t.Errorf("round %d: waiter returned before decrementer %d's write", r, i)
					}
				}
				if !l.Probe() || l.Count() != 0 {
					t.Errorf("round %d: after Wait, Probe %v, Count %d", r, l.Probe(), l.Count())
				}
			}()
		}
		for i := range k {
			wg.Add(1)
			delay := uint32(rng.Intn(1024))
			go func() {
				defer wg.Done()
				spin(delay)
				wrote[i] = r + 1
				l.Decrement()
			}()
		}
		h7WaitAll(t, &wg, fmt.Sprintf("round %d: waiters of a CountLatch of %d", r, k))
	}
}

// TestHostile7CountLatchMisuse: each misuse the type documents panics with its message
// and leaves the latch as it was; the zero value starts at count 0 like NewCountLatch(0).
func TestHostile7CountLatchMisuse(t *testing.T) {
	mustPanic(t, "NewCountLatch: negative count", func() { NewCountLatch(-1) })
	var z CountLatch
	if !z.Probe() || z.Count() != 0 {
		t.Fatal("zero CountLatch: want count 0")
	}
	z.Wait() // count 0: returns at once
	mustPanic(t, "Decrement: count went below zero", z.Decrement)
	if z.Count() != 0 {
		t.Fatalf("count %d after the failed Decrement", z.Count())
	}
	for _, n := range []int{0, -1, -1 << 62} {
		mustPanic(t, "Add: n must be positive", func() { z.Add(n) })
	}
	z.Add(3)
	for range 3 {
		z.Decrement()
	}
	if !z.Probe() {
		t.Fatal("not released after the count returned to zero")
	}
	mustPanic(t, "Increment after the count reached zero", z.Increment)
	mustPanic(t, "Increment after the count reached zero", func() { z.Add(5) })
	mustPanic(t, "count went below zero", z.Decrement)
	if z.Count() != 0 || !z.Probe() {
		t.Fatalf("released latch: count %d, Probe %v after the misuse", z.Count(), z.Probe())
	}
	z.Wait()
}

// TestHostile7CoreLatchOneWaker: many goroutines call Set on a latch whose owner is
// SLEEPING; exactly one of them must be told to wake it (the swap on one word decides),
// and a WakeUp afterwards must not lose the SET.
func TestHostile7CoreLatchOneWaker(t *testing.T) {
	rounds := scale(20_000)
	const setters = 4
	var l CoreLatch
	for r := range rounds {
		l.Reset()
		if !l.GetSleepy() || !l.FallAsleep() {
			t.Fatalf("round %d: owner could not fall asleep on a reset latch", r)
		}
		var wakers atomic.Int32
		var wg sync.WaitGroup
		for range setters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if l.Set() {
					wakers.Add(1)
				}
			}()
		}
		h7WaitAll(t, &wg, "setters")
		if w := wakers.Load(); w != 1 {
			t.Fatalf("round %d: %d setters were told to wake the sleeping owner, want exactly 1", r, w)
		}
		l.WakeUp()
		if !l.Probe() || l.GetSleepy() {
			t.Fatalf("round %d: WakeUp after Set lost the SET", r)
		}
	}
}
