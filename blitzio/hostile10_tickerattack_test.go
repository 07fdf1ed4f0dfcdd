package blitzio

import (
	"math"
	"sync"
	"testing"
	"time"
)

// Hostile tests of Ticker's Reset, ResetImmediately, ResetAfter, ResetAt, Period and
// MissedTickBehavior (see hostile10_ticker_reset_test.go for the basic schedule).

// tickerTask is a task that holds a Ticker and lets the test act on it from inside the
// task, between polls of the Ticker: act runs on the task's next poll (woken by the
// test) and says whether the task then polls the Ticker or returns pending without
// polling it (waiting for the Ticker's own wake-up, as a Tokio task does after a reset
// of an Interval it polled).
type tickerTask struct {
	mu    sync.Mutex
	waker Waker
	act   func(iv *Ticker) (pollNow bool)
	acted int
	ticks []time.Duration // ticks after the first, from epoch
}

// spawnTickerTask spawns a task polling iv until it has collected want ticks after the
// immediate first one.
func spawnTickerTask(rt *Runtime, iv *Ticker, want int) (*tickerTask, JoinHandle[int]) {
	tt := &tickerTask{}
	first := true
	h := Spawn(rt, WithDrop[int](PollFn(func(cx *Context) (int, bool) {
		tt.mu.Lock()
		tt.waker = cx.Waker()
		act := tt.act
		tt.act = nil
		tt.mu.Unlock()
		if act != nil {
			pollNow := act(iv)
			tt.mu.Lock()
			tt.acted++
			tt.mu.Unlock()
			if !pollNow {
				return 0, false
			}
		}
		for {
			at, ok := iv.Poll(cx)
			if !ok {
				return 0, false
			}
			if first {
				first = false
				continue
			}
			tt.mu.Lock()
			tt.ticks = append(tt.ticks, at.Sub(epoch))
			n := len(tt.ticks)
			tt.mu.Unlock()
			if n == want {
				return n, true
			}
		}
	}), iv.Drop))
	return tt, h
}

// do runs act on the task's next poll and waits until it has run.
func (tt *tickerTask) do(t *testing.T, act func(iv *Ticker) bool) {
	t.Helper()
	tt.mu.Lock()
	n := tt.acted
	tt.act = act
	w := tt.waker
	tt.mu.Unlock()
	w.Wake()
	waitFor(t, "the task to act", func() bool {
		tt.mu.Lock()
		defer tt.mu.Unlock()
		return tt.acted == n+1
	})
}

// on sets act to run on the task's next poll, whatever wakes it.
func (tt *tickerTask) on(act func(iv *Ticker) bool) (acted int) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.act = act
	return tt.acted
}

func (tt *tickerTask) actedCount() int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.acted
}

func (tt *tickerTask) tickList() []time.Duration {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]time.Duration(nil), tt.ticks...)
}

