package blitz

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Tests of Group, the errgroup-style group that runs its functions on a pool.

// groupWait runs g.Wait under the watchdog and returns its error and the value it
// panicked with (nil if none).
func groupWait(t *testing.T, name string, g *Group) (panicked any, err error) {
	t.Helper()
	runWithWatchdog(t, name, func() {
		defer func() { panicked = recover() }()
		err = g.Wait()
	})
	return panicked, err
}

func TestAlgo2GroupFirstError(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	errA, errB := errors.New("a"), errors.New("b")
	var g Group // the zero Group: default pool
	var ran atomic.Int64
	for i := range 100 {
		g.Go(func() error {
			ran.Add(1)
			if i == 40 {
				return errA
			}
			return nil
		})
	}
	if pv, err := groupWait(t, "zero Group", &g); err != errA || pv != nil {
		t.Errorf("Wait = %v (panic %v), want %v", err, pv, errA)
	}
	if ran.Load() != 100 {
		t.Errorf("%d functions ran, want 100 (an error does not skip the others)", ran.Load())
	}

	// With a limit of 1 the functions run one at a time in Go order: the first error in
	// time is the one of the earliest failing function.
	g2 := NewGroup(p)
	g2.SetLimit(1)
	for i := range 50 {
		g2.Go(func() error {
			switch i {
			case 10:
				return errA
			case 20:
				return errB
			}
			return nil
		})
	}
	if pv, err := groupWait(t, "limit 1", g2); err != errA || pv != nil {
		t.Errorf("Wait = %v (panic %v), want the first error %v", err, pv, errA)
	}
}

func TestAlgo2GroupContextCancelledOnError(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	boom := errors.New("boom")
	g, ctx := GroupContext(context.Background(), p)
	g.Go(func() error { return boom }) // queued first: taken first
	var sawCancel atomic.Int64
	for range 6 {
		g.Go(func() error {
			// Spins until the error cancels the context (the watchdog catches a context
			// that is never cancelled).
			for ctx.Err() == nil {
				runtime.Gosched()
			}
			sawCancel.Add(1)
			return ctx.Err()
		})
	}
	if pv, err := groupWait(t, "GroupContext", g); err != boom || pv != nil {
		t.Errorf("Wait = %v (panic %v), want %v", err, pv, boom)
	}
	if sawCancel.Load() != 6 {
		t.Errorf("%d functions saw the cancellation, want 6", sawCancel.Load())
	}
	if c := context.Cause(ctx); c != boom {
		t.Errorf("context.Cause = %v, want %v", c, boom)
	}

	// Without an error the context is cancelled by Wait, not before.
	g, ctx = GroupContext(context.Background(), p)
	g.Go(func() error {
		if ctx.Err() != nil {
			return fmt.Errorf("context cancelled before Wait returned: %v", ctx.Err())
		}
		return nil
	})
	if pv, err := groupWait(t, "GroupContext ok", g); err != nil || pv != nil {
		t.Errorf("Wait = %v (panic %v), want nil", err, pv)
	}
	if ctx.Err() == nil {
		t.Errorf("context not cancelled after Wait returned")
	}
	if c := context.Cause(ctx); c != context.Canceled {
		t.Errorf("context.Cause after a clean Wait = %v, want context.Canceled", c)
	}
	var nilCtx context.Context
	wantPanic(t, "GroupContext: ctx is nil", func() { GroupContext(nilCtx, p) })
}

func TestAlgo2GroupLimit(t *testing.T) {
	for _, w := range []int{1, 2, 4, 8} {
		for _, limit := range []int{1, 2, 3, 5} {
			name := fmt.Sprintf("w%d/limit%d", w, limit)
			p := newPool(t, Config{Workers: w})
			g := NewGroup(p)
			g.SetLimit(limit)
			var cur, peak, total atomic.Int64
			var body func(depth int) func() error
			body = func(depth int) func() error {
				return func() error {
					c := cur.Add(1)
					for {
						m := peak.Load()
						if c <= m || peak.CompareAndSwap(m, c) {
							break
						}
					}
					for range 20 {
						runtime.Gosched() // give the others a chance to overlap
					}
					if depth < 2 {
						g.Go(body(depth + 1)) // Go from inside a function
					}
					total.Add(1)
					cur.Add(-1)
					return nil
				}
			}
			for range 40 {
				g.Go(body(0))
			}
			if pv, err := groupWait(t, name, g); err != nil || pv != nil {
				t.Errorf("%s: Wait = %v (panic %v)", name, err, pv)
			}
			if total.Load() != 40*3 {
				t.Errorf("%s: %d functions ran, want %d", name, total.Load(), 40*3)
			}
			if pk := peak.Load(); pk > int64(limit) || pk < 1 {
				t.Errorf("%s: %d functions ran at once, limit %d", name, pk, limit)
			}
		}
	}
}

