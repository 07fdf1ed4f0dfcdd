//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestLeakedResponseWriterAndBody: a handler that hands its ResponseWriter, body and
// context to a goroutine which uses them after the handler returned gets errors and a
// cancelled context, and the next request on the connection is unaffected.
func TestLeakedResponseWriterAndBody(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	type leaked struct {
		w    http.ResponseWriter
		body io.Reader
		ctx  context.Context
	}
	got := make(chan leaked, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/leak" {
			got <- leaked{w, r.Body, r.Context()}
			io.WriteString(w, "leaker")
			return
		}
		io.WriteString(w, "second")
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	readBody(t, roundTrip(t, c, br, "POST /leak HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST"))
	l := <-got
	if _, err := l.w.Write([]byte("late")); err == nil {
		t.Fatal("a write after the handler returned succeeded")
	}
	if err := http.NewResponseController(l.w).SetReadDeadline(time.Now()); err == nil {
		t.Fatal("a deadline set after the handler returned was accepted (it would cut the next request)")
	}
	if _, err := l.body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Fatalf("a body read after the handler returned: %v", err)
	}
	select {
	case <-l.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context is not cancelled after the handler returned")
	}
	if got := readBody(t, roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "second" {
		t.Fatalf("next response: %q", got)
	}
}

// TestLargeBodies streams a 4 MB upload (Content-Length, read straight into the
// handler's buffer) and a 4 MB download (chunked, written while the socket fills),
// pipelined with a small request.
func TestLargeBodies(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(w, r.Body)
		})})
		data := make([]byte, 4<<20)
		rand.Read(data)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		go func() {
			var req bytes.Buffer
			req.WriteString("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n")
			req.Write(data)
			req.WriteString("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
			c.Write(req.Bytes())
		}()
		resp := roundTrip(t, c, br, "", "POST")
		if got := readBody(t, resp); got != string(data) {
			t.Fatalf("echoed %d bytes, want %d equal ones", len(got), len(data))
		}
		if got := readBody(t, roundTrip(t, c, br, "", "POST")); got != "ok" {
			t.Fatalf("pipelined after a large body: %q", got)
		}
	})
}

func TestMaxBodyBytesChunked(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	readErr := make(chan error, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{MaxBodyBytes: 4, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n0\r\n\r\n", "POST")
	readBody(t, resp)
	var mbe *http.MaxBytesError
	if err := <-readErr; !errors.As(err, &mbe) || mbe.Limit != 4 {
		t.Fatalf("read past MaxBodyBytes: %v", err)
	}
	if !resp.Close {
		t.Fatal("the connection must close after a body over the limit")
	}
}

func TestServeUnix(t *testing.T) {
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
	srv := &Server{Handler: hello()}
	served := make(chan error, 1)
	go func() { served <- srv.ServeUnix(rt, l) }()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}, Timeout: 20 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := client.Get("http://unix/u")
		if err != nil {
			t.Fatal(err)
		}
		if got := readBody(t, resp); got != "hello /u" {
			t.Fatalf("%q", got)
		}
	}
	client.CloseIdleConnections()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("ServeUnix: %v", err)
	}
}

// TestMisuse: nil arguments, Serve after Shutdown, Shutdown and Close twice, a nil
// Handler (http.DefaultServeMux), an invalid status code (the panic is the handler's,
// recovered and logged as net/http does).
func TestMisuse(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var srv Server
	if err := srv.Serve(nil, nil); !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("Serve(nil, nil): %v", err)
	}
	ts := start(t, blitzio.BackendEpoll, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(99)
	})})
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		t.Fatal("a handler panicking on WriteHeader(99) produced a response")
	}
	if err := ts.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	ts.srv.Close()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.Serve(ts.rt, l); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}

	// A nil Handler serves http.DefaultServeMux (404 for an unknown path).
	ts2 := start(t, blitzio.BackendEpoll, &Server{})
	c2 := ts2.dial(t)
	resp := roundTrip(t, c2, bufio.NewReader(c2), "GET /no-such-path-httpserve HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	readBody(t, resp)
	if resp.StatusCode != 404 {
		t.Fatalf("nil Handler: status %d", resp.StatusCode)
	}
}

// TestRuntimeClosedUnderBusyHandler closes the runtime while a handler is blocked: the
// connection is dropped and closed, and the handler's goroutine finishes without a
// panic when it is released.
func TestRuntimeClosedUnderBusyHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	entered, release, finished := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, err := io.WriteString(w, strings.Repeat("x", 64<<10))
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		finished <- err
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err == nil {
		t.Fatal("Serve returned nil after its runtime closed")
	}
	close(release)
	if err := <-finished; err == nil {
		t.Fatal("the handler wrote to a connection whose runtime closed")
	}
	srv.Close()
}