// TestHostile10TickerAttackResetKeepsWakeup: a task that polled its Ticker (pending, so
// it is owed a wake-up at the tick), then resets it and returns pending without polling
// it again, must be woken at the moved tick, as with Tokio (whose reset re-registers the
// timer with the waker of the last poll: "only the Waker from the Context passed to the
// most recent call is scheduled to receive a wakeup"). The reset cancelled the timer and
// left re-arming to a next poll that nothing would ever cause: the task slept forever.
func TestHostile10TickerAttackResetKeepsWakeup(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	tt, h := spawnTickerTask(rt, iv, 2)
	waitFor(t, "the ticker's timer", func() bool { return rt.timerCount() == 1 })
	clk.Advance(30 * ms)
	tt.do(t, func(iv *Ticker) bool { iv.ResetAfter(50 * ms); return false }) // next at 80
	if n := rt.timerCount(); n != 1 {
		t.Fatalf("after ResetAfter on a Ticker its task awaits: %d timers registered, want 1 (nothing will wake the task)", n)
	}
	clk.Advance(49 * ms)
	if got := tt.tickList(); len(got) != 0 {
		t.Fatalf("ticks %v before the moved tick at 80ms", got)
	}
	clk.Advance(1 * ms) // 80
	waitFor(t, "the moved tick", func() bool { return len(tt.tickList()) == 1 })
	clk.Advance(100 * ms) // 180: the schedule goes on from the moved tick
	if _, err := waitHandle(t, h); err != nil {
		t.Fatal(err)
	}
	if got := tt.tickList(); len(got) != 2 || got[0] != 80*ms || got[1] != 180*ms {
		t.Fatalf("ticks %v, want [80ms 180ms]", got)
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile10TickerAttackResetOnTimerWake: the Ticker's timer fires for the old tick
// and wakes the task, which resets the Ticker in that poll and returns pending without
// polling it: the wake-up it just had was for the old tick, and it must get one for the
// moved tick too (Tokio's reset re-registers even a fired timer).
func TestHostile10TickerAttackResetOnTimerWake(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	tt, h := spawnTickerTask(rt, iv, 1)
	waitFor(t, "the ticker's timer", func() bool { return rt.timerCount() == 1 })
	n := tt.on(func(iv *Ticker) bool { iv.ResetAfter(50 * ms); return false })
	clk.Advance(100 * ms) // fires, and wakes the task, which resets: next at 150
	waitFor(t, "the task to act", func() bool { return tt.actedCount() == n+1 })
	if n := rt.timerCount(); n != 1 {
		t.Fatalf("after a reset in the poll woken by the old tick: %d timers, want 1", n)
	}
	clk.Advance(50 * ms)
	if _, err := waitHandle(t, h); err != nil {
		t.Fatal(err)
	}
	if got := tt.tickList(); len(got) != 1 || got[0] != 150*ms {
		t.Fatalf("ticks %v, want [150ms]", got)
	}
}

// TestHostile10TickerAttackResetImmediatelyWakes: the same with ResetImmediately (and
// ResetAt in the past): the tick is due now, so the task must be woken now, without the
// clock moving.
func TestHostile10TickerAttackResetImmediatelyWakes(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name  string
		reset func(iv *Ticker)
	}{
		{"ResetImmediately", (*Ticker).ResetImmediately},
		{"ResetAt(past)", func(iv *Ticker) { iv.ResetAt(epoch) }},
		{"ResetAfter(-1)", func(iv *Ticker) { iv.ResetAfter(-1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, clk := newTestClockRT(t, 1)
			iv := Interval(100 * ms)
			tt, h := spawnTickerTask(rt, iv, 1)
			waitFor(t, "the ticker's timer", func() bool { return rt.timerCount() == 1 })
			clk.Advance(30 * ms)
			tt.do(t, func(iv *Ticker) bool { c.reset(iv); return false })
			if _, err := waitHandle(t, h); err != nil {
				t.Fatal(err)
			}
			if got := tt.tickList(); len(got) != 1 || got[0] != 30*ms {
				t.Fatalf("ticks %v, want [30ms]", got)
			}
			if n := rt.timerCount(); n != 0 {
				t.Fatalf("%d timers left", n)
			}
		})
	}
}

// TestHostile10TickerAttackResetInsideSelect2: Select2(iv.Tick(), other) where other's
// poll resets the Ticker (after the Ticker was polled in the same Select2 poll) and stays
// pending: the task must still be woken at the moved tick. Then the Ticker loses a
// Select2 (dropped), is reset, and wins the next one at the reset time.
func TestHostile10TickerAttackResetInsideSelect2(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	var mu sync.Mutex
	var waker Waker
	resetNow, resets := false, 0
	other := PollFn(func(cx *Context) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		waker = cx.Waker()
		if resetNow {
			resetNow = false
			iv.ResetAfter(50 * ms)
			resets++
		}
		return 0, false
	})
	if _, ok := pollOnceH9(t, rt, iv.Tick()); !ok {
		t.Fatal("first tick not at once")
	}
	sel := Select2[time.Time, int](iv.Tick(), other)
	h2 := Spawn(rt, WithDrop[Selected2[time.Time, int]](sel, iv.Drop))
	waitFor(t, "the ticker's timer", func() bool { return rt.timerCount() == 1 })
	clk.Advance(30 * ms)
	mu.Lock()
	resetNow = true
	w := waker
	mu.Unlock()
	w.Wake()
	waitFor(t, "the reset", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return resets == 1
	})
	if n := rt.timerCount(); n != 1 {
		t.Fatalf("after a reset inside Select2: %d timers, want 1", n)
	}
	clk.Advance(50 * ms) // 80
	r, err := waitHandle(t, h2)
	if err != nil || r.Index != 0 || r.V1.Sub(epoch) != 80*ms {
		t.Fatalf("Select2: %+v %v, want the Ticker at 80ms", r, err)
	}

	// Losing: other wins at once, the Ticker (armed for 180) is dropped, then reset.
	r2, err := BlockOn(rt, Select2[time.Time, int](iv.Tick(), Ready(7)))
	if err != nil || r2.Index != 1 {
		t.Fatalf("Select2 against Ready: %+v %v", r2, err)
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("after the Ticker lost: %d timers", n)
	}
	clk.Advance(20 * ms) // 100
	iv.ResetAfter(30 * ms)
	if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
		t.Fatal("tick before the reset time")
	}
	clk.Advance(30 * ms) // 130
	r2, err = BlockOn(rt, Select2[time.Time, int](iv.Tick(), Pending[int]()))
	if err != nil || r2.Index != 0 || r2.V1.Sub(epoch) != 130*ms {
		t.Fatalf("Select2 after the reset: %+v %v, want the Ticker at 130ms", r2, err)
	}
	iv.Drop()
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile10TickerAttackResetThenMove: a Ticker whose timer is registered on one
// runtime, reset, then polled on another (sharing the clock, both orders of start):
// its moved tick is kept as an instant, the first runtime keeps no timer, and the
// schedule goes on every period from the moved tick.
func TestHostile10TickerAttackResetThenMove(t *testing.T) {
	const ms = time.Millisecond
	clk := NewTestClock(epoch)
	early := newRT(t, Config{Workers: 1, Clock: clk})
	clk.Advance(time.Hour)
	late := newRT(t, Config{Workers: 1, Clock: clk})
	for _, c := range []struct {
		name     string
		from, to *Runtime
	}{{"early to late", early, late}, {"late to early", late, early}} {
		iv := Interval(100 * ms)
		start := clk.Now()
		if _, ok := pollOnceH9(t, c.from, iv.Tick()); !ok {
			t.Fatalf("%s: first tick not at once", c.name)
		}
		if _, ok := pollOnceH9(t, c.from, iv.Tick()); ok {
			t.Fatalf("%s: second tick at once", c.name)
		}
		clk.Advance(30 * ms)
		iv.Reset() // next at start+130
		if _, ok := pollOnceH9(t, c.to, iv.Tick()); ok {
			t.Fatalf("%s: tick at once after Reset on the second runtime", c.name)
		}
		if n := c.from.timerCount(); n != 0 {
			t.Fatalf("%s: first runtime kept %d timers", c.name, n)
		}
		if n := c.to.timerCount(); n != 1 {
			t.Fatalf("%s: second runtime has %d timers, want 1", c.name, n)
		}
		clk.Advance(99 * ms)
		if _, ok := pollOnceH9(t, c.to, iv.Tick()); ok {
			t.Fatalf("%s: tick 1ns..1ms early", c.name)
		}
		clk.Advance(1 * ms)
		tt, ok := pollOnceH9(t, c.to, iv.Tick())
		if !ok || !tt.Equal(start.Add(130*ms)) {
			t.Fatalf("%s: tick (%v, %v), want %v", c.name, tt.Sub(start), ok, 130*ms)
		}
		// Back to the first runtime, reset again there, schedule still on the instants.
		iv.ResetAfter(10 * ms) // start+140
		clk.Advance(10 * ms)
		tt, ok = pollOnceH9(t, c.from, iv.Tick())
		if !ok || !tt.Equal(start.Add(140*ms)) {
			t.Fatalf("%s: tick after moving back (%v, %v), want %v", c.name, tt.Sub(start), ok, 140*ms)
		}
		iv.Drop()
		if n := early.timerCount() + late.timerCount(); n != 0 {
			t.Fatalf("%s: %d timers left", c.name, n)
		}
	}
}

