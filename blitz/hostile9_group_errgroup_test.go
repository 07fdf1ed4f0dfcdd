package blitz

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The tests of this file run the scenarios of golang.org/x/sync/errgroup's documented
// behaviour through Group (blitz does not depend on x/sync, so errgroup's side is written
// down in the comments rather than run). x/sync v0.19 to v0.23: Wait returns the first
// error, WithContext's context is cancelled with that error as its cause before the
// failing goroutine is counted as done, a panic in a function crashes the program,
// runtime.Goexit in a function ends that function's goroutine only.

// TestHostile9GroupPanicCauseSetBeforeWaitReturns: GroupContext documents that its context
// is cancelled with the *PanicError as its cause when a function panics (errgroup cancels
// with the error before the goroutine is counted as done, so Wait never returns before
// the cause is set). Group counted the function as finished, woke Wait, and only then
// cancelled with the cause: a Wait woken in between cancelled with nil first, and
// context.Cause was context.Canceled instead of the panic.
func TestHostile9GroupPanicCauseSetBeforeWaitReturns(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, kind := range []string{"panic", "goexit"} {
		rounds := 300
		if kind == "goexit" {
			rounds = 60 // every Goexit replaces a worker
		}
		for i := range rounds {
			g, ctx := GroupContext(context.Background(), p)
			started := make(chan struct{})
			release := make(chan struct{})
			g.Go(func() error {
				close(started)
				<-release
				if kind == "panic" {
					panic("boom")
				}
				runtime.Goexit()
				return nil
			})
			<-started // the function runs on a worker, not in Wait
			var pv any
			runWithWatchdog(t, "Wait", func() {
				defer func() { pv = recover() }()
				go close(release)
				g.Wait()
			})
			pe, ok := pv.(*PanicError)
			if !ok {
				t.Fatalf("%s round %d: Wait panicked with %#v, want a *PanicError", kind, i, pv)
			}
			if cause := context.Cause(ctx); cause != pe {
				t.Fatalf("%s round %d: context.Cause = %v after Wait re-raised %v; want the *PanicError", kind, i, cause, pe)
			}
		}
	}
}

// TestHostile9GroupErrorCauseAndCancelOnWait: the first error cancels the context with
// that error as cause while other functions still run; Wait returns it, and Wait cancels
// the context even without an error (errgroup does both).
func TestHostile9GroupErrorCauseAndCancelOnWait(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	errA := errors.New("a")
	g, ctx := GroupContext(context.Background(), p)
	sawCancel := make(chan error, 1)
	g.Go(func() error { // holds the only worker until the error cancels ctx
		select {
		case <-ctx.Done():
			sawCancel <- context.Cause(ctx)
		case <-watchdogAfter():
			sawCancel <- errors.New("the context was not cancelled by the first error")
		}
		return errors.New("late")
	})
	g.Go(func() error { return errA }) // run by Wait, or by the worker
	var err error
	runWithWatchdog(t, "Wait", func() { err = g.Wait() })
	if err != errA {
		t.Errorf("Wait = %v, want the first error %v", err, errA)
	}
	if c := <-sawCancel; c != errA {
		t.Errorf("a running function saw the cause %v, want %v", c, errA)
	}

	g, ctx = GroupContext(context.Background(), p)
	g.Go(func() error { return nil })
	if err := g.Wait(); err != nil || ctx.Err() == nil || context.Cause(ctx) != context.Canceled {
		t.Errorf("Wait = %v, ctx.Err = %v, cause %v: want nil and a context cancelled by Wait", err, ctx.Err(), context.Cause(ctx))
	}
	// Used again: the context stays cancelled, as errgroup's does.
	var seen error
	g.Go(func() error { seen = ctx.Err(); return nil })
	if err := g.Wait(); err != nil || seen == nil {
		t.Errorf("reused Group: Wait = %v, the function saw ctx.Err = %v; want nil and a cancelled context", err, seen)
	}
}

