//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile4CloseUnblocksParkedHandler: Server.Close while a handler is parked in a
// Write (the client does not read) or in a body Read (the client stalls mid-body).
// With net/http, Close closes the net.Conn and the blocked Write/Read returns an error
// at once; the handler must not stay blocked forever.
func TestHostile4CloseUnblocksParkedHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		entered := make(chan string, 2)
		returned := make(chan string, 2)
		srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- r.URL.Path
			var err error
			switch r.URL.Path {
			case "/write":
				chunk := make([]byte, 64<<10)
				for err == nil {
					_, err = w.Write(chunk)
				}
			case "/read":
				_, err = io.ReadAll(r.Body)
			}
			returned <- r.URL.Path + ": " + errString(err)
		})}
		ts := start(t, b, srv)
		cw := ts.dial(t)
		io.WriteString(cw, "GET /write HTTP/1.1\r\nHost: x\r\n\r\n")
		cr := ts.dial(t)
		io.WriteString(cr, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
		<-entered
		<-entered
		// Let the writer fill the socket: wait until the server's write would block.
		time.Sleep(50 * time.Millisecond)
		srv.Close()
		for i := 0; i < 2; i++ {
			select {
			case s := <-returned:
				t.Log(s)
			case <-time.After(10 * time.Second):
				t.Fatalf("a handler still blocked 10s after Server.Close (%d of 2 returned)", i)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestHostile4PipelinedThenHalfClose: three pipelined requests then the client's write
// side closed: net/http answers all three before closing.
func TestHostile4PipelinedThenHalfClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.URL.Path)
		})})
		for round := 0; round < 20; round++ {
			c := ts.dial(t)
			io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nxyGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
			c.(*net.TCPConn).CloseWrite()
			br := bufio.NewReader(c)
			for _, want := range []string{"/a", "/b", "/c"} {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("round %d: response %s: %v", round, want, err)
				}
				if got := readBody(t, resp); got != want {
					t.Fatalf("round %d: got %q, want %q", round, got, want)
				}
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("round %d: after the responses: %v, want EOF", round, err)
			}
			c.Close()
		}
	})
}

// TestHostile4ShutdownCloseConcurrent: Shutdown twice and Close, concurrently, with a
// handler in flight, an idle connection and a half-received head: nothing panics, all
// return, Serve returns ErrServerClosed, and the in-flight response is complete or cut
// (never hung).
func TestHostile4ShutdownCloseConcurrent(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for round := 0; round < 10; round++ {
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				entered <- struct{}{}
				<-release
			}
			io.WriteString(w, "ok")
		})}
		ts := start(t, blitzio.BackendEpoll, srv)
		idle := ts.dial(t)
		readBody(t, roundTrip(t, idle, bufio.NewReader(idle), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"))
		half := ts.dial(t)
		io.WriteString(half, "GET / HTTP/1.1\r\nHo")
		busy := ts.dial(t)
		io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				errs <- srv.Shutdown(ctx)
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs <- srv.Close() }()
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for _, c := range []net.Conn{idle, half} {
			if _, err := bufio.NewReader(c).ReadByte(); err == nil {
				t.Fatalf("round %d: bytes on a connection that should be closed", round)
			}
		}
		// busy: either the full response or a closed connection, never a hang.
		if resp, err := http.ReadResponse(bufio.NewReader(busy), nil); err == nil {
			b, err := io.ReadAll(resp.Body)
			if err == nil && string(b) != "ok" {
				t.Fatalf("round %d: busy body %q", round, b)
			}
		}
		select {
		case err := <-ts.served:
			ts.served <- err
			if !strings.Contains(errString(err), "closed") {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return")
		}
	}
}

// TestHostile4OneServerTwoListeners: the same Server serves two listeners; Shutdown stops
// both Serve calls with ErrServerClosed, and a third Serve after it returns at once.
func TestHostile4OneServerTwoListeners(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: blitzio.BackendEpoll})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	states := map[http.ConnState]int{}
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), ConnState: func(c net.Conn, s http.ConnState) {
		mu.Lock()
		states[s]++
		mu.Unlock()
	}}
	served := make(chan error, 3)
	var addrs []string
	for i := 0; i < 2; i++ {
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
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if got := readBody(t, roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET")); got != "ok" {
			t.Fatalf("%s: %q", a, got)
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	l3, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { served <- srv.Serve(rt, l3) }()
	for i := 0; i < 3; i++ {
		select {
		case err := <-served:
			if err != http.ErrServerClosed {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Serve did not return after Shutdown")
		}
	}
	waitFor(t, "StateClosed for both connections", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return states[http.StateClosed] == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if states[http.StateNew] != 2 || states[http.StateActive] != 2 {
		t.Fatalf("states: %v", states)
	}
}