// TestHostile10TickerAttackResetAfterClose: the runtime that last polled the Ticker (its
// timer registered there) is closed; the Ticker is reset and polled on another runtime
// of the same clock: the reset holds, and the closed runtime keeps nothing.
func TestHostile10TickerAttackResetAfterClose(t *testing.T) {
	const ms = time.Millisecond
	for _, resetFirst := range []bool{false, true} {
		clk := NewTestClock(epoch)
		first, err := New(Config{Workers: 1, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		second := newRT(t, Config{Workers: 1, Clock: clk})
		iv := Interval(100 * ms)
		pollOnceH9(t, first, iv.Tick())
		if _, ok := pollOnceH9(t, first, iv.Tick()); ok {
			t.Fatal("second tick at once")
		}
		clk.Advance(10 * ms)
		if resetFirst {
			iv.ResetAfter(50 * ms) // 60, reset before the close
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		if !resetFirst {
			iv.ResetAfter(50 * ms) // 60, reset after the close
		}
		var got time.Duration
		task := Spawn(second, WithDrop[time.Duration](PollFn(func(cx *Context) (time.Duration, bool) {
			at, ok := iv.Poll(cx)
			if !ok {
				return 0, false
			}
			got = at.Sub(epoch)
			return got, true
		}), iv.Drop))
		waitFor(t, "the ticker armed on the second runtime", func() bool { return second.timerCount() == 1 })
		if task.IsFinished() {
			t.Fatalf("resetFirst=%v: ticked before the reset time", resetFirst)
		}
		clk.Advance(50 * ms)
		v, err := waitHandleFor(t, task, "a Ticker reset and moved off a closed runtime")
		if err != nil || v != 60*ms {
			t.Fatalf("resetFirst=%v: tick %v %v, want 60ms", resetFirst, v, err)
		}
		if n := first.timerCount() + second.timerCount(); n != 0 {
			t.Fatalf("resetFirst=%v: %d timers left", resetFirst, n)
		}
	}
}

// TestHostile10TickerAttackResetAtOddTimesTestClock: ResetAt with deadlines that have no
// monotonic reading (Round(0), time.Date in another zone), the zero time, times near the
// limits of time.Duration and far beyond, on a TestClock: each tick is at its deadline
// exactly (returned as that instant), a past one at once, an unreachable one never, and
// an unreachable one survives a move to a runtime that started earlier (where its
// elapsed time would overflow).
func TestHostile10TickerAttackResetAtOddTimesTestClock(t *testing.T) {
	const ms = time.Millisecond
	clk := NewTestClock(epoch)
	early := newRT(t, Config{Workers: 1, Clock: clk})
	clk.Advance(time.Hour)
	rt := newRT(t, Config{Workers: 1, Clock: clk})
	iv := Interval(100 * ms)
	pollOnceH9(t, rt, iv.Tick())
	now := func() time.Time { return clk.Now() }

	at := now().Add(20 * ms).Round(0)
	iv.ResetAt(at)
	clk.Advance(20*ms - 1)
	if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
		t.Fatal("ResetAt(Round(0)) fired 1ns early")
	}
	clk.Advance(1)
	if tt, ok := pollOnceH9(t, rt, iv.Tick()); !ok || !tt.Equal(at) {
		t.Fatalf("ResetAt(Round(0)): (%v, %v), want %v", tt, ok, at)
	}

	loc := time.FixedZone("x", -7*3600)
	at = now().Add(30 * ms).In(loc)
	at = time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), loc)
	iv.ResetAt(at)
	clk.Advance(30 * ms)
	if tt, ok := pollOnceH9(t, rt, iv.Tick()); !ok || !tt.Equal(at) {
		t.Fatalf("ResetAt(time.Date in another zone): (%v, %v), want %v", tt, ok, at)
	}

	for _, past := range []time.Time{{}, time.Unix(math.MinInt64/2, 0), now().Add(-1)} {
		iv.ResetAt(past)
		if tt, ok := pollOnceH9(t, rt, iv.Tick()); !ok || !tt.Equal(now()) {
			t.Fatalf("ResetAt(%v): (%v, %v), want due now at %v", past, tt, ok, now())
		}
	}

	for _, far := range []time.Time{
		time.Unix(math.MaxInt64/2, 0),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		now().Add(math.MaxInt64 - 1),    // does not overflow here, does on early
		epoch.Add(math.MaxInt64),        // the last instant early's clock can name
		rt.testStart.Add(math.MaxInt64), // the last instant rt's clock can name
	} {
		iv.ResetAt(far)
		if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
			t.Fatalf("ResetAt(%v) ready at once", far)
		}
		if _, ok := pollOnceH9(t, early, iv.Tick()); ok {
			t.Fatalf("ResetAt(%v) ready at once when moved to a runtime started earlier", far)
		}
		clk.Advance(1000 * time.Hour)
		if _, ok := pollOnceH9(t, early, iv.Tick()); ok {
			t.Fatalf("ResetAt(%v) fired after 1000h", far)
		}
		if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
			t.Fatalf("ResetAt(%v) fired after 1000h, moved back", far)
		}
		if n := early.timerCount() + rt.timerCount(); n != 1 {
			t.Fatalf("ResetAt(%v): %d timers, want 1", far, n)
		}
	}
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - time.Hour} {
		iv.ResetAfter(d)
		for _, r := range []*Runtime{early, rt, early} {
			if _, ok := pollOnceH9(t, r, iv.Tick()); ok {
				t.Fatalf("ResetAfter(%v) ready", d)
			}
		}
		clk.Advance(1000 * time.Hour)
		if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
			t.Fatalf("ResetAfter(%v) fired after 1000h", d)
		}
	}
	iv.ResetImmediately()
	if tt, ok := pollOnceH9(t, early, iv.Tick()); !ok || !tt.Equal(now()) {
		t.Fatalf("ResetImmediately after far resets: (%v, %v), want %v", tt, ok, now())
	}
	iv.Drop()
	if n := early.timerCount() + rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile10TickerAttackResetAtRealClock: on the system clock, deadlines without a
