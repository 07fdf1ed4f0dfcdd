//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h11Transcript writes parts to addr on one connection (waiting for wait, if not nil,
// after the first part), then reads responses until the server closes the
// connection, and returns "status body" for each.
func h11Transcript(t *testing.T, addr string, parts []string, wait func()) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for i, p := range parts {
		if _, err := io.WriteString(c, p); err != nil {
			break // the server may have closed already (a refused head)
		}
		if i == 0 && wait != nil {
			wait()
		}
	}
	var got []string
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server did not close the connection within 10s (responses so far: %v)", got)
			}
			return got
		}
		b, _ := io.ReadAll(resp.Body)
		got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, b))
	}
}

// TestHostile11PipelinedSameAsNetHTTP: pipelined requests where the second is malformed,
// too large, or preceded by the CRLF old clients add after a POST body, sent in one
// write or while the first handler runs: this package answers with the same statuses and
// bodies, in the same order, as net/http, and closes the connection where it does.
func TestHostile11PipelinedSameAsNetHTTP(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	var mu sync.Mutex
	gate := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			mu.Lock()
			g := gate
			mu.Unlock()
			select {
			case <-g:
			case <-time.After(10 * time.Second):
			}
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%s", r.URL.Path, b)
	})
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	getClose := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" }
	tooLarge := func(first string) []string {
		return []string{"200 " + first, "431 431 Request Header Fields Too Large"}
	}
	bigHead := "GET /big HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 5000) + "\r\n\r\n"
	cases := []struct {
		name  string
		parts []string
		slow  bool // the first request is /slow: the rest is sent while it runs
		max   int  // MaxHeaderBytes
		// want, when set, is what is expected instead of net/http's answer: net/http
		// leaves a pipelined head over its limit unanswered (the connection hangs
		// until the client gives up); a 431 and the close are what it answers such
		// a head sent alone.
		want []string
	}{
		{"second-malformed", []string{get("/a") + "BAD\r\n\r\n"}, false, 0, nil},
		{"second-malformed-late", []string{get("/slow"), "GET / HTTP/9.9\r\nHost: x\r\n\r\n"}, true, 0, nil},
		{"second-bad-header", []string{get("/a") + "GET /b HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n"}, false, 0, nil},
		{"third-malformed", []string{get("/a") + get("/b") + "GET /c HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n"}, false, 0, nil},
		{"post-crlf-then-get", []string{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\r\n" + getClose("/g")}, false, 0, nil},
		{"post-crlf-during-handler", []string{"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\r\n", getClose("/g")}, true, 0, nil},
		{"post-lf-then-get", []string{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\n" + getClose("/g")}, false, 0, nil},
		{"second-too-large-late", []string{get("/slow"), "GET /x HTTP/1.1\r\nHost: x\r\nX-Huge: " + strings.Repeat("h", 9000)}, true, 1000, tooLarge("/slow:")},
		{"big-then-too-large", []string{bigHead + "GET /x HTTP/1.1\r\nHost: x\r\nX-Huge: " + strings.Repeat("h", 6000)}, false, 1000, tooLarge("/big:")},
		{"big-then-ok", []string{bigHead + getClose("/after")}, false, 1000, nil},
	}
	for _, tc := range cases {
		stdSrv := &http.Server{Handler: h, ErrorLog: discardLog(), MaxHeaderBytes: tc.max}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go stdSrv.Serve(l)
		ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog(), MaxHeaderBytes: tc.max})
		var std []string
		if tc.want != nil {
			std = tc.want
		} else {
			std = h11RunScript(t, &mu, &gate, l.Addr().String(), tc.parts, tc.slow)
		}
		ours := h11RunScript(t, &mu, &gate, ts.addr, tc.parts, tc.slow)
		stdSrv.Close()
		if strings.Join(std, "|") != strings.Join(ours, "|") {
			t.Errorf("%s:\n net/http:  %q\n httpserve: %q", tc.name, std, ours)
		}
	}
}

// TestHostile11CRLFAfterPostAlone: the CRLF an old client adds after a POST body arrives
// alone (the next request comes only after the response): it is skipped, and the next
// request is served, as by net/http.
func TestHostile11CRLFAfterPostAlone(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%s", r.URL.Path, b)
	})
	check := func(t *testing.T, addr string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for i, step := range []struct{ raw, want string }{
			{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\r\n", "/p:abc"},
			{"GET /g HTTP/1.1\r\nHost: x\r\n\r\n", "/g:"},
			{"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz\r\n", "/q:z"},
			{"GET /i HTTP/1.1\r\nHost: x\r\n\r\n", "/i:"},
		} {
			resp, err := func() (*http.Response, error) {
				io.WriteString(c, step.raw)
				return http.ReadResponse(br, nil)
			}()
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			got := readBody(t, resp)
			if resp.StatusCode != 200 || got != step.want {
				t.Fatalf("step %d: %d %q, want %q", i, resp.StatusCode, got, step.want)
			}
		}
	}
	t.Run("net/http", func(t *testing.T) { check(t, h4StartNetHTTP(t, h)) })
	t.Run("httpserve", func(t *testing.T) {
		check(t, start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()}).addr)
	})
}

