package blitzio

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitNext is JoinSet.WaitNext with a watchdog.
func waitNext[T any](t *testing.T, s *JoinSet[T]) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := s.WaitNext(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out in JoinSet.WaitNext")
		panic("unreachable")
	}
}

func TestComb2JoinSetAnyOrder(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const n = 40
		ms := make([]*manual[int], n)
		var s JoinSet[int]
		for i := range ms {
			ms[i] = newManual[int]()
			s.Spawn(rt, ms[i])
		}
		waitFor(t, "every task polled", func() bool {
			for _, m := range ms {
				if !m.polled() {
					return false
				}
			}
			return true
		})
		if s.Len() != n {
			t.Fatalf("Len = %d, want %d", s.Len(), n)
		}
		order := rng.Perm(n)
		for k, i := range order {
			ms[i].complete(i * 3)
			// Only task i has finished: it must be the next result, whatever its place.
			v, err := waitNext(t, &s)
			if err != nil || v != i*3 {
				t.Fatalf("seed %d: result %d = (%v, %v), want %d (the task that finished)", seed, k, v, err, i*3)
			}
			if s.Len() != n-k-1 {
				t.Fatalf("Len = %d after %d results, want %d", s.Len(), k+1, n-k-1)
			}
		}
		if _, err := s.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
			t.Fatalf("WaitNext on the drained set = %v, want ErrJoinSetEmpty", err)
		}
	}
}

func TestComb2JoinSetEmpty(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var s JoinSet[string]
	if s.Len() != 0 || !s.IsEmpty() {
		t.Fatal("zero JoinSet not empty")
	}
	if _, err := s.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
		t.Errorf("WaitNext on an empty set = %v, want ErrJoinSetEmpty", err)
	}
	r, err := BlockOn(rt, s.Next())
	if err != nil || !errors.Is(r.Err, ErrJoinSetEmpty) {
		t.Errorf("Next on an empty set = %v, %v, want ErrJoinSetEmpty at once", r, err)
	}
	// Inside a task as well.
	h := Spawn(rt, s.Next())
	if r, err := waitHandle(t, h); err != nil || !errors.Is(r.Err, ErrJoinSetEmpty) {
		t.Errorf("Next in a task on an empty set = %v, %v", r, err)
	}
}

func TestComb2JoinSetAbortAll(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var polls, drops atomic.Int64
	var s JoinSet[int]
	const n = 20
	for range n {
		s.Spawn(rt, dropFuture{&polls, &drops})
	}
	s.Spawn(rt, Ready(7))
	waitFor(t, "tasks polled", func() bool { return polls.Load() >= n })
	s.AbortAll()
	cancelled, ok := 0, 0
	for range n + 1 {
		v, err := waitNext(t, &s)
		switch {
		case errors.Is(err, ErrCancelled):
			cancelled++
		case err == nil && v == 7:
			ok++
		default:
			t.Fatalf("result after AbortAll: (%v, %v)", v, err)
		}
	}
	// The Ready(7) task was spawned last and may not have run when AbortAll came (with
	// two workers nothing orders them): then it is cancelled too, as Tokio's abort_all
	// cancels every task not finished. The twenty that never finish must all be.
	if cancelled+ok != n+1 || cancelled < n {
		t.Errorf("after AbortAll: %d cancelled, %d finished; want %d (or %d) and 1 (or 0)", cancelled, ok, n, n+1)
	}
	if drops.Load() != n {
		t.Errorf("%d futures dropped, want %d", drops.Load(), n)
	}
	if _, err := s.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
		t.Errorf("after taking every result: %v, want ErrJoinSetEmpty", err)
	}
}

func TestComb2JoinSetDropAborts(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var polls, drops atomic.Int64
	s := &JoinSet[int]{}
	const n = 16
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = memberHandle(t, s, s.Spawn(rt, dropFuture{&polls, &drops}))
	}
	waitFor(t, "tasks polled", func() bool { return polls.Load() >= n })
	Drop(s) // a JoinSet is a Dropper
	for i, h := range hs {
		if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
			t.Fatalf("task %d after the set's Drop: %v, want ErrCancelled", i, err)
		}
	}
	if drops.Load() != n {
		t.Errorf("%d futures dropped, want %d", drops.Load(), n)
	}
	if s.Len() != 0 {
		t.Errorf("Len after Drop = %d", s.Len())
	}
	if _, err := s.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
		t.Errorf("WaitNext after Drop = %v, want ErrJoinSetEmpty", err)
	}
	s.Drop() // idempotent
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Spawn on a dropped JoinSet did not panic")
			}
		}()
		s.Spawn(rt, Ready(1))
	}()

	// A set held by a task's future is dropped with the task: aborting the owner
	// aborts everything it spawned into the set.
	var innerPolls, innerDrops atomic.Int64
	owner := Spawn(rt, func() Future[int] {
		set := &JoinSet[int]{}
		started := false
		return WithDrop[int](PollFn(func(cx *Context) (int, bool) {
			if !started {
				started = true
				for range 5 {
					set.Spawn(cx, dropFuture{&innerPolls, &innerDrops})
				}
			}
			r, ok := set.Next().Poll(cx)
			return r.Value, ok
		}), set.Drop)
	}())
	waitFor(t, "inner tasks polled", func() bool { return innerPolls.Load() >= 5 })
	owner.Abort()
	if _, err := waitHandle(t, owner); !errors.Is(err, ErrCancelled) {
		t.Fatalf("owner: %v", err)
	}
	waitFor(t, "inner tasks dropped with their set", func() bool { return innerDrops.Load() == 5 })
}

