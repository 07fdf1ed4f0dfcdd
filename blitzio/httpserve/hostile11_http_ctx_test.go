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
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile11RequestContextValues: a request's context has its parent's deadline and
// values (BaseContext's), http.LocalAddrContextKey (the connection's local address),
// nothing for other keys, and a String; without a parent it has no deadline.
func TestHostile11RequestContextValues(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	deadline := time.Now().Add(time.Hour)
	for _, withParent := range []bool{false, true} {
		report := make(chan string, 1)
		srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			dl, ok := ctx.Deadline()
			la, _ := ctx.Value(http.LocalAddrContextKey).(net.Addr)
			report <- fmt.Sprintf("dl=%v ok=%v k=%v other=%v la=%v err=%v str=%v", dl.Equal(deadline), ok,
				ctx.Value(ctxKey("k")), ctx.Value(ctxKey("other")), la, ctx.Err(), fmt.Sprint(ctx) != "")
		})}
		if withParent {
			srv.BaseContext = func(net.Listener) context.Context {
				ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey("k"), "v"), deadline)
				t.Cleanup(cancel)
				return ctx
			}
		}
		ts := start(t, blitzio.BackendEpoll, srv)
		if code, _ := h11Get(t, ts.addr, "/"); code != 200 {
			t.Fatalf("status %d", code)
		}
		got := <-report
		want := fmt.Sprintf("dl=false ok=false k=<nil> other=<nil> la=%s err=<nil> str=true", ts.addr)
		if withParent {
			want = fmt.Sprintf("dl=true ok=true k=v other=<nil> la=%s err=<nil> str=true", ts.addr)
		}
		if got != want {
			t.Errorf("parent %v:\n got  %s\n want %s", withParent, got, want)
		}
	}
}

// TestHostile11ParentCancelledBeforeRequest: when the parent context (BaseContext's) is
// already cancelled as a request starts, its context is done at once, whichever of Err
// and Done the handler asks first (no waiting for the propagation goroutine), with the
// parent's error: context.Canceled, or context.DeadlineExceeded for a parent whose
// deadline passed.
func TestHostile11ParentCancelledBeforeRequest(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, deadlineParent := range []bool{false, true} {
		var parent context.Context
		var cancel context.CancelFunc
		if deadlineParent {
			parent, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		} else {
			parent, cancel = context.WithCancel(context.Background())
		}
		wantErr := context.Canceled
		if deadlineParent {
			wantErr = context.DeadlineExceeded
		}
		report := make(chan string, 1)
		srv := &Server{ErrorLog: discardLog(), BaseContext: func(net.Listener) context.Context { return parent },
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				var err error
				done := false
				if r.URL.Path == "/err-first" {
					err = ctx.Err()
					select {
					case <-ctx.Done():
						done = true
					default:
					}
				} else {
					select {
					case <-ctx.Done():
						done = true
					default:
					}
					err = ctx.Err()
				}
				report <- fmt.Sprintf("%v %v", done, err)
			})}
		ts := start(t, blitzio.BackendEpoll, srv)
		cancel()
		c := ts.dial(t)
		br := bufio.NewReader(c)
		for i := 0; i < 20; i++ {
			path := []string{"/err-first", "/done-first"}[i%2]
			resp := roundTrip(t, c, br, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
			readBody(t, resp)
			if got, want := <-report, fmt.Sprintf("true %v", wantErr); got != want {
				t.Fatalf("deadline parent %v, %s: done, err = %s; want %s", deadlineParent, path, got, want)
			}
		}
	}
}

// TestHostile11ParentCancelledDuringRequest: many goroutines of a handler wait on its
// context, on contexts derived from it (WithCancel, WithTimeout) and with
// context.AfterFunc; cancelling the parent releases all of them, with the parent's
// error, and the handler still answers.
func TestHostile11ParentCancelledDuringRequest(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 1)
	srv := &Server{ErrorLog: discardLog(), BaseContext: func(net.Listener) context.Context { return parent },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			const n = 8
			errs := make(chan error, 3*n+1)
			var wg sync.WaitGroup
			for range n {
				wg.Add(3)
				go func() { defer wg.Done(); <-ctx.Done(); errs <- ctx.Err() }()
				go func() {
					defer wg.Done()
					d, stop := context.WithCancel(ctx)
					defer stop()
					<-d.Done()
					errs <- d.Err()
				}()
				go func() {
					defer wg.Done()
					d, stop := context.WithTimeout(ctx, time.Hour)
					defer stop()
					<-d.Done()
					errs <- d.Err()
				}()
			}
			afterRan := make(chan struct{})
			context.AfterFunc(ctx, func() { close(afterRan) })
			started <- struct{}{}
			waited := make(chan struct{})
			go func() { wg.Wait(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(10 * time.Second):
				io.WriteString(w, "waiters not released")
				return
			}
			select {
			case <-afterRan:
			case <-time.After(10 * time.Second):
				io.WriteString(w, "AfterFunc did not run")
				return
			}
			close(errs)
			for err := range errs {
				if err != context.Canceled {
					fmt.Fprintf(w, "waiter saw %v", err)
					return
				}
			}
			io.WriteString(w, "all released")
		})}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	cancel()
	resp := roundTrip(t, c, bufio.NewReader(c), "", "GET")
	if got := readBody(t, resp); got != "all released" {
		t.Fatalf("handler: %q", got)
	}
}

