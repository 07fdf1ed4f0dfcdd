//go:build linux || darwin || freebsd

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// replyTimeout bounds every read of a reply: a server that never answers fails the test
// with a message instead of hanging it.
const replyTimeout = 20 * time.Second

// backends are the I/O drivers the tests that touch reading and writing run on: the
// default (io_uring where the kernel allows it) and epoll, forced by BLITZIO_IOURING.
var backends = []struct{ name, env string }{{"default", ""}, {"epoll", "off"}}

// startRESP builds and starts the server on a free port, on the backend that env
// selects ("" for the default).
func startRESP(t *testing.T, env string) *runex.Program {
	t.Helper()
	if env != "" {
		t.Setenv("BLITZIO_IOURING", env)
	}
	return runex.Start(t, "-addr", "127.0.0.1:0")
}

// respConn is a client connection that sends commands and reads whole replies.
type respConn struct {
	t *testing.T
	c *net.TCPConn
	r *bufio.Reader
}

func dialRESP(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{t: t, c: c.(*net.TCPConn), r: bufio.NewReader(c)}
}

// command encodes args as a RESP array of bulk strings.
func command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (rc *respConn) raw(s string) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(replyTimeout))
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("writing %q: %v (did the server die?)", trunc(s), err)
	}
}

func (rc *respConn) send(args ...string) { rc.t.Helper(); rc.raw(command(args...)) }

// do sends one command and returns its reply.
func (rc *respConn) do(args ...string) string {
	rc.t.Helper()
	rc.send(args...)
	return rc.reply()
}

// reply reads one whole reply (an array with its elements) in its wire form.
func (rc *respConn) reply() string {
	rc.t.Helper()
	s, err := rc.tryReply()
	if err != nil {
		rc.t.Fatalf("reading a reply: %v", err)
	}
	return s
}

func (rc *respConn) tryReply() (string, error) {
	rc.c.SetReadDeadline(time.Now().Add(replyTimeout))
	return readReply(rc.r)
}

func readReply(r *bufio.Reader) (string, error) {
	l, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("the server closed the connection (after %q)", l)
		}
		return l, err
	}
	if len(l) < 3 || !strings.HasSuffix(l, "\r\n") {
		return l, fmt.Errorf("malformed reply line %q", l)
	}
	switch l[0] {
	case '+', '-', ':':
		return l, nil
	case '$':
		n, err := strconv.Atoi(l[1 : len(l)-2])
		if err != nil || n < 0 {
			return l, err
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return l, err
		}
		return l + string(body), nil
	case '*':
		n, err := strconv.Atoi(l[1 : len(l)-2])
		if err != nil {
			return l, err
		}
		s := l
		for range n {
			e, err := readReply(r)
			s += e
			if err != nil {
				return s, err
			}
		}
		return s, nil
	}
	return l, fmt.Errorf("reply of unknown type %q", l)
}

// expectClosed checks that the server closes the connection (after any replies).
func (rc *respConn) expectClosed() {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(replyTimeout))
	b, err := io.ReadAll(rc.r)
	if err != nil && !isReset(err) {
		rc.t.Fatalf("waiting for the server to close: %v (read %q)", err, b)
	}
	if len(b) > 0 {
		rc.t.Fatalf("the server sent %q where it should have closed the connection", trunc(string(b)))
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
