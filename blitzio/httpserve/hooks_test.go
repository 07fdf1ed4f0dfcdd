//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// stateLog records ConnState calls per connection, in order.
type stateLog struct {
	mu     sync.Mutex
	conns  []net.Conn
	states map[net.Conn][]http.ConnState
}

func newStateLog() *stateLog { return &stateLog{states: map[net.Conn][]http.ConnState{}} }

func (l *stateLog) hook(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.states[c]; !ok {
		l.conns = append(l.conns, c)
	}
	l.states[c] = append(l.states[c], st)
}

// only returns the states of the one connection seen, failing if there were more.
func (l *stateLog) only(t *testing.T) (net.Conn, []http.ConnState) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) != 1 {
		t.Fatalf("ConnState saw %d connections, want 1", len(l.conns))
	}
	return l.conns[0], slices.Clone(l.states[l.conns[0]])
}

func (l *stateLog) last() http.ConnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		return -1
	}
	s := l.states[l.conns[len(l.conns)-1]]
	return s[len(s)-1]
}

// stateScript is a client's life on one connection: two keep-alive requests, two
// pipelined in one write, then the client closes.
func stateScript(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for range 2 {
		readBody(t, roundTrip(t, c, br, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
	}
	io.WriteString(c, "GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
	for range 2 {
		readBody(t, roundTrip(t, c, br, "", "GET"))
	}
}

// TestConnStateLikeNetHTTP runs the same client against net/http's server and this one
// and checks that ConnState reports the same sequence of states, ending with
// StateClosed after the client leaves.
func TestConnStateLikeNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ref := newStateLog()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: hello(), ConnState: ref.hook}
	go hs.Serve(ln)
	defer hs.Close()
	stateScript(t, ln.Addr().String())
	waitFor(t, "net/http's StateClosed", func() bool { return ref.last() == http.StateClosed })
	_, want := ref.only(t)
	if len(want) != 10 {
		t.Fatalf("net/http reported %v; the test expects 10 states", want)
	}

	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		got := newStateLog()
		ts := start(t, b, &Server{Handler: hello(), ConnState: got.hook})
		stateScript(t, ts.addr)
		waitFor(t, "StateClosed", func() bool { return got.last() == http.StateClosed })
		_, states := got.only(t)
		if !slices.Equal(states, want) {
			t.Fatalf("states %v, net/http's %v", states, want)
		}
	})
}

// TestConnStateHijackAndErrors: a hijacked connection ends with StateHijacked (and its
// Hijack returns the net.Conn ConnState saw); one refused with 400 goes New, Active,
// Closed; one closed by the idle timeout goes Idle, Closed; Server.Close closes an idle
// one.
func TestConnStateHijackAndErrors(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		t.Run("hijack", func(t *testing.T) {
			log := newStateLog()
			hijacked := make(chan net.Conn, 1)
			ts := start(t, b, &Server{ConnState: log.hook, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				nc, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				hijacked <- nc
			})})
			c := ts.dial(t)
			br := bufio.NewReader(c)
			if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "ok" {
				t.Fatalf("body %q", got)
			}
			nc := <-hijacked
			nc.Close()
			waitFor(t, "the hijack to be reported", func() bool { return log.last() == http.StateHijacked })
			c.Close()
			seen, states := log.only(t)
			if seen != nc {
				t.Fatalf("Hijack returned %p, ConnState saw %p", nc, seen)
			}
			if want := []http.ConnState{http.StateNew, http.StateActive, http.StateHijacked}; !slices.Equal(states, want) {
				t.Fatalf("states %v, want %v", states, want)
			}
		})
		t.Run("bad request", func(t *testing.T) {
			log := newStateLog()
			ts := start(t, b, &Server{ConnState: log.hook, Handler: hello()})
			c := ts.dial(t)
			br := bufio.NewReader(c)
			if resp := roundTrip(t, c, br, "GET / HTTP/1.1\r\n\r\n", "GET"); resp.StatusCode != 400 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			waitFor(t, "StateClosed", func() bool { return log.last() == http.StateClosed })
			if _, states := log.only(t); !slices.Equal(states, []http.ConnState{http.StateNew, http.StateActive, http.StateClosed}) {
				t.Fatalf("states %v", states)
			}
		})
		t.Run("idle timeout", func(t *testing.T) {
			log := newStateLog()
			ts := start(t, b, &Server{ConnState: log.hook, Handler: hello(), IdleTimeout: 50 * time.Millisecond})
			c := ts.dial(t)
			br := bufio.NewReader(c)
			readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
			waitFor(t, "StateClosed", func() bool { return log.last() == http.StateClosed })
			want := []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateClosed}
			if _, states := log.only(t); !slices.Equal(states, want) {
				t.Fatalf("states %v, want %v", states, want)
			}
		})
		t.Run("server close", func(t *testing.T) {
			log := newStateLog()
			ts := start(t, b, &Server{ConnState: log.hook, Handler: hello()})
			c := ts.dial(t)
			br := bufio.NewReader(c)
			readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
			ts.srv.Close()
			waitFor(t, "StateClosed", func() bool { return log.last() == http.StateClosed })
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("connection still open after Server.Close")
			}
		})
	})
}

