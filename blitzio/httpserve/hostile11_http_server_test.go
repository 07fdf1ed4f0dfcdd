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
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h11Runtime is a 2-worker epoll runtime closed at the end of the test.
func h11Runtime(t *testing.T) *blitzio.Runtime {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: blitzio.BackendEpoll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// h11ListenAndServe runs srv.ListenAndServe(rt) on a goroutine; srv.BaseContext (which
// must be nil) is set to learn the listener, whose address it returns.
func h11ListenAndServe(t *testing.T, rt *blitzio.Runtime, srv *Server) (net.Listener, chan error) {
	t.Helper()
	ls := make(chan net.Listener, 1)
	srv.BaseContext = func(l net.Listener) context.Context {
		ls <- l
		return context.Background()
	}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe(rt) }()
	select {
	case l := <-ls:
		return l, served
	case err := <-served:
		t.Fatalf("ListenAndServe returned %v before serving", err)
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not start serving within 10s")
	}
	return nil, nil
}

func h11Get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	resp := roundTrip(t, c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET")
	return resp.StatusCode, readBody(t, resp)
}

func h11Wait(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no result within 10s", what)
	}
	return nil
}

// TestHostile11ListenAndServe: ListenAndServe listens on Addr and serves; Shutdown
// makes it return http.ErrServerClosed and closes the listener; the hooks of
// RegisterOnShutdown run once each, however many times Shutdown and Close are called
// after; ListenAndServe after that returns http.ErrServerClosed without listening.
func TestHostile11ListenAndServe(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	srv := &Server{Addr: "127.0.0.1:0", ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	})}
	var hookA, hookB atomic.Int32
	srv.RegisterOnShutdown(func() { hookA.Add(1) })
	srv.RegisterOnShutdown(func() { hookB.Add(1) })
	l, served := h11ListenAndServe(t, rt, srv)
	addr := l.Addr().String()
	if a, ok := l.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() || a.Port == 0 {
		t.Fatalf("listener address %v, want a loopback port", l.Addr())
	}
	if code, body := h11Get(t, addr, "/a"); code != 200 || body != "hello /a" {
		t.Fatalf("GET: %d %q", code, body)
	}
	if hookA.Load() != 0 || hookB.Load() != 0 {
		t.Fatal("a shutdown hook ran before any shutdown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := h11Wait(t, served, "ListenAndServe after Shutdown"); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServe returned %v, want http.ErrServerClosed", err)
	}
	waitFor(t, "both shutdown hooks", func() bool { return hookA.Load() == 1 && hookB.Load() == 1 })
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the listener is still open after Shutdown")
	}
	// Later calls do not run the hooks again (they have done their work: a hook that
	// closes a channel would panic the second time).
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close after Shutdown: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // give a wrong extra hook call the time to show
	if a, b := hookA.Load(), hookB.Load(); a != 1 || b != 1 {
		t.Fatalf("hooks ran %d and %d times, want once each", a, b)
	}
	// ListenAndServe on a server shut down returns at once, and does not listen.
	srv.Addr = addr
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(rt) }()
	if err := h11Wait(t, done, "ListenAndServe after Shutdown"); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServe after Shutdown: %v, want http.ErrServerClosed", err)
	}
}

// TestHostile11ListenAndServeErrors: a bad address and an address in use are returned
// as errors at once; an empty Addr means ":http" (port 80), as net/http.
func TestHostile11ListenAndServeErrors(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	for _, addr := range []string{"127.0.0.1:notaport", "127.0.0.1:99999", "[::1:80", "192.0.2.1:0"} {
		srv := &Server{Addr: addr}
		done := make(chan error, 1)
		go func() { done <- srv.ListenAndServe(rt) }()
		err := h11Wait(t, done, "ListenAndServe("+addr+")")
		if err == nil || err == http.ErrServerClosed {
			t.Errorf("ListenAndServe(%q) = %v, want an address error", addr, err)
		}
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	srv := &Server{Addr: busy.Addr().String()}
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(rt) }()
	if err := h11Wait(t, done, "ListenAndServe on a port in use"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("ListenAndServe on a port in use: %v, want EADDRINUSE", err)
	}

	// Addr "": port 80. Either it listens there (then BaseContext sees port 80) or the
	// error is about port 80 (in use, or not permitted).
	srv = &Server{Handler: http.NotFoundHandler()}
	ls := make(chan net.Listener, 1)
	srv.BaseContext = func(l net.Listener) context.Context { ls <- l; return context.Background() }
	go func() { done <- srv.ListenAndServe(rt) }()
	select {
	case l := <-ls:
		if a, ok := l.Addr().(*net.TCPAddr); !ok || a.Port != 80 {
			t.Errorf("Addr \"\" listened on %v, want port 80", l.Addr())
		}
		srv.Close()
		if err := h11Wait(t, done, "ListenAndServe on :http after Close"); err != http.ErrServerClosed {
			t.Errorf("after Close: %v", err)
		}
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), ":80") {
			t.Errorf("Addr \"\": %v, want an error about port 80", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe with Addr \"\" neither served nor failed within 10s")
	}
}

