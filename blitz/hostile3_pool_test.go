package blitz

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// JoinN with every function panicking at once, some of them stolen: the panic of the
// lowest index is reported, and only after every function has returned.
func TestHostile3JoinNSeveralPanics(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for round := 0; round < 30; round++ {
		var finished atomic.Int32
		fns := make([]func(*Task), 8)
		for i := range fns {
			fns[i] = func(*Task) {
				defer finished.Add(1)
				for k := rand.IntN(2000); k > 0; k-- {
					if k%100 == 0 {
						runtime.Gosched()
					}
				}
				panic(i)
			}
		}
		var got any
		var atRecover int32
		runWithWatchdog(t, "JoinN", func() {
			func() {
				defer func() {
					got = recover()
					atRecover = finished.Load()
				}()
				p.Call(func(t *Task) { JoinN(t, fns...) })
			}()
		})
		var pe *PanicError
		if !errors.As(asError(got), &pe) || pe.Value != 0 {
			t.Fatalf("round %d: recovered %v, want a *PanicError of value 0 (the lowest index)", round, got)
		}
		if atRecover != 8 {
			t.Fatalf("round %d: JoinN re-raised after %d of 8 functions finished", round, atRecover)
		}
	}
}

func asError(v any) error {
	if e, ok := v.(error); ok {
		return e
	}
	return fmt.Errorf("%v", v)
}

// Two pools calling into each other from their jobs, from many outside goroutines at once
// (far more than the 2 cores), must neither deadlock nor lose work.
func TestHostile3CrossPoolNesting(t *testing.T) {
	a := newPool(t, Config{Workers: 2})
	b := newPool(t, Config{Workers: 1})
	var rec func(t *Task, depth int) int
	rec = func(t *Task, depth int) int {
		if depth == 0 {
			return 1
		}
		other := a
		if t.Pool() == a {
			other = b
		}
		x, y := Join2(t,
			func(t *Task) int { return Call(other, func(t *Task) int { return rec(t, depth-1) }) },
			func(t *Task) int { return rec(t, depth-1) })
		return x + y
	}
	runWithWatchdog(t, "cross-pool nesting", func() {
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := a
				if g%2 == 1 {
					start = b
				}
				if got := Call(start, func(t *Task) int { return rec(t, 6) }); got != 64 {
					errs <- fmt.Errorf("goroutine %d: got %d, want 64", g, got)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// Close of pool A from a job of pool B that runs inside a Call of A (same goroutine):
// A's mark is on the stack, so Close must panic, not wait for itself.
func TestHostile3CloseThroughOtherPool(t *testing.T) {
	a := newPool(t, Config{Workers: 2})
	b := newPool(t, Config{Workers: 2})
	var got any
	runWithWatchdog(t, "Close through another pool", func() {
		a.Call(func(*Task) {
			b.Call(func(t *Task) {
				Join(t, func(*Task) {
					defer func() { got = recover() }()
					a.Close()
				}, func(*Task) {})
			})
		})
	})
	if got == nil {
		t.Fatal("A.Close from inside A's Call (through B) returned instead of panicking")
	}
	// A still works.
	if Call(a, func(*Task) int { return 7 }) != 7 {
		t.Fatal("pool A broken after the refused Close")
	}
}

// Many outside goroutines call one pool at once with randomized work, some panicking, some
// erroring: every call gets its own result and panic, and the pool's Tasks end idle.
func TestHostile3ConcurrentCallersMixedFailures(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	runWithWatchdog(t, "concurrent callers", func() {
		var wg sync.WaitGroup
		for g := 0; g < 48; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for it := 0; it < 20; it++ {
					mode := r.IntN(3)
					n := 1 + r.IntN(4000)
					err := p.TryCall(func(t *Task) error {
						sum := Reduce(n, 0, func(lo, hi int) int {
							if mode == 1 && lo <= n/2 && n/2 < hi {
								panic(fmt.Sprint("g", g))
							}
							return hi - lo
						}, func(a, b int) int { return a + b }, WithPool(p), WithGrain(64))
						if sum != n {
							return fmt.Errorf("sum %d, want %d", sum, n)
						}
						if mode == 2 {
							return errors.New("planned")
						}
						return nil
					})
					switch mode {
					case 0:
						if err != nil {
							t.Errorf("g%d: %v", g, err)
						}
					case 1:
						var pe *PanicError
						if !errors.As(err, &pe) || pe.Value != fmt.Sprint("g", g) {
							t.Errorf("g%d: got %v, want its own panic", g, err)
						}
					case 2:
						if err == nil || err.Error() != "planned" {
							t.Errorf("g%d: got %v, want planned", g, err)
						}
					}
				}
			}()
		}
		wg.Wait()
	})
	checkIdleTasks(t, p)
}
