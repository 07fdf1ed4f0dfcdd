//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h9StateLog records ConnState calls, safe for concurrent use.
type h9StateLog struct {
	mu     sync.Mutex
	states []http.ConnState
}

func (l *h9StateLog) hook(_ net.Conn, st http.ConnState) {
	l.mu.Lock()
	l.states = append(l.states, st)
	l.mu.Unlock()
}

func (l *h9StateLog) get() []http.ConnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.ConnState(nil), l.states...)
}

// TestHostile9EndAfterHijack: a handler that hijacks the connection and then ends
// with runtime.Goexit or a panic leaves the connection to the hijacker, as net/http
// does: the server neither closes it nor reports http.StateClosed after
// http.StateHijacked.
func TestHostile9EndAfterHijack(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, how := range []string{"goexit", "panic", "abort"} {
		t.Run(how, func(t *testing.T) {
			states := &h9StateLog{}
			hijacked := make(chan net.Conn, 1)
			ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), ConnState: states.hook,
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					nc, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					hijacked <- nc
					switch how {
					case "goexit":
						runtime.Goexit()
					case "panic":
						panic("after hijack")
					default:
						panic(http.ErrAbortHandler)
					}
				})})
			c := ts.dial(t)
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			nc := <-hijacked
			defer nc.Close()
			// The hijacker still owns a working connection, both ways.
			time.Sleep(20 * time.Millisecond) // let the handler's end run (either order must work)
			if _, err := io.WriteString(nc, "from hijacker"); err != nil {
				t.Fatalf("hijacked connection unusable after the handler's %s: %v", how, err)
			}
			buf := make([]byte, len("from hijacker"))
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "from hijacker" {
				t.Fatalf("client read %q, %v", buf, err)
			}
			io.WriteString(c, "from client")
			buf = make([]byte, len("from client"))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "from client" {
				t.Fatalf("hijacker read %q, %v", buf, err)
			}
			st := states.get()
			if len(st) == 0 || st[len(st)-1] != http.StateHijacked {
				t.Fatalf("ConnState calls %v, want StateHijacked last", st)
			}
		})
	}
}

// TestHostile9HijackKeepsBytesReadDuringHandler: bytes the client sends while the
// handler runs (read by the server's watch of the socket) reach the hijacker.
func TestHostile9HijackKeepsBytesReadDuringHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		entered := make(chan struct{})
		sent := make(chan struct{})
		got := make(chan string, 1)
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-sent
			time.Sleep(20 * time.Millisecond) // let the bytes arrive (either order must work)
			nc, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				got <- err.Error()
				return
			}
			defer nc.Close()
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, len("early bytes"))
			_, err = io.ReadFull(brw, buf)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(buf)
		})})
		c := ts.dial(t)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered
		io.WriteString(c, "early bytes")
		close(sent)
		if s := <-got; s != "early bytes" {
			t.Fatalf("hijacker read %q, want %q", s, "early bytes")
		}
	})
}

// TestHostile9CloseFromHandler: Server.Close called by a handler returns, cuts the
// connections, and Serve returns http.ErrServerClosed; Serve after Close refuses.
func TestHostile9CloseFromHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	closed := make(chan error, 1)
	srv = &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		closed <- srv.Close()
		io.WriteString(w, "late")
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	c := dialRaw(t, l.Addr().String())
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	io.Copy(io.Discard, c) // the connection ends (cut, or after the response)
	l2, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(rt, l2); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := net.Dial("tcp", l2.Addr().String()); err == nil {
		t.Fatal("Serve after Close left its listener open")
	}
}

// TestHostile9ShutdownFromHandler: Shutdown called by a handler waits for that
// handler's own request, so it returns only with its context's error (net/http does
// the same); the response is still sent and Serve returns.
func TestHostile9ShutdownFromHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var srv *Server
	res := make(chan error, 1)
	srv = &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res <- srv.Shutdown(ctx)
		io.WriteString(w, "answered")
	})}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	if err := <-res; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown from the handler: %v, want context.DeadlineExceeded", err)
	}
	if got := readBody(t, resp); got != "answered" || !resp.Close {
		t.Fatalf("body %q, close %v", got, resp.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// TestHostile9NilHandler: a nil Handler serves http.DefaultServeMux.
func TestHostile9NilHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{})
	c := ts.dial(t)
	resp := roundTrip(t, c, bufio.NewReader(c), "GET /hostile9-not-registered HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	if resp.StatusCode != 404 {
		t.Fatalf("status %d, want DefaultServeMux's 404", resp.StatusCode)
	}
}

