package blitzio

import (
	"errors"
	"testing"
	"time"
)

func TestComb2TryTimeout(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	boom := errors.New("boom")

	// In time, success: the value, no nesting.
	ok := Spawn(rt, Lazy(func() int { return 4 }))
	if r, err := BlockOn(rt, TryTimeout(time.Second, ok)); err != nil || r.Err != nil || r.Value != 4 {
		t.Errorf("TryTimeout of a finished task = %+v, %v", r, err)
	}
	// In time, failure: the future's own error.
	bad := Spawn(rt, Lazy(func() int { panic(boom) }))
	if r, err := BlockOn(rt, TryTimeout(time.Second, bad)); err != nil || !errors.Is(r.Err, boom) || errors.Is(r.Err, ErrTimeout) {
		t.Errorf("TryTimeout of a failed task = %+v, %v; want the task's error", r, err)
	}
	// Too late: ErrTimeout, and the inner future is dropped.
	slow := newManual[Result[int]]()
	h := Spawn(rt, TryTimeout[int](time.Second, slow))
	waitFor(t, "the inner future polled", slow.polled)
	waitFor(t, "the timer registered", func() bool { return rt.timerCount() == 1 })
	clk.Advance(time.Second)
	r, err := waitHandle(t, h)
	if err != nil || !errors.Is(r.Err, ErrTimeout) {
		t.Errorf("TryTimeout that expired = %+v, %v; want ErrTimeout", r, err)
	}
	if slow.drops.Load() != 1 {
		t.Errorf("inner future dropped %d times, want 1", slow.drops.Load())
	}
	// TryDeadline, and a Result-returning combinator inside.
	r2, err := BlockOn(rt, TryDeadline(clk.Now().Add(time.Hour), TryJoin(Spawn(rt, Ready(1)), Spawn(rt, Ready(2)))))
	if err != nil || r2.Err != nil || len(r2.Value) != 2 || r2.Value[1] != 2 {
		t.Errorf("TryDeadline(TryJoin) = %+v, %v", r2, err)
	}
	// Polled again after it finished: the same result.
	cx := NewContext(rt, Waker{})
	f := TryTimeout(time.Second, Ready(Result[int]{Value: 9}))
	a, _ := f.Poll(cx)
	b, okb := f.Poll(cx)
	if !okb || a != b || a.Value != 9 {
		t.Errorf("TryTimeout polled again = %+v, %v, first %+v", b, okb, a)
	}
}
