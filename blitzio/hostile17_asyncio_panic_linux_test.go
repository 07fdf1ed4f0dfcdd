//go:build linux

package blitzio

import (
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// h17CloseReturns closes c on another goroutine and fails the test if Close does not
// return (a hang here is a reference the socket never gets back).
func h17CloseReturns(t *testing.T, what string, close func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: Close: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Close did not return: the socket's reference was never released", what)
	}
}

// TestHostile17AsyncIOPanic: an AsyncIO function is user code, and one that panics or
// calls runtime.Goexit ends its task as any task's code does (a *PanicError, ErrGoexit)
// with the worker replaced; the socket stays usable and its Close returns. Before, the
// reference the runtime takes around the call (so that Close does not close the
// descriptor under it) was dropped only when the function returned: after a panic or a
// Goexit it was never released, and Close waited for it forever. The same holds for a
// RawConn Read whose function panics on a plain goroutine.
func TestHostile17AsyncIOPanic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)

		// A panic in a task.
		c, s := connPair(t, rt)
		h := Spawn(rt, s.AsyncIO(InterestWrite, func(uintptr) error { panic("h17 asyncio") }))
		_, err := waitHandle(t, h)
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "h17 asyncio" {
			t.Fatalf("AsyncIO whose function panics: %v, want a *PanicError", err)
		}
		// The socket still works, and closes.
		if r := blockOn(t, rt, c.Write([]byte("x"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r := blockOn(t, rt, s.Read(make([]byte, 4))); r.Err != nil || r.Value != 1 {
			t.Fatalf("read after the panic: %d %v", r.Value, r.Err)
		}
		h17CloseReturns(t, "after a panicking AsyncIO", s.Close)

		// runtime.Goexit in a task.
		c, s = connPair(t, rt)
		h = Spawn(rt, s.AsyncIO(InterestWrite, func(uintptr) error { runtime.Goexit(); return nil }))
		if _, err := waitHandle(t, h); !errors.Is(err, ErrGoexit) {
			t.Fatalf("AsyncIO whose function exits: %v, want ErrGoexit", err)
		}
		// The runtime still serves tasks on both workers.
		for i := 0; i < 4; i++ {
			if r := blockOn(t, rt, c.Write([]byte("y"))); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		h17CloseReturns(t, "after an exiting AsyncIO", s.Close)

		// RawConn.Read on a registered socket from a plain goroutine.
		c, s = connPair(t, rt)
		if r := blockOn(t, rt, c.Write([]byte("z"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		rc, _ := s.SyscallConn()
		var recovered atomic.Value
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { recovered.Store(recover()) }()
			rc.Read(func(uintptr) bool { panic("h17 raw") })
		}()
		<-done
		if recovered.Load() != "h17 raw" {
			t.Fatalf("RawConn.Read's panic: recovered %v", recovered.Load())
		}
		h17CloseReturns(t, "after a panicking RawConn.Read", s.Close)
		if r := blockOn(t, rt, s.Read(make([]byte, 1))); !errors.Is(r.Err, net.ErrClosed) {
			t.Fatalf("read after Close: %v", r.Err)
		}
	})
}