// TestHostile9LeakedRequestAfterReturn: what a handler keeps after it returns: the
// request's context is cancelled, the body fails, the writer's methods fail or do
// nothing (no panic), http.ResponseController's calls fail.
func TestHostile9LeakedRequestAfterReturn(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	type kept struct {
		w http.ResponseWriter
		r *http.Request
	}
	ch := make(chan kept, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch <- kept{w, r}
		io.WriteString(w, "ok")
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	readBody(t, roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST"))
	k := <-ch
	waitFor(t, "the kept context to be cancelled", func() bool { return k.r.Context().Err() != nil })
	if _, err := k.r.Body.Read(make([]byte, 1)); err == nil {
		t.Error("body read after return succeeded")
	}
	if n, err := k.w.Write([]byte("x")); err == nil || n != 0 {
		t.Errorf("Write after return: %d, %v", n, err)
	}
	k.w.WriteHeader(500)
	k.w.Header().Set("X", "y")
	k.w.(http.Flusher).Flush()
	if _, _, err := k.w.(http.Hijacker).Hijack(); err == nil {
		t.Error("Hijack after return succeeded")
	}
	rc := http.NewResponseController(k.w)
	if err := rc.SetReadDeadline(time.Now()); err == nil {
		t.Error("SetReadDeadline after return succeeded")
	}
	if err := rc.Flush(); err == nil {
		t.Error("ResponseController.Flush after return succeeded")
	}
	// The connection still serves the next request normally.
	if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "ok" {
		t.Fatalf("next request: %q", got)
	}
	<-ch
}

// TestHostile9BodyReadErrorCancelsContext: a client that goes away in the middle of
// its request body: the handler's body read fails, and, as in net/http (whose
// connection reader cancels the context on any read error), the request's context is
// cancelled.
func TestHostile9BodyReadErrorCancelsContext(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	got := make(chan error, 1)
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		readErr <- err
		select {
		case <-r.Context().Done():
			got <- r.Context().Err()
		case <-time.After(10 * time.Second):
			got <- nil
		}
	})
	h9Servers(t, h, func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly some")
		time.Sleep(20 * time.Millisecond) // let the handler start reading (either order must work)
		c.Close()
		if err := <-readErr; err == nil {
			t.Fatal("the body read did not fail")
		}
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("context after the body read failed: %v, want context.Canceled", err)
		}
	})
}

// TestHostile9BodyReadDeadlineCancelsContext: a body read that fails at the
// ReadTimeout cancels the request's context, as in net/http.
func TestHostile9BodyReadDeadlineCancelsContext(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	got := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		if err == nil {
			got <- errors.New("the body read did not fail")
			return
		}
		select {
		case <-r.Context().Done():
			got <- r.Context().Err()
		case <-time.After(10 * time.Second):
			got <- nil
		}
	})
	check := func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		defer c.Close()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly some")
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("context after the body read deadline: %v, want context.Canceled", err)
		}
	}
	t.Run("net/http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// ReadTimeout alone would bound the head too, from the accept (or, in net/http,
		// from the start of the read): a test stalled before its write would see its
		// request dropped, rightly, and wait for a handler that never runs. A long
		// ReadHeaderTimeout leaves the 100 ms to the body.
		hs := &http.Server{Handler: h, ReadTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 20 * time.Second, ErrorLog: discardLog()}
		go hs.Serve(l)
		defer hs.Close()
		check(t, l.Addr().String())
	})
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		check(t, start(t, b, &Server{Handler: h, ReadTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 20 * time.Second, ErrorLog: discardLog()}).addr)
	})
}

// TestHostile9GarbageDuringHandler: a client that sends more bytes than the read
// buffer holds while a handler runs (the start of a head that never ends), then
// half-closes: the handler's response is sent, then the connection closes; nothing
// hangs.
func TestHostile9GarbageDuringHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-release
			io.WriteString(w, "first")
		})})
		c := ts.dial(t)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered
		if _, err := io.WriteString(c, "GET /"+strings.Repeat("x", 64<<10)); err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		time.Sleep(20 * time.Millisecond)
		close(release)
		br := bufio.NewReader(c)
		resp := roundTrip(t, c, br, "", "GET")
		if got := readBody(t, resp); got != "first" {
			t.Fatalf("first response %q", got)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Fatal("bytes after the response, want the connection closed")
		}
	})
}
