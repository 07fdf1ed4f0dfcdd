package blitzio

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pollOnceH9 polls f exactly once on the calling goroutine, with rt as the polling
// runtime (BlockOn of a future that always completes), so tests driven by a TestClock
// can check "ready or not" at a given clock reading deterministically.
func pollOnceH9[T any](t *testing.T, rt *Runtime, f Future[T]) (T, bool) {
	t.Helper()
	type r struct {
		v  T
		ok bool
	}
	res, err := BlockOn(rt, PollFn(func(cx *Context) (r, bool) {
		v, ok := f.Poll(cx)
		return r{v, ok}, true
	}))
	if err != nil {
		t.Fatalf("pollOnce: %v", err)
	}
	return res.v, res.ok
}

// TestHostile9TimeSleepDurationEdges: durations of 0, negative, MinInt64 are ready on the
// first poll; 1 ns fires exactly at +1 ns; MaxInt64 never fires and its Drop frees the
// wheel slot.
func TestHostile9TimeSleepDurationEdges(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	for _, d := range []time.Duration{0, -1, -time.Hour, math.MinInt64} {
		if _, ok := pollOnceH9(t, rt, Future[struct{}](Sleep(d))); !ok {
			t.Fatalf("Sleep(%v) not ready on its first poll", d)
		}
	}
	one := Sleep(1)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](one)); ok {
		t.Fatal("Sleep(1ns) ready before the clock moved")
	}
	clk.Advance(1)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](one)); !ok {
		t.Fatal("Sleep(1ns) not ready 1ns later")
	}
	forever := Sleep(math.MaxInt64)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](forever)); ok {
		t.Fatal("Sleep(MaxInt64) ready at once")
	}
	clk.Advance(1000 * time.Hour)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](forever)); ok {
		t.Fatal("Sleep(MaxInt64) fired after 1000h")
	}
	if n := rt.timerCount(); n != 1 {
		t.Fatalf("timerCount = %d, want 1", n)
	}
	forever.Drop()
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("dropped Sleep(MaxInt64) left %d timers", n)
	}
}

// TestHostile9TimeSleepUntilEdges: the zero time.Time and a deadline far in the past are
// due at once; a far future one is pending; a deadline without a monotonic reading
// (Round(0)) is compared on the wall clock, as Go's time.Until does.
func TestHostile9TimeSleepUntilEdges(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	for _, u := range []time.Time{{}, epoch.Add(-100 * 365 * 24 * time.Hour), time.Unix(math.MinInt64/2, 0)} {
		if _, ok := pollOnceH9(t, rt, Future[struct{}](SleepUntil(u))); !ok {
			t.Fatalf("SleepUntil(%v) not ready at once", u)
		}
	}
	far := SleepUntil(time.Unix(math.MaxInt64/2, 0))
	if _, ok := pollOnceH9(t, rt, Future[struct{}](far)); ok {
		t.Fatal("SleepUntil(far future) ready at once")
	}
	far.Drop()
	at := clk.Now().Add(time.Second).Round(0)
	s := SleepUntil(at)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](s)); ok {
		t.Fatal("SleepUntil(now+1s without monotonic) ready at once")
	}
	clk.Advance(time.Second - 1)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](s)); ok {
		t.Fatal("SleepUntil fired 1ns early")
	}
	clk.Advance(1)
	if _, ok := pollOnceH9(t, rt, Future[struct{}](s)); !ok {
		t.Fatal("SleepUntil not ready at its deadline")
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile9TimeSleepUntilRealClockMonotonic: on the system clock a deadline with a
// monotonic reading is honoured (never early), and one without is too (wall clock).
func TestHostile9TimeSleepUntilRealClockMonotonic(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	for _, strip := range []bool{false, true} {
		at := time.Now().Add(5 * time.Millisecond)
		if strip {
			at = at.Round(0)
		}
		if _, err := BlockOn(rt, SleepUntil(at)); err != nil {
			t.Fatal(err)
		}
		if time.Now().Before(at) {
			t.Fatalf("SleepUntil(strip=%v) returned before its deadline", strip)
		}
	}
}

// TestHostile9TimeTimeoutReadyWinsPastDeadline: as Tokio's timeout, a future ready on
// its first poll wins even with a deadline already passed.
func TestHostile9TimeTimeoutReadyWinsPastDeadline(t *testing.T) {
	rt, _ := newTestClockRT(t, 1)
	r, err := BlockOn(rt, Timeout(-time.Hour, Ready(7)))
	if err != nil || r.Err != nil || r.Value != 7 {
		t.Fatalf("Timeout(-1h, Ready): %+v %v", r, err)
	}
	r, err = BlockOn(rt, Deadline(time.Time{}, Ready(8)))
	if err != nil || r.Err != nil || r.Value != 8 {
		t.Fatalf("Deadline(zero, Ready): %+v %v", r, err)
	}
	var drops atomic.Int64
	r, err = BlockOn(rt, Timeout(0, Future[int](dropFuture{new(atomic.Int64), &drops})))
	if err != nil || !errors.Is(r.Err, ErrTimeout) || drops.Load() != 1 {
		t.Fatalf("Timeout(0, pending): %+v %v drops=%d", r, err, drops.Load())
	}
}

// TestHostile9TimeTimeoutInnerPanicsOrGoexits: the timer of a Timeout whose inner future
// panics or calls runtime.Goexit leaves the wheel.
func TestHostile9TimeTimeoutInnerPanicsOrGoexits(t *testing.T) {
	rt, _ := newTestClockRT(t, 1)
	arm := func(bad func()) Future[Result[int]] {
		n := 0
		return Timeout(time.Hour, PollFn(func(cx *Context) (int, bool) {
			if n++; n == 1 {
				cx.Waker().Wake() // pending once, so the sleep registers
				return 0, false
			}
			bad()
			return 0, true
		}))
	}
	_, err := BlockOn(rt, arm(func() { panic("boom") }))
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("BlockOn(panicking inner): %v", err)
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("panicking inner left %d timers", n)
	}
	_, err = waitHandle(t, Spawn(rt, arm(runtime.Goexit)))
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("task with Goexit inner: %v", err)
	}
	waitFor(t, "Goexit inner's timer removed", func() bool { return rt.timerCount() == 0 })
}

