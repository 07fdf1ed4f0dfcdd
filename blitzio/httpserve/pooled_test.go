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