// monotonic reading (Round(0), time.Date, Unix) and with one: past ones are due at once
// (returning a time not before the reset), far ones are not, and Drop leaves no timer.
// Nothing here depends on how long anything takes.
func TestHostile10TickerAttackResetAtRealClock(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	rt2 := newRT(t, Config{Workers: 1})
	iv := Interval(time.Hour)
	pollOnceH9(t, rt, iv.Tick())
	if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
		t.Fatal("second tick of a 1h Interval at once")
	}
	for _, past := range []time.Time{
		{}, time.Now().Round(0), time.Now().Add(-time.Hour), time.Now().Round(0).Add(-time.Hour),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(math.MinInt64/2, 0), time.Now(),
	} {
		before := time.Now()
		iv.ResetAt(past)
		tt, ok := pollOnceH9(t, rt, iv.Tick())
		if !ok {
			t.Fatalf("ResetAt(%v) (in the past) not ready at once", past)
		}
		if tt.Before(before) {
			t.Fatalf("ResetAt(%v): tick %v before the reset at %v", past, tt, before)
		}
	}
	for _, far := range []time.Time{
		time.Now().Round(0).Add(time.Hour), time.Now().Add(time.Hour),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(math.MaxInt64/2, 0),
		time.Now().Add(math.MaxInt64), time.Now().Round(0).Add(math.MaxInt64),
	} {
		iv.ResetAt(far)
		for _, r := range []*Runtime{rt, rt2, rt} {
			if _, ok := pollOnceH9(t, r, iv.Tick()); ok {
				t.Fatalf("ResetAt(%v) ready at once", far)
			}
		}
		if n := rt.timerCount() + rt2.timerCount(); n != 1 {
			t.Fatalf("ResetAt(%v): %d timers, want 1", far, n)
		}
	}
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, time.Hour} {
		iv.ResetAfter(d)
		if _, ok := pollOnceH9(t, rt2, iv.Tick()); ok {
			t.Fatalf("ResetAfter(%v) ready at once", d)
		}
	}
	before := time.Now()
	iv.ResetImmediately()
	if tt, ok := pollOnceH9(t, rt, iv.Tick()); !ok || tt.Before(before) {
		t.Fatalf("ResetImmediately: (%v, %v), want ready, not before %v", tt, ok, before)
	}
	if _, ok := pollOnceH9(t, rt, iv.Tick()); ok {
		t.Fatal("tick right after ResetImmediately's tick, with a 1h period")
	}
	iv.Drop()
	if n := rt.timerCount() + rt2.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile10TickerAttackResetAndDrop: reset then Drop then poll, and Drop then reset
