package blitzio

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Several children ready in the same poll: the lowest index wins (documented), and the
// losers are dropped exactly once.
func TestHostile5SelectBiasAndLoserDrops(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var drops [4]atomic.Int32
	mk := func(i int) Future[int] {
		return WithDrop(Ready(i), func() { drops[i].Add(1) })
	}
	v, err := BlockOn(rt, SelectN(mk(0), mk(1), mk(2), mk(3)))
	if err != nil || v.Index != 0 || v.Value != 0 {
		t.Fatalf("SelectN: %+v %v", v, err)
	}
	for i := range drops {
		want := int32(1)
		if i == 0 {
			want = 0
		}
		if got := drops[i].Load(); got != want {
			t.Fatalf("child %d dropped %d times, want %d", i, got, want)
		}
	}
	s2, _ := BlockOn(rt, Select2(Ready(1), Ready("x")))
	s3, _ := BlockOn(rt, Select3(Ready(1), Ready("x"), Ready(2.0)))
	if s2.Index != 0 || s3.Index != 0 {
		t.Fatalf("Select2 %+v Select3 %+v", s2, s3)
	}
	// Polled again after it finished: same value, no child polled.
	f := Race(Ready(5), Ready(6))
	a, _ := BlockOn(rt, f)
	b, _ := BlockOn(rt, f)
	if a != 5 || b != 5 {
		t.Fatalf("Race re-polled: %d %d", a, b)
	}
}

// Zero children and degenerate durations.
func TestHostile5EmptyAndDegenerate(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	if v, err := BlockOn(rt, JoinAll[int, Future[int]]()); err != nil || len(v) != 0 {
		t.Fatalf("JoinAll(): %v %v", v, err)
	}
	if r, err := BlockOn(rt, TryJoin[int, Future[Result[int]]]()); err != nil || r.Err != nil || len(r.Value) != 0 {
		t.Fatalf("TryJoin(): %v %v", r, err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("SelectN() did not panic")
			}
		}()
		SelectN[int, Future[int]]()
	}()
	if r, _ := BlockOn(rt, Timeout(-time.Hour, Pending[int]())); !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("Timeout(-1h, Pending): %v", r)
	}
	if r, _ := BlockOn(rt, Timeout(0, Ready(3))); r.Err != nil || r.Value != 3 {
		t.Fatalf("Timeout(0, Ready): %v", r)
	}
	if r, _ := BlockOn(rt, Timeout(math.MinInt64, Ready(3))); r.Err != nil || r.Value != 3 {
		t.Fatalf("Timeout(MinInt64, Ready): %v", r)
	}
	// Sleep "forever" loses to a ready future and leaves no timer behind.
	s, _ := BlockOn(rt, Select2(Sleep(math.MaxInt64), Future[int](YieldThen(7))))
	if s.Index != 1 {
		t.Fatalf("Select2(Sleep(MaxInt64), ..): %+v", s)
	}
	// Nested timeouts with equal deadlines: one ErrTimeout, at one level.
	r, _ := BlockOn(rt, Timeout(2*time.Millisecond, Timeout(2*time.Millisecond, Pending[int]())))
	if r.Err == nil && !errors.Is(r.Value.Err, ErrTimeout) || r.Err != nil && !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("nested timeouts: %+v", r)
	}
	waitFor(t, "timers released", func() bool { return rt.timerCount() == 0 })
}

// YieldThen is pending once (after a yield), then ready with v.
func YieldThen(v int) Future[int] { return Map(YieldNow(), func(struct{}) int { return v }) }

// A JoinAll of 100,000 always-ready futures on one worker finishes, and yields: a
// neighbour task gets to run while it works.
func TestHostile5JoinAllHugeYields(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var ran atomic.Bool
	var sawNeighbour atomic.Bool
	var spawned atomic.Bool
	fs := make([]Future[int], 100_000)
	for i := range fs {
		i := i
		fs[i] = PollFn(func(cx *Context) (int, bool) {
			if i == 0 && spawned.CompareAndSwap(false, true) {
				// The neighbour is queued from inside the JoinAll's first poll, on its
				// worker: spawned from the test goroutine after the JoinAll, it could
				// come too late on a loaded machine (the JoinAll already done), and
				// the test would fail without a defect.
				Spawn(cx, Lazy(func() int { ran.Store(true); return 0 })).Detach()
			}
			if i == len(fs)-1 && ran.Load() {
				sawNeighbour.Store(true)
			}
			if !cx.ConsumeBudget() {
				return 0, false
			}
			return i, true
		})
	}
	jh := Spawn(rt, JoinAll(fs...))
	v, err := waitHandle5(t, jh, "JoinAll of 100k")
	if err != nil || len(v) != len(fs) || v[99_999] != 99_999 {
		t.Fatalf("JoinAll: len %d err %v", len(v), err)
	}
	if !sawNeighbour.Load() {
		t.Fatal("JoinAll of 100k ready futures never let the neighbour task run")
	}
}