func TestAlgo2GroupPanicAndGoexit(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	g := NewGroup(p)
	var ran atomic.Int64
	for i := range 30 {
		g.Go(func() error {
			ran.Add(1)
			if i == 7 {
				panic("group boom")
			}
			return nil
		})
	}
	pv, _ := groupWait(t, "panic", g)
	pe, ok := pv.(*PanicError)
	if !ok || pe.Value != "group boom" {
		t.Fatalf("Wait panicked with %#v, want a *PanicError with value %q", pv, "group boom")
	}
	if !strings.Contains(string(pe.Stack), "algo2_group_test.go") {
		t.Errorf("the PanicError's stack does not show the panicking function:\n%s", pe.Stack)
	}
	if ran.Load() != 30 {
		t.Errorf("%d functions ran, want 30", ran.Load())
	}
	// The panic was delivered: the Group is usable again and the next Wait is clean.
	g.Go(func() error { return nil })
	if pv, err := groupWait(t, "after panic", g); err != nil || pv != nil {
		t.Errorf("Wait after a delivered panic = %v (panic %v), want nil", err, pv)
	}

	// Goexit on a worker: the function's defer signals before Wait is called, so it is
	// certainly not the Wait caller that runs it.
	g = NewGroup(p)
	exited := make(chan struct{})
	g.Go(func() error {
		defer close(exited)
		runtime.Goexit()
		return nil
	})
	runWithWatchdog(t, "Goexit runs", func() { <-exited })
	var after atomic.Int64
	for range 10 {
		g.Go(func() error { after.Add(1); return nil })
	}
	pv, _ = groupWait(t, "Goexit", g)
	if pe, ok := pv.(*PanicError); !ok || !errors.Is(pe, ErrGoexit) {
		t.Errorf("Wait panicked with %v, want a *PanicError wrapping ErrGoexit", pv)
	}
	if after.Load() != 10 {
		t.Errorf("%d functions ran after the Goexit, want 10", after.Load())
	}
	// The worker that exited was replaced, and Close (newPool's cleanup) returns.
	runWithWatchdog(t, "pool after Goexit", func() { nestedWork(p, 3) })

	// Goexit with a limit of 1: the runner that exits must hand the queue on.
	g = NewGroup(p)
	g.SetLimit(1)
	after.Store(0)
	exited = make(chan struct{})
	g.Go(func() error {
		defer close(exited)
		runtime.Goexit()
		return nil
	})
	for range 10 {
		g.Go(func() error { after.Add(1); return nil })
	}
	runWithWatchdog(t, "Goexit limit 1 runs", func() { <-exited })
	pv, _ = groupWait(t, "Goexit limit 1", g)
	if pe, ok := pv.(*PanicError); !ok || !errors.Is(pe, ErrGoexit) {
		t.Errorf("limit 1: Wait panicked with %v, want a *PanicError wrapping ErrGoexit", pv)
	}
	if after.Load() != 10 {
		t.Errorf("limit 1: %d functions ran after the Goexit, want 10", after.Load())
	}
}

