package lockfree

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestTreiberStack(t *testing.T) {
	var s TreiberStack[int]
	if v, ok := s.Pop(); ok || v != 0 || !s.Empty() {
		t.Fatalf("zero stack: Pop = %d, %v; Empty = %v", v, ok, s.Empty())
	}
	if s.PopAll() != nil {
		t.Fatal("PopAll of an empty stack is not nil")
	}
	for i := 1; i <= 3; i++ {
		s.Push(i)
	}
	if s.Empty() {
		t.Fatal("Empty after Push")
	}
	if v, ok := s.Pop(); !ok || v != 3 {
		t.Fatalf("Pop = %d, %v; want 3 (LIFO)", v, ok)
	}
	s.Push(4)
	// PopAll returns the pushes oldest first.
	if got := s.PopAll(); !slices.Equal(got, []int{1, 2, 4}) {
		t.Fatalf("PopAll = %v, want [1 2 4]", got)
	}
	if !s.Empty() {
		t.Fatal("not empty after PopAll")
	}
}

// TestTreiberStackStress: pushers push disjoint numbered ranges while poppers take with
// Pop and, now and then, PopAll; every number must be taken exactly once. 1,000,000
// values per configuration in a plain `go test` run.
func TestTreiberStackStress(t *testing.T) {
	for _, cfg := range []struct{ pushers, poppers int }{{1, 1}, {4, 4}, {2, 8}, {8, 2}} {
		t.Run(fmt.Sprintf("pushers=%d,poppers=%d", cfg.pushers, cfg.poppers), func(t *testing.T) {
			n := scale(1_000_000)
			per := n / cfg.pushers
			n = per * cfg.pushers
			taken := make([]atomic.Int32, n)
			var s TreiberStack[int]
			var pushersLeft atomic.Int32
			pushersLeft.Store(int32(cfg.pushers))
			var wg sync.WaitGroup
			for p := range cfg.pushers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer pushersLeft.Add(-1)
					rng := NewXorShift64Star(uint64(p) + 1)
					for i := p * per; i < (p+1)*per; i++ {
						s.Push(i)
						if rng.Intn(128) == 0 {
							runtime.Gosched()
						}
					}
				}()
			}
			for c := range cfg.poppers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := NewXorShift64Star(uint64(c) + 100)
					for {
						done := pushersLeft.Load() == 0 // before the pop: empty after done means drained
						if rng.Intn(64) == 0 {
							for _, v := range s.PopAll() {
								taken[v].Add(1)
							}
							continue
						}
						v, ok := s.Pop()
						if ok {
							taken[v].Add(1)
						} else if done {
							return
						} else {
							runtime.Gosched()
						}
					}
				}()
			}
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()
			waitOrFail(t, finished, "pushers and poppers")
			bad := 0
			for i := range taken {
				if c := taken[i].Load(); c != 1 {
					if bad < 5 {
						t.Errorf("value %d taken %d times", i, c)
					}
					bad++
				}
			}
			if bad > 0 || !s.Empty() {
				t.Fatalf("%d of %d values not taken exactly once; stack empty: %v", bad, n, s.Empty())
			}
		})
	}
}
