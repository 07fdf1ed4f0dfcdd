//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestHijack(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			nc, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			// Echo lines, starting with the ones the client sent with the request.
			for {
				line, err := rw.ReadString('\n')
				if err != nil {
					return
				}
				rw.WriteString("echo: " + line)
				rw.Flush()
			}
		})})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		// The first line comes in the same write as the request: it sits in the server's
		// buffer and must reach the hijacker through the bufio.Reader.
		io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\nline one\n")
		resp := roundTrip(t, c, br, "", "GET")
		if resp.StatusCode != 101 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if l, err := br.ReadString('\n'); l != "echo: line one\n" {
			t.Fatalf("%q %v", l, err)
		}
		io.WriteString(c, "line two\n")
		if l, err := br.ReadString('\n'); l != "echo: line two\n" {
			t.Fatalf("%q %v", l, err)
		}
	})
}

func TestHeadAndHTTP10(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>hi</body></html>")
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD")
	if resp.ContentLength != 28 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Date") == "" {
		t.Fatalf("HEAD: CL %d, headers %v", resp.ContentLength, resp.Header)
	}
	readBody(t, resp)
	// HTTP/1.0 with keep-alive: kept, and told so.
	resp = roundTrip(t, c, br, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET")
	if readBody(t, resp) == "" || resp.Close || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("HTTP/1.0 keep-alive: close %v, Connection %q", resp.Close, resp.Header.Get("Connection"))
	}
	// HTTP/1.0 without: closed after the response.
	resp = roundTrip(t, c, br, "GET / HTTP/1.0\r\n\r\n", "GET")
	readBody(t, resp)
	if !resp.Close {
		t.Fatal("HTTP/1.0 without keep-alive must close")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
	// Connection: close on HTTP/1.1.
	c = ts.dial(t)
	br = bufio.NewReader(c)
	resp = roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET")
	readBody(t, resp)
	if !resp.Close {
		t.Fatal("Connection: close not honoured")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

// TestTimeouts drives each timeout with a client that never sends what is awaited and
// checks the outcome (the connection closed, the body read failing with a timeout), not
// when it happened.
func TestTimeouts(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		bodyErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/body" {
				_, err := io.ReadAll(r.Body)
				bodyErr <- err
				return
			}
			io.WriteString(w, "ok")
		})
		// A short header timeout runs from the accept: a test stalled between its dial
		// and its write would see the request rightly dropped (and then no body read to
		// check). So it has a server of its own; on this one the heads have 20 s (else
		// ReadTimeout would bound them, from the accept too).
		ts := start(t, b, &Server{
			IdleTimeout:       50 * time.Millisecond,
			ReadTimeout:       200 * time.Millisecond,
			ReadHeaderTimeout: 20 * time.Second,
			Handler:           h,
		})
		short := start(t, b, &Server{ReadHeaderTimeout: 50 * time.Millisecond, Handler: h})
		// Idle timeout: one request, then nothing: the server closes.
		c := ts.dial(t)
		br := bufio.NewReader(c)
		readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("idle: want EOF after the idle timeout, got %v", err)
		}
		// Header timeout: half a head, then nothing: closed without an answer.
		c = short.dial(t)
		io.WriteString(c, "GET / HTTP/1.1\r\nHo")
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("header timeout: read %d, %v; want EOF", n, err)
		}
		// Read timeout on the body: the handler's read fails with a timeout.
		c = ts.dial(t)
		io.WriteString(c, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
		select {
		case err := <-bodyErr:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("body read after ReadTimeout: %v, want a timeout net.Error", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the body read did not time out")
		}
	})
}

func TestWriteDeadlineViaResponseController(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	writeErr := make(chan error, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			writeErr <- err
			return
		}
		if err := rc.SetReadDeadline(time.Time{}); err != nil {
			writeErr <- err
			return
		}
		// The client never reads: the socket fills, and the write must fail.
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
			if err := rc.Flush(); err != nil {
				writeErr <- err
				return
			}
		}
	})})
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-writeErr:
		if !isTimeout(err) {
			t.Fatalf("write after the deadline: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write never timed out")
	}
}

