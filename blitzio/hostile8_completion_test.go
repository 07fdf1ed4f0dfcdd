package blitzio

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Complete wakes every awaiter even when one awaiter's Waker (a hand-written WakerFunc)
// panics: the wakers were taken from the state, so one skipped would sleep forever. The
// winning Complete also reports true instead of unwinding with someone else's panic.
func TestHostile8CompletionPanickingWakerDoesNotStrandOthers(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	c, fut := NewCompletion[int]()
	bad := NewContext(rt, WakerFunc(func() { panic("hostile8: waker panics") }))
	if _, ok := fut.Poll(bad); ok {
		t.Fatal("ready before Complete")
	}
	h := Spawn(rt, Future[int](fut))
	waitFor(t, "the task to register on the completion", func() bool {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		return len(c.s.ws) == 2
	})
	var won bool
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Complete panicked with a waiter's panic: %v", r)
			}
		}()
		won = c.Complete(9)
	}()
	if !won {
		t.Error("the only Complete call reported false")
	}
	if v, err := waitHandle(t, h); err != nil || v != 9 {
		t.Fatalf("task = (%v, %v), want (9, nil): it was not woken past the panicking waker", v, err)
	}
}

// Drop of a copy wakes the other awaiters even past a panicking waker.
func TestHostile8CompletionDropPanickingWaker(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	c, fut := NewCompletion[int]()
	bad := NewContext(rt, WakerFunc(func() { panic("hostile8: waker panics") }))
	if _, ok := fut.Poll(bad); ok {
		t.Fatal("ready before Complete")
	}
	woken := make(chan struct{}, 1)
	good := NewContext(rt, WakerFunc(func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	}))
	if _, ok := fut.Poll(good); ok {
		t.Fatal("ready before Complete")
	}
	func() {
		defer func() { recover() }()
		fut.Drop()
	}()
	select {
	case <-woken:
	default:
		t.Fatal("Drop did not wake the other awaiter (its waker came after a panicking one)")
	}
	c.Complete(1)
}

// Many producers racing, many awaiters (tasks and waiters with their own registration),
// some dropped while Complete runs; the runtime closed afterwards; nothing leaks.
func TestHostile8CompletionManyProducersAwaitersDrops(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		c, fut := NewCompletion[int]()
		const awaiters = 16
		hs := make([]JoinHandle[int], awaiters)
		for i := range hs {
			var f Future[int] = fut
			if i%2 == 1 {
				f = fut.waiter()
			}
			hs[i] = Spawn(rt, f)
		}
		var wins atomic.Int64
		var wg sync.WaitGroup
		for p := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.Complete(p) {
					wins.Add(1)
				}
			}()
		}
		for i := 0; i < awaiters; i += 3 {
			hs[i].Abort()
		}
		wgWait(t, &wg, "the producers")
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d Complete calls won, want 1", round, wins.Load())
		}
		for i, h := range hs {
			v, err := waitHandle(t, h)
			switch {
			case errors.Is(err, ErrCancelled):
				if i%3 != 0 {
					t.Fatalf("round %d: awaiter %d cancelled but never aborted", round, i)
				}
			case err != nil:
				t.Fatalf("round %d: awaiter %d: %v", round, i, err)
			case v < 0 || v >= 8:
				t.Fatalf("round %d: awaiter %d got %d", round, i, v)
			}
		}
	}
	// Awaited after the runtime closed: BlockOn reports the closed runtime at once.
	_, fut := NewCompletion[int]()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := BlockOn(rt, Future[int](fut)); !errors.Is(err, ErrRuntimeClosed) {
		t.Fatalf("BlockOn after Close = %v, want ErrRuntimeClosed", err)
	}
	checkNoLeak(t, base)
}

// A completionWaiter's Drop racing Complete: every waiter not dropped is woken.
func TestHostile8CompletionWaiterDropRacesComplete(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for range 200 {
		c, fut := NewCompletion[int]()
		var woken atomic.Int64
		const n = 8
		ws := make([]*completionWaiter[int], n)
		for i := range ws {
			ws[i] = fut.waiter()
			cx := NewContext(rt, WakerFunc(func() { woken.Add(1) }))
			if _, ok := ws[i].Poll(cx); ok {
				t.Fatal("ready before Complete")
			}
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); c.Complete(1) }()
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += 2 {
				ws[i].Drop()
			}
		}()
		wgWait(t, &wg, "Complete and the drops")
		if w := woken.Load(); w < n/2 {
			t.Fatalf("%d waiters woken, want at least the %d not dropped", w, n/2)
		}
		for _, w := range ws {
			if v, ok := w.Poll(NewContext(rt, Waker{})); !ok || v != 1 {
				t.Fatalf("after Complete a waiter polled (%v, %v)", v, ok)
			}
		}
	}
}
