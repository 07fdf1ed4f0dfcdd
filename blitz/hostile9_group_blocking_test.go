package blitz

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestHostile9GroupBlockingInsideCall: a Group waited for inside a pool job, with more
// blocking functions than workers. errgroup would run all of them at once (a goroutine
// each); Group runs them on the workers and on the goroutine in Wait, so at most
// Workers+1 block at the same time, as documented, and they all finish once unblocked.
// Meanwhile a Call from another goroutine still completes (its caller runs it).
func TestHostile9GroupBlockingInsideCall(t *testing.T) {
	const workers, n = 2, 8
	p := newPool(t, Config{Workers: workers})
	gate := make(chan struct{})
	var running, peak, done atomic.Int64
	var firstBlocked sync.Once
	blocked := make(chan struct{})
	callDone := make(chan error, 1)
	go func() {
		callDone <- p.TryCall(func(*Task) error {
			g := NewGroup(p)
			for range n {
				g.Go(func() error {
					r := running.Add(1)
					for {
						pk := peak.Load()
						if r <= pk || peak.CompareAndSwap(pk, r) {
							break
						}
					}
					firstBlocked.Do(func() { close(blocked) })
					<-gate
					running.Add(-1)
					done.Add(1)
					return nil
				})
			}
			return g.Wait()
		})
	}()
	runWithWatchdog(t, "first function", func() { <-blocked })
	runWithWatchdog(t, "Call while the Group blocks", func() {
		if got := Call(p, func(*Task) int { return 42 }); got != 42 {
			t.Errorf("Call = %d", got)
		}
	})
	close(gate)
	runWithWatchdog(t, "Group inside Call", func() {
		if err := <-callDone; err != nil {
			t.Errorf("TryCall = %v", err)
		}
	})
	if done.Load() != n {
		t.Errorf("%d functions finished, want %d", done.Load(), n)
	}
	if pk := peak.Load(); pk > workers+1 {
		t.Errorf("%d functions blocked at once on %d workers and one Wait", pk, workers)
	}
}
