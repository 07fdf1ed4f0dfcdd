package blitzio

import (
	"testing"
	"time"
)

// TestHostile9TimeSleepMoveRaceStress: sleeps registered on one real-clock runtime and
// moved, near their deadline, to a task of another, racing with the first runtime firing
// them: each completes (once), none is lost, and no timer is left on either runtime.
func TestHostile9TimeSleepMoveRaceStress(t *testing.T) {
	a := newRT(t, Config{Workers: 1})
	b := newRT(t, Config{Workers: 1})
	const n = 2000
	hs := make([]JoinHandle[struct{}], 0, n)
	for i := range n {
		s := Sleep(time.Duration(i%3) * time.Millisecond / 2)
		pollOnceH9(t, a, Future[struct{}](s))
		hs = append(hs, Spawn(b, WithDrop[struct{}](s, s.Drop)))
	}
	for _, h := range hs {
		if _, err := waitHandleFor(t, h, "a sleep moved between runtimes"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "no timers left", func() bool { return a.timerCount() == 0 && b.timerCount() == 0 })
}

// TestHostile9TimeAdvanceHuge: advancing a TestClock by MaxInt64 (twice: the clock
// saturates) fires the sleeps due then, including Sleep(MaxInt64), without looping.
func TestHostile9TimeAdvanceHuge(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	s1, s2 := Sleep(1<<63-1), Sleep(time.Hour)
	pollOnceH9(t, rt, Future[struct{}](s1))
	pollOnceH9(t, rt, Future[struct{}](s2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		clk.Advance(1<<63 - 1)
		clk.Advance(1<<63 - 1)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("TestClock.Advance(MaxInt64) did not return")
	}
	if _, ok := pollOnceH9(t, rt, Future[struct{}](s2)); !ok {
		t.Fatal("Sleep(1h) not ready after Advance(MaxInt64)")
	}
	if _, ok := pollOnceH9(t, rt, Future[struct{}](s1)); !ok {
		t.Fatal("Sleep(MaxInt64) not ready after the clock saturated")
	}
}
