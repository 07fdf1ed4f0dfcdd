package blitzio

import (
	"errors"
	"testing"
	"time"
)

// budgetHog is a future that spends the task's whole cooperative budget on every poll
// and stays pending (a loop over always-ready futures: a channel that always has a
// message, a socket that always has bytes).
type budgetHog struct{}

func (budgetHog) Poll(cx *Context) (int, bool) {
	for cx.ConsumeBudget() {
	}
	return 0, false // ConsumeBudget re-scheduled the task
}

// TestHostile9TimeTimeoutOfBudgetHog: a Timeout around a future that exhausts the budget
// on every poll must still time out once its deadline passes (Tokio polls the timer with
// an unconstrained budget then, tokio#4291); otherwise the timer's completion is refused
// by the spent budget on every poll and the timeout never ends.
func TestHostile9TimeTimeoutOfBudgetHog(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	h := Spawn(rt, Timeout(time.Second, Future[int](budgetHog{})))
	waitFor(t, "the timeout's timer registered", func() bool { return rt.timerCount() == 1 })
	clk.Advance(time.Second)
	r, err := waitHandleFor(t, h, "a Timeout around a future that spends the whole budget")
	if err != nil || !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("%+v %v", r, err)
	}
	// The same under BlockOn (its own budget per poll).
	done := make(chan Result[int], 1)
	go func() {
		r, _ := BlockOn(rt, Deadline(clk.Now().Add(time.Second), Future[int](budgetHog{})))
		done <- r
	}()
	waitFor(t, "the deadline's timer registered", func() bool { return rt.timerCount() == 1 })
	clk.Advance(time.Second)
	select {
	case r := <-done:
		if !errors.Is(r.Err, ErrTimeout) {
			t.Fatalf("BlockOn(Deadline(hog)): %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("BlockOn(Deadline(hog)) never timed out")
	}
}
