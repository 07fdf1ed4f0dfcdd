package tsync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestOnceCellSetGet(t *testing.T) {
	var c OnceCell[string]
	if _, ok := c.Get(); ok || c.IsSet() {
		t.Fatal("zero cell is set")
	}
	if err := c.Set("a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("b"); !errors.Is(err, ErrOnceCellSet) {
		t.Fatalf("second Set: %v", err)
	}
	if v, ok := c.Get(); !ok || v != "a" {
		t.Fatal("Get")
	}
	if v, _ := NewOnceCellWith(7).Get(); v != 7 {
		t.Fatal("NewOnceCellWith")
	}
	var nc *OnceCell[int]
	expectPanic(t, "nil *OnceCell", func() { nc.GetOrInit(nil) })
	expectPanic(t, "init is nil", func() { c.GetOrInit(nil) })
}

// TestOnceCellInitOnce: many concurrent callers, tasks on two runtimes and goroutines;
// one initialiser runs, everyone sees its value.
func TestOnceCellInitOnce(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	for round := range stressScale(200) {
		var c OnceCell[int]
		var inits atomic.Int64
		initF := func() blitzio.Future[int] {
			inits.Add(1)
			return blitzio.Async(func(co *blitzio.Co) int {
				blitzio.Await(co, blitzio.YieldNow())
				return 42
			})
		}
		var hs []blitzio.JoinHandle[int]
		for i := range 16 {
			rt := rt1
			if i%2 == 0 {
				rt = rt2
			}
			hs = append(hs, blitzio.Spawn(rt, blitzio.Future[int](c.GetOrInit(initF))))
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := c.GetOrInitContext(context.Background(), func(context.Context) (int, error) {
					inits.Add(1)
					return 42, nil
				})
				if err != nil || v != 42 {
					t.Errorf("GetOrInitContext = %v, %v", v, err)
				}
			}()
		}
		for _, h := range hs {
			if v, err := h.Wait(); err != nil || v != 42 {
				t.Fatalf("round %d: %v %v", round, v, err)
			}
		}
		wg.Wait()
		if inits.Load() != 1 {
			t.Fatalf("round %d: %d initialisers ran", round, inits.Load())
		}
	}
}

// TestOnceCellFailingAndCancelledInit: an initialiser that fails, panics or is dropped
// leaves the cell empty and hands the turn to the oldest waiting caller.
func TestOnceCellFailingAndCancelledInit(t *testing.T) {
	tc := newTestCx()
	boom := errors.New("boom")
	var c OnceCell[int]
	fail := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		return blitzio.Ready(blitzio.Result[int]{Err: boom})
	})
	// The initialiser is pending first, so a second caller queues behind it.
	var step int
	slowFail := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		return blitzio.PollFn(func(*blitzio.Context) (blitzio.Result[int], bool) {
			step++
			if step == 1 {
				return blitzio.Result[int]{}, false
			}
			return blitzio.Result[int]{Err: boom}, true
		})
	})
	if _, ok := slowFail.Poll(tc.cx); ok {
		t.Fatal("pending initialiser ready")
	}
	if _, ok := fail.Poll(tc.cx); ok {
		t.Fatal("second caller did not wait for the running initialiser")
	}
	if r, ok := slowFail.Poll(tc.cx); !ok || !errors.Is(r.Err, boom) {
		t.Fatalf("initialiser's own error not returned: %v %v", r, ok)
	}
	// The turn passed to fail, which runs its initialiser (failing too).
	if r, ok := fail.Poll(tc.cx); !ok || !errors.Is(r.Err, boom) {
		t.Fatalf("next caller did not get its turn: %v %v", r, ok)
	}
	if c.IsSet() || c.state.Load() != onceEmpty {
		t.Fatal("cell not empty after failures")
	}

	// A dropped initialiser (pending) passes the turn on.
	pend := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
	next := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(5) })
	pend.Poll(tc.cx)
	next.Poll(tc.cx)
	pend.Drop()
	if v, ok := next.Poll(tc.cx); !ok || v != 5 {
		t.Fatalf("turn not passed on by a dropped initialiser: %v %v", v, ok)
	}
	if v, _ := c.Get(); v != 5 {
		t.Fatal("value")
	}
}

func TestOnceCellDropAtEveryAwaitPoint(t *testing.T) {
	tc := newTestCx()
	t.Run("handed the turn, dropped before polling", func(t *testing.T) {
		var c OnceCell[int]
		a := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
		b := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(1) })
		d := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(2) })
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		d.Poll(tc.cx)
		a.Drop() // turn to b
		b.Drop() // b never saw it: turn to d
		if v, ok := d.Poll(tc.cx); !ok || v != 2 {
			t.Fatalf("turn lost: %v %v", v, ok)
		}
	})
	t.Run("queued waiter dropped", func(t *testing.T) {
		var c OnceCell[int]
		a := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
		b := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(1) })
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		b.Drop()
		a.Drop()
		if c.state.Load() != onceEmpty || !c.waiters.empty() {
			t.Fatal("cell not empty with no waiters")
		}
	})
	t.Run("panicking init in a task", func(t *testing.T) {
		defer watchdog(t, 20*time.Second)()
		rt := newRT(t, 2)
		var c OnceCell[int]
		h := blitzio.Spawn(rt, blitzio.Future[int](c.GetOrInit(func() blitzio.Future[int] { panic("init") })))
		if _, err := h.Wait(); err == nil {
			t.Fatal("no error from a panicking init")
		}
		h2 := blitzio.Spawn(rt, blitzio.Future[int](c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(9) })))
		if v, err := h2.Wait(); err != nil || v != 9 {
			t.Fatalf("after a panicking init: %v %v", v, err)
		}
	})
	t.Run("aborted initialiser task with waiting tasks", func(t *testing.T) {
		defer watchdog(t, 20*time.Second)()
		rt := newRT(t, 2)
		var c OnceCell[int]
		started := make(chan struct{})
		h := blitzio.Spawn(rt, blitzio.Future[int](c.GetOrInit(func() blitzio.Future[int] {
			close(started)
			return blitzio.Pending[int]()
		})))
		<-started
		var hs []blitzio.JoinHandle[int]
		for range 4 {
			hs = append(hs, blitzio.Spawn(rt, blitzio.Future[int](c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(3) }))))
		}
		h.Abort()
		for _, h := range hs {
			if v, err := h.Wait(); err != nil || v != 3 {
				t.Fatalf("%v %v", v, err)
			}
		}
	})
	t.Run("context", func(t *testing.T) {
		defer watchdog(t, 20*time.Second)()
		var c OnceCell[int]
		hold := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
		hold.Poll(tc.cx)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		defer cancel()
		if _, err := c.GetOrInitContext(ctx, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		hold.Drop()
		v, err := c.GetOrInitContext(context.Background(), func(context.Context) (int, error) { return 4, nil })
		if err != nil || v != 4 {
			t.Fatalf("%v %v", v, err)
		}
		if err := c.Set(1); !errors.Is(err, ErrOnceCellSet) {
			t.Fatal(err)
		}
	})
	t.Run("Set while busy", func(t *testing.T) {
		var c OnceCell[int]
		a := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
		a.Poll(tc.cx)
		if err := c.Set(1); !errors.Is(err, ErrOnceCellBusy) {
			t.Fatalf("err = %v", err)
		}
		a.Drop()
		if err := c.Set(1); err != nil {
			t.Fatal(err)
		}
	})
}
