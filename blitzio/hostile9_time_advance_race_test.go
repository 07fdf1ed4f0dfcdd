package blitzio

import (
	"testing"
	"time"
)

// TestHostile9TimeRegisterDuringAdvance: a sleep's first poll reads the TestClock, then
// registers its timer; if an Advance runs between the two (it moves the clock past the
// deadline and fires what it finds, before the timer is pushed), the timer is due but no
// worker fires timers of a TestClock: it would wait for the next Advance, and a test
// doing Spawn(Sleep(d)); Advance(d); Wait() would hang now and then. The interleaving is
// reproduced by registering with the clock reading taken before the Advance.
func TestHostile9TimeRegisterDuringAdvance(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	before := rt.nowTick(rt.elapsed()) // the sleep's clock read
	clk.Advance(time.Second)           // the Advance that ran meanwhile
	p := newParker()
	var e timerEntry
	if rt.registerTimer(nil, nil, &e, rt.deadlineTick(time.Second), before, Waker{t: p}) {
		select {
		case <-p.ch:
		case <-time.After(20 * time.Second):
			t.Fatal("a timer due at the TestClock's time, registered while Advance ran, never fired")
		}
	}
	if !timerFired(&e) && e.st != tsIdle {
		t.Fatalf("entry state %d", e.st)
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

// TestHostile9TimeSpawnSleepAdvanceRace: Spawn(Sleep(d)) racing with Advance(d): the
// sleep ends either at this Advance (its first poll came before it) or at the next one
// (after it), never later.
func TestHostile9TimeSpawnSleepAdvanceRace(t *testing.T) {
	rt, clk := newTestClockRT(t, 2)
	for i := 0; i < 300; i++ {
		h := Spawn(rt, Sleep(time.Millisecond))
		clk.Advance(time.Millisecond)
		waitFor(t, "the sleep started", func() bool { return h.IsFinished() || rt.timerCount() == 1 })
		if !h.IsFinished() {
			clk.Advance(time.Millisecond)
		}
		if _, err := waitHandleFor(t, h, "a sleep after two Advances of its duration"); err != nil {
			t.Fatal(err)
		}
	}
}