// A task looping over a Join2 of always-ready futures must yield: on one worker, the
// task that stops it gets to run.
func TestHostile5JoinLoopCooperates(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var stop atomic.Bool
	spinner := Loop(0, func(n int) Future[Step[int, int]] {
		return Map(Join2(Ready(1), Ready(2)), func(Tuple2[int, int]) Step[int, int] {
			if stop.Load() {
				return Break[int](n)
			}
			return Continue[int](n + 1)
		})
	})
	h := Spawn(rt, spinner)
	Spawn(rt, Lazy(func() int { stop.Store(true); return 0 })).Detach()
	if _, err := waitHandle5(t, h, "a looping Join2 starved its neighbour"); err != nil {
		t.Fatal(err)
	}
}

// Abort racing completion: the result is the value or ErrCancelled, never lost or
// anything else; many Waits at once all see the same outcome.
func TestHostile5AbortRacesCompletion(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const n = 400
	for i := 0; i < n; i++ {
		h := Spawn(rt, Map(YieldNow(), func(struct{}) int { return i + 1 }))
		var wg sync.WaitGroup
		res := make([]error, 4)
		vals := make([]int, 4)
		for k := range res {
			wg.Add(1)
			go func() { defer wg.Done(); vals[k], res[k] = h.Wait() }()
		}
		if rand.IntN(2) == 0 {
			runtime.Gosched()
		}
		h.Abort()
		h.Abort()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("task %d: Wait hung after Abort", i)
		}
		for k := range res {
			if res[k] != res[0] || vals[k] != vals[0] {
				t.Fatalf("task %d: waiters disagree: %v/%d vs %v/%d", i, res[k], vals[k], res[0], vals[0])
			}
		}
		if !(res[0] == nil && vals[0] == i+1 || errors.Is(res[0], ErrCancelled) && vals[0] == 0) {
			t.Fatalf("task %d: got %d, %v", i, vals[0], res[0])
		}
	}
}

// A JoinHandle awaited by a task of another runtime, Detach then Abort.
func TestHostile5CrossRuntimeAwaitAndDetachAbort(t *testing.T) {
	a := newRT(t, Config{Workers: 2})
	b := newRT(t, Config{Workers: 2})
	c, cf := NewCompletion[int]()
	h := Spawn(a, cf)
	w := Spawn(b, Map(Join2(Future[Result[int]](h), Future[Result[int]](h)), func(t Tuple2[Result[int], Result[int]]) int {
		return t.V1.Value + t.V2.Value
	}))
	go func() { time.Sleep(time.Millisecond); c.Complete(21) }()
	if v, err := waitHandle5(t, w, "cross-runtime await"); err != nil || v != 42 {
		t.Fatalf("got %d %v", v, err)
	}
	var dropped atomic.Int32
	d := Spawn(a, WithDrop(Pending[int](), func() { dropped.Add(1) }))
	d.Detach()
	d.Abort()
	d.Abort()
	waitFor(t, "detached then aborted task dropped", func() bool { return dropped.Load() == 1 })
	if !d.IsFinished() {
		t.Fatal("aborted task not finished")
	}
}

// JoinSet: Next from two tasks at once delivers each result exactly once; AbortAll then
// Next; Drop with running tasks aborts them; Spawn after Drop panics.
func TestHostile5JoinSetConcurrentNext(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var set JoinSet[int]
	const n = 200
	for i := range n {
		set.Spawn(rt, Map(YieldNow(), func(struct{}) int { return i }))
	}
	taker := func() JoinHandle[[]int] {
		return Spawn(rt, Async(func(co *Co) []int {
			var got []int
			for {
				r := Await(co, set.Next())
				if errors.Is(r.Err, ErrJoinSetEmpty) {
					return got
				}
				got = append(got, r.Value)
			}
		}))
	}
	h1, h2 := taker(), taker()
	a, _ := waitHandle5(t, h1, "taker 1")
	b, _ := waitHandle5(t, h2, "taker 2")
	seen := make(map[int]int)
	for _, v := range append(a, b...) {
		seen[v]++
	}
	if len(seen) != n {
		t.Fatalf("got %d distinct results, want %d", len(seen), n)
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("result %d delivered %d times", v, k)
		}
	}

	var set2 JoinSet[int]
	var drops atomic.Int32
	for range 10 {
		set2.Spawn(rt, WithDrop(Pending[int](), func() { drops.Add(1) }))
	}
	set2.AbortAll()
	for range 10 {
		if _, err := set2.WaitNext(); !errors.Is(err, ErrCancelled) {
			t.Fatalf("after AbortAll: %v", err)
		}
	}
	if _, err := set2.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
		t.Fatalf("empty: %v", err)
	}
	var set3 JoinSet[int]
	for range 10 {
		set3.Spawn(rt, WithDrop(Pending[int](), func() { drops.Add(1) }))
	}
	set3.Drop()
	waitFor(t, "JoinSet.Drop aborted its tasks", func() bool { return drops.Load() == 20 })
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Spawn after Drop did not panic")
			}
		}()
		set3.Spawn(rt, Ready(1))
	}()
}