// TestHostile9TimeManyTimersSameInstant: 100k sleeps due at the same instant, half of
// them dropped first: the dropped ones leave the wheel, the others all fire at once.
func TestHostile9TimeManyTimersSameInstant(t *testing.T) {
	const n = 100_000
	rt, clk := newTestClockRT(t, 1)
	sleeps := make([]*SleepFuture, n)
	at := clk.Now().Add(time.Second)
	_, err := BlockOn(rt, PollFn(func(cx *Context) (struct{}, bool) {
		for i := range sleeps {
			sleeps[i] = SleepUntil(at)
			if _, ok := sleeps[i].Poll(cx); ok {
				panic("ready early")
			}
		}
		return struct{}{}, true
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c := rt.timerCount(); c != n {
		t.Fatalf("timerCount = %d, want %d", c, n)
	}
	for i := 0; i < n; i += 2 {
		sleeps[i].Drop()
	}
	if c := rt.timerCount(); c != n/2 {
		t.Fatalf("after dropping half: timerCount = %d, want %d", c, n/2)
	}
	clk.Advance(time.Second)
	if c := rt.timerCount(); c != 0 {
		t.Fatalf("after the instant: timerCount = %d", c)
	}
	for i := 1; i < n; i += 2 {
		if !timerFired(&sleeps[i].entry) {
			t.Fatalf("sleep %d did not fire", i)
		}
	}
}

// TestHostile9TimeResetFromOwnWake: a task that re-arms its sleep each time it fires
// (Tokio's sleep.as_mut().reset in a loop) fires once per period and keeps one timer.
func TestHostile9TimeResetFromOwnWake(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	s := Sleep(time.Second)
	var fired atomic.Int64
	h := Spawn(rt, WithDrop[int](PollFn(func(cx *Context) (int, bool) {
		for {
			if _, ok := s.Poll(cx); !ok {
				return 0, false
			}
			if fired.Add(1) == 5 {
				return 5, true
			}
			s.Reset(time.Second)
		}
	}), s.Drop))
	for i := int64(1); i <= 5; i++ {
		waitFor(t, "re-armed", func() bool { return rt.timerCount() == 1 })
		clk.Advance(time.Second)
		waitFor(t, "fired", func() bool { return fired.Load() == i })
	}
	if v, err := waitHandle(t, h); err != nil || v != 5 {
		t.Fatalf("%v %v", v, err)
	}
	if c := rt.timerCount(); c != 0 {
		t.Fatalf("%d timers left", c)
	}
}

// TestHostile9TimeCloseWithPendingSleeps: Close with tasks and a BlockOn asleep for an
// hour completes them with errors instead of hanging.
func TestHostile9TimeCloseWithPendingSleeps(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	hs := make([]JoinHandle[struct{}], 100)
	for i := range hs {
		hs[i] = Spawn(rt, Sleep(time.Hour))
	}
	waitFor(t, "sleeps registered", func() bool { return rt.timerCount() == len(hs) })
	blocked := make(chan error, 1)
	go func() { _, err := BlockOn(rt, Sleep(time.Hour)); blocked <- err }()
	waitFor(t, "BlockOn's sleep registered", func() bool { return rt.timerCount() == len(hs)+1 })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := waitHandle(t, h); err == nil {
			t.Fatal("an hour-long sleep succeeded at Close")
		}
	}
	select {
	case err := <-blocked:
		if !errors.Is(err, ErrRuntimeClosed) {
			t.Fatalf("BlockOn(Sleep) at Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("BlockOn(Sleep(1h)) hung across Close")
	}
}

// TestHostile9TimeIntervalBadPeriodPanics: like Tokio's interval(Duration::ZERO), a zero
// (or negative) period panics at the call, naming the function.
func TestHostile9TimeIntervalBadPeriodPanics(t *testing.T) {
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); s == "" || !strings.Contains(s, "Interval") {
					t.Errorf("Interval(%v): recovered %v, want a panic naming Interval", d, r)
				}
			}()
			Interval(d)
		}()
	}
}
