//go:build linux || darwin || freebsd

package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/blitzgo/blitz/benchmarks/netload"
)

// TestHostile9AdapterEchoServes: the AdapterEcho row's server (netload.ServeEcho over
// blitzio's net.Listener adapter) echoes every byte to the same client as the baseline,
// and its stop closes the connections still open and returns.
func TestHostile9AdapterEchoServes(t *testing.T) {
	addr, stop, err := startAdapterEcho("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	c, err := netload.DialEcho(context.Background(), addr, netload.EchoConfig{Conns: 8, Size: 5000, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Run(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 8*20 || r.Bytes != 8*20*5000 {
		t.Fatalf("result %+v, want 160 round trips of 5000 bytes", r)
	}
	done := make(chan error, 1)
	go func() { done <- stop() }() // the client's 8 connections are still open
	stopped = true
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not return within 30s with connections open")
	}
	if _, err := c.Run(context.Background(), 1); err == nil {
		t.Fatal("a round trip succeeded after the server stopped")
	}
}