// TestHostile11ContextEndsWithHandler: as net/http, the request's context is cancelled
// once the handler has returned (context.AfterFunc registered in it runs, a goroutine
// it left behind sees context.Canceled), and the parent's later cancel changes nothing.
func TestHostile11ContextEndsWithHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	kept := make(chan context.Context, 1)
	after := make(chan struct{})
	srv := &Server{ErrorLog: discardLog(), BaseContext: func(net.Listener) context.Context { return parent },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			context.AfterFunc(r.Context(), func() { close(after) })
			kept <- r.Context()
			io.WriteString(w, "x")
		})}
	ts := start(t, blitzio.BackendEpoll, srv)
	if code, _ := h11Get(t, ts.addr, "/"); code != 200 {
		t.Fatal(code)
	}
	ctx := <-kept
	select {
	case <-after:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc did not run after the handler returned")
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the context is not done after the handler returned")
	}
	cancel()
	if err := ctx.Err(); err != context.Canceled {
		t.Fatalf("Err after the handler returned: %v", err)
	}
}

// TestHostile11FullDuplex: EnableFullDuplex returns nil, and the handler can answer
// part of its response, then read the body the client sends only once it has seen
// that part (a client that waits for the server before sending), as with net/http.
func TestHostile11FullDuplex(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			fmt.Fprintf(w, "EnableFullDuplex: %v", err)
			return
		}
		io.WriteString(w, "ready;")
		if err := rc.Flush(); err != nil {
			return
		}
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %q %v", b, err)
	})
	check := func(t *testing.T, addr string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, len("ready;"))
		if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "ready;" {
			t.Fatalf("first part: %q %v", first, err)
		}
		io.WriteString(c, "hello")
		rest, err := io.ReadAll(resp.Body)
		if err != nil || string(rest) != `got "hello" <nil>` {
			t.Fatalf("rest: %q %v", rest, err)
		}
	}
	t.Run("net/http", func(t *testing.T) { check(t, h4StartNetHTTP(t, h)) })
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		check(t, start(t, b, &Server{Handler: h, ErrorLog: discardLog()}).addr)
	})
}

// TestHostile11ReadDeadlineFromAnotherGoroutine: a read deadline moved into the past by
// another goroutine releases the handler's body read parked on the socket, with
// os.ErrDeadlineExceeded, as on a net.Conn; the handler still answers, and the
// connection closes after (the body was not read).
func TestHostile11ReadDeadlineFromAnotherGoroutine(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		parked := make(chan struct{})
		ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			buf := make([]byte, 10)
			n, err := io.ReadFull(r.Body, buf[:2]) // the two bytes sent
			if err != nil {
				fmt.Fprintf(w, "first read: %d %v", n, err)
				return
			}
			setErr := make(chan error, 1)
			go func() {
				<-parked
				time.Sleep(20 * time.Millisecond) // most likely parked by now (either way the read fails)
				setErr <- rc.SetReadDeadline(time.Now().Add(-time.Second))
			}()
			close(parked)
			_, err = r.Body.Read(buf)
			fmt.Fprintf(w, "timeout=%v set=%v", errors.Is(err, os.ErrDeadlineExceeded), <-setErr)
		})})
		c := ts.dial(t)
		resp := roundTrip(t, c, bufio.NewReader(c), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", "POST")
		if got := readBody(t, resp); got != "timeout=true set=<nil>" || !resp.Close {
			t.Fatalf("%q close=%v", got, resp.Close)
		}
	})
}

// TestHostile11ClearedDeadlines: deadlines set and then cleared (the zero time) do not
// fail anything: a read deadline in the past cleared before the read, a write deadline
// in the past cleared before the write.
func TestHostile11ClearedDeadlines(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		e1 := rc.SetReadDeadline(time.Now().Add(-time.Second))
		e2 := rc.SetReadDeadline(time.Time{})
		b, err := io.ReadAll(r.Body)
		e3 := rc.SetWriteDeadline(time.Now().Add(-time.Second))
		e4 := rc.SetWriteDeadline(time.Time{})
		io.WriteString(w, strings.Repeat("w", 40<<10)) // written at once (over the batch size)
		fmt.Fprintf(w, "|%q %v %v %v %v %v", b, err, e1, e2, e3, e4)
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST")
	got := readBody(t, resp)
	if want := strings.Repeat("w", 40<<10) + `|"abc" <nil> <nil> <nil> <nil> <nil>`; got != want {
		t.Fatalf("got %.60q...%q", got, got[max(0, len(got)-60):])
	}
	// And the connection serves the next request.
	resp = roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	if readBody(t, resp); resp.StatusCode != 200 {
		t.Fatalf("next request: %d", resp.StatusCode)
	}
}