// TestConnStatePanic: a ConnState hook that panics is logged and closes that
// connection; the server goes on serving others.
func TestConnStatePanic(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var logBuf syncBuffer
	var mu sync.Mutex
	panicOn := http.StateIdle
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: hello(), ErrorLog: log.New(&logBuf, "", 0),
		ConnState: func(_ net.Conn, st http.ConnState) {
			mu.Lock()
			p := st == panicOn
			mu.Unlock()
			if p {
				panic("hook bug")
			}
		}})
	for _, st := range []http.ConnState{http.StateIdle, http.StateActive, http.StateNew} {
		mu.Lock()
		panicOn = st
		mu.Unlock()
		c := ts.dial(t)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		// The connection closes after at most this response (the hook panicked).
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			if got := readBody(t, resp); got != "hello /" || !resp.Close && st != http.StateIdle {
				t.Fatalf("panic in %v: body %q close %v", st, got, resp.Close)
			}
		}
		if _, err := br.ReadByte(); err == nil {
			t.Fatalf("panic in %v: connection still open", st)
		}
		if !strings.Contains(logBuf.String(), "hook bug") {
			t.Fatalf("panic in %v not logged: %q", st, logBuf.String())
		}
	}
	mu.Lock()
	panicOn = -1
	mu.Unlock()
	c := ts.dial(t)
	if got := readBody(t, roundTrip(t, c, bufio.NewReader(c), "GET /z HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "hello /z" {
		t.Fatalf("after the panics: %q", got)
	}
}

type ctxKey string

// TestBaseAndConnContext: a request's context carries the values of BaseContext's and
// ConnContext's contexts (and LocalAddrContextKey), its deadline, and is cancelled when
// the base context is; ConnContext gets the net.Conn ConnState sees.
func TestBaseAndConnContext(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		base, cancelBase := context.WithCancel(context.WithValue(context.Background(), ctxKey("k"), "base"))
		defer cancelBase()
		deadline := time.Now().Add(time.Hour)
		listeners := make(chan net.Listener, 1)
		var connSeen, stateSeen sync.Map
		started := make(chan struct{}, 1)
		srv := &Server{
			BaseContext: func(l net.Listener) context.Context {
				listeners <- l
				return base
			},
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if ctx.Value(ctxKey("k")) != "base" {
					t.Errorf("ConnContext's ctx lacks the base value")
				}
				connSeen.Store(c, true)
				ctx, cancel := context.WithDeadline(context.WithValue(ctx, ctxKey("c"), "conn"), deadline)
				t.Cleanup(cancel)
				return ctx
			},
			ConnState: func(c net.Conn, st http.ConnState) {
				if st == http.StateNew {
					stateSeen.Store(c, true)
				}
			},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				dl, ok := ctx.Deadline()
				la, _ := ctx.Value(http.LocalAddrContextKey).(net.Addr)
				io.WriteString(w, ctx.Value(ctxKey("k")).(string)+" "+ctx.Value(ctxKey("c")).(string))
				if !ok || !dl.Equal(deadline) || la == nil || ctx.Err() != nil {
					t.Errorf("request context: deadline %v %v, local addr %v, err %v", dl, ok, la, ctx.Err())
				}
				if r.URL.Path == "/wait" {
					w.(http.Flusher).Flush()
					started <- struct{}{}
					<-ctx.Done()
					if !errors.Is(ctx.Err(), context.Canceled) {
						t.Errorf("after the base context's cancel: %v", ctx.Err())
					}
				}
			}),
		}
		ts := start(t, b, srv)
		gotListener := <-listeners // Serve calls BaseContext before it accepts
		if gotListener == nil || gotListener.Addr().String() != ts.addr {
			t.Fatalf("BaseContext got listener %v, want one at %s", gotListener, ts.addr)
		}
		if _, err := gotListener.Accept(); !errors.Is(err, ErrAcceptByServer) {
			t.Fatalf("Accept on BaseContext's listener: %v", err)
		}
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "base conn" {
			t.Fatalf("body %q", got)
		}
		n := 0
		connSeen.Range(func(k, _ any) bool {
			n++
			if _, ok := stateSeen.Load(k); !ok {
				t.Errorf("ConnContext's net.Conn %p not seen by ConnState", k)
			}
			return true
		})
		if n != 1 {
			t.Fatalf("ConnContext called for %d connections", n)
		}
		// Cancelling the base context ends a request in flight's context.
		io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
		cancelBase()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := readBody(t, resp); got != "base conn" {
			t.Fatalf("body %q", got)
		}
	})
}

