package blitzio

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// manual is a future completed by hand from the test, counting drops.
type manual[T any] struct {
	done  atomic.Bool
	v     T
	w     atomic.Pointer[Waker]
	drops atomic.Int64
	polls atomic.Int64
}

func (m *manual[T]) Poll(cx *Context) (T, bool) {
	m.polls.Add(1)
	w := cx.Waker()
	m.w.Store(&w)
	if m.done.Load() {
		return m.v, true
	}
	var zero T
	return zero, false
}

func (m *manual[T]) Drop() { m.drops.Add(1) }

func (m *manual[T]) complete(v T) {
	m.v = v
	m.done.Store(true)
	if w := m.w.Load(); w != nil {
		w.Wake()
	}
}

func newManual[T any]() *manual[T] { return &manual[T]{} }

// spawnPolled spawns f and waits until each of ms has been polled once.
func spawnPolled[T any](t *testing.T, rt *Runtime, f Future[T], ms ...interface{ polled() bool }) JoinHandle[T] {
	h := Spawn(rt, f)
	waitFor(t, "children polled", func() bool {
		for _, m := range ms {
			if !m.polled() {
				return false
			}
		}
		return true
	})
	return h
}

func (m *manual[T]) polled() bool { return m.w.Load() != nil }

func TestJoin2Join3(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	a, b, c := newManual[int](), newManual[string](), newManual[bool]()
	h := spawnPolled(t, rt, Join3[int, string, bool](a, b, c), a, b, c)
	// Completing in reverse order: a join polls all children concurrently, so order of
	// completion does not matter.
	c.complete(true)
	b.complete("b")
	if h.IsFinished() {
		t.Fatal("Join3 finished before all children")
	}
	a.complete(1)
	r, err := waitHandle(t, h)
	if err != nil || r != (Tuple3[int, string, bool]{1, "b", true}) {
		t.Fatalf("Join3 = %+v, %v", r, err)
	}
	r2, _ := BlockOn(rt, Join2(Ready(1), Lazy(func() string { return "x" })))
	if r2 != (Tuple2[int, string]{1, "x"}) {
		t.Fatalf("Join2 = %+v", r2)
	}
}

func TestSelect2Select3(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	a, b, c := newManual[int](), newManual[int](), newManual[int]()
	h := spawnPolled(t, rt, Select3[int, int, int](a, b, c), a, b, c)
	b.complete(2) // the second child finishes first: it wins
	r, _ := waitHandle(t, h)
	if r.Index != 1 || r.V2 != 2 {
		t.Fatalf("Select3 = %+v, want index 1", r)
	}
	if a.drops.Load() != 1 || c.drops.Load() != 1 || b.drops.Load() != 0 {
		t.Fatalf("losers must be dropped once, the winner not: %d %d %d", a.drops.Load(), b.drops.Load(), c.drops.Load())
	}
	// Both ready in the same poll: the lowest index wins.
	s2, _ := BlockOn(rt, Select2(Ready("a"), Ready(2)))
	if s2.Index != 0 || s2.V1 != "a" {
		t.Fatalf("Select2 = %+v", s2)
	}
	x, y := newManual[int](), newManual[int]()
	h2 := spawnPolled(t, rt, Select2[int, int](x, y), x, y)
	h2.Abort()
	waitHandle(t, h2)
	if x.drops.Load() != 1 || y.drops.Load() != 1 {
		t.Fatalf("aborting a select must drop both children: %d %d", x.drops.Load(), y.drops.Load())
	}
}

func TestSelectNAndRace(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const n = 50
	ms := make([]*manual[int], n)
	fs := make([]Future[int], n)
	polled := make([]interface{ polled() bool }, n)
	for i := range ms {
		ms[i] = newManual[int]()
		fs[i], polled[i] = ms[i], ms[i]
	}
	h := spawnPolled(t, rt, SelectN(fs...), polled...)
	ms[37].complete(370)
	r, _ := waitHandle(t, h)
	if r.Index != 37 || r.Value != 370 {
		t.Fatalf("SelectN = %+v", r)
	}
	for i, m := range ms {
		if want := int64(1); i != 37 && m.drops.Load() != want {
			t.Fatalf("loser %d dropped %d times", i, m.drops.Load())
		}
		// Only the woken child is re-polled: others were polled exactly once.
		if i != 37 && m.polls.Load() != 1 {
			t.Fatalf("child %d polled %d times; only woken children are re-polled", i, m.polls.Load())
		}
	}
	// Race between tasks' handles: they are polled concurrently, so the fast one wins even
	// though it is last.
	slow := Spawn(rt, Map(Sleep(time.Hour), func(struct{}) int { return 1 }))
	fast := Spawn(rt, Ready(2))
	win, _ := BlockOn(rt, Race[Result[int]](slow, fast))
	if win.Value != 2 {
		t.Fatalf("Race = %+v, want the fast handle", win)
	}
	slow.Abort()
	waitHandle(t, slow)
}

