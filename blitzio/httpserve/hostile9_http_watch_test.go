//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// h9WaitCtx is a handler that waits for its request's context to be done (reading the
// body first, if any) and reports the context's error on got; after 10 s it gives up
// and reports nil. It answers with the error too.
func h9WaitCtx(got chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		var err error
		select {
		case <-r.Context().Done():
			err = r.Context().Err()
		case <-time.After(10 * time.Second):
		}
		got <- err
		fmt.Fprintf(w, "ctx: %v", err)
	}
}

// h9Servers runs f against net/http and httpserve (each backend) serving h.
func h9Servers(t *testing.T, h http.Handler, f func(t *testing.T, addr string)) {
	t.Run("net/http", func(t *testing.T) { f(t, h4StartNetHTTP(t, h)) })
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		f(t, start(t, b, &Server{Handler: h, ErrorLog: discardLog()}).addr)
	})
}

// TestHostile9ContextCancelledOnClose: a handler waiting on its request's context is
// released, with context.Canceled, when the client closes the connection: with no
// body, and after reading a body (Content-Length and chunked), as net/http's
// background read does.
func TestHostile9ContextCancelledOnClose(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	} {
		got := make(chan error, 1)
		h9Servers(t, h9WaitCtx(got), func(t *testing.T, addr string) {
			c := dialRaw(t, addr)
			io.WriteString(c, raw)
			time.Sleep(20 * time.Millisecond) // let the handler start (either order must work)
			c.Close()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Errorf("%q: the context's error after the client's close is %v, want context.Canceled", raw, err)
			}
		})
	}
}

// TestHostile9ContextCancelledOnCloseAtOnce: the client closes right after sending, so
// the end of stream may already be there when the request is dispatched.
func TestHostile9ContextCancelledOnCloseAtOnce(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	got := make(chan error, 1)
	h9Servers(t, h9WaitCtx(got), func(t *testing.T, addr string) {
		for i := 0; i < 20; i++ {
			c := dialRaw(t, addr)
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.Close()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: the context's error is %v, want context.Canceled", i, err)
			}
		}
	})
}

// TestHostile9HalfCloseStillAnswered: a client that half-closes after its request
// (CloseWrite) gets the response: net/http cancels the request's context (its
// background read sees the end of stream) and still writes what the handler answers.
func TestHostile9HalfCloseStillAnswered(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	for _, ignore := range []bool{false, true} {
		got := make(chan error, 1)
		var h http.Handler = h9WaitCtx(got)
		if ignore { // a handler that never looks at the context
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(20 * time.Millisecond)
				got <- nil
				io.WriteString(w, "plain")
			})
		}
		h9Servers(t, h, func(t *testing.T, addr string) {
			c := dialRaw(t, addr)
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.(*net.TCPConn).CloseWrite()
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response after a half-close: %v", err)
			}
			body := readBody(t, resp)
			err = <-got
			want := "plain"
			if !ignore {
				want = "ctx: context canceled"
				if !errors.Is(err, context.Canceled) {
					t.Errorf("context error %v, want context.Canceled", err)
				}
			}
			if body != want {
				t.Errorf("body %q, want %q", body, want)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the response: %v, want the connection closed", err)
			}
		})
	}
}

// TestHostile9PipelinedDuringHandler: requests that arrive while a handler runs are
// kept and answered after it, in order, without cancelling the running request's
// context; also when they are more than the read buffer holds.
func TestHostile9PipelinedDuringHandler(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	for _, n := range []int{3, 300} {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		ctxErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				entered <- struct{}{}
				<-release
				ctxErr <- r.Context().Err()
			}
			io.WriteString(w, r.URL.Path)
		})
		eachBackend(t, func(t *testing.T, b blitzio.Backend) {
			ts := start(t, b, &Server{Handler: h, ErrorLog: discardLog()})
			for round := 0; round < 3; round++ {
				c := ts.dial(t)
				io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
				<-entered
				var sb strings.Builder
				for i := 0; i < n; i++ {
					fmt.Fprintf(&sb, "GET /r%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				}
				wrote := make(chan error, 1)
				go func() { _, err := io.WriteString(c, sb.String()); wrote <- err }()
				if n <= 3 {
					if err := <-wrote; err != nil {
						t.Fatal(err)
					}
					time.Sleep(20 * time.Millisecond) // let the server see them during the handler
				}
				release <- struct{}{}
				if err := <-ctxErr; err != nil {
					t.Fatalf("pipelined bytes cancelled the running request's context: %v", err)
				}
				br := bufio.NewReader(c)
				for i := -1; i < n; i++ {
					want := "/slow"
					if i >= 0 {
						want = fmt.Sprintf("/r%d", i)
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("round %d: response %s: %v", round, want, err)
					}
					if got := readBody(t, resp); got != want {
						t.Fatalf("round %d: got %q, want %q", round, got, want)
					}
				}
				if n > 3 {
					if err := <-wrote; err != nil {
						t.Fatal(err)
					}
				}
				c.Close()
			}
		})
	}
}