// TestNilContextHooks: BaseContext returning nil panics in Serve (as http.Server does),
// with the listener closed; ConnContext returning nil closes the connection and the
// listener and Serve returns the panic.
func TestNilContextHooks(t *testing.T) {
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
	addr := l.Addr().String()
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(v.(string), "BaseContext") {
				t.Fatalf("recovered %v, want the BaseContext panic", v)
			}
		}()
		(&Server{BaseContext: func(net.Listener) context.Context { return nil }}).Serve(rt, l)
	}()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("listener still open after BaseContext's panic")
	}

	l, err = blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: hello(), ConnContext: func(context.Context, net.Conn) context.Context { return nil }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection open after ConnContext returned nil")
	}
	var pe *blitzio.PanicError
	if err := <-served; !errors.As(err, &pe) || !strings.Contains(err.Error(), "ConnContext") {
		t.Fatalf("Serve returned %v, want the ConnContext panic", err)
	}
	srv.Close()
}

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnStateGoexit: a ConnState hook that calls runtime.Goexit (t.FailNow in a test
// helper) in any state ends that connection (the client sees it closed, it does not
// hang) and the server goes on serving new ones.
func TestConnStateGoexit(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, st := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateClosed} {
		t.Run(st.String(), func(t *testing.T) {
			var mu sync.Mutex
			exits := 0
			ts := start(t, blitzio.BackendEpoll, &Server{Handler: hello(), ErrorLog: discardLog(),
				ConnState: func(_ net.Conn, s http.ConnState) {
					mu.Lock()
					first := s == st && exits == 0
					if first {
						exits++
					}
					mu.Unlock()
					if first {
						runtime.Goexit()
					}
				}})
			c := ts.dial(t)
			br := bufio.NewReader(c)
			io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, err := http.ReadResponse(br, nil); err == nil {
				readBody(t, resp)
				if st != http.StateIdle && st != http.StateClosed {
					t.Fatalf("Goexit in %v: answered", st)
				}
			}
			if st != http.StateClosed {
				if _, err := br.ReadByte(); err == nil {
					t.Fatalf("Goexit in %v: connection still open", st)
				}
			}
			c.Close()
			// The next connection is served.
			c2 := ts.dial(t)
			if got := readBody(t, roundTrip(t, c2, bufio.NewReader(c2), "GET /b HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "hello /b" {
				t.Fatalf("after a Goexit in %v: %q", st, got)
			}
			waitFor(t, "the connections to be forgotten", func() bool {
				c2.Close()
				ts.srv.mu.Lock()
				defer ts.srv.mu.Unlock()
				return len(ts.srv.conns) == 0
			})
		})
	}
}

// TestConnStateIdleAfterResponse: StateIdle is reported once the response has been
// written, so a hook that closes connections as they go idle does not cut responses
// (pipelined ones included).
func TestConnStateIdleAfterResponse(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: hello(), ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateIdle {
			c.Close()
		}
	}})
	for _, req := range []string{
		"GET /one HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if got := readBody(t, roundTrip(t, c, br, req, "GET")); got != "hello /one" {
			t.Fatalf("response cut by the hook: %q", got)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Fatal("connection open after the hook closed it")
		}
	}
}
