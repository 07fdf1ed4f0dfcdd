//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestPooledResponseHeaders: response header maps are reused between requests, so a
// header one response set must not reach the next one; a handler that kept its
// ResponseWriter gets a map of its own from Header after returning; line breaks in
// values never split a header (no injection), on the fast path of the formatter too.
func TestPooledResponseHeaders(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	leaked := make(chan http.ResponseWriter, 1)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/set":
			w.Header().Set("X-Only-Once", "1")
			w.Header().Set("X-Inject", "a\r\nInjected: yes\nalso")
			select {
			case leaked <- w:
			default:
			}
		}
		io.WriteString(w, r.URL.Path)
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br, "GET /set HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	readBody(t, resp)
	if resp.Header.Get("X-Only-Once") != "1" || resp.Header.Get("X-Inject") != "a  Injected: yes also" || resp.Header.Get("Injected") != "" {
		t.Fatalf("first response headers: %v", resp.Header)
	}
	w := <-leaked
	for i := 0; i < 20; i++ {
		// The leaked writer's Header is not the map the server now lends to others.
		h := w.Header()
		if len(h) != 0 {
			t.Fatalf("Header after the handler returned: %v", h)
		}
		h.Set("X-Leaked", "1")
		resp := roundTrip(t, c, br, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
		if got := readBody(t, resp); got != "/other" || resp.Header.Get("X-Only-Once") != "" || resp.Header.Get("X-Leaked") != "" {
			t.Fatalf("request %d after /set: body %q headers %v", i, got, resp.Header)
		}
	}
}

// TestPipelinedBatchStrings: the heads of a pipelined batch share one string; a body
// in the middle of the batch that looks like a request head stays a body, and every
// request gets its own path, header and body.
func TestPipelinedBatchStrings(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-N")+" "+string(b))
	})})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	const fake = "GET /evil HTTP/1.1\r\nHost: x\r\n\r\n"
	var req string
	var want []string
	for i := range 12 {
		n := string(rune('a' + i))
		if i == 5 {
			req += "POST /post HTTP/1.1\r\nHost: x\r\nX-N: " + n + "\r\nContent-Length: " + itoa(len(fake)) + "\r\n\r\n" + fake
			want = append(want, "POST /post "+n+" "+fake)
			continue
		}
		req += "GET /p" + n + " HTTP/1.1\r\nHost: x\r\nX-N: " + n + "\r\n\r\n"
		want = append(want, "GET /p"+n+" "+n+" ")
	}
	for round := range 3 {
		io.WriteString(c, req)
		for i, w := range want {
			if got := readBody(t, roundTrip(t, c, br, "", "GET")); got != w {
				t.Fatalf("round %d, response %d: %q, want %q", round, i, got, w)
			}
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
