package blitz

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/shared/lockfree"
)

func TestNewPoolConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Workers: -1},
		{Workers: lockfree.MaxCountedWorkers + 1},
		{SpinRounds: -3},
		{SplitDepth: -1},
		{EagerLevels: -2},
	} {
		p, err := NewPool(cfg)
		if err == nil {
			p.Close()
			t.Fatalf("NewPool(%+v): no error", cfg)
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("NewPool(%+v) = %v, want an error wrapping ErrConfig", cfg, err)
		}
		field := "Workers"
		switch {
		case cfg.SpinRounds != 0:
			field = "SpinRounds"
		case cfg.SplitDepth != 0:
			field = "SplitDepth"
		case cfg.EagerLevels != 0:
			field = "EagerLevels"
		}
		if !strings.Contains(err.Error(), field) {
			t.Errorf("NewPool(%+v) error %q does not name %s", cfg, err, field)
		}
	}
	p := newPool(t, Config{})
	if got, want := p.NumWorkers(), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("Workers 0: NumWorkers = %d, want GOMAXPROCS %d", got, want)
	}
}

func workerCounts() []int {
	if testing.Short() {
		return []int{1, 2, 8}
	}
	return []int{1, 2, 8, 64}
}

func TestFibMatchesSequential(t *testing.T) {
	n := 22
	if raceEnabled {
		n = 17
	}
	for _, w := range workerCounts() {
		p := newPool(t, Config{Workers: w})
		for k := 0; k <= n; k += 3 {
			if got, want := Call(p, func(t *Task) int { return fib(t, k) }), fibSeq(k); got != want {
				t.Fatalf("workers=%d fib(%d) = %d, want %d", w, k, got, want)
			}
			done := make(chan int)
			p.Go(func(t *Task) { done <- fibS(t, k) })
			if got, want := <-done, fibSeq(k); got != want {
				t.Fatalf("workers=%d fibS(%d) on a worker = %d, want %d", w, k, got, want)
			}
		}
	}
}

func TestTreeSumShapes(t *testing.T) {
	size := 20000
	if raceEnabled {
		size = 3000
	}
	for _, w := range workerCounts() {
		p := newPool(t, Config{Workers: w})
		for _, skew := range []float64{0.5, 0.1, 0.9, 0.99, 0.0} {
			for _, n := range []int{0, 1, 2, 3, 7, 1023, size} {
				v := 0
				tree := buildTree(n, skew, &v)
				want := sumSeq(tree)
				got := Call(p, func(t *Task) int { return sumPar(t, tree) })
				if got != want {
					t.Fatalf("workers=%d skew=%v n=%d: sum %d, want %d", w, skew, n, got, want)
				}
				got = Call(p, func(t *Task) int { return sumParS(t, tree) })
				if got != want {
					t.Fatalf("workers=%d skew=%v n=%d: Stolen sum %d, want %d", w, skew, n, got, want)
				}
				checkIdleTasks(t, p)
			}
		}
	}
}

// TestThievesGetWork checks that publish-on-demand really hands work to thieves: in a
// 2-worker run, jobs are stolen. The job forks the root of fib and waits, with a
// deadline, for a thief to take it before it goes on. (A version that ran fib 200 times
// and hoped for a steal could lose every race on a loaded machine, as
// TestForkWakesSleepers did.) A fork that is never offered to the other worker still
// fails the test, after the deadline.
func TestThievesGetWork(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	n := 24
	if raceEnabled {
		n = 18
	}
	for r := 0; r < 5; r++ {
		before := p.Stats().Stolen
		stolen := false
		done := make(chan int)
		p.Go(func(t *Task) {
			f := fibJob.Fork(t, fib, n-1)
			waitStolenSince(p, before)
			stolen = p.Stats().Stolen != before
			b := fib(t, n-2)
			done <- f.Join(t) + b
		})
		var got int
		within(t, 30*time.Second, "fib with a waiting root fork", func() { got = <-done })
		if got != fibSeq(n) {
			t.Fatalf("round %d: fib(%d) = %d", r, n, got)
		}
		if !stolen {
			t.Fatalf("round %d: the root fork of fib(%d) on 2 workers was not stolen within 10s: %+v", r, n, p.Stats())
		}
	}
}

func TestZeroAllocForkJoin(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newPool(t, Config{Workers: 1})
	done := make(chan float64)
	// Run on the pool's only worker: nobody is hungry, so no fork is published and this
	// measures the not-stolen path.
	p.Go(func(t *Task) {
		fib(t, 15) // grow the slabs to their depth
		fibS(t, 15)
		done <- testing.AllocsPerRun(50, func() { fib(t, 15) })
		done <- testing.AllocsPerRun(50, func() { fibS(t, 15) })
	})
	if a := <-done; a != 0 {
		t.Fatalf("fib(15) with a fork per call (Join): %v allocations per run, want 0", a)
	}
	if a := <-done; a != 0 {
		t.Fatalf("fib(15) with a fork per call (Stolen): %v allocations per run, want 0", a)
	}
}

func TestJoinVariants(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	p.Call(func(t *Task) {
		var a, b int
		Join(t, func(*Task) { a = 1 }, func(*Task) { b = 2 })
		if a != 1 || b != 2 {
			t.Pool() // keep t used
			panic(fmt.Sprintf("Join: a=%d b=%d", a, b))
		}
		x, s := Join2(t, func(t *Task) int { return fib(t, 10) }, func(*Task) string { return "ok" })
		if x != 55 || s != "ok" {
			panic("Join2")
		}
		for _, n := range []int{0, 1, 2, 3, 17, 100} {
			hits := make([]int32, n)
			fns := make([]func(*Task), n)
			for i := range fns {
				fns[i] = func(*Task) { atomic.AddInt32(&hits[i], 1) }
			}
			JoinN(t, fns...)
			for i, h := range hits {
				if h != 1 {
					panic(fmt.Sprintf("JoinN(%d): fn %d ran %d times", n, i, h))
				}
			}
		}
	})
}

