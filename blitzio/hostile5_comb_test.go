package blitzio

import (
	"testing"
	"time"
)

// waitHandle5 waits for h, failing with msg after 5 s (a hang fails clearly).
func waitHandle5[T any](t *testing.T, h JoinHandle[T], msg string) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := h.Wait(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(5 * time.Second):
		h.Abort()
		t.Fatalf("hang: %s", msg)
		panic("unreachable")
	}
}

// MapLimit nested in an n-ary combinator (JoinAll, SelectN, TryJoin...): its children
// must be woken through MapLimit's slot wakers. MapLimit reads cx.waker directly instead
// of cx.Waker(), so under a JoinAll (cx.child set) its children register the JoinAll's
// child waker, MapLimit's ready list stays empty, and the child is never polled again.
func TestHostile5MapLimitInsideJoinAll(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	ml := func() Future[[]int] {
		return MapLimit([]int{1, 2, 3}, 1, func(i int) Future[int] {
			return Map(Sleep(time.Millisecond), func(struct{}) int { return i })
		})
	}
	h := Spawn(rt, JoinAll(ml(), ml()))
	v, err := waitHandle5(t, h, "JoinAll(MapLimit(sleeps)) never finished: MapLimit's children are never re-polled")
	if err != nil || len(v) != 2 || len(v[0]) != 3 || v[1][2] != 3 {
		t.Fatalf("got %v, %v", v, err)
	}
}

func TestHostile5MapLimitInsideSelectN(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	h := Spawn(rt, SelectN(
		MapLimit([]int{1, 2}, 2, func(i int) Future[int] {
			return Map(YieldNow(), func(struct{}) int { return i })
		}),
		Pending[[]int](),
	))
	v, err := waitHandle5(t, h, "SelectN(MapLimit(yields), Pending) never finished")
	if err != nil || v.Index != 0 || len(v.Value) != 2 {
		t.Fatalf("got %v, %v", v, err)
	}
}
