package blitz

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type boom struct{ depth int }

var panicJob Job[int, int]

// panicky is fib that panics at a chosen depth along the leftmost (or rightmost) path.
func panicky(t *Task, n int, at int) int {
	var rec func(t *Task, n int) int
	rec = func(t *Task, n int) int {
		if n == at {
			panic(boom{n})
		}
		if n < 2 {
			return n
		}
		f := panicJob.Fork(t, rec, n-1)
		b := rec(t, n-2)
		return f.Join(t) + b
	}
	return rec(t, n)
}

func expectPanic(t *testing.T, what string, want any, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		pe, ok := r.(*PanicError)
		if !ok {
			t.Fatalf("%s: recovered %T %v, want *PanicError", what, r, r)
		}
		if pe.Value != want {
			t.Fatalf("%s: PanicError.Value = %v, want %v", what, pe.Value, want)
		}
		if len(pe.Stack) == 0 || !strings.Contains(pe.Error(), fmt.Sprint(want)) {
			t.Fatalf("%s: PanicError without stack or value in message: %q", what, pe.Error())
		}
		// Every panic of these tests is raised in this file: the one-line message names it.
		if msg := pe.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, " [at panic_test.go:") {
			t.Fatalf("%s: Error() is not one line naming the panic site in panic_test.go: %q", what, msg)
		}
	}()
	f()
}

func TestPanicAtEveryDepth(t *testing.T) {
	n := 14
	if raceEnabled {
		n = 11
	}
	for _, w := range []int{1, 2, 8} {
		p := newPool(t, Config{Workers: w})
		for at := 0; at <= n; at++ {
			expectPanic(t, fmt.Sprintf("workers=%d panic at n=%d", w, at), boom{at}, func() {
				p.Call(func(t *Task) { panicky(t, n, at) })
			})
			// The pool keeps working, and the guest Task's frame stack is clean.
			if got := Call(p, func(t *Task) int { return fib(t, 12) }); got != 144 {
				t.Fatalf("after panic: fib(12) = %d", got)
			}
			checkIdleTasks(t, p)
		}
		// Panics in stolen jobs re-raise in the joiner: run on the pool's workers.
		for i := 0; i < 20; i++ {
			done := make(chan any, 1)
			p.Go(func(t *Task) {
				pe := Catch(t, func(t *Task) { panicky(t, n, 3) })
				done <- pe
				fib(t, 10) // the worker's frame stack is usable again
			})
			var r any
			within(t, 30*time.Second, "panicking Go job", func() { r = <-done })
			if pe, ok := r.(*PanicError); !ok || pe.Value != (boom{3}) {
				t.Fatalf("Catch returned %v, want the panic boom{3}", r)
			}
		}
	}
}

func TestJoinPanicsAfterSibling(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	var siblingDone atomic.Bool
	expectPanic(t, "Join a panics", "a", func() {
		p.Call(func(t *Task) {
			Join(t, func(*Task) { panic("a") }, func(*Task) {
				time.Sleep(5 * time.Millisecond)
				siblingDone.Store(true)
			})
		})
	})
	if !siblingDone.Load() {
		t.Fatal("Join re-raised a's panic before b finished")
	}
	expectPanic(t, "Join b panics", "b", func() {
		p.Call(func(t *Task) { Join(t, func(*Task) {}, func(*Task) { panic("b") }) })
	})
	expectPanic(t, "JoinN lowest index wins", 2, func() {
		p.Call(func(t *Task) {
			JoinN(t, func(*Task) {}, func(*Task) {}, func(*Task) { panic(2) }, func(*Task) { panic(3) })
		})
	})
	errBoom := errors.New("boom")
	func() {
		defer func() {
			r := recover()
			err, _ := r.(error)
			if !errors.Is(err, errBoom) {
				t.Fatalf("errors.Is through PanicError failed: %v", r)
			}
		}()
		p.Call(func(t *Task) { TryJoin(t, func(*Task) error { panic(errBoom) }) })
	}()
	expectPanic(t, "Broadcast", "bc", func() { p.Broadcast(func(i int) { panic("bc") }) })
	expectPanic(t, "Scope", "sc", func() {
		p.Call(func(t *Task) {
			Scope(t, func(s *Spawner) {
				for i := 0; i < 10; i++ {
					s.Spawn(func(*Task) {
						if i == 7 {
							panic("sc")
						}
					})
				}
			})
		})
	})
	if got := Call(p, func(t *Task) int { return fib(t, 15) }); got != 610 {
		t.Fatalf("pool broken after panics: fib(15)=%d", got)
	}
}

func TestUnjoinedForkIsReported(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	defer func() {
		r := recover()
		pe, ok := r.(*PanicError)
		if !ok || pe.Value != errUnjoined {
			t.Fatalf("recovered %v, want errUnjoined", r)
		}
		if got := Call(p, func(t *Task) int { return fib(t, 10) }); got != 55 {
			t.Fatalf("after unjoined fork: %d", got)
		}
	}()
	p.Call(func(t *Task) { fibJob.Fork(t, fib, 5) })
}

func TestJoinOutOfOrderPanics(t *testing.T) {
	// SplitDepth 4: both forks are pushed (an unpushed fork is a plain call at its join,
	// where the order does not matter and is not checked).
	p := newPool(t, Config{Workers: 1, SplitDepth: 4})
	defer func() {
		r := recover()
		pe, ok := r.(*PanicError)
		if !ok || pe.Value != errJoinOrder {
			t.Fatalf("recovered %v, want errJoinOrder", r)
		}
	}()
	p.Call(func(t *Task) {
		a := fibJob.Fork(t, fib, 3)
		b := fibJob.Fork(t, fib, 4)
		a.Join(t) // b must be joined first
		b.Join(t)
	})
}