func TestTryJoin(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	e1, e2 := errors.New("one"), errors.New("two")
	p.Call(func(t *Task) {
		var ran atomic.Int32
		ok := func(*Task) error { ran.Add(1); return nil }
		if err := TryJoin(t, ok, ok, ok); err != nil {
			panic(err)
		}
		err := TryJoin(t, ok, func(*Task) error { ran.Add(1); return e2 }, ok, func(*Task) error { ran.Add(1); return e1 })
		if err != e2 {
			panic(fmt.Sprintf("TryJoin returned %v, want the first error in argument order (two)", err))
		}
		if ran.Load() != 7 {
			panic(fmt.Sprintf("TryJoin ran %d functions, want all 7", ran.Load()))
		}
		if err := TryJoin(t); err != nil {
			panic(err)
		}
	})
}

func TestBroadcastRunsOncePerWorker(t *testing.T) {
	for _, w := range workerCounts() {
		p := newPool(t, Config{Workers: w})
		for round := 0; round < 20; round++ {
			if round%5 == 4 {
				time.Sleep(2 * time.Millisecond) // let workers fall asleep
			}
			hits := make([]int32, w)
			within(t, 20*time.Second, "Broadcast", func() {
				p.Broadcast(func(i int) { atomic.AddInt32(&hits[i], 1) })
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("workers=%d round %d: worker %d ran the broadcast %d times", w, round, i, h)
				}
			}
		}
	}
}

func TestCallFrom100Goroutines(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	n := 18
	if raceEnabled {
		n = 12
	}
	want := fibSeq(n)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	within(t, 60*time.Second, "100 concurrent Calls", func() {
		for g := 0; g < 100; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 5; r++ {
					if got := Call(p, func(t *Task) int { return fib(t, n) }); got != want {
						errs <- fmt.Sprintf("goroutine %d: fib=%d want %d", g, got, want)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestNestedPools(t *testing.T) {
	a := newPool(t, Config{Workers: 2})
	b := newPool(t, Config{Workers: 3})
	within(t, 30*time.Second, "nested pools", func() {
		got := Call(a, func(t *Task) int {
			x, y := Join2(t,
				func(*Task) int {
					return Call(b, func(t *Task) int { return fib(t, 15) + Call(a, func(t *Task) int { return fib(t, 10) }) })
				},
				func(t *Task) int { return Call(t.Pool(), func(t *Task) int { return fib(t, 12) }) })
			return x + y
		})
		if want := fibSeq(15) + fibSeq(10) + fibSeq(12); got != want {
			t.Errorf("nested pools: %d, want %d", got, want)
		}
	})
}

func TestCloseAndUseAfterClose(t *testing.T) {
	base := runtime.NumGoroutine()
	p, err := NewPool(Config{Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	p.Close() // idle, immediately
	p.Close() // idempotent
	waitGoroutines(t, base)
	if err := p.TryCall(func(*Task) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryCall after Close = %v, want ErrClosed", err)
	}
	func() {
		defer func() {
			r := recover()
			if err, ok := r.(error); !ok || !errors.Is(err, ErrClosed) {
				t.Fatalf("Call after Close panicked with %v, want ErrClosed", r)
			}
		}()
		p.Call(func(*Task) {})
	}()

	// After heavy use.
	p, _ = NewPool(Config{Workers: 4})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); Call(p, func(t *Task) int { return fib(t, 16) }) }()
	}
	wg.Wait()
	var ran atomic.Int32
	for i := 0; i < 50; i++ {
		p.Go(func(*Task) { ran.Add(1) })
	}
	p.Close() // waits for the Go jobs
	if ran.Load() != 50 {
		t.Fatalf("Close returned before the Go jobs ran: %d of 50", ran.Load())
	}
	waitGoroutines(t, base)
}

func TestDefaultPool(t *testing.T) {
	p := Default()
	if p != Default() {
		t.Fatal("Default returned two pools")
	}
	if err := SetDefault(Config{Workers: 2}); err == nil {
		t.Fatal("SetDefault after Default started: no error")
	}
	if err := SetDefault(Config{Workers: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("SetDefault(bad) = %v", err)
	}
	if got := Call(p, func(t *Task) int { return fib(t, 12) }); got != 144 {
		t.Fatalf("fib(12) on the default pool = %d", got)
	}
}

// TestBroadcastWhileWorkersWaitInJoins posts broadcasts while the workers are busy
// with fork-join work and waiting for stolen frames: each worker runs each broadcast
// exactly once, from inside its join wait if need be.
func TestBroadcastWhileWorkersWaitInJoins(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	n := 24
	if raceEnabled {
		n = 18
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int32
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				calls.Add(1)
				select {
				case <-stop:
					return
				default:
					Call(p, func(t *Task) int { return fibS(t, n) })
				}
			}
		}()
	}
	for calls.Load() < 6 {
		time.Sleep(100 * time.Microsecond) // the fork-join work is under way
	}
	within(t, 60*time.Second, "broadcasts during fork-join work", func() {
		for r := 0; r < 50; r++ {
			hits := make([]atomic.Int32, 4)
			p.Broadcast(func(i int) { hits[i].Add(1) })
			for i := range hits {
				if hits[i].Load() != 1 {
					t.Errorf("round %d: worker %d ran the broadcast %d times", r, i, hits[i].Load())
				}
			}
		}
	})
	close(stop)
	wg.Wait()
}
