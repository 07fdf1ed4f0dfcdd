package blitzio

import (
	"testing"
	"time"
)

// TestHostile9SelectBudgetHogDoesNotStarveLaterBranches: a select whose earlier branch
// spends the task's whole cooperative budget on every poll (a loop over always-ready
// work) must still let a later branch finish: here a Sleep whose deadline has passed.
// Select2 and Select3 polled their branches in a fixed order, so the spent budget
// refused the expired timer on every poll and the select never ended. (Tokio's select!
// starts at a random branch for the same reason.)
func TestHostile9SelectBudgetHogDoesNotStarveLaterBranches(t *testing.T) {
	cases := []struct {
		name string
		want int
		f    func() Future[int]
	}{
		{"Select2", 1, func() Future[int] {
			return Map(Select2(Future[int](budgetHog{}), Future[struct{}](Sleep(time.Second))),
				func(s Selected2[int, struct{}]) int { return s.Index })
		}},
		{"Select3/middle", 1, func() Future[int] {
			return Map(Select3(Future[int](budgetHog{}), Future[struct{}](Sleep(time.Second)), Future[int](Pending[int]())),
				func(s Selected3[int, struct{}, int]) int { return s.Index })
		}},
		{"Select3/last", 2, func() Future[int] {
			return Map(Select3(Future[int](budgetHog{}), Future[int](budgetHog{}), Future[struct{}](Sleep(time.Second))),
				func(s Selected3[int, int, struct{}]) int { return s.Index })
		}},
		{"SelectN", 1, func() Future[int] {
			return Map(SelectN(Future[int](budgetHog{}), Map(Sleep(time.Second), func(struct{}) int { return 7 })),
				func(s Selected[int]) int { return s.Index })
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, clk := newTestClockRT(t, 1)
			h := Spawn(rt, c.f())
			waitFor(t, "the sleep's timer registered", func() bool { return rt.timerCount() == 1 })
			clk.Advance(time.Second)
			got, err := waitHandleFor(t, h, c.name+" of a budget hog and an expired sleep")
			if err != nil || got != c.want {
				t.Fatalf("got index %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
