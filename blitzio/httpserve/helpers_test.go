//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

var backends = []blitzio.Backend{blitzio.BackendEpoll, blitzio.BackendIOUring}

// eachBackend runs f once per I/O backend, skipping io_uring where the kernel lacks it.
func eachBackend(t *testing.T, f func(t *testing.T, b blitzio.Backend)) {
	for _, b := range backends {
		t.Run(b.String(), func(t *testing.T) {
			rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: b})
			if err != nil {
				if errors.Is(err, blitzio.ErrBackendUnavailable) || b == blitzio.BackendIOUring {
					t.Skipf("%v: %v", b, err)
				}
				t.Fatal(err)
			}
			rt.Close()
			f(t, b)
		})
	}
}

// watchdog fails the test with a goroutine dump if it is still running after d.
func watchdog(t *testing.T, d time.Duration) func() {
	tm := time.AfterFunc(d, func() {
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		panic(fmt.Sprintf("watchdog: %s still running after %v", t.Name(), d))
	})
	return func() { tm.Stop() }
}

type testServer struct {
	srv    *Server
	rt     *blitzio.Runtime
	addr   string
	served chan error
}

// start serves srv on a loopback port with a runtime of backend b.
func start(t *testing.T, b blitzio.Backend, srv *Server) *testServer {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: srv, rt: rt, addr: l.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(rt, l) }()
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-ts.served:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return 10s after Close")
		}
		rt.Close()
	})
	return ts
}

func (ts *testServer) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// dialSending dials ts and writes raw at once, for a server whose header timeout d
// runs from the accept (as net/http's). A test stalled between its dial and its write
// for longer than d (a loaded CI machine stalls for over a second) sees a correct server
// close the connection before its request came; so an attempt whose write took over
// d/2 (half left for the kernel to deliver the bytes) is dropped and the dial redone.
// An attempt kept wrote well within d: a server that closes it too early still fails.
func (ts *testServer) dialSending(t *testing.T, raw string, d time.Duration) net.Conn {
	t.Helper()
	for attempt := 1; ; attempt++ {
		start := time.Now()
		c := ts.dial(t)
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < d/2 {
			return c
		}
		c.Close()
		if attempt == 100 {
			t.Skipf("100 dials in a row took over %v to write their request: too loaded to check a %v header timeout", d/2, d)
		}
	}
}

// roundTrip writes raw and reads one response.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, raw, method string) *http.Response {
	t.Helper()
	if raw != "" {
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response to %q: %v", raw, err)
	}
	return resp
}

func readBody(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return string(b)
}

// waitFor polls cond until it holds, failing after 10 s (a bound, not a timing
// assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 10s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func goroutines() int { return runtime.NumGoroutine() }

var _ = context.Background
var _ = strings.Contains

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