// TestHostile9GroupConcurrentWaitsAllSeePanic: with errgroup, every Wait in progress returns
// the same outcome (a panic even crashes the program, so no Wait reports success). Group
// re-raised a panic in one Wait only: a second Wait in progress at the same time returned
// nil, as if every function had succeeded.
func TestHostile9GroupConcurrentWaitsAllSeePanic(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for round := range 50 {
		g := NewGroup(p)
		started := make(chan struct{})
		release := make(chan struct{})
		g.Go(func() error {
			close(started)
			<-release
			panic("boom")
		})
		<-started
		const waiters = 3
		var entered sync.WaitGroup
		entered.Add(waiters)
		results := make([]any, waiters)
		errs := make([]error, waiters)
		runWithWatchdog(t, "Waits", func() {
			var done sync.WaitGroup
			for w := range waiters {
				done.Add(1)
				go func() {
					defer done.Done()
					defer func() { results[w] = recover() }()
					entered.Done()
					errs[w] = g.Wait()
				}()
			}
			entered.Wait()
			waitForWaiters(g, waiters)
			close(release)
			done.Wait()
		})
		for w := range waiters {
			if pe, ok := results[w].(*PanicError); !ok || pe.Value != "boom" {
				t.Fatalf("round %d: Wait %d of %d in progress together returned %v and panicked with %#v; want every one to re-raise the panic", round, w, waiters, errs[w], results[w])
			}
		}
		// Delivered to every Wait in progress: a later Wait is clean, as documented.
		if pv, err := groupWait(t, "after", g); pv != nil || err != nil {
			t.Fatalf("round %d: a Wait after the panic was delivered = %v, panic %v", round, err, pv)
		}
	}
}

// waitForWaiters waits until n goroutines are blocked in g.Wait.
func waitForWaiters(g *Group, n int) {
	for {
		g.mu.Lock()
		w := g.waiters
		g.mu.Unlock()
		if w >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestHostile9GroupConcurrentWaitsSameError: every Wait returns the first error, at once
// and later (errgroup keeps it).
func TestHostile9GroupConcurrentWaitsSameError(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	errA := errors.New("a")
	g := NewGroup(p)
	release := make(chan struct{})
	g.Go(func() error { <-release; return errA })
	g.Go(func() error { <-release; return nil })
	errs := make([]error, 4)
	runWithWatchdog(t, "Waits", func() {
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = g.Wait() }()
		}
		close(release)
		wg.Wait()
	})
	for i, err := range errs {
		if err != errA {
			t.Errorf("Wait %d = %v, want %v", i, err, errA)
		}
	}
	if err := g.Wait(); err != errA {
		t.Errorf("a later Wait = %v, want %v", err, errA)
	}
}

// TestHostile9GroupGoexitInFunctionRunByWait: Wait runs queued functions on its own
// goroutine, so a function that calls runtime.Goexit may end the goroutine that called
// Wait (errgroup's Goexit only ends the function's own goroutine). The other functions
// still run and the next Wait re-raises ErrGoexit: the exit is not lost with the waiter.
func TestHostile9GroupGoexitInFunctionRunByWait(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	hold := make(chan struct{})
	holding := make(chan struct{})
	p.Go(func(*Task) { close(holding); <-hold }) // the only worker is busy: Wait runs f
	<-holding
	g := NewGroup(p)
	var after atomic.Int64
	g.Go(func() error { runtime.Goexit(); return nil })
	for range 5 {
		g.Go(func() error { after.Add(1); return nil })
	}
	returned := false
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		g.Wait()
		returned = true
	}()
	runWithWatchdog(t, "Goexit in Wait", func() { <-exited })
	if returned {
		t.Fatalf("Wait returned although the function it ran called runtime.Goexit")
	}
	close(hold)
	pv, err := groupWait(t, "next Wait", g)
	if pe, ok := pv.(*PanicError); !ok || !errors.Is(pe, ErrGoexit) {
		t.Errorf("the next Wait = %v, panic %v; want a *PanicError wrapping ErrGoexit", err, pv)
	}
	if after.Load() != 5 {
		t.Errorf("%d functions ran after the Goexit, want 5", after.Load())
	}
}