func TestAlgo2GroupWaitEmptyReuseAndMisuse(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	var g Group
	if pv, err := groupWait(t, "empty", &g); err != nil || pv != nil {
		t.Errorf("Wait with no Go = %v (panic %v), want nil", err, pv)
	}
	gc, ctx := GroupContext(context.Background(), p)
	if pv, err := groupWait(t, "empty ctx", gc); err != nil || pv != nil || ctx.Err() == nil {
		t.Errorf("Wait with no Go = %v (panic %v, ctx.Err %v), want nil and a cancelled ctx", err, pv, ctx.Err())
	}

	// Go after Wait, reuse: every batch is waited for; the first error stays, as in
	// errgroup.
	g2 := NewGroup(p)
	errA := errors.New("a")
	for batch := range 5 {
		var n atomic.Int64
		for i := range 20 {
			g2.Go(func() error {
				n.Add(1)
				if batch == 2 && i == 3 {
					return errA
				}
				return nil
			})
		}
		pv, err := groupWait(t, fmt.Sprintf("batch %d", batch), g2)
		if n.Load() != 20 || pv != nil {
			t.Errorf("batch %d: %d functions ran (panic %v), want 20", batch, n.Load(), pv)
		}
		if want := error(nil); batch >= 2 && err != errA || batch < 2 && err != want {
			t.Errorf("batch %d: Wait = %v", batch, err)
		}
	}

	wantPanic(t, "Group.Go: f is nil", func() { g2.Go(nil) })
	wantPanic(t, "Group.TryGo: f is nil", func() { g2.TryGo(nil) })
	wantPanic(t, "limit 0", func() { g2.SetLimit(0) })
	release := make(chan struct{})
	g2.Go(func() error { <-release; return nil })
	wantPanic(t, "pending", func() { g2.SetLimit(3) })
	close(release)
	groupWait(t, "release", g2)

	// TryGo refuses beyond the limit and accepts again once the Group drained.
	g3 := NewGroup(p)
	g3.SetLimit(2)
	block := make(chan struct{})
	for i := range 2 {
		if !g3.TryGo(func() error { <-block; return nil }) {
			t.Errorf("TryGo refused function %d below the limit", i)
		}
	}
	if g3.TryGo(func() error { return nil }) {
		t.Errorf("TryGo accepted a third function with a limit of 2")
	}
	close(block)
	groupWait(t, "TryGo", g3)
	if !g3.TryGo(func() error { return nil }) {
		t.Errorf("TryGo refused on an idle Group")
	}
	groupWait(t, "TryGo 2", g3)

	// A closed pool refuses new functions with ErrClosed.
	q, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	msg := mustPanic(t, func() { NewGroup(q).Go(func() error { return nil }) })
	if !strings.Contains(msg, ErrClosed.Error()) {
		t.Errorf("Go on a closed pool panicked with %q, want ErrClosed", msg)
	}
}

// TestAlgo2GroupWaitInsideWorkers nests Groups: every function of an outer Group waits for
// an inner Group of its own, on a pool with fewer workers than Waits. A Wait that waited
// for runner jobs the pool has not started would deadlock here.
func TestAlgo2GroupWaitInsideWorkers(t *testing.T) {
	for _, w := range []int{1, 2, 3} {
		for _, limit := range []int{-1, 1, 2} {
			name := fmt.Sprintf("w%d/limit%d", w, limit)
			p := newPool(t, Config{Workers: w})
			runWithWatchdog(t, name, func() {
				outer := NewGroup(p)
				outer.SetLimit(limit)
				var total atomic.Int64
				for range 8 {
					outer.Go(func() error {
						inner := NewGroup(p)
						inner.SetLimit(limit)
						for range 8 {
							inner.Go(func() error {
								total.Add(int64(nestedWork(p, 1)))
								return nil
							})
						}
						return inner.Wait()
					})
				}
				if err := outer.Wait(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if total.Load() != 64 { // nestedWork(p, 1) == 1
					t.Errorf("%s: total %d, want 64", name, total.Load())
				}
			})
		}
	}
}

// TestAlgo2GroupConcurrentGoAndWait has many goroutines call Go and Wait on one Group at
// once, with randomized timing; every Wait returns, and Close returns after.
func TestAlgo2GroupConcurrentGoAndWait(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	g := NewGroup(p)
	g.SetLimit(4)
	var ran atomic.Int64
	var wg sync.WaitGroup
	runWithWatchdog(t, "concurrent", func() {
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					g.Go(func() error {
						for range (i * j) % 7 {
							runtime.Gosched()
						}
						ran.Add(1)
						return nil
					})
					if j%10 == i%10 {
						if err := g.Wait(); err != nil {
							t.Errorf("Wait = %v", err)
						}
					}
				}
			}()
		}
		wg.Wait()
		if err := g.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
	})
	if ran.Load() != 16*50 {
		t.Errorf("%d functions ran, want %d", ran.Load(), 16*50)
	}
	runWithWatchdog(t, "Close", p.Close)
}

// TestAlgo2GroupCloseWaits closes the pool while a Group has functions queued and
// running (some adding more with Go): Close must wait for all of them, which must all run.
func TestAlgo2GroupCloseWaits(t *testing.T) {
	for round := range 10 {
		p, err := NewPool(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		g := NewGroup(p)
		g.SetLimit(1 + round%3)
		var ran atomic.Int64
		for range 20 {
			g.Go(func() error {
				g.Go(func() error { ran.Add(1); return nil })
				ran.Add(int64(nestedWork(p, 1)))
				return nil
			})
		}
		runWithWatchdog(t, fmt.Sprintf("Close %d", round), p.Close)
		if ran.Load() != 40 {
			t.Fatalf("round %d: %d functions ran before Close returned, want 40", round, ran.Load())
		}
		if pv, err := groupWait(t, "Wait after Close", g); err != nil || pv != nil {
			t.Errorf("round %d: Wait after Close = %v (panic %v)", round, err, pv)
		}
	}
}
