package blitzio

import (
	"log"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// goexitWaker is a Waker that calls runtime.Goexit (t.FailNow inside a callback).
func goexitWaker(calls *atomic.Int32) Waker {
	return WakerFunc(func() {
		calls.Add(1)
		runtime.Goexit()
	})
}

// TestComb2GoexitWakerAdvance: a waker that calls runtime.Goexit while TestClock.Advance
// fires timers ends the goroutine calling Advance (Goexit cannot be stopped), but every
// other due timer, of this runtime and of every other runtime on the clock, must still be
// woken: nobody else would ever fire them.
func TestComb2GoexitWakerAdvance(t *testing.T) {
	capture := &logCapture{}
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(capture)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })
	clk := NewTestClock(epoch)
	a := newRT(t, Config{Workers: 1, Clock: clk})
	b := newRT(t, Config{Workers: 1, Clock: clk})
	var good, exits atomic.Int32
	const n = 9
	for _, rt := range []*Runtime{a, b} {
		for i := range n {
			w := WakerFunc(func() { good.Add(1) })
			if rt == a && i%4 == 1 {
				w = goexitWaker(&exits)
			}
			if _, ok := Sleep(time.Millisecond).Poll(NewContext(rt, w)); ok {
				t.Fatal("sleep ready at once")
			}
		}
	}
	done := make(chan bool, 1)
	go func() {
		returned := false
		defer func() { done <- returned }()
		clk.Advance(time.Millisecond)
		returned = true
	}()
	select {
	case returned := <-done:
		if returned {
			t.Errorf("Advance returned although a waker called runtime.Goexit")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Advance with a Goexit in a waker never ended")
	}
	if want := int32(2*n) - exits.Load(); good.Load() != want || exits.Load() == 0 {
		t.Errorf("a waker called Goexit during Advance: %d of %d other due timers were woken (%d Goexit wakers ran)", good.Load(), want, exits.Load())
	}
	for _, rt := range []*Runtime{a, b} {
		if c := rt.timerCount(); c != 0 {
			t.Errorf("%d timers left in a runtime after Advance", c)
		}
	}
	// The clock still works.
	h := Spawn(b, AndThen(Sleep(time.Millisecond), func(struct{}) Future[int] { return Ready(1) }))
	waitFor(t, "the sleep registered", func() bool { return b.timerCount() == 1 })
	clk.Advance(time.Millisecond)
	if v, err := waitHandle(t, h); err != nil || v != 1 {
		t.Fatalf("after the Goexit: (%v, %v)", v, err)
	}
}

// TestComb2GoexitWakerOnWorker: a waker that calls runtime.Goexit while a worker fires
// timers (the timer driver after parking, maintenance between tasks, or the drain before
// parking) must not end the worker silently nor leave the other fired timers, or the
// timer duty, stuck: every other timer fires, later sleeps fire, and the Goexit is
// reported.
func TestComb2GoexitWakerOnWorker(t *testing.T) {
	capture := &logCapture{}
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(capture)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	for _, workers := range []int{1, 2} {
		rt := newRT(t, Config{Workers: workers})
		var exits atomic.Int32
		for round := range 8 {
			fired := make(chan int, 16)
			const n = 8
			for i := range n {
				w := WakerFunc(func() { fired <- i })
				if i%3 == 0 {
					w = goexitWaker(&exits)
				}
				d := time.Millisecond * time.Duration(1+round%3)
				if _, ok := Sleep(d).Poll(NewContext(rt, w)); ok {
					t.Fatal("sleep ready at once")
				}
			}
			for k := range n - (n+2)/3 {
				select {
				case <-fired:
				case <-time.After(20 * time.Second):
					t.Fatalf("workers %d round %d: a waker called Goexit on a worker: only %d other fired timers were woken", workers, round, k)
				}
			}
			// Sleeping tasks still wake up: the timer duty was not left to a goroutine
			// that is gone.
			hs := make([]JoinHandle[int], 4)
			for i := range hs {
				hs[i] = Spawn(rt, AndThen(Sleep(time.Millisecond*time.Duration(1+i)), func(struct{}) Future[int] { return Ready(i) }))
			}
			for i, h := range hs {
				if v, err := waitHandle(t, h); err != nil || v != i {
					t.Fatalf("workers %d round %d: sleeping task after a Goexit waker: (%v, %v)", workers, round, v, err)
				}
			}
		}
		if exits.Load() == 0 {
			t.Fatal("no Goexit waker ran")
		}
		waitFor(t, "the Goexit reported", func() bool {
			return strings.Contains(capture.String(), "Goexit")
		})
	}

}

// TestComb2GoexitWakerBeforePark: timers already due when the worker that takes the timer
// duty drains them just before parking (they were registered while it ran a long poll).
// A waker calling Goexit there must not leave the parked bit or the timer duty with the
// goroutine that exits, or no worker ever drives the timers again (with one worker,
// every later sleep hangs).
func TestComb2GoexitWakerBeforePark(t *testing.T) {
	capture := &logCapture{}
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(capture)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	rt := newRT(t, Config{Workers: 1})
	var exits atomic.Int32
	for round := range 6 {
		started := make(chan struct{})
		busy := Spawn(rt, Lazy(func() int {
			close(started)
			// A long poll (the worker cannot fire timers meanwhile).
			for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
			}
			return 0
		}))
		<-started
		fired := make(chan int, 8)
		for i := range 4 {
			w := WakerFunc(func() { fired <- i })
			if i == 1 {
				w = goexitWaker(&exits)
			}
			if _, ok := Sleep(time.Millisecond).Poll(NewContext(rt, w)); ok {
				t.Fatal("sleep ready at once")
			}
		}
		if _, err := waitHandle(t, busy); err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			select {
			case <-fired:
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: only %d of 3 timers woken beside a Goexit waker", round, k)
			}
		}
		h := Spawn(rt, AndThen(Sleep(2*time.Millisecond), func(struct{}) Future[int] { return Ready(round) }))
		if v, err := waitHandle(t, h); err != nil || v != round {
			t.Fatalf("round %d: a sleeping task after a Goexit waker: (%v, %v)", round, v, err)
		}
	}
	if exits.Load() == 0 {
		t.Fatal("no Goexit waker ran")
	}
}