// then poll, on a started and on a fresh Ticker: the reset holds either way, and many
// resets in a row (with and without polls between them) leave one timer at most and none
// after Drop.
func TestHostile10TickerAttackResetAndDrop(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	pollOnceH9(t, rt, iv.Tick())
	pollOnceH9(t, rt, iv.Tick()) // registered for 100

	iv.ResetAfter(40 * ms)
	iv.Drop()
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(40 * ms)
	tickExpect(t, rt, clk, iv, true, 40*ms)

	pollOnceH9(t, rt, iv.Tick()) // registered for 140
	iv.Drop()
	iv.ResetAfter(10 * ms) // 50
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("a dropped Ticker registered %d timers on reset", n)
	}
	tickExpect(t, rt, clk, iv, false, 0)
	clk.Advance(10 * ms)
	tickExpect(t, rt, clk, iv, true, 50*ms)

	fresh := Interval(100 * ms)
	fresh.Drop()
	fresh.ResetAfter(30 * ms) // 30 after the first poll, at 50: 80
	fresh.Drop()
	tickExpect(t, rt, clk, fresh, false, 0)
	fresh.Drop()
	clk.Advance(30 * ms)
	tickExpect(t, rt, clk, fresh, true, 80*ms)
	fresh.Drop()

	tickExpect(t, rt, clk, iv, false, 0) // registered for 150
	for i := range 10_000 {
		iv.ResetAfter(time.Duration(i%7+1) * ms)
		if i%1000 == 0 {
			tickExpect(t, rt, clk, iv, false, 0)
		}
		if i%3 == 0 {
			iv.Drop()
		}
	}
	if n := rt.timerCount(); n > 1 {
		t.Fatalf("after 10000 resets: %d timers", n)
	}
	iv.ResetAfter(5 * ms) // 85
	tickExpect(t, rt, clk, iv, false, 0)
	if n := rt.timerCount(); n != 1 {
		t.Fatalf("after the resets and a poll: %d timers, want 1", n)
	}
	clk.Advance(5 * ms)
	tickExpect(t, rt, clk, iv, true, 85*ms)
	iv.Drop()
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left after Drop", n)
	}
}

