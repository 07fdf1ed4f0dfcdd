package blitzio

import (
	"testing"
	"time"
)

// TestHostile6TickerTickInSelectLoopFiresEarly: the Tokio pattern
//
//	loop { select! { _ = interval.tick() => ..., v = other => ... } }
//
// written with Select2(iv.Tick(), other). Tick returns the Ticker itself, so when the
// other arm wins, Select2 drops the Ticker (Ticker.Drop -> sleep.Drop sets sleepDone);
// the next iteration's Tick is then ready at once, reporting a tick whose scheduled time
// is still in the future on the (frozen) test clock.
func TestHostile6TickerTickInSelectLoopFiresEarly(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	cx := NewContext(rt, WakerFunc(func() {}))
	iv := Interval(time.Second)
	defer iv.Drop()

	// 1: the immediate first tick wins.
	r, ok := Select2(iv.Tick(), Pending[int]()).Poll(cx)
	if !ok || r.Index != 0 {
		t.Fatalf("first tick: %+v %v, want the immediate tick", r, ok)
	}
	// 2: the ticker is pending (its next tick is 1 s away), the other arm wins: Select2
	// drops the loser, which is the Ticker itself.
	r, ok = Select2(iv.Tick(), Ready(7)).Poll(cx)
	if !ok || r.Index != 1 {
		t.Fatalf("second select: %+v %v, want the ready arm", r, ok)
	}
	// 3: the clock has not moved; the tick at epoch+1s must not be delivered yet.
	r, ok = Select2(iv.Tick(), Pending[int]()).Poll(cx)
	if ok {
		t.Fatalf("tick delivered at clock %v with scheduled time %v (before its time): a Ticker "+
			"dropped by a losing select arm fires immediately when ticked again",
			clk.Now().Sub(epoch), r.V1.Sub(epoch))
	}
}
