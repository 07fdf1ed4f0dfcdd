package blitzio

import (
	"testing"
	"time"
)

// TestHostile9TimeIntervalDelayLessThanAPeriodLate: with Delay (Tokio's
// MissedTickBehavior::Delay, and this package's documentation: "ticks stay a full period
// apart"), a tick delivered late, even by less than a period, moves the schedule: the
// next tick is a full period after the late one, not on the old schedule. A tick late by
// no more than the tolerance (5 ms, as Tokio's) keeps the schedule.
func TestHostile9TimeIntervalDelayLessThanAPeriodLate(t *testing.T) {
	const ms = time.Millisecond
	rt, clk := newTestClockRT(t, 1)
	iv := Interval(100 * ms)
	defer iv.Drop()
	expect := func(wantOK bool, wantAt time.Duration) {
		t.Helper()
		tt, ok := pollOnceH9(t, rt, iv.Tick())
		if ok != wantOK || (ok && tt.Sub(epoch) != wantAt) {
			t.Fatalf("at %v: tick (%v, %v), want (%v, %v)", clk.Now().Sub(epoch), tt.Sub(epoch), ok, wantAt, wantOK)
		}
	}
	expect(true, 0)
	clk.Advance(103 * ms) // 3 ms late: within the tolerance
	expect(true, 100*ms)
	expect(false, 0)
	clk.Advance(97 * ms) // 200: on the original schedule
	expect(true, 200*ms)
	clk.Advance(150 * ms) // 350: the tick due at 300 is 50 ms late
	expect(true, 300*ms)
	clk.Advance(50 * ms) // 400: the old schedule's tick, which Delay must not keep
	expect(false, 0)
	clk.Advance(50 * ms) // 450: a full period after the late tick
	expect(true, 450*ms)
}

// TestHostile9TimeIntervalMovedBetweenRuntimes: a Ticker polled on one runtime and then
// on another (dropped by a select on the first, awaited by a task on the second) keeps
// its schedule on the shared clock, whichever runtime started first.
func TestHostile9TimeIntervalMovedBetweenRuntimes(t *testing.T) {
	clk := NewTestClock(epoch)
	early := newRT(t, Config{Workers: 1, Clock: clk})
	clk.Advance(time.Hour)
	late := newRT(t, Config{Workers: 1, Clock: clk})
	for _, c := range []struct {
		name     string
		from, to *Runtime
		drop     bool // dropped on the first runtime, or still registered there
	}{
		{"early to late", early, late, true}, {"late to early", late, early, true},
		{"early to late, registered", early, late, false}, {"late to early, registered", late, early, false},
	} {
		iv := Interval(time.Second)
		start := clk.Now()
		tt, ok := pollOnceH9(t, c.from, iv.Tick())
		if !ok || !tt.Equal(start) {
			t.Fatalf("%s: first tick (%v, %v), want %v", c.name, tt, ok, start)
		}
		if _, ok := pollOnceH9(t, c.from, iv.Tick()); ok {
			t.Fatalf("%s: second tick at once on the first runtime", c.name)
		}
		if c.drop {
			iv.Drop()
		}
		if _, ok := pollOnceH9(t, c.to, iv.Tick()); ok {
			t.Fatalf("%s: second tick at once on the second runtime (early)", c.name)
		}
		clk.Advance(time.Second)
		tt, ok = pollOnceH9(t, c.to, iv.Tick())
		if !ok || !tt.Equal(start.Add(time.Second)) {
			t.Fatalf("%s: second tick (%v, %v), want %v", c.name, tt, ok, start.Add(time.Second))
		}
		iv.Drop()
		if n := early.timerCount() + late.timerCount(); n != 0 {
			t.Fatalf("%s: %d timers left", c.name, n)
		}
	}
}

// TestHostile9TimeSleepMovedOffClosedRuntime: a sleep registered by a poll on one
// runtime, then polled by a task of another runtime after the first was closed, still
// completes (at its deadline) instead of waiting forever for a timer that was cleared.
func TestHostile9TimeSleepMovedOffClosedRuntime(t *testing.T) {
	clk := NewTestClock(epoch)
	first, err := New(Config{Workers: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	second := newRT(t, Config{Workers: 1, Clock: clk})
	s := Sleep(time.Second)
	if _, ok := pollOnceH9(t, first, Future[struct{}](s)); ok {
		t.Fatal("Sleep(1s) ready at once")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	h := Spawn(second, WithDrop[struct{}](s, s.Drop))
	waitFor(t, "the sleep armed on the second runtime", func() bool { return second.timerCount() == 1 })
	if h.IsFinished() {
		t.Fatal("sleep finished early")
	}
	clk.Advance(time.Second)
	if _, err := waitHandleFor(t, h, "a sleep moved off a closed runtime"); err != nil {
		t.Fatal(err)
	}
}

// TestHostile9TimeSleepMovedBetweenLiveRuntimes: a registered sleep polled on another
// runtime with its own clock is timed by the runtime polling it (its absolute deadline
// carried over), and leaves no timer behind on the first.
func TestHostile9TimeSleepMovedBetweenLiveRuntimes(t *testing.T) {
	clkA, clkB := NewTestClock(epoch), NewTestClock(epoch)
	a := newRT(t, Config{Workers: 1, Clock: clkA})
	b := newRT(t, Config{Workers: 1, Clock: clkB})
	s := Sleep(time.Second)
	if _, ok := pollOnceH9(t, a, Future[struct{}](s)); ok {
		t.Fatal("ready at once")
	}
	if _, ok := pollOnceH9(t, b, Future[struct{}](s)); ok {
		t.Fatal("ready at once on b")
	}
	if n := a.timerCount(); n != 0 {
		t.Fatalf("the first runtime kept %d timers", n)
	}
	clkB.Advance(time.Second - 1)
	if _, ok := pollOnceH9(t, b, Future[struct{}](s)); ok {
		t.Fatal("fired 1ns early on b")
	}
	clkB.Advance(1)
	if _, ok := pollOnceH9(t, b, Future[struct{}](s)); !ok {
		t.Fatal("not fired at its deadline on b")
	}
}
