package blitzio

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// tickExpect polls iv once on rt and checks the outcome: ready with the tick at wantAt
// (from epoch), or pending.
func tickExpect(t *testing.T, rt *Runtime, clk *TestClock, iv *Ticker, wantOK bool, wantAt time.Duration) {
	t.Helper()
	tt, ok := pollOnceH9(t, rt, iv.Tick())
	if ok != wantOK || (ok && tt.Sub(epoch) != wantAt) {
		t.Fatalf("at %v: tick (%v, %v), want (%v, %v)", clk.Now().Sub(epoch), tt.Sub(epoch), ok, wantAt, wantOK)
	}
}

// TestHostile10TickerReset: Reset, ResetImmediately, ResetAfter and ResetAt on a running
// Ticker move its next tick as Tokio's Interval::reset* do, and the schedule goes on
// every period from the moved tick; the timer that was armed for the old tick does not
// deliver a tick.
func TestHostile10TickerReset(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	defer iv.Drop()
	if iv.Period() != 100*ms || iv.MissedTickBehavior() != Delay {
		t.Fatalf("Period %v, MissedTickBehavior %v", iv.Period(), iv.MissedTickBehavior())
	}
	tickExpect(t, rt, clk, iv, true, 0)
	tickExpect(t, rt, clk, iv, false, 0) // armed for 100
	clk.Advance(30 * ms)
	iv.Reset() // next at 130
	clk.Advance(70 * ms)
	tickExpect(t, rt, clk, iv, false, 0) // 100: the old tick is gone
	clk.Advance(30 * ms)
	tickExpect(t, rt, clk, iv, true, 130*ms)
	clk.Advance(100 * ms)
	tickExpect(t, rt, clk, iv, true, 230*ms)

	iv.ResetImmediately() // at 230, due now
	tickExpect(t, rt, clk, iv, true, 230*ms)
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(100 * ms)
	tickExpect(t, rt, clk, iv, true, 330*ms)

	iv.ResetAfter(250 * ms) // next at 580
	clk.Advance(200 * ms)
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(50 * ms)
	tickExpect(t, rt, clk, iv, true, 580*ms)

	iv.ResetAt(epoch.Add(700 * ms))
	clk.Advance(100 * ms) // 680
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(20 * ms)
	tickExpect(t, rt, clk, iv, true, 700*ms)

	iv.ResetAt(epoch) // in the past: due now
	tickExpect(t, rt, clk, iv, true, 700*ms)
	iv.ResetAfter(-time.Hour) // negative: due now
	tickExpect(t, rt, clk, iv, true, 700*ms)
	iv.ResetAfter(math.MaxInt64) // saturates: never
	clk.Advance(time.Hour)
	tickExpect(t, rt, clk, iv, false, 0)
	iv.ResetImmediately()
	tickExpect(t, rt, clk, iv, true, 700*ms+time.Hour)
	iv.Drop()
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left after Drop", n)
	}
}

// TestHostile10TickerResetBeforeFirstPoll: a reset before the first poll replaces the
// immediate first tick: Reset and ResetAfter count from the first poll (as a Sleep's
// duration does), ResetAt is absolute, ResetImmediately keeps the first tick at once.
func TestHostile10TickerResetBeforeFirstPoll(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)

	iv := Interval(100 * ms)
	iv.Reset()
	clk.Advance(50 * ms) // the first poll is at 50: first tick at 150
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(99 * ms)
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(1 * ms)
	tickExpect(t, rt, clk, iv, true, 150*ms)
	clk.Advance(100 * ms)
	tickExpect(t, rt, clk, iv, true, 250*ms)
	iv.Drop()

	iv = Interval(100 * ms)
	iv.ResetAfter(30 * ms) // first poll at 250: first tick at 280
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(30 * ms)
	tickExpect(t, rt, clk, iv, true, 280*ms)
	iv.Drop()

	iv = Interval(100 * ms)
	iv.ResetAt(epoch.Add(400 * ms))
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(120 * ms) // 400
	tickExpect(t, rt, clk, iv, true, 400*ms)
	iv.Drop()

	iv = Interval(100 * ms)
	iv.ResetAt(epoch) // in the past
	tickExpect(t, rt, clk, iv, true, 400*ms)
	iv.Drop()

	iv = Interval(100 * ms)
	iv.ResetAfter(time.Second)
	iv.ResetImmediately() // the last reset wins: at once
	tickExpect(t, rt, clk, iv, true, 400*ms)
	iv.Drop()

	// Dropped while waiting for a first tick set by a reset, then polled again: the
	// tick keeps its time.
	iv = Interval(100 * ms)
	iv.ResetAfter(50 * ms)
	tickExpect(t, rt, clk, iv, false, 0)
	iv.Drop()
	clk.Advance(50 * ms)
	tickExpect(t, rt, clk, iv, true, 450*ms)
	iv.Drop()
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile10TickerResetOnTask: a task that resets its Ticker when woken by activity
// (the Tokio pattern of pushing a deadline back) gets its tick at the new time, on a
// runtime with workers.
func TestHostile10TickerResetOnTask(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 2)
	var (
		mu       sync.Mutex
		waker    Waker
		activity bool
		resets   int
	)
	ticked := make(chan time.Duration, 1)
	iv := Interval(100 * ms)
	h := Spawn(rt, WithDrop[int](PollFn(func(cx *Context) (int, bool) {
		mu.Lock()
		waker = cx.Waker()
		if activity {
			activity = false
			resets++
			iv.Reset()
		}
		mu.Unlock()
		for {
			at, ok := iv.Poll(cx)
			if !ok {
				return 0, false
			}
			if at.Sub(epoch) != 0 { // past the immediate first tick
				ticked <- at.Sub(epoch)
				return 1, true
			}
		}
	}), iv.Drop))
	waitFor(t, "the ticker's timer", func() bool { return rt.timerCount() == 1 })
	clk.Advance(60 * ms)
	mu.Lock()
	activity = true
	w := waker
	mu.Unlock()
	w.Wake()
	waitFor(t, "the reset to be taken", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return resets == 1 && rt.timerCount() == 1
	})
	clk.Advance(40 * ms) // 100: the old tick time
	select {
	case at := <-ticked:
		t.Fatalf("ticked at %v, before the reset tick at 160ms", at)
	default:
	}
	clk.Advance(60 * ms) // 160
	if _, err := waitHandle(t, h); err != nil {
		t.Fatal(err)
	}
	if at := <-ticked; at != 160*ms {
		t.Fatalf("tick at %v, want 160ms", at)
	}
}

// TestHostile10TickerUnknownBehaviorPanics: an out-of-range MissedTickBehavior is refused
// with a panic naming it, not taken silently as Delay.
func TestHostile10TickerUnknownBehaviorPanics(t *testing.T) {
	iv := Interval(time.Second)
	for _, b := range []MissedTickBehavior{Delay, Burst, Skip} {
		iv.SetMissedTickBehavior(b)
		if iv.MissedTickBehavior() != b {
			t.Fatalf("MissedTickBehavior() = %v after setting %v", iv.MissedTickBehavior(), b)
		}
	}
	defer func() {
		r := recover()
		if s, ok := r.(string); !ok || !strings.Contains(s, "unknown MissedTickBehavior 7") {
			t.Fatalf("recovered %v, want a panic naming the value", r)
		}
		if iv.MissedTickBehavior() != Skip {
			t.Fatalf("behaviour changed to %v by a refused value", iv.MissedTickBehavior())
		}
	}()
	iv.SetMissedTickBehavior(7)
}
