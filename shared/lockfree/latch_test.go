package lockfree

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestOnceLatchBasics(t *testing.T) {
	var l OnceLatch
	if l.Probe() {
		t.Fatal("zero latch reports set")
	}
	l.SetDone()
	if !l.Probe() {
		t.Fatal("Probe false after SetDone")
	}
	l.Wait() // returns at once: must not block
	l.SetDone()
	if !l.Probe() {
		t.Fatal("second SetDone unset the latch")
	}
	l.Reset()
	if l.Probe() {
		t.Fatal("Probe true after Reset")
	}
	// After Reset the latch parks and wakes again.
	done := make(chan struct{})
	go func() { l.Wait(); close(done) }()
	eventually(t, func() bool { return l.state.Load() == latchSleeping }, "the waiter parks")
	l.SetDone()
	waitOrFail(t, done, "a waiter parked on a reset latch")
}

// TestOnceLatchManyWaiters: several waiters park (sharing one channel) and one SetDone
// releases them all.
func TestOnceLatchManyWaiters(t *testing.T) {
	var l OnceLatch
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Wait() }()
	}
	eventually(t, func() bool { return l.state.Load() == latchSleeping }, "a waiter parks")
	l.SetDone()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitOrFail(t, done, "16 waiters of one latch")
}

// TestOnceLatchStress races SetDone against Wait at least 100,000 times (in a plain
// `go test` run): pairs of goroutines meet at each round, then both wait a random short
// time before the waiter calls Wait and the setter SetDone, so the swap lands before,
// between and after the waiter's UNSET->SLEEPY, SLEEPY->SLEEPING and park steps (the
// log shows how often it met each state). A missed wake leaves a waiter parked
// forever, which fails the test by timeout, naming the round.
func TestOnceLatchStress(t *testing.T) {
	rounds := scale(100_000)
	const pairs = 4
	per := rounds / pairs
	// Yield before about one in four steps of Wait, so SetDone lands between the steps.
	var steps atomic.Uint64
	testHookWaitStep = func() {
		if (steps.Add(1)*0x9E3779B97F4A7C15)>>62 == 0 {
			runtime.Gosched()
		}
	}
	defer func() { testHookWaitStep = nil }()
	latches := make([]OnceLatch, pairs*per)
	var progress [pairs]atomic.Int64 // the round each waiter has reached
	var metState [4]atomic.Int64     // the latch state SetDone replaced
	var wg sync.WaitGroup
	for p := range pairs {
		mine := latches[p*per : (p+1)*per]
		wg.Add(2)
		go func() { // waiter
			defer wg.Done()
			rng := NewXorShift64Star(uint64(p) + 1)
			for i := range mine {
				progress[p].Store(int64(i)) // arrived at round i
				spin(uint32(rng.Intn(1024)))
				mine[i].Wait()
				if !mine[i].Probe() {
					t.Errorf("pair %d round %d: Wait returned before the latch was set", p, i)
					return
				}
			}
			progress[p].Store(int64(len(mine)))
		}()
		go func() { // setter
			defer wg.Done()
			rng := NewXorShift64Star(uint64(p) + 100)
			for i := range mine {
				for n := 0; progress[p].Load() < int64(i); n++ {
					if n%64 == 63 {
						runtime.Gosched()
					}
				}
				if rng.Intn(8) == 0 {
					runtime.Gosched() // now and then, let the waiter park for real
				} else {
					spin(uint32(rng.Intn(1024)))
				}
				metState[mine[i].state.Load()].Add(1)
				mine[i].SetDone()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		t.Logf("%d SetDone/Wait races; SetDone met UNSET %d, SLEEPY %d, SLEEPING %d times",
			len(latches), metState[latchUnset].Load(), metState[latchSleepy].Load(), metState[latchSleeping].Load())
	case <-afterStress():
		t.Fatalf("missed wake: waiters stuck at rounds %d, %d, %d, %d of %d", progress[0].Load(), progress[1].Load(), progress[2].Load(), progress[3].Load(), per)
	}
}

// TestCountLatch covers the counting API and its misuse panics.
func TestCountLatch(t *testing.T) {
	var zero CountLatch
	if !zero.Probe() || zero.Count() != 0 {
		t.Fatal("zero CountLatch is not released")
	}
	zero.Wait() // must not block

	l := NewCountLatch(2)
	l.Increment()
	l.Add(2)
	if l.Count() != 5 || l.Probe() {
		t.Fatalf("Count = %d, Probe = %v; want 5, false", l.Count(), l.Probe())
	}
	for range 4 {
		l.Decrement()
	}
	if l.Probe() {
		t.Fatal("released at count 1")
	}
	l.Decrement()
	if !l.Probe() || l.Count() != 0 {
		t.Fatal("not released at count 0")
	}
	l.Wait()

	mustPanic(t, "NewCountLatch: negative count", func() { NewCountLatch(-1) })
	mustPanic(t, "CountLatch.Add: n must be positive", func() { NewCountLatch(1).Add(0) })
	mustPanic(t, "CountLatch.Add: n must be positive", func() { NewCountLatch(1).Add(-3) })
	under := NewCountLatch(0)
	mustPanic(t, "count went below zero", under.Decrement)
	if under.Count() != 0 {
		t.Fatalf("a rejected Decrement left the count at %d", under.Count())
	}
	mustPanic(t, "Increment after the count reached zero", func() { l.Increment() })
	if !l.Probe() || l.Count() != 0 {
		t.Fatalf("a rejected Increment left the count at %d", l.Count())
	}
}

// TestCountLatchStress: rounds of k goroutines decrementing with random delays while a
// waiter waits; a lost release fails by timeout.
func TestCountLatchStress(t *testing.T) {
	rounds := scale(20_000)
	rng := NewXorShift64Star(7)
	var wg sync.WaitGroup
	var round atomic.Int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := range rounds {
			round.Store(int64(i))
			k := 1 + rng.Intn(4)
			l := NewCountLatch(k)
			for j := range k {
				wg.Add(1)
				go func(delay uint32) {
					defer wg.Done()
					spin(delay)
					l.Decrement()
				}(uint32(rng.Intn(512) * j))
			}
			l.Wait()
			if !l.Probe() {
				t.Errorf("round %d: Wait returned with count %d", i, l.Count())
				return
			}
		}
		wg.Wait()
	}()
	select {
	case <-finished:
	case <-afterStress():
		t.Fatalf("CountLatch waiter stuck in round %d of %d", round.Load(), rounds)
	}
}

func TestCoreLatchTransitions(t *testing.T) {
	var l CoreLatch
	if l.Probe() {
		t.Fatal("zero CoreLatch is set")
	}
	if l.FallAsleep() {
		t.Fatal("FallAsleep succeeded without GetSleepy")
	}
	if !l.GetSleepy() || l.GetSleepy() {
		t.Fatal("GetSleepy: want true once, then false")
	}
	if !l.FallAsleep() {
		t.Fatal("FallAsleep after GetSleepy failed")
	}
	l.WakeUp() // a spurious wake: back to UNSET
	if l.Probe() || !l.GetSleepy() {
		t.Fatal("WakeUp did not return the latch to UNSET")
	}
	l.WakeUp() // from SLEEPY, too
	if !l.GetSleepy() {
		t.Fatal("WakeUp from SLEEPY did not return to UNSET")
	}
	if l.Set() {
		t.Fatal("Set reported SLEEPING for a SLEEPY owner")
	}
	if l.FallAsleep() {
		t.Fatal("FallAsleep succeeded after Set: the owner would sleep through the Set")
	}
	l.WakeUp() // must leave SET alone
	if !l.Probe() || l.GetSleepy() {
		t.Fatal("WakeUp lost a pending Set")
	}
	l.Reset()
	l.GetSleepy()
	l.FallAsleep()
	if !l.Set() {
		t.Fatal("Set did not report a SLEEPING owner")
	}
	if l.Set() {
		t.Fatal("second Set reported SLEEPING again")
	}
}

// TestCoreLatchHandshake runs the pool's sleep handshake: a worker that parks on its own
// mutex and condition variable, and a waker that calls Set and signals only when Set
// reports SLEEPING. The waker fires at random points of the worker's
// GetSleepy/FallAsleep sequence; a missed wake leaves the worker asleep and fails the
// test by timeout.
func TestCoreLatchHandshake(t *testing.T) {
	rounds := scale(100_000)
	var (
		l       CoreLatch
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		arrived atomic.Int64
		slept   atomic.Int64
	)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // worker
		defer wg.Done()
		for i := range rounds {
			arrived.Store(int64(i))
			if l.GetSleepy() {
				mu.Lock()
				// Holding mu from FallAsleep to cond.Wait: a waker whose Set saw
				// SLEEPING takes mu before signalling, so it cannot signal too early.
				if l.FallAsleep() {
					slept.Add(1)
					for !l.Probe() {
						cond.Wait()
					}
				}
				mu.Unlock()
			}
			for !l.Probe() { // GetSleepy or FallAsleep failed: Set is on its way or done
				runtime.Gosched()
			}
			l.Reset() // acted on the Set
		}
		arrived.Store(int64(rounds))
	}()
	go func() { // waker
		defer wg.Done()
		rng := NewXorShift64Star(99)
		for i := range rounds {
			for arrived.Load() < int64(i) || (arrived.Load() == int64(i) && l.Probe()) {
				runtime.Gosched()
			}
			if rng.Intn(2) == 0 {
				spin(uint32(rng.Intn(1024)))
			}
			if l.Set() {
				mu.Lock()
				cond.Signal()
				mu.Unlock()
			}
			for arrived.Load() == int64(i) {
				runtime.Gosched()
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		t.Logf("%d rounds, worker parked in %d", rounds, slept.Load())
	case <-afterStress():
		t.Fatalf("missed wake: worker stuck in round %d of %d", arrived.Load(), rounds)
	}
}
