package blitzio

import (
	"math/rand/v2"
	"testing"
)

// TestComb2JoinHandlesOneAtATime: JoinAll and All over JoinHandles wait for the first
// unfinished handle before reading on. The tasks finish in random order, several times
// while the join waits on one handle, and the join must be woken every time it has
// something to read (a wake taken while it waited on one child must not stop the next
// child's wake from reaching it).
func TestComb2JoinHandlesOneAtATime(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 1 + rng.IntN(60)
		ms := make([]*manual[int], n)
		hs := make([]JoinHandle[int], n)
		for i := range ms {
			ms[i] = newManual[int]()
			hs[i] = Spawn(rt, ms[i])
		}
		waitFor(t, "tasks polled", func() bool {
			for _, m := range ms {
				if !m.polled() {
					return false
				}
			}
			return true
		})
		join := Spawn(rt, JoinAll(hs...))
		all := Spawn(rt, All(hs...))
		for _, i := range rng.Perm(n) {
			ms[i].complete(i + 1)
			if rng.IntN(3) == 0 {
				waitFor(t, "task finished", hs[i].IsFinished)
			}
		}
		rs, err := waitHandle(t, join)
		if err != nil || len(rs) != n {
			t.Fatalf("seed %d: JoinAll = %v, %v", seed, rs, err)
		}
		for i, r := range rs {
			if r.Err != nil || r.Value != i+1 {
				t.Fatalf("seed %d: JoinAll[%d] = %+v", seed, i, r)
			}
		}
		ar, err := waitHandle(t, all)
		if err != nil || ar.Err != nil || len(ar.Value) != n || ar.Value[n-1] != n {
			t.Fatalf("seed %d: All = %+v, %v", seed, ar, err)
		}
	}
}