// h11RunScript runs one pipelining script: a fresh gate for /slow, opened 30 ms after
// the first part is written when slow (the rest is written meanwhile), at once
// otherwise.
func h11RunScript(t *testing.T, mu *sync.Mutex, gate *chan struct{}, addr string, parts []string, slow bool) []string {
	t.Helper()
	g := make(chan struct{})
	mu.Lock()
	*gate = g
	mu.Unlock()
	var once sync.Once
	open := func() { once.Do(func() { close(g) }) }
	defer open()
	if !slow {
		open()
		return h11Transcript(t, addr, parts, nil)
	}
	return h11Transcript(t, addr, parts, func() {
		time.AfterFunc(30*time.Millisecond, open)
	})
}

// TestHostile11PipelinedBatchWithBodies: many pipelined requests with bodies, sent in
// one write crossing several read buffers, are answered in order, each with its own
// body, with ConnState set (each response flushed before StateIdle) and without.
func TestHostile11PipelinedBatchWithBodies(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, withState := range []bool{false, true} {
		var idle atomic.Int32
		srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(499)
				return
			}
			fmt.Fprintf(w, "%s=%d", r.URL.Path, len(b))
		})}
		if withState {
			srv.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateIdle {
					idle.Add(1)
				}
			}
		}
		ts := start(t, blitzio.BackendEpoll, srv)
		var raw strings.Builder
		const n = 60
		for i := range n {
			size := (i * 397) % 3000
			if i%3 == 0 {
				fmt.Fprintf(&raw, "POST /%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", i, size, strings.Repeat("q", size))
			} else if i%3 == 1 {
				fmt.Fprintf(&raw, "POST /%d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", i, size+1, strings.Repeat("c", size+1))
			} else {
				fmt.Fprintf(&raw, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			}
		}
		c := ts.dial(t)
		go io.WriteString(c, raw.String())
		br := bufio.NewReader(c)
		for i := range n {
			resp := roundTrip(t, c, br, "", "GET")
			want := fmt.Sprintf("/%d=0", i)
			if size := (i * 397) % 3000; i%3 == 0 {
				want = fmt.Sprintf("/%d=%d", i, size)
			} else if i%3 == 1 {
				want = fmt.Sprintf("/%d=%d", i, size+1)
			}
			if got := readBody(t, resp); got != want {
				t.Fatalf("ConnState %v: response %d: %d %q, want %q", withState, i, resp.StatusCode, got, want)
			}
		}
		if withState {
			// StateIdle comes once a response is on the wire: after the client has it.
			waitFor(t, "StateIdle after each of the kept-alive responses", func() bool { return idle.Load() >= n })
		}
	}
}

// TestHostile11ResetAfterRefusal: clients that reset the connection (SO_LINGER 0)
// right after a request the server refuses (431 while it lingers, 400 while it writes
// its answer) leave no connection tracked, and the server serves the next client.
func TestHostile11ResetAfterRefusal(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	srv := &Server{ErrorLog: discardLog(), MaxHeaderBytes: 100, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	ts := start(t, blitzio.BackendEpoll, srv)
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		var raw string
		if i%2 == 0 {
			raw = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 5000) + "\r\n\r\n"
		} else {
			raw = "BAD\r\n\r\n"
		}
		io.WriteString(c, raw)
		if i%4 < 2 {
			// Reset after the answer has started to come back (the server lingers).
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			one := make([]byte, 1)
			c.Read(one)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	if code, body := h11Get(t, ts.addr, "/"); code != 200 || body != "ok" {
		t.Fatalf("after the resets: %d %q", code, body)
	}
	waitFor(t, "every refused connection to be forgotten", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.conns) == 0
	})
}

// TestHostile11LingerDrainsClient: after a 413 (Content-Length over MaxBodyBytes) the
// server half-closes and drains what the client still sends, so that the client reads
// the whole answer instead of a reset; then it closes.
func TestHostile11LingerDrainsClient(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	srv := &Server{ErrorLog: discardLog(), MaxBodyBytes: 10, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the handler ran for a refused request")
	})}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
	go func() {
		chunk := strings.Repeat("z", 16<<10)
		for i := 0; i < 8; i++ {
			if _, err := io.WriteString(c, chunk); err != nil {
				return // the server closed after its drain: expected
			}
		}
	}()
	resp := roundTrip(t, c, bufio.NewReader(c), "", "POST")
	readBody(t, resp)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	waitFor(t, "the refused connection to be forgotten", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.conns) == 0
	})
}