func TestComb2JoinSetPanicInOneTask(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var s JoinSet[int]
	for i := range 10 {
		s.Spawn(rt, Lazy(func() int {
			if i == 4 {
				panic("task 4 failed")
			}
			return i
		}))
	}
	var got []int
	panics := 0
	for range 10 {
		v, err := waitNext(t, &s)
		var pe *PanicError
		switch {
		case errors.As(err, &pe):
			panics++
			if pe.Value != "task 4 failed" {
				t.Errorf("PanicError value %v", pe.Value)
			}
		case err != nil:
			t.Fatalf("unexpected error %v", err)
		default:
			got = append(got, v)
		}
	}
	slices.Sort(got)
	if panics != 1 || !slices.Equal(got, []int{0, 1, 2, 3, 5, 6, 7, 8, 9}) {
		t.Errorf("results %v with %d panics; want every other task's value and one *PanicError", got, panics)
	}
}

// TestComb2JoinSetConcurrent: tasks spawned from several goroutines and from tasks,
// results taken by several goroutines in WaitNext and several tasks awaiting Next at
// once: each result is returned exactly once and no waiter is left asleep.
func TestComb2JoinSetConcurrent(t *testing.T) {
	rt := newRT(t, Config{Workers: 3})
	for round := range 5 {
		var s JoinSet[int]
		const spawners, per = 4, 100
		var wg sync.WaitGroup
		for g := range spawners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					v := g*per + i
					var f Future[int] = Ready(v)
					if i%3 == 0 {
						f = AndThen(YieldNow(), func(struct{}) Future[int] { return Ready(v) })
					}
					if i%7 == 0 {
						f = AndThen(Sleep(time.Duration(rand.IntN(200))*time.Microsecond), func(struct{}) Future[int] { return Ready(v) })
					}
					s.Spawn(rt, f)
				}
			}()
		}
		wg.Wait()
		var mu sync.Mutex
		var got []int
		take := func(v int, err error) bool {
			if errors.Is(err, ErrJoinSetEmpty) {
				return false
			}
			if err != nil {
				t.Errorf("result error %v", err)
				return false
			}
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
			return true
		}
		var takers sync.WaitGroup
		for range 3 {
			takers.Add(1)
			go func() {
				defer takers.Done()
				for take(s.WaitNext()) {
				}
			}()
		}
		tasks := make([]JoinHandle[int], 3)
		for k := range tasks {
			var next Future[Result[int]]
			tasks[k] = Spawn(rt, PollFn(func(cx *Context) (int, bool) {
				for {
					if next == nil {
						next = s.Next()
					}
					r, ok := next.Poll(cx)
					if !ok {
						return 0, false
					}
					next = nil
					if !take(r.Value, r.Err) {
						return 0, true
					}
				}
			}))
		}
		done := make(chan struct{})
		go func() { takers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: WaitNext callers still asleep with %d of %d results taken", round, len(got), spawners*per)
		}
		for _, h := range tasks {
			if _, err := waitHandle(t, h); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got)
		want := make([]int, spawners*per)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %d results, want each of %d exactly once", round, len(got), len(want))
		}
	}
}

// TestComb2JoinSetGoneWaitersPruned: pollers of Next that go away while no task finishes
// (a select that another branch won, a BlockOn that returned) must not pile up in the
// set's list of waiters.
func TestComb2JoinSetGoneWaitersPruned(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var s JoinSet[int]
	g := &benchGate{}
	s.Spawn(rt, &benchGated{g, 1})
	waitFor(t, "the task polled", func() bool { return g.waiting.Load() == 1 })
	for range 2000 {
		if r, err := BlockOn(rt, Select2(s.Next(), Ready(0))); err != nil || r.Index != 1 {
			t.Fatalf("Select2 = %v, %v", r, err)
		}
	}
	s.mu.Lock()
	n := len(s.waiters)
	s.mu.Unlock()
	if n > 64 {
		t.Errorf("%d waiter entries kept after 2000 pollers of Next came and went", n)
	}
	g.open()
	if v, err := waitNext(t, &s); err != nil || v != 1 {
		t.Fatalf("WaitNext = %v, %v", v, err)
	}
}