// TestShutdownGraceful: Shutdown closes idle connections at once, waits for the
// request in flight, then returns nil; Serve returns http.ErrServerClosed.
func TestShutdownGraceful(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		entered, release := make(chan struct{}), make(chan struct{})
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				close(entered)
				<-release
			}
			io.WriteString(w, "done")
		})})
		idle := ts.dial(t)
		ibr := bufio.NewReader(idle)
		readBody(t, roundTrip(t, idle, ibr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
		busy := ts.dial(t)
		bbr := bufio.NewReader(busy)
		io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered

		// An expired context: Shutdown reports it while the request is in flight.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown with a done context and a request in flight: %v", err)
		}
		if _, err := ibr.ReadByte(); err != io.EOF {
			t.Fatalf("the idle connection: %v, want closed", err)
		}
		select {
		case err := <-ts.served:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve: %v", err)
			}
			ts.served <- err // for the cleanup
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after Shutdown")
		}
		done := make(chan error, 1)
		go func() { done <- ts.srv.Shutdown(context.Background()) }()
		close(release)
		resp := roundTrip(t, busy, bbr, "", "GET")
		if readBody(t, resp) != "done" || !resp.Close {
			t.Fatalf("the request in flight: close %v", resp.Close)
		}
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if _, err := net.Dial("tcp", ts.addr); err == nil {
			t.Fatal("still accepting after Shutdown")
		}
	})
}

func TestCoordinator(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	co := blitzio.NewShutdown()
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &Server{Coordinator: co, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	})}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	if n := co.InFlight(); n != 1 {
		t.Fatalf("InFlight %d with one request being served, want 1", n)
	}
	co.Trigger()
	waited := make(chan error, 1)
	go func() { waited <- co.Wait(context.Background()) }()
	select {
	case err := <-ts.served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
		ts.served <- err
	case <-time.After(10 * time.Second):
		t.Fatal("the trigger did not stop Serve")
	}
	close(release)
	resp := roundTrip(t, c, br, "", "GET")
	if readBody(t, resp) != "done" {
		t.Fatal("the request in flight was cut")
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestHandlerPanicAndGoexit(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		var logs bytes.Buffer
		var mu sync.Mutex
		ts := start(t, b, &Server{ErrorLog: log.New(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/panic":
				panic("boom")
			case "/abort":
				panic(http.ErrAbortHandler)
			case "/goexit":
				io.WriteString(w, "partial")
				runtime.Goexit()
			}
			io.WriteString(w, "fine")
		})})
		for _, path := range []string{"/panic", "/abort", "/goexit"} {
			c := ts.dial(t)
			br := bufio.NewReader(c)
			// A good request pipelined before the bad one is still answered.
			io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if got := readBody(t, roundTrip(t, c, br, "", "GET")); got != "fine" {
				t.Fatalf("%s: the request before: %q", path, got)
			}
			if _, err := http.ReadResponse(br, nil); err == nil {
				t.Fatalf("%s: got a response, want the connection closed", path)
			}
		}
		// Still serving.
		c := ts.dial(t)
		if got := readBody(t, roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "fine" {
			t.Fatalf("after the panics: %q", got)
		}
		mu.Lock()
		out := logs.String()
		mu.Unlock()
		if !strings.Contains(out, "http: panic serving") || !strings.Contains(out, "boom") {
			t.Fatalf("the panic was not logged: %q", out)
		}
		if strings.Count(out, "http: panic serving") != 1 {
			t.Fatalf("ErrAbortHandler or Goexit was logged: %q", out)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestManyClients runs many more client goroutines than cores with net/http's client,
// mixing GETs and POSTs with bodies, with random-sized bodies.
func TestManyClients(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "POST" {
				io.Copy(w, r.Body)
				return
			}
			io.WriteString(w, r.URL.Query().Get("v"))
		})})
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		const workers, each = 64, 40
		var wg sync.WaitGroup
		var failed atomic.Int32
		for g := 0; g < workers; g++ {
			wg.Go(func() {
				for i := 0; i < each && failed.Load() == 0; i++ {
					want := fmt.Sprintf("g%d-i%d-%s", g, i, strings.Repeat("z", (g*i)%5000))
					var resp *http.Response
					var err error
					if i%2 == 0 {
						resp, err = client.Get("http://" + ts.addr + "/?v=" + want)
					} else {
						resp, err = client.Post("http://"+ts.addr+"/", "text/plain", strings.NewReader(want))
					}
					if err != nil {
						failed.Add(1)
						t.Errorf("request: %v", err)
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(got) != want {
						failed.Add(1)
						t.Errorf("got %d bytes (%v), want %d", len(got), err, len(want))
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

// TestIdleConnectionsHoldNoGoroutine opens 1,000 keep-alive connections, makes one
// request on each, and checks that the goroutine count does not grow with them.
func TestIdleConnectionsHoldNoGoroutine(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: hello()})
	const n = 1000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	first := ts.dial(t)
	readBody(t, roundTrip(t, first, bufio.NewReader(first), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
	base := goroutines()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		resp := roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
		if readBody(t, resp) != "hello /" {
			t.Fatal("bad response")
		}
	}
	ts.srv.mu.Lock()
	tracked := len(ts.srv.conns)
	ts.srv.mu.Unlock()
	if tracked < n {
		t.Fatalf("the server tracks %d connections, want at least %d open", tracked, n)
	}
	// The pool keeps a few parked handler goroutines; allow them, not one per connection.
	if g := goroutines(); g > base+32 {
		t.Fatalf("%d goroutines with %d idle connections, %d before: idle connections hold goroutines", g, n, base)
	}
}

// TestResponseControllerReadDeadline: a read deadline set through
// http.ResponseController fails the handler's body read with a timeout, and the
// handler can still answer.
func TestResponseControllerReadDeadline(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
				t.Error(err)
			}
			_, err := io.ReadAll(r.Body)
			if !isTimeout(err) {
				t.Errorf("body read past the deadline: %v", err)
			}
			io.WriteString(w, "answered anyway")
		})})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", "POST")
		if got := readBody(t, resp); got != "answered anyway" || !resp.Close {
			t.Fatalf("%q close %v (a failed body read must close the connection)", got, resp.Close)
		}
	})
}

