package blitzio_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// Awaiting many task handles at once: JoinAll (and TryJoin, All, SelectN) take a
// []JoinHandle as it is and return the results in spawn order.
func ExampleJoinAll_handles() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	hs := make([]blitzio.JoinHandle[int], 5)
	for i := range hs {
		hs[i] = blitzio.Spawn(rt, blitzio.Lazy(func() int { return i * i }))
	}
	rs, _ := blitzio.BlockOn(rt, blitzio.JoinAll(hs...))
	for _, r := range rs {
		fmt.Println(r.Value, r.Err)
	}

	// TryJoin stops at the first failure.
	ok, _ := blitzio.BlockOn(rt, blitzio.TryJoin(hs...))
	fmt.Println(ok.Value, ok.Err)
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 4 <nil>
	// 9 <nil>
	// 16 <nil>
	// [0 1 4 9 16] <nil>
}

// A JoinSet returns its tasks' results in the order they finish (sorted here, since that
// order depends on the scheduler), and reports ErrJoinSetEmpty once all are taken.
func ExampleJoinSet() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	var set blitzio.JoinSet[string]
	for _, name := range []string{"alpha", "beta", "gamma"} {
		set.Spawn(rt, blitzio.Lazy(func() string { return "fetched " + name }))
	}
	fmt.Println(set.Len(), "tasks")
	var got []string
	for set.Len() > 0 {
		v, err := set.WaitNext() // whichever finishes next
		if err != nil {
			fmt.Println(err)
			continue
		}
		got = append(got, v)
	}
	slices.Sort(got)
	fmt.Println(got)
	_, err := set.WaitNext()
	fmt.Println(errors.Is(err, blitzio.ErrJoinSetEmpty))
	// Output:
	// 3 tasks
	// [fetched alpha fetched beta fetched gamma]
	// true
}

// A JoinSet awaited inside a task: fan out, then collect results as they come with Next.
// Dropping the set (here when the task ends) would abort whatever is still running.
func ExampleJoinSet_Next() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	sum := blitzio.Spawn(rt, func() blitzio.Future[int] {
		set := &blitzio.JoinSet[int]{}
		var next blitzio.Future[blitzio.Result[int]]
		total, started := 0, false
		return blitzio.WithDrop[int](blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
			if !started {
				started = true
				for i := 1; i <= 10; i++ {
					set.Spawn(cx, blitzio.Lazy(func() int { return i }))
				}
			}
			for {
				if next == nil {
					next = set.Next()
				}
				r, ok := next.Poll(cx)
				if !ok {
					return 0, false
				}
				next = nil
				if errors.Is(r.Err, blitzio.ErrJoinSetEmpty) {
					return total, true
				}
				total += r.Value
			}
		}), set.Drop)
	}())
	v, err := sum.Wait()
	fmt.Println(v, err)
	// Output: 55 <nil>
}

// Interval ticks at a fixed period; the first tick is immediate. A TestClock drives it
// here, so the example is deterministic.
func ExampleInterval() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := blitzio.NewTestClock(start)
	rt, _ := blitzio.New(blitzio.Config{Clock: clock})
	defer rt.Close()

	ticks := make(chan time.Duration, 3)
	h := blitzio.Spawn(rt, func() blitzio.Future[int] {
		ticker := blitzio.Interval(time.Second)
		n := 0
		var seen []time.Duration
		report := func() { // once the next tick's timer is set, so Advance finds it
			for _, d := range seen {
				ticks <- d
			}
			seen = seen[:0]
		}
		return blitzio.WithDrop[int](blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
			for n < 3 {
				at, ok := ticker.Poll(cx)
				if !ok {
					report()
					return 0, false
				}
				seen = append(seen, at.Sub(start))
				n++
			}
			report()
			return n, true
		}), ticker.Drop)
	}())
	fmt.Println(<-ticks) // the first tick, at once
	clock.Advance(time.Second)
	fmt.Println(<-ticks)
	clock.Advance(time.Second)
	fmt.Println(<-ticks)
	n, err := h.Wait()
	fmt.Println(n, err)
	// Output:
	// 0s
	// 1s
	// 2s
	// 3 <nil>
}

// WithDrop gives a poll-function future a Drop, so that what it holds (here a Sleep's
// timer) is released when its task is aborted instead of finishing.
func ExampleWithDrop() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	released := make(chan string, 1)
	polled := make(chan struct{})
	h := blitzio.Spawn(rt, func() blitzio.Future[string] {
		sleep := blitzio.Sleep(time.Hour)
		first := true
		return blitzio.WithDrop[string](blitzio.PollFn(func(cx *blitzio.Context) (string, bool) {
			if _, ok := sleep.Poll(cx); !ok {
				if first {
					first = false
					close(polled)
				}
				return "", false
			}
			return "woke up", true
		}), func() {
			sleep.Drop() // remove the timer from the runtime's wheel
			released <- "timer released"
		})
	}())
	<-polled
	h.Abort()
	_, err := h.Wait()
	fmt.Println(<-released)
	fmt.Println(errors.Is(err, blitzio.ErrCancelled))
	// Output:
	// timer released
	// true
}

// TryTimeout bounds a future that can fail by itself, such as a task's handle, without
// nesting Results: the error is the task's own, or ErrTimeout.
func ExampleTryTimeout() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	quick := blitzio.Spawn(rt, blitzio.Lazy(func() int { return 42 }))
	r, _ := blitzio.BlockOn(rt, blitzio.TryTimeout(time.Minute, quick))
	fmt.Println(r.Value, r.Err)

	stuck := blitzio.Spawn(rt, blitzio.Pending[int]())
	r, _ = blitzio.BlockOn(rt, blitzio.TryTimeout(time.Millisecond, stuck))
	fmt.Println(errors.Is(r.Err, blitzio.ErrTimeout))
	stuck.Abort()
	// Output:
	// 42 <nil>
	// true
}

// SelectN over handles: the first task to finish wins; the others keep running (a
// JoinHandle dropped by a select does not cancel its task; Abort it if it should stop).
func ExampleSelectN_handles() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	never := blitzio.Spawn(rt, blitzio.Pending[string]())
	done := blitzio.Spawn(rt, blitzio.Ready("done"))
	s, _ := blitzio.BlockOn(rt, blitzio.SelectN(never, done))
	fmt.Println(s.Index, s.Value.Value)
	never.Abort()
	_, err := never.Wait()
	fmt.Println(errors.Is(err, blitzio.ErrCancelled))
	// Output:
	// 1 done
	// true
}