// TestHostile11ListenAndServeNilRuntime: ListenAndServe without a runtime returns
// ErrNoRuntime and leaves the port free: the listener it opened must not leak (the
// address could not be listened on again until the process exits).
func TestHostile11ListenAndServeNilRuntime(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	srv := &Server{Addr: addr}
	if err := srv.ListenAndServe(nil); err != ErrNoRuntime {
		t.Fatalf("ListenAndServe(nil) = %v, want ErrNoRuntime", err)
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port stays taken after ListenAndServe(nil): %v", err)
	}
	again.Close()

	// Serve owns its listener, as http.Server.Serve: returning an error of its own, it
	// closes it.
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Server{}).Serve(nil, l); err != ErrNoRuntime {
		t.Fatalf("Serve(nil, l) = %v, want ErrNoRuntime", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatal("Serve(nil, l) left l open")
	}
	path := t.TempDir() + "/s"
	ul, err := blitzio.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Server{}).ServeUnix(nil, ul); err != ErrNoRuntime {
		t.Fatalf("ServeUnix(nil, l) = %v, want ErrNoRuntime", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("ServeUnix(nil, l) left l open")
	}
	if err := (&Server{}).Serve(h11Runtime(t), nil); err != ErrNoRuntime {
		t.Fatalf("Serve(rt, nil) = %v, want ErrNoRuntime", err)
	}
}

// TestHostile11ShutdownHookStopsServer: a RegisterOnShutdown hook that itself calls
// Shutdown and Close (a common "stop everything" hook) neither deadlocks nor runs again.
func TestHostile11ShutdownHookStopsServer(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	srv := &Server{Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()}
	var ran atomic.Int32
	hookDone := make(chan error, 1)
	srv.RegisterOnShutdown(func() {
		ran.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if cerr := srv.Close(); err == nil {
			err = cerr
		}
		hookDone <- err
	})
	_, served := h11ListenAndServe(t, rt, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h11Wait(t, hookDone, "the hook's Shutdown and Close"); err != nil {
		t.Fatalf("in the hook: %v", err)
	}
	if err := h11Wait(t, served, "ListenAndServe"); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServe: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := ran.Load(); n != 1 {
		t.Fatalf("the hook ran %d times", n)
	}
}

// TestHostile11CloseWhileListenAndServe: Close while ListenAndServe serves a busy
// handler: Close returns nil without waiting for the handler, ListenAndServe returns
// http.ErrServerClosed, the hooks run once, and the handler's next write fails.
func TestHostile11CloseWhileListenAndServe(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	entered, release, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	srv := &Server{Addr: "127.0.0.1:0", ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, err := w.Write(bytes.Repeat([]byte("x"), 64<<10))
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		wrote <- err
	})}
	var hooks atomic.Int32
	srv.RegisterOnShutdown(func() { hooks.Add(1) })
	l, served := h11ListenAndServe(t, rt, srv)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start")
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	if err := h11Wait(t, closed, "Close with a busy handler"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h11Wait(t, served, "ListenAndServe after Close"); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServe after Close: %v", err)
	}
	close(release)
	if err := h11Wait(t, wrote, "the handler's write"); err == nil {
		t.Fatal("the handler's write succeeded on a connection Close closed")
	}
	waitFor(t, "the shutdown hook", func() bool { return hooks.Load() == 1 })
	// The client sees the connection closed, without a response.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("client got %q after Close", b)
	}
}

