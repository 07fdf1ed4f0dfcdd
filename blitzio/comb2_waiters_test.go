package blitzio

import "testing"

// joinWaiterEntries returns how many wakers h's task keeps for its awaiters (test
// accessor: the slot's one waker, or the length of the waiters' list).
func joinWaiterEntries[T any](h JoinHandle[T]) int {
	st := h.c.state.v.Load()
	if st&flagJoinMulti == 0 {
		if st&flagJoinWaker != 0 {
			return 1
		}
		return 0
	}
	jw := h.c.joinWaker.t.(*joinWaiters)
	jw.mu.Lock()
	defer jw.mu.Unlock()
	return len(jw.ws)
}

// TestComb2ChildWakersPrunedFromHandles: a combinator awaiting a handle leaves its child's
// waker in the handle's list of waiters. Once the combinator has finished or been dropped
// (or the task polling it is gone), that entry must count as gone, so the list is pruned
// as new waiters come instead of growing by one entry per combinator until the awaited
// task finishes.
func TestComb2ChildWakersPrunedFromHandles(t *testing.T) {
	const rounds = 2000
	const limit = 4 * joinIndexAt // pruning keeps at most about twice the live waiters
	rt := newRT(t, Config{Workers: 2})
	cases := []struct {
		name  string
		round func(h JoinHandle[int])
	}{
		{"JoinAll dropped by a select", func(h JoinHandle[int]) {
			if s, err := BlockOn(rt, Select2(JoinAll(h), Ready(1))); err != nil || s.Index != 1 {
				t.Fatalf("Select2 = %v, %v", s, err)
			}
		}},
		{"SelectN finished by another child", func(h JoinHandle[int]) {
			if s, err := BlockOn(rt, SelectN(h, Spawn(rt, Ready(7)))); err != nil || s.Index != 1 {
				t.Fatalf("SelectN = %v, %v", s, err)
			}
		}},
		{"TryJoin failed by another child", func(h JoinHandle[int]) {
			bad := Spawn(rt, Lazy(func() int { panic("boom") }))
			if r, err := BlockOn(rt, TryJoin(h, bad)); err != nil || r.Err == nil {
				t.Fatalf("TryJoin = %v, %v", r, err)
			}
		}},
		{"JoinAll abandoned without Drop by a finished task", func(h JoinHandle[int]) {
			task := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
				JoinAll(h).Poll(cx) // pending; the task then finishes without dropping it
				return 1, true
			}))
			if _, err := waitHandle(t, task); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &benchGate{}
			h := Spawn(rt, &benchGated{g, 42})
			waitFor(t, "the gated task polled", func() bool { return g.waiting.Load() == 1 })
			for range rounds {
				c.round(h)
			}
			if n := joinWaiterEntries(h); n > limit {
				t.Errorf("after %d finished or dropped combinators awaited the handle, its task keeps %d waker entries, want <= %d", rounds, n, limit)
			}
			g.open()
			if v, err := waitHandle(t, h); err != nil || v != 42 {
				t.Fatalf("gated task = %v, %v", v, err)
			}
		})
	}
}

// TestComb2LiveChildWakersKept: pruning must not drop the entry of a combinator that is
// still waiting: every live JoinAll is woken when the handle's task finishes.
func TestComb2LiveChildWakersKept(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	g := &benchGate{}
	h := Spawn(rt, &benchGated{g, 5})
	waitFor(t, "the gated task polled", func() bool { return g.waiting.Load() == 1 })
	const live = 50
	waiting := make([]JoinHandle[[]Result[int]], live)
	for i := range waiting {
		waiting[i] = Spawn(rt, JoinAll(h, h))
		// Dead waiters in between force prunes while the live ones wait.
		for range 20 {
			if _, err := BlockOn(rt, Select2(JoinAll(h), Ready(0))); err != nil {
				t.Fatal(err)
			}
		}
	}
	g.open()
	for i, w := range waiting {
		rs, err := waitHandle(t, w)
		if err != nil || len(rs) != 2 || rs[0].Value != 5 || rs[1].Value != 5 {
			t.Fatalf("live JoinAll %d = %v, %v", i, rs, err)
		}
	}
}
