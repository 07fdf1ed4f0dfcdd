//go:build linux

package blitzio

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestHostile17DialDroppedDuringResolution: a dial dropped while its name is being
// resolved (its task aborted, a Timeout or Select around it, the runtime's shutdown)
// cancels the lookup, as net.Dialer's does when its context ends. Before, the lookup
// ran on the blocking pool with the caller's context (here context.Background) and
// nothing stopped it: each dropped dial held a blocking-pool goroutine until its DNS
// queries timed out (seconds per server and attempt), and Runtime.Close, which waits
// for the blocking jobs already running, waited for it too. The resolver here waits on
// its DNS connection until it is cancelled: a cancellation is context.Canceled, where
// the resolver's own per-query timeout would be context.DeadlineExceeded.
func TestHostile17DialDroppedDuringResolution(t *testing.T) {
	netWatchdog(t, 90*time.Second)
	rt := newRT(t, Config{})
	sr := newStallingResolver()
	d := &Dialer{Resolver: sr.Resolver}
	h := Spawn(rt, d.Dial("tcp", "blitzio-test.invalid:80"))
	waitAskedFor(t, sr, h)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted dial: %v", err)
	}
	sr.waitCancelled(t, "the dropped dial")
}

// stallingResolver is a Resolver whose DNS connection waits until the lookup's context
// ends: a lookup through it ends only when cancelled (context.Canceled), or by the
// resolver's own per-query timeout (context.DeadlineExceeded).
type stallingResolver struct {
	*net.Resolver
	asked chan struct{}
	ended chan error
}

func newStallingResolver() *stallingResolver {
	sr := &stallingResolver{asked: make(chan struct{}, 16), ended: make(chan error, 16)}
	sr.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		sr.asked <- struct{}{}
		<-ctx.Done()
		sr.ended <- ctx.Err()
		return nil, ctx.Err()
	}}
	return sr
}

// waitAskedFor waits until the resolver is asked for the lookup of h's dial; it skips the
// test if the dial ends first (this system's name service switch does not ask DNS).
func waitAskedFor[T any](t *testing.T, sr *stallingResolver, h JoinHandle[T]) {
	t.Helper()
	done := make(chan struct{})
	go func() { h.Wait(); close(done) }()
	select {
	case <-sr.asked:
	case <-done:
		t.Skip("this system's name service switch does not ask DNS")
	case <-time.After(20 * time.Second):
		t.Fatal("the resolver was never asked")
	}
}

// waitCancelled checks that the next lookup to end was cancelled, not timed out.
func (sr *stallingResolver) waitCancelled(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-sr.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the lookup of %s ended with %v: it ran on to its own timeout, want it cancelled", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the lookup of %s was never cancelled", what)
	}
}

// drain forgets what earlier lookups left in the channels.
func (sr *stallingResolver) drain() {
	for len(sr.ended) > 0 || len(sr.asked) > 0 {
		select {
		case <-sr.ended:
		case <-sr.asked:
		}
	}
}
