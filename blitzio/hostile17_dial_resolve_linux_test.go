//go:build linux

package blitzio

import (
	"context"
	"errors"
	"net"
	"sync"
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
	asked := make(chan struct{})
	ended := make(chan error, 16)
	var once sync.Once
	d := &Dialer{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		once.Do(func() { close(asked) })
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}}}
	h := Spawn(rt, d.Dial("tcp", "blitzio-test.invalid:80"))
	done := make(chan struct{})
	go func() { h.Wait(); close(done) }()
	select {
	case <-asked:
	case <-done:
		t.Skip("this system's name service switch does not ask DNS")
	case <-time.After(20 * time.Second):
		t.Fatal("the resolver was never asked")
	}
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted dial: %v", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the lookup of a dropped dial ended with %v: it ran on to its own timeout, want it cancelled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the lookup of a dropped dial was never cancelled")
	}
}
