package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitz"
)

// Stress suites for the blitz fork-join pool: many more goroutines than cores, random
// shapes and random timing (yields and short sleeps inside jobs), panics, nested pools,
// sleeping pools woken over and over, and Close racing with callers. Every wait is
// bounded: a lost wake-up or a deadlock fails with all goroutine stacks, never hangs.

const bzTimeout = 120 * time.Second

// bzWatch runs f and fails the test with every goroutine's stack if f does not return
// within bzTimeout.
func bzWatch(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(bzTimeout):
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s: not finished after %v (deadlock or lost wake-up); goroutines:\n%s", what, bzTimeout, buf)
	}
}

func bzLeakCheck(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 4<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, baseline %d; leaked:\n%s", runtime.NumGoroutine(), base, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

// bzJitter yields or sleeps a little, sometimes, to shake the interleavings.
func bzJitter(r *rand.Rand) {
	switch r.IntN(64) {
	case 0:
		time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
	case 1, 2, 3:
		runtime.Gosched()
	}
}

type bzArg struct {
	n     int
	seed  uint64
	boom  int // panic when n == boom (-1: never)
	stole bool
}

var bzFibJob blitz.Job[bzArg, int]

// bzFib forks at every call, joins with Join or Stolen at random, jitters, and panics at
// depth boom.
func bzFib(t *blitz.Task, a bzArg) int {
	r := rand.New(rand.NewPCG(a.seed, uint64(a.n)))
	if a.n == a.boom {
		panic(fmt.Sprintf("boom at %d", a.n))
	}
	if a.n < 2 {
		bzJitter(r)
		return a.n
	}
	left := bzArg{a.n - 1, r.Uint64(), a.boom, r.IntN(2) == 0}
	f := bzFibJob.Fork(t, bzFib, left)
	b := bzFib(t, bzArg{a.n - 2, r.Uint64(), a.boom, a.stole})
	if a.stole {
		v, ok := f.Stolen(t)
		if !ok {
			v = bzFib(t, left)
		}
		return v + b
	}
	return f.Join(t) + b
}

func bzFibSeq(n int) int {
	if n < 2 {
		return n
	}
	return bzFibSeq(n-1) + bzFibSeq(n-2)
}

// bzOp is one randomly chosen operation against pool p (and sometimes q).
func bzOp(t *testing.T, r *rand.Rand, p, q *blitz.Pool, maxN int) error {
	switch op := r.IntN(9); op {
	case 0, 1: // fork-join recursion
		n, seed := r.IntN(maxN), r.Uint64()
		got := blitz.Call(p, func(t *blitz.Task) int { return bzFib(t, bzArg{n, seed, -1, false}) })
		if want := bzFibSeq(n); got != want {
			return fmt.Errorf("fib(%d) = %d, want %d", n, got, want)
		}
	case 2: // a panic at some depth must come back as *PanicError, the pool survives
		n := 3 + r.IntN(maxN-3)
		at, seed := r.IntN(n), r.Uint64()
		var caught any
		func() {
			defer func() { caught = recover() }()
			p.Call(func(t *blitz.Task) { bzFib(t, bzArg{n, seed, at, false}) })
		}()
		pe, ok := caught.(*blitz.PanicError)
		if !ok || pe.Value != fmt.Sprintf("boom at %d", at) {
			return fmt.Errorf("panic at depth %d of fib(%d): recovered %v", at, n, caught)
		}
	case 3: // scope with many spawns, some nested
		n := 1 + r.IntN(200)
		var count atomic.Int64
		p.Call(func(t *blitz.Task) {
			blitz.Scope(t, func(s *blitz.Spawner) {
				for i := 0; i < n; i++ {
					s.Spawn(func(t *blitz.Task) {
						count.Add(1)
						if i%17 == 0 {
							s.Spawn(func(*blitz.Task) { count.Add(1) })
						}
					})
				}
			})
		})
		if want := int64(n + (n+16)/17); count.Load() != want {
			return fmt.Errorf("scope of %d spawns ran %d, want %d", n, count.Load(), want)
		}
	case 4: // JoinN and TryJoin
		n := r.IntN(40)
		hits := make([]atomic.Int32, n)
		errAt := r.IntN(n + 1)
		fns := make([]func(*blitz.Task) error, n)
		for i := range fns {
			fns[i] = func(t *blitz.Task) error {
				hits[i].Add(1)
				if i == errAt {
					return fmt.Errorf("err %d", i)
				}
				return nil
			}
		}
		err := blitz.Call(p, func(t *blitz.Task) error { return blitz.TryJoin(t, fns...) })
		for i := range hits {
			if hits[i].Load() != 1 {
				return fmt.Errorf("TryJoin: fn %d ran %d times", i, hits[i].Load())
			}
		}
		if (errAt < n) != (err != nil) || (err != nil && err.Error() != fmt.Sprintf("err %d", errAt)) {
			return fmt.Errorf("TryJoin error = %v, errAt %d of %d", err, errAt, n)
		}
	case 5: // nested pools, both directions
		n := r.IntN(maxN)
		s1, s2 := r.Uint64(), r.Uint64() // r is not safe for concurrent use
		got := blitz.Call(p, func(t *blitz.Task) int {
			a, b := blitz.Join2(t,
				func(*blitz.Task) int {
					return blitz.Call(q, func(t *blitz.Task) int { return bzFib(t, bzArg{n, s1, -1, true}) })
				},
				func(t *blitz.Task) int { return bzFib(t, bzArg{n, s2, -1, false}) })
			return a + b
		})
		if want := 2 * bzFibSeq(n); got != want {
			return fmt.Errorf("nested fib(%d)*2 = %d, want %d", n, got, want)
		}
	case 6: // fire and forget
		done := make(chan int, 1)
		n, seed := r.IntN(maxN), r.Uint64()
		p.Go(func(t *blitz.Task) { done <- bzFib(t, bzArg{n, seed, -1, true}) })
		select {
		case got := <-done:
			if got != bzFibSeq(n) {
				return fmt.Errorf("Go fib(%d) = %d", n, got)
			}
		case <-time.After(bzTimeout):
			return fmt.Errorf("Go job not run within %v", bzTimeout)
		}
	case 7: // context cancellation in the middle of a scope
		ctx, cancel := context.WithCancel(context.Background())
		var started atomic.Int32
		err := blitz.Call(p, func(t *blitz.Task) error {
			return blitz.ScopeContext(ctx, t, func(s *blitz.Spawner) {
				for i := 0; i < 100; i++ {
					if i == 50 {
						cancel()
					}
					s.Spawn(func(*blitz.Task) { started.Add(1) })
				}
			})
		})
		if !errors.Is(err, context.Canceled) || started.Load() > 50 {
			return fmt.Errorf("ScopeContext: err %v, %d started (at most 50 may)", err, started.Load())
		}
	case 8: // broadcast, from outside
		seen := make([]atomic.Int32, p.NumWorkers())
		p.Broadcast(func(i int) { seen[i].Add(1) })
		for i := range seen {
			if seen[i].Load() != 1 {
				return fmt.Errorf("Broadcast ran %d times on worker %d", seen[i].Load(), i)
			}
		}
	}
	return nil
}

// TestBlitzStressMixed: many goroutines (far more than cores) run random operations on
// two pools of different sizes at once.
func TestBlitzStressMixed(t *testing.T) {
	goroutines, rounds, maxN := 64, 150, 20
	if testing.Short() {
		goroutines, rounds = 24, 20
	}
	if raceEnabled {
		goroutines, rounds, maxN = 32, 30, 14
	}
	base := runtime.NumGoroutine()
	p, err := blitz.NewPool(blitz.Config{Workers: 4, SpinRounds: 4, SplitDepth: 2, EagerLevels: 3})
	if err != nil {
		t.Fatal(err)
	}
	q, err := blitz.NewPool(blitz.Config{Workers: 3, SplitDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, goroutines)
	// Each goroutine's source is drawn from the run's seed (STRESS_SEED replays it); a
	// rand.Rand is not safe for concurrent use, so the seeds are drawn here.
	rs := seeded(t)
	seeds := make([]uint64, goroutines)
	for g := range seeds {
		seeds[g] = rs.Uint64()
	}
	bzWatch(t, "mixed stress", func() {
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seeds[g], uint64(g)))
				for i := 0; i < rounds; i++ {
					pp, qq := p, q
					if r.IntN(2) == 0 {
						pp, qq = q, p
					}
					if err := bzOp(t, r, pp, qq, maxN); err != nil {
						errs <- fmt.Errorf("goroutine %d round %d: %w", g, i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p.Close()
	q.Close()
	if s := p.Stats(); s.Executed == 0 {
		t.Errorf("pool executed no queued job at all: %+v", s)
	}
	bzLeakCheck(t, base)
}

// TestBlitzStressSleepWake posts bursts of work separated by pauses long enough for the
// workers to fall asleep, from several goroutines at once: every post must be taken.
func TestBlitzStressSleepWake(t *testing.T) {
	posters, bursts := 8, 1000
	if testing.Short() || raceEnabled {
		posters, bursts = 6, 200
	}
	leakCheck(t) // registered first: runs after p.Close below
	p, err := blitz.NewPool(blitz.Config{Workers: 3, SpinRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ran atomic.Int64
	rs := seeded(t)
	seeds := make([]uint64, posters)
	for g := range seeds {
		seeds[g] = rs.Uint64()
	}
	bzWatch(t, "sleep/wake stress", func() {
		var wg sync.WaitGroup
		for g := 0; g < posters; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seeds[g], uint64(g)))
				for b := 0; b < bursts; b++ {
					k := 1 + r.IntN(4)
					done := make(chan struct{}, k)
					for range k {
						p.Go(func(t *blitz.Task) {
							bzFib(t, bzArg{r2n(b), uint64(b), -1, b%2 == 0})
							ran.Add(1)
							done <- struct{}{}
						})
					}
					for range k {
						<-done
					}
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}()
		}
		wg.Wait()
	})
	if s := p.Stats(); s.Sleeps == 0 || s.Wakes == 0 {
		t.Errorf("workers never slept or were never woken: %+v", s)
	}
	t.Logf("%d jobs, stats %+v", ran.Load(), p.Stats())
}

func r2n(b int) int { return b % 12 }

// TestBlitzStressCloseRacesCallers closes pools while goroutines keep calling them: each
// call either completes correctly or reports ErrClosed; Close returns, nothing leaks.
func TestBlitzStressCloseRacesCallers(t *testing.T) {
	pools := 30
	if testing.Short() || raceEnabled {
		pools = 8
	}
	base := runtime.NumGoroutine()
	bzWatch(t, "close racing callers", func() {
		for i := 0; i < pools; i++ {
			p, err := blitz.NewPool(blitz.Config{Workers: 1 + i%4})
			if err != nil {
				t.Error(err)
				return
			}
			var wg sync.WaitGroup
			var closed atomic.Int32
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; ; k++ {
						got, err := blitz.TryCall(p, func(t *blitz.Task) (int, error) { return bzFib(t, bzArg{10, uint64(k), -1, k%2 == 0}), nil })
						if errors.Is(err, blitz.ErrClosed) {
							closed.Add(1)
							return
						}
						if err != nil || got != 55 {
							t.Errorf("TryCall: %v, fib(10) = %d", err, got)
							return
						}
					}
				}()
			}
			time.Sleep(time.Duration(i%5) * time.Millisecond)
			p.Close()
			wg.Wait()
			if closed.Load() != 16 {
				t.Errorf("pool %d: %d of 16 callers saw ErrClosed", i, closed.Load())
			}
		}
	})
	bzLeakCheck(t, base)
}