// TestHostile9WatchNoGoroutineLeft: connections whose handlers wait on their context
// (released by the clients' close or by Close) leave no goroutine behind once the
// server is shut down and the runtime closed.
func TestHostile9WatchNoGoroutineLeft(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	base := goroutines()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 32)
	srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	var conns []net.Conn
	for i := 0; i < 16; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		conns = append(conns, c)
	}
	for range conns {
		<-entered
	}
	for _, c := range conns[:8] {
		c.Close() // released by the watch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close() // the rest released by Close
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after Close: %v", err)
	}
	<-served
	for _, c := range conns[8:] {
		c.Close()
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's goroutines to exit", func() bool { return goroutines() <= base })
}

// TestHostile9GuardHeldUntilFlushed: a pipelined request's Coordinator guard is held
// until its response is written, not only until its handler returns: while the second
// request of a batch runs, the first's response is still queued, so two are in flight.
func TestHostile9GuardHeldUntilFlushed(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	co := blitzio.NewShutdown()
	entered, release := make(chan struct{}), make(chan struct{})
	ts := start(t, blitzio.BackendEpoll, &Server{Coordinator: co, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, r.URL.Path)
	})})
	c := ts.dial(t)
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	// The first response waits for the batch (pipelined responses leave in one write):
	// it has not been written, so its request is still in flight.
	if n := co.InFlight(); n != 2 {
		close(release)
		t.Fatalf("InFlight %d while a response is queued and a handler runs, want 2", n)
	}
	close(release)
	br := bufio.NewReader(c)
	for _, want := range []string{"/fast", "/slow"} {
		if got := readBody(t, roundTrip(t, c, br, "", "GET")); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	waitFor(t, "the guards to be released", func() bool { return co.InFlight() == 0 })
}

// TestHostile9GuardHeldWhileResponseBlocked: a request's guard is held while its
// response, queued when the handler returned, waits for a client that does not read:
// the socket buffers are made small, so the response cannot be written until the
// client reads.
func TestHostile9GuardHeldWhileResponseBlocked(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	co := blitzio.NewShutdown()
	returned := make(chan struct{})
	body := strings.Repeat("r", 31<<10) // queued: under the 32 KB written from the handler
	ts := start(t, blitzio.BackendEpoll, &Server{Coordinator: co,
		ConnState: func(nc net.Conn, st http.ConnState) {
			if st == http.StateNew {
				if s, ok := nc.(*stream.Conn).Stream().(*blitzio.TCPStream); ok {
					s.SetWriteBuffer(4096)
				}
			}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(returned)
			io.WriteString(w, body)
		})})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-returned
	time.Sleep(50 * time.Millisecond) // room for a wrong early release (not a timing assertion)
	if n := co.InFlight(); n != 1 {
		t.Fatalf("InFlight %d while the response waits for the socket, want 1", n)
	}
	resp := roundTrip(t, c, bufio.NewReader(c), "", "GET")
	if got := readBody(t, resp); got != body {
		t.Fatalf("body of %d bytes, want %d", len(got), len(body))
	}
	waitFor(t, "the guard to be released", func() bool { return co.InFlight() == 0 })
}

// TestHostile9CloseCutsBlockedFlush: a response stuck in its final write to a client
// that does not read: Shutdown waits for it (and gives up at its deadline), Close cuts
// it, the guard is released and no goroutine is left once the runtime is closed.
func TestHostile9CloseCutsBlockedFlush(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	base := goroutines()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	co := blitzio.NewShutdown()
	returned := make(chan struct{}, 1)
	srv := &Server{Coordinator: co, ErrorLog: discardLog(),
		ConnState: func(nc net.Conn, st http.ConnState) {
			if st == http.StateNew {
				if s, ok := nc.(*stream.Conn).Stream().(*blitzio.TCPStream); ok {
					s.SetWriteBuffer(4096)
				}
			}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { returned <- struct{}{} }()
			io.WriteString(w, strings.Repeat("r", 31<<10))
		})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-returned
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a response stuck: %v, want context.DeadlineExceeded", err)
	}
	srv.Close()
	waitFor(t, "the guard to be released", func() bool { return co.InFlight() == 0 })
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	c.Close()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's goroutines to exit", func() bool { return goroutines() <= base })
}

// TestHostile9SizeClasses: the per-request bundle and the per-connection state stay in
// their allocation size classes (768 bytes, of which the allocator takes 8 for the
// header of an object over 512 bytes holding pointers; 256 bytes), so that a field
// added for the watch or the guards costs no request and no idle connection more
// memory.
func TestHostile9SizeClasses(t *testing.T) {
	if n := unsafe.Sizeof(reqBundle{}); n > 768-8 {
		t.Errorf("reqBundle is %d bytes: over 760, each request allocates the 896-byte class", n)
	}
	if n := unsafe.Sizeof(conn{}); n > 256 {
		t.Errorf("conn is %d bytes: over 256, each connection allocates the next class", n)
	}
	if n := unsafe.Sizeof(body{}); n > 80 {
		t.Errorf("body is %d bytes: over 80, each request body allocates the next class", n)
	}
}
