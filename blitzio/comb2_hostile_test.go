package blitzio

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// badDrop is a pending future whose Drop panics (or calls runtime.Goexit).
type badDrop struct {
	goexit bool
	drops  *atomic.Int64
}

func (badDrop) Poll(*Context) (int, bool) { return 0, false }

func (b badDrop) Drop() {
	b.drops.Add(1)
	if b.goexit {
		runtime.Goexit()
	}
	panic("child's Drop failed")
}

// TestComb2DropPanicDropsSiblings: when one child's Drop panics (or calls Goexit) while a
// combinator drops its children, the other children must still be dropped: nothing
// drops them later (the combinator has forgotten them, and the task's Drop runs once),
// so their resources (a timer in the wheel, a task that should be cancelled) would leak.
func TestComb2DropPanicDropsSiblings(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		rt, _ := newTestClockRT(t, 2)
		var bad, good, polls atomic.Int64
		b := func() badDrop { return badDrop{goexit, &bad} }
		g := func() Future[int] { return dropFuture{&polls, &good} }
		s := func() Future[int] { return Map(Sleep(time.Hour), func(struct{}) int { return 0 }) }
		cases := []struct {
			name  string
			f     Future[int]
			goods int64 // dropFutures among the children after the bad one
		}{
			{"Join2", Map(Join2[int, int](b(), g()), func(Tuple2[int, int]) int { return 0 }), 1},
			{"Join3", Map(Join3[int, int, int](b(), g(), s()), func(Tuple3[int, int, int]) int { return 0 }), 1},
			{"Select2", Map(Select2[int, int](b(), g()), func(Selected2[int, int]) int { return 0 }), 1},
			{"Select3", Map(Select3[int, int, int](b(), s(), g()), func(Selected3[int, int, int]) int { return 0 }), 1},
			{"JoinAll", Map(JoinAll[int, Future[int]](b(), g(), s(), g()), func([]int) int { return 0 }), 2},
			{"SelectN", Map(SelectN[int, Future[int]](g(), b(), s(), g()), func(Selected[int]) int { return 0 }), 2},
			{"Timeout", Map(Timeout[int](time.Hour, b()), func(Result[int]) int { return 0 }), 0},
		}
		for _, c := range cases {
			bad.Store(0)
			good.Store(0)
			polls.Store(0)
			h := Spawn(rt, c.f)
			waitFor(t, c.name+" polled", func() bool { return rt.timerCount() > 0 || polls.Load() > 0 || c.goods == 0 })
			waitFor(t, c.name+" polled", func() bool { return polls.Load() >= c.goods })
			h.Abort()
			_, err := waitHandle(t, h)
			if !errors.Is(err, ErrCancelled) {
				t.Errorf("goexit=%v %s: aborted task's error %v", goexit, c.name, err)
			}
			if goexit && !errors.Is(err, ErrGoexit) {
				t.Errorf("goexit=%v %s: error %v does not report the Goexit", goexit, c.name, err)
			}
			if !goexit {
				var pe *PanicError
				if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "child's Drop failed") {
					t.Errorf("%s: error %v does not report the Drop's panic", c.name, err)
				}
			}
			if bad.Load() != 1 {
				t.Errorf("goexit=%v %s: the bad child was dropped %d times, want 1", goexit, c.name, bad.Load())
			}
			if good.Load() != c.goods {
				t.Errorf("goexit=%v %s: %d of %d other children dropped after a sibling's Drop failed", goexit, c.name, good.Load(), c.goods)
			}
			if n := rt.timerCount(); n != 0 {
				t.Errorf("goexit=%v %s: %d timers left in the wheel after the combinator was dropped", goexit, c.name, n)
			}
		}
	}
}

// TestComb2ChildFailureRestoresContext: a child of an n-ary combinator that panics or
// calls runtime.Goexit must not leave the combinator's child waker in the worker's
// Context: the next task polled there (on the same worker, or on its replacement) would
// be handed a dead combinator's waker instead of its own, and its wake-ups (a yield, a
// sleep) would go nowhere.
func TestComb2ChildFailureRestoresContext(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	failing := func(goexit bool) Future[int] {
		return PollFn(func(*Context) (int, bool) {
			if goexit {
				runtime.Goexit()
			}
			panic("child failed")
		})
	}
	for round := range 6 {
		goexit := round%2 == 1
		var f Future[[]int] = JoinAll(Ready(1), failing(goexit), Ready(3))
		if round >= 4 {
			// Nested: the failure unwinds through two combinators.
			f = Map(JoinAll(Pending[int](), Map(JoinAll(failing(goexit)), func(v []int) int { return 0 })), func(v []int) []int { return v })
		}
		_, err := waitHandle(t, Spawn(rt, f))
		if err == nil {
			t.Fatalf("round %d: the failing child's task succeeded", round)
		}
		// The next tasks on this worker wake themselves through their Context.
		var ws []Waker
		h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
			ws = append(ws, cx.Waker())
			if len(ws) < 4 {
				cx.Yield()
				return 0, false
			}
			return 7, true
		}))
		if v, err := waitHandle(t, h); err != nil || v != 7 {
			t.Fatalf("round %d: task after a failed child: (%v, %v)", round, v, err)
		}
		if _, ok := ws[0].t.(*header); !ok {
			t.Fatalf("round %d: a task's Context gave a waker of %T, not the task's", round, ws[0].t)
		}
		h2 := Spawn(rt, Map(Sleep(time.Millisecond), func(struct{}) int { return 8 }))
		if v, err := waitHandle(t, h2); err != nil || v != 8 {
			t.Fatalf("round %d: sleeping task after a failed child: (%v, %v)", round, v, err)
		}
	}
}
