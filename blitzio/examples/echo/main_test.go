//go:build linux || darwin || freebsd

package main

import (
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// TestEchoServerGracefulStop builds and starts the server on a free port, echoes over
// two connections, sends SIGTERM while one is still open, and checks that new
// connections are refused, the open one is still served, and the process exits 0 once
// it closes.
func TestEchoServerGracefulStop(t *testing.T) {
	prog := runex.Start(t, "-addr", "127.0.0.1:0", "-grace", "20s")
	cmd, next, addr := prog.Cmd, prog.Next, prog.Addr

	echo := func(c net.Conn, msg string) {
		t.Helper()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo of %q: %q, %v", msg, buf, err)
		}
	}
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	echo(a, "hello")
	echo(b, "world")
	b.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.Contains(l, "stopping") {
		t.Fatalf("after SIGTERM the server printed %q", l)
	}
	// The listener is closed: a new connection is refused (or reset at once).
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		_, rerr := c.Read(make([]byte, 1))
		c.Close()
		if rerr != nil && !isTimeout(rerr) {
			break // accepted by the kernel's backlog, then closed: refused in effect
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections 20s after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	echo(a, "still served") // the connection in flight is not cut
	a.Close()
	if l := next(); l != "echo: stopped cleanly" {
		t.Fatalf("last line %q", l)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the server exited with %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: the server did not exit")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
