//go:build linux || darwin || freebsd

package httpserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile9WatchWithTimeouts: the watch works with IdleTimeout, ReadHeaderTimeout
// and WriteTimeout set (the goroutine then reads no request ahead of the task).
func TestHostile9WatchWithTimeouts(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	got := make(chan error, 1)
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: h9WaitCtx(got), ErrorLog: discardLog(),
			IdleTimeout: time.Minute, ReadHeaderTimeout: time.Minute, WriteTimeout: time.Minute})
		for _, raw := range []string{
			"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
			"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		} {
			c := dialRaw(t, ts.addr)
			io.WriteString(c, raw)
			time.Sleep(20 * time.Millisecond)
			c.Close()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("%q: context error %v, want context.Canceled", raw, err)
			}
		}
	})
}

// TestHostile9WatchUnix: the watch over a Unix-domain connection.
func TestHostile9WatchUnix(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := blitzio.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	srv := &Server{Handler: h9WaitCtx(got), ErrorLog: discardLog()}
	served := make(chan error, 1)
	go func() { served <- srv.ServeUnix(rt, l) }()
	defer func() {
		srv.Close()
		<-served
	}()
	for i := 0; i < 5; i++ {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if i%2 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: context error %v, want context.Canceled", i, err)
		}
	}
}

// TestHostile9ConnStateCloses: a ConnState hook that calls Server.Close (from the
// runtime's worker, for StateActive) neither deadlocks nor panics; Serve returns.
func TestHostile9ConnStateCloses(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var srv *Server
	srv = &Server{ErrorLog: discardLog(), Handler: hello(), ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateActive {
			srv.Close()
		}
	}}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	io.Copy(io.Discard, c)
	select {
	case err := <-ts.served:
		ts.served <- err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close from ConnState")
	}
}

// TestHostile9ServeOnClosedRuntime: Serve with a runtime already closed returns an
// error instead of hanging, and closes the listener.
func TestHostile9ServeOnClosedRuntime(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	done := make(chan error, 1)
	srv := &Server{Handler: hello()}
	go func() { done <- srv.Serve(rt, l) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Serve on a closed runtime returned nil")
		}
	case <-time.After(10 * time.Second):
		srv.Close()
		t.Fatal("Serve on a closed runtime hangs")
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener is still open")
	}
}

// TestHostile9BodyClosedUnreadThenClientCloses: a handler that closes its request
// body without reading it, then waits on its context. net/http's Body.Close reads
// the rest of a small body, which starts its background read: the client's close
// cancels the context.
func TestHostile9BodyClosedUnreadThenClientCloses(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	got := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body.Close()
		select {
		case <-r.Context().Done():
			got <- r.Context().Err()
		case <-time.After(10 * time.Second):
			got <- nil
		}
	})
	h9Servers(t, h, func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		time.Sleep(20 * time.Millisecond)
		c.Close()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("context error %v, want context.Canceled", err)
		}
	})
}

// TestHostile9EndAtEachPoint: a handler that panics or calls runtime.Goexit at each
// point of its work (first thing, after WriteHeader, after a small Write, after a
// Flush, in the middle of reading its body) sends the same bytes as under net/http,
// and the pipelined request after it is not served.
func TestHostile9EndAtEachPoint(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			io.WriteString(w, "2")
			return
		}
		how, at, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		end := func() {
			if how == "panic" {
				panic(http.ErrAbortHandler) // logged by neither server
			}
			runtime.Goexit()
		}
		switch at {
		case "start":
			end()
		case "header":
			w.Header().Set("X-A", "1")
			w.WriteHeader(202)
			end()
		case "write":
			io.WriteString(w, "abc")
			end()
		case "flush":
			io.WriteString(w, "abc")
			w.(http.Flusher).Flush()
			end()
		case "body":
			io.ReadFull(r.Body, make([]byte, 2))
			end()
		}
	})
	for _, how := range []string{"panic", "goexit"} {
		for _, at := range []string{"start", "header", "write", "flush"} {
			h8Same(t, h, "GET /"+how+"/"+at+" HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		h8Same(t, h, "POST /"+how+"/body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")
	}
}
