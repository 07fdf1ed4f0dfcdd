package blitz

import (
	"sync/atomic"
	"testing"
)

// TestHostile9GroupSetLimitDifferences pins the documented differences from errgroup's
// SetLimit: errgroup accepts SetLimit(-1) while goroutines are active and SetLimit(n)
// after Go calls made without a limit; Group panics in both cases (a limit changed under
// queued functions would be neither the old nor the new one). SetLimit(0) panics where
// errgroup's Go would block forever.
func TestHostile9GroupSetLimitDifferences(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	g := NewGroup(p)
	release := make(chan struct{})
	g.Go(func() error { <-release; return nil })
	wantPanic(t, "pending", func() { g.SetLimit(-1) })
	wantPanic(t, "pending", func() { g.SetLimit(4) })
	close(release)
	if pv, err := groupWait(t, "Wait", g); pv != nil || err != nil {
		t.Fatalf("Wait = %v, panic %v", err, pv)
	}
	g.SetLimit(1) // idle again: allowed
	g.SetLimit(-1)
	wantPanic(t, "limit 0", func() { g.SetLimit(0) })
}

// TestHostile9GroupGoFromFunctionAtLimit: with errgroup, a function that calls Go on its own
// Group while the limit is reached blocks forever (its own slot is never freed). Group's
// Go queues the function instead, and everything runs within the limit.
func TestHostile9GroupGoFromFunctionAtLimit(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, limit := range []int{1, 2} {
		g := NewGroup(p)
		g.SetLimit(limit)
		var running, peak, ran atomic.Int64
		var spawn func(depth int) func() error
		spawn = func(depth int) func() error {
			return func() error {
				r := running.Add(1)
				defer running.Add(-1)
				for {
					pk := peak.Load()
					if r <= pk || peak.CompareAndSwap(pk, r) {
						break
					}
				}
				ran.Add(1)
				if depth < 6 {
					g.Go(spawn(depth + 1))
					g.Go(spawn(depth + 1))
				}
				return nil
			}
		}
		for range limit {
			g.Go(spawn(0))
		}
		if pv, err := groupWait(t, "Wait", g); pv != nil || err != nil {
			t.Fatalf("limit %d: Wait = %v, panic %v", limit, err, pv)
		}
		if want := int64(limit * (1<<7 - 1)); ran.Load() != want {
			t.Errorf("limit %d: %d functions ran, want %d", limit, ran.Load(), want)
		}
		if pk := peak.Load(); pk > int64(limit) {
			t.Errorf("limit %d: %d functions ran at once", limit, pk)
		}
	}
}