// TestHTTP10UnknownLength: an HTTP/1.0 keep-alive request whose handler flushes before
// the length is known gets a body ended by the close, as net/http does.
func TestHTTP10UnknownLength(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "part two")
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET")
	if got := readBody(t, resp); got != "part one, part two" || resp.ContentLength != -1 || len(resp.TransferEncoding) != 0 || !resp.Close {
		t.Fatalf("%q CL %d TE %v close %v", got, resp.ContentLength, resp.TransferEncoding, resp.Close)
	}
}

// Regression: a client that connects and sends nothing was never closed when only
// ReadHeaderTimeout was set (the first request waited under the idle timeout, which
// is unset). As in net/http, the first request's header timeout runs from the accept.
func TestSilentClientClosedByHeaderTimeout(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		const headerTimeout = 50 * time.Millisecond
		ts := start(t, b, &Server{
			ReadHeaderTimeout: headerTimeout,
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		})
		c := ts.dial(t)
		if n, err := c.Read(make([]byte, 16)); err != io.EOF {
			t.Fatalf("silent client: read %d bytes, %v; want EOF after the header timeout", n, err)
		}
		// A keep-alive connection between requests is not bound by it (no IdleTimeout,
		// no ReadTimeout: it may stay idle), but its next head is. The first request
		// must come within the timeout of the accept: dialSending redials a stalled try.
		c = ts.dialSending(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", headerTimeout)
		br := bufio.NewReader(c)
		readBody(t, roundTrip(t, c, br, "", "GET"))
		time.Sleep(3 * headerTimeout) // still open
		readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
	})
}