// TestHostile10TickerAttackMissedAfterReset: after a reset, a late task gets the moved
// tick and then what its MissedTickBehavior says, counted from the moved tick (Tokio's
// reset_at: "If the Interval had any missed ticks before calling this method, then
// those are discarded").
func TestHostile10TickerAttackMissedAfterReset(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		b     MissedTickBehavior
		ticks []time.Duration // ready at 330 (the reset tick 80, 250 ms late)
		next  time.Duration   // then the next, pending at 330
	}{
		{Burst, []time.Duration{80 * ms, 180 * ms, 280 * ms}, 380 * ms},
		{Delay, []time.Duration{80 * ms}, 430 * ms},
		{Skip, []time.Duration{80 * ms}, 380 * ms},
	} {
		rt, clk := newTestClockRT(t, 1)
		iv := Interval(100 * ms)
		iv.SetMissedTickBehavior(c.b)
		tickExpect(t, rt, clk, iv, true, 0)
		tickExpect(t, rt, clk, iv, false, 0)
		clk.Advance(30 * ms)
		iv.ResetAfter(50 * ms) // 80
		clk.Advance(300 * ms)  // 330: the old ticks at 100, 200, 300 are gone
		for _, want := range c.ticks {
			tickExpect(t, rt, clk, iv, true, want)
		}
		tickExpect(t, rt, clk, iv, false, 0)
		clk.Advance(c.next - 330*ms - 1)
		tickExpect(t, rt, clk, iv, false, 0)
		clk.Advance(1)
		tickExpect(t, rt, clk, iv, true, c.next)
		if iv.MissedTickBehavior() != c.b || iv.Period() != 100*ms {
			t.Fatalf("%v: MissedTickBehavior %v Period %v", c.b, iv.MissedTickBehavior(), iv.Period())
		}
		// Within the 5 ms tolerance the schedule of the reset is kept by every behaviour.
		iv.Reset() // next+100
		clk.Advance(104 * ms)
		tickExpect(t, rt, clk, iv, true, c.next+100*ms)
		clk.Advance(96 * ms)
		tickExpect(t, rt, clk, iv, true, c.next+200*ms)
		iv.Drop()
	}
}