// TestBodyReaderLeftBehind: the handler returns while a goroutine of its own is parked
// reading the body (the client sends no more). The response must still go out, the
// connection close (the body is in use), and the parked read end with an error.
func TestBodyReaderLeftBehind(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	readDone := make(chan error, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := make(chan struct{})
		go func() {
			close(started)
			_, err := io.ReadAll(r.Body)
			readDone <- err
		}()
		<-started
		time.Sleep(10 * time.Millisecond) // let it park in Read; correctness does not depend on it
		io.WriteString(w, "answered")
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", "POST")
	if got := readBody(t, resp); got != "answered" {
		t.Fatalf("%q", got)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the connection stayed open with its body half read by a leftover goroutine")
	}
	if err := <-readDone; err == nil {
		t.Fatal("the leftover read succeeded")
	}
}

// TestPipelinedPartialHeadTimesOut: a whole request followed by half of the next one in
// the same write; the header timeout applies to the half.
func TestPipelinedPartialHeadTimesOut(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	const headerTimeout = 50 * time.Millisecond
	ts := start(t, blitzio.BackendEpoll, &Server{ReadHeaderTimeout: headerTimeout, Handler: hello()})
	// The first head is bound from the accept: dialSending redials a test stalled before
	// its write (its request rightly dropped).
	c := ts.dialSending(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHo", headerTimeout)
	br := bufio.NewReader(c)
	readBody(t, roundTrip(t, c, br, "", "GET"))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("want the connection closed by the header timeout, got %v", err)
	}
}

// TestHugeLimits: limits near math.MaxInt do not overflow into refusing everything.
func TestHugeLimits(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{MaxHeaderBytes: math.MaxInt, MaxBodyBytes: math.MaxInt64, Handler: hello()})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	if got := readBody(t, roundTrip(t, c, br, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "hello /big" {
		t.Fatalf("%q", got)
	}
	// The largest Content-Length net/http accepts, with a body that never comes: the
	// handler does not read it, so the connection closes after the response.
	resp := roundTrip(t, c, br, "POST /max HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n", "POST")
	if readBody(t, resp) != "hello /max" || !resp.Close {
		t.Fatalf("Content-Length MaxInt64: close %v", resp.Close)
	}
	c = ts.dial(t)
	resp = roundTrip(t, c, bufio.NewReader(c), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n", "POST")
	if resp.StatusCode != 400 {
		t.Fatalf("Content-Length beyond int64: %d", resp.StatusCode)
	}
}

// TestOneServerTwoRuntimes serves one Server on listeners of two runtimes at once;
// one Shutdown stops both Serve calls.
func TestOneServerTwoRuntimes(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	srv := &Server{Handler: hello()}
	var addrs []string
	served := make(chan error, 2)
	for i := 0; i < 2; i++ {
		rt, err := blitzio.New(blitzio.Config{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		go func() { served <- srv.Serve(rt, l) }()
	}
	for _, a := range addrs {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if got := readBody(t, roundTrip(t, c, bufio.NewReader(c), "GET /rt HTTP/1.1\r\nHost: x\r\n\r\n", "GET")); got != "hello /rt" {
			t.Fatalf("%q", got)
		}
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve %d: %v", i, err)
		}
	}
}

// TestGoexitReleasesGuard: a handler ending with runtime.Goexit releases its
// Coordinator guard, so the coordinator's Wait does not hang.
func TestGoexitReleasesGuard(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	co := blitzio.NewShutdown()
	ts := start(t, blitzio.BackendEpoll, &Server{Coordinator: co, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runtime.Goexit()
	})})
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after Goexit: %v, want the connection closed", err)
	}
	waitFor(t, "the guard to be released", func() bool { return co.InFlight() == 0 })
}

// TestFragmentedPipelines: several clients at once send pipelines of mixed requests
// (GET, POST with Content-Length, POST chunked) cut into random fragments with random
// pauses, so heads and bodies straddle reads in every way; every response must come
// back complete and in order.
func TestFragmentedPipelines(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
		})})
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Go(func() {
				rng := mrand.New(mrand.NewPCG(uint64(g), 7))
				c, err := net.Dial("tcp", ts.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(60 * time.Second))
				var raw bytes.Buffer
				var want []string
				for i := 0; i < 30; i++ {
					path := "/r" + strconv.Itoa(i)
					body := strings.Repeat(string(rune('a'+i%26)), rng.IntN(3000))
					switch i % 3 {
					case 0:
						raw.WriteString("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
						want = append(want, "GET "+path+" ")
					case 1:
						raw.WriteString("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
						want = append(want, "POST "+path+" "+body)
					case 2:
						raw.WriteString("POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
						for rest := body; len(rest) > 0; {
							n := min(len(rest), 1+rng.IntN(700))
							raw.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n" + rest[:n] + "\r\n")
							rest = rest[n:]
						}
						raw.WriteString("0\r\n\r\n")
						want = append(want, "POST "+path+" "+body)
					}
				}
				go func() {
					data := raw.Bytes()
					for len(data) > 0 {
						n := min(len(data), 1+rng.IntN(200))
						if _, err := c.Write(data[:n]); err != nil {
							return
						}
						data = data[n:]
						if rng.IntN(4) == 0 {
							time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
						}
					}
				}()
				br := bufio.NewReader(c)
				for i, w := range want {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Errorf("client %d response %d: %v", g, i, err)
						return
					}
					got, _ := io.ReadAll(resp.Body)
					if string(got) != w {
						t.Errorf("client %d response %d: %q, want %q", g, i, got, w)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

// TestNoGoroutineLeft: after Shutdown and the runtime's Close, every goroutine the
// server started (handler pool, connection hand-offs) has exited.
func TestNoGoroutineLeft(t *testing.T) {
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
	srv := &Server{Handler: hello()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	tr := &http.Transport{}
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Go(func() {
			for i := 0; i < 20; i++ {
				resp, err := client.Get("http://" + l.Addr().String() + "/")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	tr.CloseIdleConnections()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-served
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's goroutines to exit", func() bool { return goroutines() <= base })
}