func TestJoinAllTryJoinAll(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const n = 2000
	fs := make([]Future[int], n)
	for i := range fs {
		i := i
		fs[i] = Spawn(rt, Lazy(func() int { return i * 2 })).resultValue()
	}
	vs, err := BlockOn(rt, JoinAll(fs...))
	if err != nil || len(vs) != n {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v != i*2 {
			t.Fatalf("JoinAll[%d] = %d (order must be argument order)", i, v)
		}
	}
	bad := errors.New("bad")
	a, c := newManual[Result[int]](), newManual[Result[int]]()
	h := spawnPolled(t, rt, TryJoin[int, Future[Result[int]]](a, Ready(Result[int]{Value: 2}), c), a, c)
	c.complete(Result[int]{Err: bad})
	r, _ := waitHandle(t, h)
	if !errors.Is(r.Err, bad) || a.drops.Load() != 1 {
		t.Fatalf("TryJoin = %+v, drops of the pending child %d", r, a.drops.Load())
	}
	ok, _ := BlockOn(rt, TryJoin[int](Ready(Result[int]{Value: 1}), Ready(Result[int]{Value: 2})))
	if ok.Err != nil || ok.Value[0] != 1 || ok.Value[1] != 2 {
		t.Fatalf("TryJoin success = %+v", ok)
	}
	e2 := errors.New("e2")
	al, _ := BlockOn(rt, All[int](Ready(Result[int]{Err: bad}), Ready(Result[int]{Value: 5}), Ready(Result[int]{Err: e2})))
	if !errors.Is(al.Err, bad) || !errors.Is(al.Err, e2) || al.Value[1] != 5 {
		t.Fatalf("All = %+v", al)
	}
}

// resultValue adapts a handle to a Future[int] for JoinAll.
func (h JoinHandle[T]) resultValue() Future[T] {
	return Map[Result[T]](h, func(r Result[T]) T { return r.Value })
}

func TestBuildingBlocksByHand(t *testing.T) {
	cx := NewContext(nil, Waker{})
	if v, ok := Ready(3).Poll(cx); !ok || v != 3 {
		t.Fatal("Ready")
	}
	if _, ok := Pending[int]().Poll(cx); ok {
		t.Fatal("Pending was ready")
	}
	calls := 0
	lz := Lazy(func() int { calls++; return 4 })
	if calls != 0 {
		t.Fatal("Lazy ran before its poll")
	}
	if v, _ := lz.Poll(cx); v != 4 || calls != 1 {
		t.Fatal("Lazy")
	}
	e := Erase(Ready("s"))
	if v, ok := e.Poll(cx); !ok || v.(string) != "s" {
		t.Fatal("Erase")
	}
	woken := 0
	cx2 := NewContext(nil, WakerFunc(func() { woken++ }))
	y := YieldNow()
	if _, ok := y.Poll(cx2); ok || woken != 1 {
		t.Fatalf("YieldNow first poll: ok=%v woken=%d", ok, woken)
	}
	if _, ok := y.Poll(cx2); !ok {
		t.Fatal("YieldNow second poll")
	}
	// The budget of a task's poll (a hand-made Context has none): the 129th ready leaf
	// in one poll is pending, with a wake.
	woken = 0
	cx3 := &Context{waker: cx2.waker, budget: budgetPerPoll}
	n := 0
	for {
		if _, ok := Ready(1).Poll(cx3); !ok {
			break
		}
		n++
	}
	if n != budgetPerPoll || woken != 1 {
		t.Fatalf("budget: %d ready polls, %d wakes; want %d and 1", n, woken, budgetPerPoll)
	}
}

func TestAbortedJoinsDropUnfinishedChildren(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	a, b := newManual[int](), newManual[int]()
	h := spawnPolled(t, rt, Join2[int, int](a, b), a, b)
	a.complete(1) // a finishes; b is still pending when the join is aborted
	waitFor(t, "a re-polled", func() bool { return a.polls.Load() >= 2 })
	h.Abort()
	waitHandle(t, h)
	if a.drops.Load() != 0 || b.drops.Load() != 1 {
		t.Fatalf("drops a=%d b=%d; want only the unfinished child dropped", a.drops.Load(), b.drops.Load())
	}
	ms := []*manual[int]{newManual[int](), newManual[int](), newManual[int]()}
	h2 := spawnPolled(t, rt, JoinAll[int](ms[0], ms[1], ms[2]), ms[0], ms[1], ms[2])
	ms[1].complete(5)
	waitFor(t, "ms[1] re-polled", func() bool { return ms[1].polls.Load() >= 2 })
	h2.Abort()
	waitHandle(t, h2)
	if ms[0].drops.Load() != 1 || ms[1].drops.Load() != 0 || ms[2].drops.Load() != 1 {
		t.Fatalf("JoinAll drops %d %d %d, want 1 0 1", ms[0].drops.Load(), ms[1].drops.Load(), ms[2].drops.Load())
	}
}