// TestHostile11WriteDeadlineNoHeadlessBody: a handler whose flush failed on its write
// deadline, which then clears the deadline and writes on, must not send body bytes
// without the head that was never sent: the client sees a valid response or the
// connection closed, never bytes that are not HTTP. (net/http: the write error is
// sticky; nothing more goes out.)
func TestHostile11WriteDeadlineNoHeadlessBody(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Now().Add(-time.Second))
		io.WriteString(w, "first")
		ferr := rc.Flush()
		rc.SetWriteDeadline(time.Time{})
		io.WriteString(w, "second")
		rc.Flush()
		w.Header().Set("X-Flush-Err", fmt.Sprint(ferr != nil))
	})
	check := func(t *testing.T, addr string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		b, _ := io.ReadAll(c)
		if len(b) != 0 && !strings.HasPrefix(string(b), "HTTP/1.1 ") {
			t.Fatalf("the client got bytes that are not a response: %q", b)
		}
	}
	t.Run("net/http", func(t *testing.T) { check(t, h4StartNetHTTP(t, h)) })
	t.Run("httpserve", func(t *testing.T) {
		check(t, start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()}).addr)
	})
}

// TestHostile11LeakedControllerAfterReturn: a ResponseController kept past the handler's
// return cannot move the deadlines of the connection's next request (its Set calls
// fail), and EnableFullDuplex and Flush stay harmless.
func TestHostile11LeakedControllerAfterReturn(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	kept := make(chan *http.ResponseController, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/keep" {
			kept <- http.NewResponseController(w)
			return
		}
		b, err := io.ReadAll(r.Body)
		io.WriteString(w, strings.Repeat("z", 40<<10))
		fmt.Fprintf(w, "|%q %v", b, err)
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	readBody(t, roundTrip(t, c, br, "GET /keep HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
	rc := <-kept
	if err := rc.SetReadDeadline(time.Now().Add(-time.Second)); err == nil {
		t.Error("SetReadDeadline after the handler returned: nil error")
	}
	if err := rc.SetWriteDeadline(time.Now().Add(-time.Second)); err == nil {
		t.Error("SetWriteDeadline after the handler returned: nil error")
	}
	if err := rc.EnableFullDuplex(); err != nil {
		t.Errorf("EnableFullDuplex after the handler returned: %v", err)
	}
	if err := rc.Flush(); err == nil {
		t.Error("Flush after the handler returned: nil error")
	}
	resp := roundTrip(t, c, br, "POST /next HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST")
	got := readBody(t, resp)
	if want := strings.Repeat("z", 40<<10) + `|"abc" <nil>`; got != want {
		t.Fatalf("next request: %d %q", resp.StatusCode, got[max(0, len(got)-40):])
	}
}

// TestHostile11DeadlinesEndWithRequest: read and write deadlines a handler sets through
// http.ResponseController are its request's: the next request on the connection starts
// without them (the server has no ReadTimeout or WriteTimeout here), whether it came
// after the response or pipelined behind the request, in the same packet.
func TestHostile11DeadlinesEndWithRequest(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.URL.Path == "/set" {
			rc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			rc.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
			io.WriteString(w, "set")
			return
		}
		b, err := io.ReadAll(r.Body) // the rest of the body comes after the deadlines passed
		if err != nil {
			fmt.Fprintf(w, "read: %v", err)
			return
		}
		time.Sleep(30 * time.Millisecond)
		io.WriteString(w, strings.Repeat("w", 40<<10)) // written at once
		fmt.Fprintf(w, "|%s", b)
	})})
	set := "GET /set HTTP/1.1\r\nHost: x\r\n\r\n"
	post := "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab"
	for _, pipelined := range []bool{false, true} {
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if pipelined {
			// /set's response is batched with the next one: it comes after "cd".
			io.WriteString(c, set+post)
		} else {
			readBody(t, roundTrip(t, c, br, set, "GET"))
			io.WriteString(c, post)
		}
		time.Sleep(60 * time.Millisecond) // past the deadlines /set chose (either way they must not apply)
		io.WriteString(c, "cd")
		if pipelined {
			readBody(t, roundTrip(t, c, br, "", "GET"))
		}
		resp := roundTrip(t, c, br, "", "POST")
		got := readBody(t, resp)
		if want := strings.Repeat("w", 40<<10) + "|abcd"; got != want {
			t.Errorf("pipelined %v: the next request got %q", pipelined, got[max(0, len(got)-60):])
		}
	}
}
