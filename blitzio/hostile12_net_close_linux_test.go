package blitzio

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestHostile12NetCloseWaitsForSyscall: a Close that comes while another worker is
// inside a system call on the socket returns only once the descriptor is closed, as
// package net's Close does, so the address is free when it returns. (It returned at
// once, and the descriptor was closed when that call ended: a program binding the
// address again right after Close could get EADDRINUSE, as
// TestHostile11NetAddressFreeAfterClose did on a loaded machine.) The operation is
// simulated by holding the socket's reference as pollIO does around its system call.
func TestHostile12NetCloseWaitsForSyscall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		name := fmt.Sprintf("@h12-closewait-%d-%d", os.Getpid(), time.Now().UnixNano())
		l, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		h := Spawn(rt, l.Accept())
		waitFor(t, "the accept to wait", func() bool { s := l.fd.sio.Load(); return s != nil && s.waiters(dirRead) > 0 })
		s := l.fd.sio.Load()
		if !s.incref() { // an operation "inside a system call" on the socket
			t.Fatal("incref failed on an open socket")
		}
		closed := make(chan error, 1)
		go func() { closed <- l.Close() }()
		select {
		case err := <-closed:
			s.decref()
			t.Fatalf("Close returned (%v) while an operation held the socket open", err)
		case <-time.After(100 * time.Millisecond):
		}
		s.decref() // the system call returns
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return after the operation let the socket go")
		}
		waitHandle(t, h)
		if cfg.Backend == BackendIOUring {
			return // the kernel's poll may hold the address a moment longer (documented)
		}
		l2, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatalf("ListenUnix on the name right after Close returned: %v", err)
		}
		l2.Close()
	})
}