// TestHostile10TickerAttackResetBeforeFirstPollThenBehavior: a reset before the first
// poll, then SetMissedTickBehavior, then a late first tick: the behaviour chosen after
// the reset applies from the reset's tick, and the getters report what was set.
func TestHostile10TickerAttackResetBeforeFirstPollThenBehavior(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		b     MissedTickBehavior
		ticks []time.Duration
		next  time.Duration
	}{
		{Burst, []time.Duration{100 * ms, 200 * ms, 300 * ms}, 400 * ms},
		{Delay, []time.Duration{100 * ms}, 450 * ms},
		{Skip, []time.Duration{100 * ms}, 400 * ms},
	} {
		rt, clk := newTestClockRT(t, 1)
		iv := Interval(100 * ms)
		iv.Reset()
		iv.SetMissedTickBehavior(c.b)
		if iv.MissedTickBehavior() != c.b || iv.Period() != 100*ms {
			t.Fatalf("%v: MissedTickBehavior %v Period %v", c.b, iv.MissedTickBehavior(), iv.Period())
		}
		tickExpect(t, rt, clk, iv, false, 0) // first poll at 0: first tick at 100
		clk.Advance(350 * ms)
		for _, want := range c.ticks {
			tickExpect(t, rt, clk, iv, true, want)
		}
		tickExpect(t, rt, clk, iv, false, 0)
		clk.Advance(c.next - 350*ms)
		tickExpect(t, rt, clk, iv, true, c.next)
		iv.Drop()
		if n := rt.timerCount(); n != 0 {
			t.Fatalf("%v: %d timers left", c.b, n)
		}
	}
}

// TestHostile10TickerAttackResetRacesAdvance: a task on two workers resets its Ticker
// on most polls, often returning pending without polling it (relying on the Ticker's
// wake-up), while the clock advances concurrently (and, in one run, another goroutine
// wakes the task spuriously, racing the timer's wake-ups): every reset tick is due within a few ms, so the ticks keep coming, and no
// timer is left behind (run with -race).
func TestHostile10TickerAttackResetRacesAdvance(t *testing.T) {
	for _, spurious := range []bool{false, true} {
		t.Run(map[bool]string{false: "exact", true: "spurious"}[spurious], func(t *testing.T) {
			testTickerResetRacesAdvance(t, spurious)
		})
	}
}

func testTickerResetRacesAdvance(t *testing.T, spurious bool) {
	const (
		ms   = time.Millisecond
		want = 200
	)
	rt, clk := newTestClockRT(t, 2)
	iv := Interval(2 * ms)
	var (
		mu    sync.Mutex
		waker Waker
		ticks int
	)
	n := 0
	// pending: the last poll of iv returned pending, so the task is owed a wake-up by
	// it and may reset it and return pending without polling it again.
	pending := false
	h := Spawn(rt, WithDrop[int](PollFn(func(cx *Context) (int, bool) {
		mu.Lock()
		waker = cx.Waker()
		mu.Unlock()
		n++
		switch n % 5 {
		case 0:
			iv.ResetAfter(time.Duration(n%3) * ms)
			if pending {
				return 0, false // wait for the Ticker's wake-up
			}
		case 1:
			iv.ResetImmediately()
			if pending {
				return 0, false
			}
		case 2:
			iv.ResetAt(clk.Now().Add(ms))
		case 3:
			iv.Drop()
		}
		for {
			if _, ok := iv.Poll(cx); !ok {
				pending = true
				return 0, false
			}
			pending = false
			mu.Lock()
			ticks++
			k := ticks
			mu.Unlock()
			if k == want {
				return k, true
			}
			if k%2 == 0 {
				cx.Waker().Wake() // yield, and come back
				return 0, false
			}
		}
	}), iv.Drop))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // spurious wake-ups
		defer wg.Done()
		for spurious {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			w := waker
			mu.Unlock()
			w.Wake()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !h.IsFinished() {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			mu.Lock()
			k := ticks
			mu.Unlock()
			t.Fatalf("stuck after %d ticks (timers %d)", k, rt.timerCount())
		}
		clk.Advance(ms / 2)
		time.Sleep(20 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	if v, err := waitHandle(t, h); err != nil || v != want {
		t.Fatalf("%v %v", v, err)
	}
	waitFor(t, "no timers left", func() bool { return rt.timerCount() == 0 })
}
