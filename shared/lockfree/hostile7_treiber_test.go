package lockfree

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile review of TreiberStack: zero values as items, and a mixed Push, Pop and
// PopAll stress that checks order as well as exactly-once delivery.

// TestHostile7TreiberZeroValues: the stack holds values, so a nil pointer or a zero
// struct is an ordinary item; Pop tells it apart from "empty" through ok alone.
func TestHostile7TreiberZeroValues(t *testing.T) {
	var s TreiberStack[*int]
	s.Push(nil)
	s.Push(nil)
	for k := range 2 {
		if v, ok := s.Pop(); !ok || v != nil {
			t.Fatalf("Pop %d = %v, %v; want nil, true", k, v, ok)
		}
	}
	if v, ok := s.Pop(); ok || v != nil || !s.Empty() {
		t.Fatalf("Pop on empty = %v, %v", v, ok)
	}
	var z TreiberStack[struct{}]
	z.Push(struct{}{})
	if got := z.PopAll(); len(got) != 1 {
		t.Fatalf("PopAll of one zero-size value = %v", got)
	}
	if got := z.PopAll(); got != nil {
		t.Fatalf("PopAll of an empty stack = %v, want nil", got)
	}
}

// h7Val is a stack value: which pusher pushed it, and its number in that pusher's
// order.
type h7Val struct {
	pusher int
	n      int
}

// TestHostile7TreiberMixed: goroutines that push, pop and PopAll all at once, far more
// than cores, several of them re-pushing what they popped (the same value travelling
// through the stack again, the value-level ABA pattern; nodes are never reused, so the
// pointer-level ABA cannot occur). Checked: every value leaves the stack exactly once
// per push; a PopAll batch lists each pusher's values oldest first, since a stack holds
// any one pusher's values in its push order (values a worker re-pushed excepted).
func TestHostile7TreiberMixed(t *testing.T) {
	const pushers, workers = 6, 10
	per := scale(50_000)
	var s TreiberStack[h7Val]
	counts := make([][]atomic.Int32, pushers) // pops minus pushes, per value
	moved := make([][]atomic.Bool, pushers)   // re-pushed by a worker: out of push order
	for p := range counts {
		counts[p] = make([]atomic.Int32, per)
		moved[p] = make([]atomic.Bool, per)
	}
	var pushersLeft atomic.Int32
	pushersLeft.Store(pushers)
	var rePushed atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	for p := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pushersLeft.Add(-1)
			for n := range per {
				counts[p][n].Add(-1)
				s.Push(h7Val{p, n})
				if n%256 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := NewXorShift64Star(uint64(w) + 41)
			for {
				done := pushersLeft.Load() == 0 // before taking: empty after done means drained
				switch r := rng.Intn(32); {
				case r == 0:
					batch := s.PopAll()
					last := make(map[int]int)
					for _, v := range batch {
						counts[v.pusher][v.n].Add(1)
						if moved[v.pusher][v.n].Load() {
							continue
						}
						if prev, ok := last[v.pusher]; ok && v.n <= prev {
							failure.Store(fmt.Sprintf("PopAll batch lists pusher %d's value %d after %d", v.pusher, v.n, prev))
						}
						last[v.pusher] = v.n
					}
					if len(batch) == 0 && done {
						return
					}
				default:
					v, ok := s.Pop()
					if !ok {
						if done {
							return
						}
						runtime.Gosched()
						continue
					}
					if w%3 == 0 && r < 8 && !done {
						// Put it back (the pop and the push cancel out in counts): it must
						// come out once more, and only once.
						moved[v.pusher][v.n].Store(true)
						s.Push(v)
						rePushed.Add(1)
						continue
					}
					counts[v.pusher][v.n].Add(1)
				}
				if rng.Intn(128) == 0 {
					time.Sleep(time.Duration(rng.Intn(5)) * time.Microsecond)
				}
			}
		}()
	}
	h7WaitAll(t, &wg, "pushers and poppers")
	if f := failure.Load(); f != nil {
		t.Fatal(f)
	}
	bad := 0
	for p := range counts {
		for n := range counts[p] {
			if c := counts[p][n].Load(); c != 0 {
				if bad < 5 {
					t.Errorf("pusher %d value %d: taken %+d times more than pushed", p, n, c)
				}
				bad++
			}
		}
	}
	if bad > 0 || !s.Empty() {
		t.Fatalf("%d values not taken exactly once per push; stack empty: %v", bad, s.Empty())
	}
	t.Logf("%d values, %d re-pushed", pushers*per, rePushed.Load())
}
