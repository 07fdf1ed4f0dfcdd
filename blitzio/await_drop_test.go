package blitzio

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// dropCounted is a future whose Poll runs act (which panics or exits the goroutine) and
// whose Drop is counted.
type dropCounted struct {
	act   func()
	drops *atomic.Int32
}

func (d *dropCounted) Poll(*Context) (int, bool) { d.act(); return 0, true }
func (d *dropCounted) Drop()                     { d.drops.Add(1) }

// TestAwaitDropsFutureWhosePollPanics: a future whose Poll panics inside Await is dropped
// (once) before the panic goes on, as Rust drops what a panic unwinds past, so a lock or
// waiter it holds is given back; the panic still reaches the task's handle. The same
// for runtime.Goexit, which the handle reports as ErrGoexit.
func TestAwaitDropsFutureWhosePollPanics(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, c := range []struct {
		name  string
		act   func()
		check func(error) bool
	}{
		{"panic", func() { panic("boom") }, func(err error) bool {
			var pe *PanicError
			return errors.As(err, &pe) && pe.Value == "boom"
		}},
		{"Goexit", runtime.Goexit, func(err error) bool { return errors.Is(err, ErrGoexit) }},
	} {
		var drops atomic.Int32
		_, err := Spawn(rt, Async(func(co *Co) int {
			return Await[int](co, &dropCounted{act: c.act, drops: &drops})
		})).Wait()
		if !c.check(err) {
			t.Errorf("%s: the task reported %v", c.name, err)
		}
		if n := drops.Load(); n != 1 {
			t.Errorf("%s: the awaited future was dropped %d times, want 1", c.name, n)
		}
	}
}
