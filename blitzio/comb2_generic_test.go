package blitzio

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestComb2HandlesInCombinators: the n-ary combinators take a slice of any one future
// type, so a []JoinHandle[T] is passed as it is (TryJoin(hs...) must compile), while
// futures of the interface type Future[T] still infer (JoinAll(Ready(1), Ready(2))).
func TestComb2HandlesInCombinators(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	spawn := func() []JoinHandle[int] {
		hs := make([]JoinHandle[int], 5)
		for i := range hs {
			hs[i] = Spawn(rt, Lazy(func() int { return i * 10 }))
		}
		return hs
	}
	if r, err := BlockOn(rt, TryJoin(spawn()...)); err != nil || r.Err != nil || len(r.Value) != 5 || r.Value[4] != 40 {
		t.Errorf("TryJoin(hs...) = %v, %v", r, err)
	}
	if rs, err := BlockOn(rt, JoinAll(spawn()...)); err != nil || len(rs) != 5 || rs[3].Value != 30 || rs[3].Err != nil {
		t.Errorf("JoinAll(hs...) = %v, %v", rs, err)
	}
	if r, err := BlockOn(rt, All(spawn()...)); err != nil || r.Err != nil || r.Value[2] != 20 {
		t.Errorf("All(hs...) = %v, %v", r, err)
	}
	hs := spawn()
	if s, err := BlockOn(rt, SelectN(hs...)); err != nil || s.Value.Value != s.Index*10 {
		t.Errorf("SelectN(hs...) = %v, %v", s, err)
	}
	if r, err := BlockOn(rt, Race(spawn()...)); err != nil || r.Err != nil || r.Value%10 != 0 {
		t.Errorf("Race(hs...) = %v, %v", r, err)
	}
	if vs, err := BlockOn(rt, JoinAll(Ready(1), Ready(2))); err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 2 {
		t.Errorf("JoinAll(Ready(1), Ready(2)) = %v, %v", vs, err)
	}
	// Futures of one concrete type other than a handle.
	if vs, err := BlockOn(rt, JoinAll(Sleep(time.Millisecond), Sleep(0))); err != nil || len(vs) != 2 {
		t.Errorf("JoinAll(Sleep, Sleep) = %v, %v", vs, err)
	}
	// Mixed concrete types: name the interface type.
	if vs, err := BlockOn(rt, JoinAll[int, Future[int]](Ready(1), Lazy(func() int { return 2 }), PollFn(func(*Context) (int, bool) { return 3, true }))); err != nil || vs[2] != 3 {
		t.Errorf("JoinAll[int, Future[int]](mixed) = %v, %v", vs, err)
	}
	// A failing handle fails TryJoin.
	boom := errors.New("boom")
	bad := []JoinHandle[int]{Spawn(rt, Lazy(func() int { panic(boom) })), Spawn(rt, Ready(1))}
	if r, err := BlockOn(rt, TryJoin(bad...)); err != nil || !errors.Is(r.Err, boom) {
		t.Errorf("TryJoin of a panicking task = %v, %v; want the *PanicError wrapping boom", r, err)
	}
}

// yieldTwice is pending twice (yielding through cx.Yield, as a hand-written future does),
// then ready.
type yieldTwice struct {
	left int
	v    int
}

func (y *yieldTwice) Poll(cx *Context) (int, bool) {
	if y.left > 0 {
		y.left--
		cx.Yield()
		return 0, false
	}
	return y.v, true
}

// TestComb2ChildYieldOnWorker: a child of an n-ary combinator that yields must be polled
// again. On a worker a yield of the task itself is a flag the worker reads after the
// poll; a child's yield must wake the child's own waker instead, or the combinator
// never re-polls it (and, with every child yielded, hangs).
func TestComb2ChildYieldOnWorker(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	for _, n := range []int{1, 3, 200} {
		fs := make([]*yieldTwice, n)
		for i := range fs {
			fs[i] = &yieldTwice{left: 2, v: i}
		}
		vs, err := waitHandle(t, Spawn(rt, JoinAll(fs...)))
		if err != nil || len(vs) != n || vs[n-1] != n-1 {
			t.Fatalf("JoinAll of %d yielding children = %v, %v", n, vs, err)
		}
		// Nested: the yield of a grandchild wakes the inner combinator's child, which
		// wakes the outer one's.
		inner := func(k int) Future[[]int] {
			return JoinAll(&yieldTwice{left: 2, v: k}, &yieldTwice{left: 1, v: k + 1})
		}
		outer, err := waitHandle(t, Spawn(rt, JoinAll(inner(0), inner(10), inner(20))))
		if err != nil || len(outer) != 3 || outer[2][1] != 21 {
			t.Fatalf("nested JoinAll of yielding children = %v, %v", outer, err)
		}
		s, err := waitHandle(t, Spawn(rt, SelectN[int](&yieldTwice{left: 3, v: 1}, &yieldTwice{left: 1, v: 2})))
		if err != nil || s.Value != 2 {
			t.Fatalf("SelectN of yielding children = %v, %v", s, err)
		}
	}
}

// TestComb2ChildWakerIsStable: a child sees the same waker on every poll (so a future
// that keeps its waker and compares it with WillWake does not re-register), a
// different waker from its siblings, and, after the combinator's poll, the task's own
// waker is back in the Context.
func TestComb2ChildWakerIsStable(t *testing.T) {
	var seen [3][]Waker
	mk := func(i int) Future[int] {
		polls := 0
		return PollFn(func(cx *Context) (int, bool) {
			seen[i] = append(seen[i], cx.Waker())
			polls++
			if polls < 3 {
				cx.Waker().Wake()
				return 0, false
			}
			return i, true
		})
	}
	var outer Waker
	var after []Waker
	var woken atomic.Int32
	outer = WakerFunc(func() { woken.Add(1) })
	cx := NewContext(nil, outer)
	j := JoinAll(mk(0), mk(1), mk(2))
	probe := PollFn(func(cx *Context) (int, bool) { after = append(after, cx.Waker()); return 0, true })
	for range 5 {
		if _, ok := j.Poll(cx); ok {
			break
		}
		probe.Poll(cx)
	}
	for i := range seen {
		if len(seen[i]) != 3 {
			t.Fatalf("child %d polled %d times, want 3", i, len(seen[i]))
		}
		for _, w := range seen[i][1:] {
			if !w.WillWake(seen[i][0]) {
				t.Errorf("child %d got a different waker on a later poll", i)
			}
		}
		if seen[i][0].WillWake(outer) {
			t.Errorf("child %d was given the task's waker, not its own", i)
		}
		for k := range i {
			if seen[i][0].WillWake(seen[k][0]) {
				t.Errorf("children %d and %d share a waker", k, i)
			}
		}
	}
	for _, w := range after {
		if !w.WillWake(outer) {
			t.Errorf("after the combinator's poll the Context's waker is not the task's")
		}
	}
	if woken.Load() == 0 {
		t.Errorf("children woke themselves but the parent was never woken")
	}
}
