package tsync

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A context derived from CancelToken.Context (context.WithCancel, WithTimeout,
// AfterFunc) cost a goroutine for as long as it lived: the context package watches a
// parent it does not know with a goroutine, unless the parent has an
// AfterFunc(func()) func() bool method. The token's context now has one.

// goroutinesGrowth runs derive (which creates n derived contexts, keeping them live)
// and returns how many goroutines that left running, the least over a few tries so that
// goroutines of the runtime or of other tests coming and going do not decide it.
func goroutinesGrowth(t *testing.T, tries int, derive func() (undo func())) int {
	t.Helper()
	best := -1
	for range tries {
		runtime.GC()
		before := runtime.NumGoroutine()
		undo := derive()
		grew := runtime.NumGoroutine() - before
		undo()
		if best < 0 || grew < best {
			best = grew
		}
		if best < 50 {
			break
		}
	}
	return best
}

// TestHostile9FollowupTokenContextNoGoroutine: deriving 1000 contexts, and registering
// 1000 AfterFuncs, from a token's context leaves no goroutine per context.
func TestHostile9FollowupTokenContextNoGoroutine(t *testing.T) {
	const n = 1000
	tok := NewCancelToken()
	parent := tok.Child() // a derived token's context works the same way
	ctx := parent.Context()
	if _, ok := ctx.(interface{ AfterFunc(func()) func() bool }); !ok {
		t.Fatal("the token's context has no AfterFunc method")
	}
	grew := goroutinesGrowth(t, 5, func() func() {
		cancels := make([]context.CancelFunc, 0, 2*n)
		for range n {
			_, c := context.WithTimeout(ctx, time.Hour)
			cancels = append(cancels, c)
			_, c = context.WithCancel(ctx)
			cancels = append(cancels, c)
		}
		return func() {
			for _, c := range cancels {
				c()
			}
		}
	})
	if grew >= 50 {
		t.Fatalf("deriving %d contexts from a token's context started %d goroutines", 2*n, grew)
	}
	grew = goroutinesGrowth(t, 5, func() func() {
		stops := make([]func() bool, 0, n)
		for range n {
			stops = append(stops, context.AfterFunc(ctx, func() {}))
		}
		return func() {
			for _, s := range stops {
				s()
			}
		}
	})
	if grew >= 50 {
		t.Fatalf("%d AfterFuncs on a token's context started %d goroutines", n, grew)
	}
	// Every registration was removed again by its cancel or stop: none is left on
	// the token.
	if k := tokenAfterFuncs(parent); k != 0 {
		t.Fatalf("%d registrations left on the token after every derived context was cancelled", k)
	}
}

// tokenAfterFuncs counts t's AfterFunc registrations.
func tokenAfterFuncs(t *CancelToken) int {
	mu := t.lock()
	defer mu.Unlock()
	k := 0
	for a := t.afterFuncs; a != nil; a = a.next {
		k++
	}
	return k
}

// TestHostile9FollowupTokenContextCancel: cancelling the token (or an ancestor) ends
// every derived context with context.Canceled and runs every AfterFunc not stopped,
// once; a stopped one never runs.
func TestHostile9FollowupTokenContextCancel(t *testing.T) {
	root := NewCancelToken()
	tok := root.Child()
	ctx := tok.Context()
	const n = 100
	var ran atomic.Int64
	derived := make([]context.Context, 0, n)
	for range n {
		d, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		derived = append(derived, d)
	}
	fired := make(chan struct{}, n)
	for range n {
		context.AfterFunc(ctx, func() { ran.Add(1); fired <- struct{}{} })
	}
	stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Fatal("stop before the cancellation reported false")
	}
	// The method itself, as the context package calls it.
	af := ctx.(interface{ AfterFunc(func()) func() bool })
	direct := make(chan struct{})
	stopDirect := af.AfterFunc(func() { close(direct) })

	root.Cancel()

	deadline := time.After(10 * time.Second)
	for i, d := range derived {
		select {
		case <-d.Done():
		case <-deadline:
			t.Fatalf("derived context %d not done 10s after the token's ancestor was cancelled", i)
		}
		if !errors.Is(d.Err(), context.Canceled) || !errors.Is(context.Cause(d), context.Canceled) {
			t.Fatalf("derived context %d: Err %v, Cause %v", i, d.Err(), context.Cause(d))
		}
	}
	for i := range n {
		select {
		case <-fired:
		case <-deadline:
			t.Fatalf("%d of %d AfterFuncs ran within 10s of the cancellation", i, n)
		}
	}
	select {
	case <-direct:
	case <-deadline:
		t.Fatal("AfterFunc method's function not run within 10s of the cancellation")
	}
	if stopDirect() {
		t.Fatal("stop after the function ran reported true")
	}
	if got := ran.Load(); got != n {
		t.Fatalf("%d AfterFuncs ran, want %d", got, n)
	}
	if k := tokenAfterFuncs(tok); k != 0 {
		t.Fatalf("%d registrations left on a cancelled token", k)
	}
}

// TestHostile9FollowupTokenContextAlreadyCancelled: on a cancelled token, a derived
// context is done at once and AfterFunc's function runs (on a goroutine of its own: the
// context package may hold a lock of its own while it registers).
func TestHostile9FollowupTokenContextAlreadyCancelled(t *testing.T) {
	tok := NewCancelToken()
	ctx := tok.Context()
	tok.Cancel()
	d, cancel := context.WithCancel(ctx)
	defer cancel()
	if !errors.Is(d.Err(), context.Canceled) {
		t.Fatalf("context derived from a cancelled token: Err %v", d.Err())
	}
	ran := make(chan struct{})
	stop := ctx.(interface{ AfterFunc(func()) func() bool }).AfterFunc(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc on a cancelled token did not run its function within 10s")
	}
	if stop() {
		t.Fatal("stop of a function that ran reported true")
	}
	if k := tokenAfterFuncs(tok); k != 0 {
		t.Fatalf("%d registrations kept by a cancelled token", k)
	}
}