// TestHostile11RegisterOnShutdownConcurrent: hooks registered from many goroutines while
// Shutdown begins run at most once each, and all of those registered before it do.
func TestHostile11RegisterOnShutdownConcurrent(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	srv := &Server{}
	const n = 50
	var ran [n]atomic.Int32
	for i := range n / 2 {
		srv.RegisterOnShutdown(func() { ran[i].Add(1) })
	}
	var wg sync.WaitGroup
	for i := n / 2; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.RegisterOnShutdown(func() { ran[i].Add(1) })
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil { // no Serve: nothing to wait for
		t.Fatal(err)
	}
	wg.Wait()
	srv.Shutdown(ctx)
	waitFor(t, "the hooks registered before Shutdown", func() bool {
		for i := range n / 2 {
			if ran[i].Load() != 1 {
				return false
			}
		}
		return true
	})
	time.Sleep(20 * time.Millisecond)
	for i := range n {
		if v := ran[i].Load(); v > 1 {
			t.Fatalf("hook %d ran %d times", i, v)
		}
	}
}

// TestHostile11BaseContextListener: the net.Listener BaseContext gets reports the
// served address, refuses Accept, and its Close stops the server accepting: Serve then
// returns a non-nil error (http.Server.Serve always does), not http.ErrServerClosed, as
// the server was not shut down; the connection already open keeps being served.
func TestHostile11BaseContextListener(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	ls := make(chan net.Listener, 1)
	srv.BaseContext = func(l net.Listener) context.Context { ls <- l; return context.Background() }
	bl, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, bl) }()
	defer srv.Close()
	l := <-ls
	if l.Addr().String() != bl.Addr().String() {
		t.Fatalf("Addr %v, want %v", l.Addr(), bl.Addr())
	}
	if nc, err := l.Accept(); nc != nil || !errors.Is(err, ErrAcceptByServer) {
		t.Fatalf("Accept = %v, %v", nc, err)
	}
	c, err := net.Dial("tcp", bl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "ok" {
		t.Fatalf("body %q", got)
	}
	if err := l.Close(); err != nil {
		select {
		case serr := <-served:
			t.Fatalf("Close on BaseContext's listener: %v (Serve had returned %v)", err, serr)
		default:
		}
		t.Fatalf("Close on BaseContext's listener: %v", err)
	}
	err = h11Wait(t, served, "Serve after its listener closed")
	if err == nil || err == http.ErrServerClosed {
		t.Errorf("Serve after the listener's Close returned %v, want the accept error", err)
	}
	if c2, err := net.Dial("tcp", bl.Addr().String()); err == nil {
		c2.Close()
		t.Error("the listener still accepts after its Close")
	}
	// The connection accepted before is still served.
	if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "ok" {
		t.Fatalf("body %q on the open connection", got)
	}
}

// TestHostile11DefaultErrorLog: with ErrorLog nil, a handler's panic goes to the log
// package's standard logger, with its value and stack, and the server goes on.
func TestHostile11DefaultErrorLog(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var buf syncBuffer
	prev, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	defer func() { log.SetOutput(prev); log.SetFlags(prevFlags) }()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("h11 boom")
		}
		io.WriteString(w, "fine")
	})})
	c := ts.dial(t)
	io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("a panicking handler's client got %q", b)
	}
	waitFor(t, "the panic in the standard log", func() bool {
		s := buf.String()
		return strings.Contains(s, "h11 boom") && strings.Contains(s, "goroutine")
	})
	if code, body := h11Get(t, ts.addr, "/"); code != 200 || body != "fine" {
		t.Fatalf("after the panic: %d %q", code, body)
	}
}

