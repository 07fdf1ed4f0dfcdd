package blitzio

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostile6Within fails the test with msg if f does not return within 20 s.
func hostile6Within(t *testing.T, msg string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("hang: %s", msg)
	}
}

// BlockOn(Sleep) from plain goroutines while the runtime closes: each returns (nil after
// a short sleep, or ErrRuntimeClosed), never hangs.
func TestHostile6BlockOnSleepRacingClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var bad atomic.Value
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := time.Hour
				if g%2 == 0 {
					d = time.Duration(rand.IntN(3)) * time.Millisecond
				}
				if _, err := BlockOn(rt, Sleep(d)); err != nil && !errors.Is(err, ErrRuntimeClosed) {
					bad.Store(err)
				}
			}()
		}
		if rand.IntN(2) == 0 {
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
		hostile6Within(t, "Close with BlockOn(Sleep) callers", func() { rt.Close() })
		hostile6Within(t, "BlockOn(Sleep) after Close", wg.Wait)
		if v := bad.Load(); v != nil {
			t.Fatalf("BlockOn(Sleep): %v, want nil or ErrRuntimeClosed", v)
		}
		if _, err := BlockOn(rt, Sleep(time.Hour)); !errors.Is(err, ErrRuntimeClosed) {
			t.Fatalf("BlockOn on a closed runtime: %v", err)
		}
	}
}

// Many timers with one deadline, half dropped at random (some concurrently with the
// Advance that fires them): every surviving one fires exactly once, the wheel ends empty.
func TestHostile6EqualDeadlinesRandomDrops(t *testing.T) {
	rt, clk := newTestClockRT(t, 2)
	const n = 20000
	var fired atomic.Int64
	cx := NewContext(rt, WakerFunc(func() { fired.Add(1) }))
	ss := make([]*SleepFuture, n)
	for i := range ss {
		ss[i] = Sleep(time.Second)
		if _, ok := ss[i].Poll(cx); ok {
			t.Fatal("ready at once")
		}
	}
	perm := rand.Perm(n)
	drop := perm[:n/2]
	for _, i := range drop[:n/4] {
		ss[i].Drop()
	}
	// The rest of the drops race with the Advance that fires them.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, i := range drop[n/4:] {
			ss[i].Drop()
		}
	}()
	hostile6Within(t, "Advance", func() { clk.Advance(time.Second) })
	hostile6Within(t, "drops", wg.Wait)
	if c := rt.timerCount(); c != 0 {
		t.Fatalf("%d timers left in the wheel", c)
	}
	for _, i := range perm[n/2:] {
		if _, ok := ss[i].Poll(cx); !ok {
			t.Fatalf("sleep %d not ready after Advance past its deadline", i)
		}
	}
	if f := fired.Load(); f < n/2 || f > n*3/4 {
		t.Fatalf("%d wakes, want between %d and %d", f, n/2, n*3/4)
	}
}

// Reset racing with the firing Advance: each reset sleep must end up pending on its new
// deadline and fire exactly when that is reached; order of firing follows deadlines.
func TestHostile6ResetWhileFiring(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	const n = 500
	var mu sync.Mutex
	var order []int
	ss := make([]*SleepFuture, n)
	cxs := make([]*Context, n)
	for i := range ss {
		i := i
		cxs[i] = NewContext(rt, WakerFunc(func() { mu.Lock(); order = append(order, i); mu.Unlock() }))
		ss[i] = Sleep(time.Millisecond)
		ss[i].Poll(cxs[i])
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range ss {
			ss[i].Reset(time.Duration(n-i) * time.Second) // later index: earlier deadline
		}
	}()
	clk.Advance(time.Millisecond)
	wg.Wait()
	mu.Lock()
	order = order[:0]
	mu.Unlock()
	for i := range ss {
		if _, ok := ss[i].Poll(cxs[i]); ok {
			t.Fatalf("sleep %d reset to %v was ready at once", i, time.Duration(n-i)*time.Second)
		}
	}
	for k := 1; k <= n; k++ {
		clk.Advance(time.Second)
		mu.Lock()
		if len(order) != k || order[k-1] != n-k {
			t.Fatalf("after %d s: fired %v, want the last one to be %d", k, order, n-k)
		}
		mu.Unlock()
	}
	for i := range ss {
		if _, ok := ss[i].Poll(cxs[i]); !ok {
			t.Fatalf("sleep %d not ready", i)
		}
	}
}

// Complete from many goroutines at once: exactly one wins, and every awaiter (tasks and
// BlockOn callers, on two runtimes) sees the winner's value.
func TestHostile6CompletionConcurrentCompleteTwoRuntimes(t *testing.T) {
	rt1 := newRT(t, Config{Workers: 2})
	rt2 := newRT(t, Config{Workers: 2})
	for round := 0; round < 50; round++ {
		c, fut := NewCompletion[int]()
		hs := []JoinHandle[int]{Spawn(rt1, fut), Spawn(rt2, fut), Spawn(rt1, fut)}
		var blockOn [2]int
		var bwg sync.WaitGroup
		for k, rt := range []*Runtime{rt1, rt2} {
			bwg.Add(1)
			go func() {
				defer bwg.Done()
				v, err := BlockOn(rt, fut)
				if err != nil {
					v = -1
				}
				blockOn[k] = v
			}()
		}
		var wins atomic.Int64
		var winner atomic.Int64
		var wg sync.WaitGroup
		for g := 1; g <= 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.Complete(g) {
					wins.Add(1)
					winner.Store(int64(g))
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || !c.IsCompleted() || c.Complete(99) {
			t.Fatalf("wins=%d completed=%v", wins.Load(), c.IsCompleted())
		}
		w := int(winner.Load())
		for _, h := range hs {
			v, err := waitHandle(t, h)
			if err != nil || v != w {
				t.Fatalf("awaiter got %d %v, want %d", v, err, w)
			}
		}
		hostile6Within(t, "BlockOn awaiters", bwg.Wait)
		if blockOn[0] != w || blockOn[1] != w {
			t.Fatalf("BlockOn awaiters got %v, want %d", blockOn, w)
		}
	}
}

// Closed: false while awaited, true after the only awaiter is dropped (aborted), false
// again when polled; Complete after every receiver dropped succeeds once.
func TestHostile6CompletionClosedFlips(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	c, fut := NewCompletion[int]()
	if c.Closed() {
		t.Fatal("Closed before anything happened")
	}
	h := Spawn(rt, fut)
	waitFor(t, "registered", func() bool { fut.s.mu.Lock(); defer fut.s.mu.Unlock(); return len(fut.s.ws) == 1 })
	if c.Closed() {
		t.Fatal("Closed while awaited")
	}
	h.Abort()
	waitHandle(t, h)
	if !c.Closed() {
		t.Fatal("not Closed after the awaiting task was aborted")
	}
	if !c.Complete(3) || c.Complete(4) {
		t.Fatal("Complete after every receiver dropped: want first true, then false")
	}
	v, err := BlockOn(rt, fut)
	if err != nil || v != 3 {
		t.Fatalf("re-poll after drop: %d %v", v, err)
	}
}
