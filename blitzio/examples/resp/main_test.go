//go:build linux || darwin || freebsd

package main

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// TestRESPServer builds and starts the server on a free port and talks RESP to it:
// every command, pipelining, an inline command, a protocol error, an expiry, redis-cli
// when it is installed, and a clean stop on SIGTERM.
func TestRESPServer(t *testing.T) {
	prog := runex.Start(t, "-addr", "127.0.0.1:0")
	cmd, next, addr := prog.Cmd, prog.Next, prog.Addr

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(c)
	send := func(args ...string) {
		fmt.Fprintf(c, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(c, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	reply := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a reply: %v", err)
		}
		if strings.HasPrefix(l, "$") && l != "$-1\r\n" {
			body, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return l + body
		}
		return l
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"ECHO", "hi there"}, "$8\r\nhi there\r\n"},
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"INCR", "n"}, ":1\r\n"},
		{[]string{"INCR", "n"}, ":2\r\n"},
		{[]string{"INCR", "k"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"DEL", "k", "missing"}, ":1\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"TTL", "n"}, ":-1\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"NOPE"}, "-ERR unknown command 'NOPE'\r\n"},
	} {
		send(tc.args...)
		if got := reply(); got != tc.want {
			t.Fatalf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	// Pipelining: three commands in one write, three replies in order.
	send("SET", "a", "1")
	send("INCR", "a")
	send("GET", "a")
	for _, want := range []string{"+OK\r\n", ":2\r\n", "$1\r\n2\r\n"} {
		if got := reply(); got != want {
			t.Fatalf("pipelined: %q, want %q", got, want)
		}
	}
	// An inline command, as telnet sends.
	fmt.Fprintf(c, "PING\r\n")
	if got := reply(); got != "+PONG\r\n" {
		t.Fatalf("inline PING: %q", got)
	}
	// EXPIRE: the key goes away (the test waits for it, up to a watchdog; it does not
	// time it).
	send("SET", "e", "x")
	reply()
	send("EXPIRE", "e", "1")
	if got := reply(); got != ":1\r\n" {
		t.Fatalf("EXPIRE: %q", got)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		send("GET", "e")
		if reply() == "$-1\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key did not expire within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// redis-cli, when installed, talks to it too.
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(cli, "-h", host, "-p", port, "ECHO", "from redis-cli").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "from redis-cli" {
			t.Fatalf("redis-cli: %q, %v", out, err)
		}
	} else {
		t.Log("redis-cli not installed: that check is skipped")
	}
	// A malformed request gets an error and the connection is closed.
	fmt.Fprintf(c, "*2\r\n$x\r\n")
	if got := reply(); got != "-ERR protocol error\r\n" {
		t.Fatalf("malformed request: %q", got)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection stayed open after a protocol error")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "resp: stopped" {
		t.Fatalf("after SIGTERM: %q", l)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: the server did not exit")
	}
}
