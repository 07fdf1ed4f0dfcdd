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

func hello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	})
}

func TestKeepAliveAndPipelining(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: hello()})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		for i := 0; i < 3; i++ {
			resp := roundTrip(t, c, br, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
			if got := readBody(t, resp); got != "hello /a" || resp.ContentLength != 8 || resp.Close {
				t.Fatalf("keep-alive response %d: %q len %d close %v", i, got, resp.ContentLength, resp.Close)
			}
		}
		// 16 pipelined requests in one write: answered in order.
		var req string
		for i := 0; i < 16; i++ {
			req += "GET /p" + string(rune('a'+i)) + " HTTP/1.1\r\nHost: x\r\n\r\n"
		}
		io.WriteString(c, req)
		for i := 0; i < 16; i++ {
			resp := roundTrip(t, c, br, "", "GET")
			if got, want := readBody(t, resp), "hello /p"+string(rune('a'+i)); got != want {
				t.Fatalf("pipelined response %d: %q, want %q", i, got, want)
			}
		}
	})
}
