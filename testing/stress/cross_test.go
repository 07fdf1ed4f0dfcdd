package stress

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
)

// crossTimeout bounds every cross-module test: a lost wake-up or a deadlock between the
// two schedulers fails with a message instead of hanging CI.
const crossTimeout = 90 * time.Second

func fibJoin(t *blitz.Task, n int) int {
	if n < 12 {
		return bzFibSeq(n)
	}
	a, b := blitz.Join2(t,
		func(t *blitz.Task) int { return fibJoin(t, n-1) },
		func(t *blitz.Task) int { return fibJoin(t, n-2) })
	return a + b
}

// TestBlitzioTasksCallBlitz runs both runtimes in one process, as a server that hands
// CPU-heavy requests to the fork-join pool would: blitzio tasks sleep for random short
// times, then run a parallel reduction on the blitz pool through SpawnBlocking, while plain
// goroutines hammer the same pool with fork-join calls. Every result is checked against
// its sequential value, and both runtimes must shut down without leaking goroutines.
func TestBlitzioTasksCallBlitz(t *testing.T) {
	tasks, callers := 400, 40
	if testing.Short() || raceEnabled {
		tasks, callers = 100, 10
	}
	baseline := runtime.NumGoroutine()

	pool, err := blitz.NewPool(blitz.Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 8})
	if err != nil {
		t.Fatal(err)
	}

	data := make([]int64, 50_000)
	var want int64
	for i := range data {
		data[i] = int64(i%1000) - 400
		want += data[i]
	}

	// Every random choice comes from the run's seed: one source per caller goroutine,
	// and one for the goroutine that spawns the tasks (a rand.Rand is not safe for
	// concurrent use).
	r := seeded(t)
	callerSeeds := make([]uint64, callers)
	for c := range callerSeeds {
		callerSeeds[c] = r.Uint64()
	}
	spawnR := rand.New(rand.NewPCG(r.Uint64(), 1))

	var failures atomic.Int64
	var firstFailure sync.Once
	var failMsg string
	fail := func(format string, args ...any) {
		failures.Add(1)
		firstFailure.Do(func() { failMsg = fmt.Sprintf(format, args...) })
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		// Plain goroutines calling into the pool from outside, concurrently.
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(callerSeeds[c], uint64(c)))
				for range 5 {
					n := 14 + r.IntN(6)
					if got := blitz.Call(pool, func(t *blitz.Task) int { return fibJoin(t, n) }); got != bzFibSeq(n) {
						fail("fib(%d) = %d on the pool, want %d", n, got, bzFibSeq(n))
					}
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}()
		}
		// blitzio tasks that sleep, then hand a parallel sum to the blitz pool.
		handles := make([]blitzio.JoinHandle[int64], tasks)
		for i := range handles {
			d := time.Duration(spawnR.IntN(3000)) * time.Microsecond
			handles[i] = blitzio.Spawn(rt, blitzio.AndThen(blitzio.Sleep(d), func(struct{}) blitzio.Future[int64] {
				h := blitzio.SpawnBlocking(rt, func() int64 {
					return blitz.Sum(data, blitz.WithPool(pool), blitz.WithGrain(1024))
				})
				return blitzio.Map(h, func(r blitzio.Result[int64]) int64 {
					if r.Err != nil {
						fail("SpawnBlocking: %v", r.Err)
					}
					return r.Value
				})
			}))
		}
		for i, h := range handles {
			got, err := h.Wait()
			if err != nil {
				fail("task %d: %v", i, err)
			} else if got != want {
				fail("task %d: sum %d, want %d", i, got, want)
			}
		}
		wg.Wait()
	}()

	select {
	case <-done:
	case <-time.After(crossTimeout):
		t.Fatalf("blitzio tasks and blitz callers did not finish within %v (lost wake-up or deadlock between the two runtimes)", crossTimeout)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d failures; first: %s", n, failMsg)
	}
	if err := rt.Close(); err != nil {
		t.Fatalf("blitzio Close: %v", err)
	}
	pool.Close()
	bzLeakCheck(t, baseline)
}

// TestBlitzInsideBlitzioWorkers calls the blitz pool directly from inside blitzio task
// polls (not through the blocking pool). A poll must not block for long, but a short
// parallel computation from a poll is legal, and both schedulers must keep working: the
// blitz caller's goroutine acts as a temporary worker, so this cannot deadlock even when
// every blitz worker is busy.
func TestBlitzInsideBlitzioWorkers(t *testing.T) {
	tasks := 2000
	if testing.Short() || raceEnabled {
		tasks = 300
	}
	baseline := runtime.NumGoroutine()
	pool, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var bad atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		handles := make([]blitzio.JoinHandle[int], tasks)
		for i := range handles {
			n := 10 + i%8
			handles[i] = blitzio.Spawn(rt, blitzio.AndThen(blitzio.YieldNow(), func(struct{}) blitzio.Future[int] {
				return blitzio.Lazy(func() int { return blitz.Call(pool, func(t *blitz.Task) int { return fibJoin(t, n) }) })
			}))
		}
		for i, h := range handles {
			if got, err := h.Wait(); err != nil || got != bzFibSeq(10+i%8) {
				bad.Add(1)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(crossTimeout):
		t.Fatalf("%d tasks calling blitz from blitzio polls did not finish within %v", tasks, crossTimeout)
	}
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d of %d tasks returned a wrong result or an error", n, tasks)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	bzLeakCheck(t, baseline)
}