// TestHostile11WriteHeaderMisuse: WriteHeader called again (logged once, the first
// status stands), after the handler returned or after a hijack (logged once, nothing
// sent, the next request unaffected), and Content-Length values a handler may set
// (two equal values, padded, not a number): the client always gets a well-framed
// response with the body written.
func TestHostile11WriteHeaderMisuse(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var logBuf syncBuffer
	kept := make(chan http.ResponseWriter, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: log.New(&logBuf, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/twice":
			w.WriteHeader(201)
			w.WriteHeader(202)
			w.WriteHeader(203)
			io.WriteString(w, "t")
		case "/keep":
			kept <- w
		case "/hijack":
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			w.WriteHeader(500)
			w.WriteHeader(501)
			bw.WriteString("RAW")
			bw.Flush()
			c.Close()
		case "/cl-two":
			w.Header()["Content-Length"] = []string{"3", "3"}
			io.WriteString(w, "abc")
		case "/cl-space":
			w.Header().Set("Content-Length", " 3")
			io.WriteString(w, "abc")
		case "/cl-bad":
			w.Header().Set("Content-Length", "x")
			io.WriteString(w, "abc")
		default:
			io.WriteString(w, "ok")
		}
	})})
	count := func(s string) int { return strings.Count(logBuf.String(), s) }

	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "GET /twice HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	if got := readBody(t, resp); resp.StatusCode != 201 || got != "t" {
		t.Fatalf("/twice: %d %q", resp.StatusCode, got)
	}
	if n := count("superfluous"); n != 1 {
		t.Fatalf("superfluous WriteHeader logged %d times, want 1:\n%s", n, logBuf.String())
	}

	readBody(t, roundTrip(t, c, br, "GET /keep HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
	w := <-kept
	w.WriteHeader(500)
	w.WriteHeader(502)
	if _, err := io.WriteString(w, "late"); err == nil {
		t.Fatal("Write after the handler returned succeeded")
	}
	if n := count("after the handler returned"); n != 1 {
		t.Fatalf("late WriteHeader logged %d times, want 1:\n%s", n, logBuf.String())
	}
	for _, p := range []string{"/cl-two", "/cl-space", "/cl-bad", "/"} {
		resp := roundTrip(t, c, br, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
		want := "abc"
		if p == "/" {
			want = "ok"
		}
		if got := readBody(t, resp); resp.StatusCode != 200 || got != want || resp.Close {
			t.Fatalf("%s: %d %q close=%v", p, resp.StatusCode, got, resp.Close)
		}
	}
	if n := count(`invalid Content-Length of "x"`); n != 1 {
		t.Fatalf("invalid Content-Length logged %d times:\n%s", n, logBuf.String())
	}

	c2 := ts.dial(t)
	io.WriteString(c2, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(c2); string(b) != "RAW" {
		t.Fatalf("hijacked connection got %q", b)
	}
	// The message is the one of a late WriteHeader: once for /keep, once for /hijack.
	waitFor(t, "the WriteHeader after Hijack to be logged", func() bool { return count("on hijacked connection") >= 2 })
	if n := count("on hijacked connection"); n != 2 {
		t.Fatalf("WriteHeader after Hijack logged %d times, want 1:\n%s", n-1, logBuf.String())
	}
}

// TestHostile11ShutdownRacesListenAndServe: Shutdown called while ListenAndServe is
// starting, at every point of its start: ListenAndServe returns http.ErrServerClosed
// (never hangs, never returns nil) and the port it may have listened on is free again.
func TestHostile11ShutdownRacesListenAndServe(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := h11Runtime(t)
	for i := 0; i < 30; i++ {
		probe, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := probe.Addr().String()
		probe.Close()
		srv := &Server{Addr: addr, Handler: http.NotFoundHandler()}
		done := make(chan error, 1)
		go func() { done <- srv.ListenAndServe(rt) }()
		if i%3 == 1 {
			runtime.Gosched()
		} else if i%3 == 2 {
			time.Sleep(time.Duration(i) * 50 * time.Microsecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: Shutdown: %v", i, err)
		}
		if err := h11Wait(t, done, "ListenAndServe after a racing Shutdown"); err != http.ErrServerClosed {
			t.Fatalf("round %d: ListenAndServe returned %v, want http.ErrServerClosed", i, err)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("round %d: the port is still taken after ListenAndServe returned: %v", i, err)
		}
		l.Close()
	}
}

// TestHostile11WriteDeadlineFromAnotherGoroutine: a write deadline moved into the past
// by another goroutine releases the handler's write parked on a full socket (the client
// does not read), with os.ErrDeadlineExceeded; every later write fails the same way.
func TestHostile11WriteDeadlineFromAnotherGoroutine(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		errs := make(chan error, 2)
		ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			go func() {
				time.Sleep(50 * time.Millisecond) // the write below has filled the socket by now, most likely
				rc.SetWriteDeadline(time.Now().Add(-time.Second))
			}()
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			var err error
			for i := 0; i < 64 && err == nil; i++ { // 64 MB: more than any socket buffer
				_, err = w.Write(chunk)
			}
			errs <- err
			rc.SetWriteDeadline(time.Time{})
			_, err = w.Write(chunk)
			errs <- err
		})})
		c := ts.dial(t)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		for i, what := range []string{"the parked write", "a write after the deadline was cleared"} {
			select {
			case err := <-errs:
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("%s: %v, want os.ErrDeadlineExceeded", what, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s (%d) did not fail within 10s", what, i)
			}
		}
	})
}
