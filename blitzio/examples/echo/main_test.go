//go:build linux || darwin || freebsd

package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEchoServerGracefulStop builds and starts the server on a free port, echoes over
// two connections, sends SIGTERM while one is still open, and checks that new
// connections are refused, the open one is still served, and the process exits 0 once
// it closes.
func TestEchoServerGracefulStop(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-grace", "20s")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	out := make(chan string, 16)
	go func() {
		for lines.Scan() {
			out <- lines.Text()
		}
		close(out)
	}()
	next := func() string {
		select {
		case l := <-out:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("watchdog: the server printed nothing for 30s")
			return ""
		}
	}
	first := next()
	_, rest, ok := strings.Cut(first, "listening on ")
	if !ok {
		t.Fatalf("first line %q does not say where it listens", first)
	}
	addr, _, _ := strings.Cut(rest, " ")

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
