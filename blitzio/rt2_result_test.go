package blitzio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var errTest = errors.New("test error")

func okF[T any](v T) Future[Result[T]] { return Ready(Result[T]{Value: v}) }
func errF[T any]() Future[Result[T]]   { return Ready(Result[T]{Err: errTest}) }

func TestResultHelpers(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	run := func(f Future[Result[int]]) Result[int] {
		t.Helper()
		r, err := BlockOn(rt, f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	called := 0
	double := func(x int) Future[Result[int]] { called++; return okF(2 * x) }
	if r := run(Then(okF(21), double)); r.Value != 42 || r.Err != nil || called != 1 {
		t.Fatalf("Then ok: %+v (fn called %d times)", r, called)
	}
	if r := run(Then(errF[int](), double)); !errors.Is(r.Err, errTest) || called != 1 {
		t.Fatalf("Then err: %+v (fn called %d times)", r, called)
	}
	if r := run(MapOk(okF(4), func(x int) int { return x + 1 })); r.Value != 5 {
		t.Fatalf("MapOk: %+v", r)
	}
	wrapped := run(MapErr(errF[int](), func(err error) error { return fmt.Errorf("ctx: %w", err) }))
	if !errors.Is(wrapped.Err, errTest) || wrapped.Err.Error() != "ctx: test error" {
		t.Fatalf("MapErr: %+v", wrapped)
	}
	if r := run(MapErr(okF(1), func(error) error { panic("called") })); r.Value != 1 {
		t.Fatalf("MapErr ok: %+v", r)
	}
	if r := run(OrElse(errF[int](), func(error) Future[Result[int]] { return okF(9) })); r.Value != 9 || r.Err != nil {
		t.Fatalf("OrElse: %+v", r)
	}
	if r := run(OrElse(okF(3), func(error) Future[Result[int]] { panic("called") })); r.Value != 3 {
		t.Fatalf("OrElse ok: %+v", r)
	}
	// A callback returning a concrete future type: inferred, no conversion needed.
	v, err := BlockOn(rt, AndThen(Ready(1), func(int) *SleepFuture { return Sleep(time.Millisecond) }))
	if err != nil || v != (struct{}{}) {
		t.Fatalf("AndThen with a concrete future type: %v, %v", v, err)
	}
}

// Dropping a composed future drops the child in progress.
func TestResultHelpersDrop(t *testing.T) {
	var polls, drops atomic.Int64
	cx := NewContext(nil, Waker{})
	pend := func() Future[Result[int]] {
		return Map[int](dropFuture{&polls, &drops}, func(int) Result[int] { return Result[int]{} })
	}
	fs := []Future[Result[int]]{
		Then(pend(), func(int) Future[Result[int]] { return okF(1) }),
		Then(okF(1), func(int) Future[Result[int]] { return pend() }),
		OrElse(errF[int](), func(error) Future[Result[int]] { return pend() }),
		Loop(0, func(int) Future[Step[int, Result[int]]] {
			return Map(pend(), func(Result[int]) Step[int, Result[int]] { return Step[int, Result[int]]{} })
		}),
		Map(MapLimit([]int{1, 2, 3}, 2, func(int) Future[Result[int]] { return pend() }), func([]Result[int]) Result[int] { return Result[int]{} }),
	}
	want := int64(0)
	for i, f := range fs {
		if _, ok := f.Poll(cx); ok {
			t.Fatalf("future %d: ready", i)
		}
		Drop(f)
		Drop(f) // idempotent
		want += 1
		if i == 4 {
			want++ // two children in flight
		}
		if drops.Load() != want {
			t.Fatalf("future %d: %d drops, want %d", i, drops.Load(), want)
		}
	}
}

func TestLoop(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	// Always-ready iterations: the loop yields (budget) and still finishes.
	sum := Loop(0, func(i int) Future[Step[int, int]] {
		if i == 10000 {
			return Ready(Break[int](i))
		}
		return Lazy(func() Step[int, int] { return Continue[int](i + 1) })
	})
	other := Spawn(rt, Lazy(func() int { return 1 }))
	if v, err := waitHandle(t, Spawn(rt, sum)); v != 10000 || err != nil {
		t.Fatalf("loop: %v, %v", v, err)
	}
	if _, err := waitHandle(t, other); err != nil {
		t.Fatal(err)
	}
}

// MapLimit: never more than limit children alive, results in item order, children with
// random sleeps, yields and immediate results.
func TestMapLimit(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for _, tc := range []struct{ n, limit int }{{0, 3}, {1, 1}, {5, 10}, {100, 1}, {200, 7}, {500, 64}} {
		var alive, maxAlive atomic.Int64
		items := make([]int, tc.n)
		for i := range items {
			items[i] = i
		}
		f := MapLimit(items, tc.limit, func(i int) Future[int] {
			n := alive.Add(1)
			for {
				m := maxAlive.Load()
				if n <= m || maxAlive.CompareAndSwap(m, n) {
					break
				}
			}
			var step Future[struct{}]
			switch rand.IntN(3) {
			case 0:
				step = Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			case 1:
				step = YieldNow()
			default:
				step = Ready(struct{}{})
			}
			return Map(step, func(struct{}) int { alive.Add(-1); return i * i })
		})
		got, err := waitHandle(t, Spawn(rt, f))
		if err != nil || len(got) != tc.n {
			t.Fatalf("%+v: %d results, %v", tc, len(got), err)
		}
		for i, v := range got {
			if v != i*i {
				t.Fatalf("%+v: result %d = %d", tc, i, v)
			}
		}
		if maxAlive.Load() > int64(tc.limit) {
			t.Fatalf("%+v: %d children alive at once, limit %d", tc, maxAlive.Load(), tc.limit)
		}
	}
	mustPanicWith(t, "MapLimit(limit 0)", func() { MapLimit([]int{1}, 0, func(int) Future[int] { return Ready(1) }) }, "MapLimit", "limit")
}

// Callbacks that return a nil future: a panic naming the helper, reported on the task's
// handle, not a nil dereference.
func TestResultHelpersNilFutures(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	for name, f := range map[string]Future[Result[int]]{
		"Then":   Then(okF(1), func(int) Future[Result[int]] { return nil }),
		"OrElse": OrElse(errF[int](), func(error) Future[Result[int]] { return nil }),
		"Loop":   Loop(0, func(int) Future[Step[int, Result[int]]] { return nil }),
		"MapLimit": Map(MapLimit([]int{1}, 1, func(int) *SleepFuture { return nil }),
			func([]struct{}) Result[int] { return Result[int]{} }),
	} {
		_, err := waitHandle(t, Spawn(rt, f))
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "nil future") {
			t.Errorf("%s: %v, want a panic naming the nil future", name, err)
		}
	}
}

// A composed future polled after its Drop panics instead of returning a zero value as if
// it had finished (Then, OrElse, Loop) or hanging (MapLimit).
func TestResultHelpersPollAfterDrop(t *testing.T) {
	cx := NewContext(nil, Waker{})
	for name, mk := range map[string]func() Future[Result[int]]{
		"Then": func() Future[Result[int]] {
			return Then(okF(1), func(int) Future[Result[int]] { return Pending[Result[int]]() })
		},
		"Loop": func() Future[Result[int]] {
			return Loop(0, func(int) Future[Step[int, Result[int]]] { return Pending[Step[int, Result[int]]]() })
		},
	} {
		f := mk()
		if _, ok := f.Poll(cx); ok {
			t.Fatalf("%s: ready", name)
		}
		Drop(f)
		mustPanicWith(t, name+" polled after Drop", func() { f.Poll(cx) }, "after Drop")
	}
	m := MapLimit([]int{1, 2}, 1, func(int) Future[int] { return Pending[int]() })
	if _, ok := m.Poll(cx); ok {
		t.Fatal("MapLimit: ready")
	}
	Drop(m)
	mustPanicWith(t, "MapLimit polled after Drop", func() { m.Poll(cx) }, "after Drop")
}
