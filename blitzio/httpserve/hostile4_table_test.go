//go:build linux || darwin || freebsd

package httpserve

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile4SameAsNetHTTP sends the same hostile bytes to net/http and to this
// package, with the same handler, and compares the status, the body and whether the
// connection served a second request.
func TestHostile4SameAsNetHTTP(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/second":
			return
		case "/noread":
			io.WriteString(w, "n")
			return
		case "/close":
			r.Body.Close()
			io.WriteString(w, "c")
			return
		case "/head":
			io.WriteString(w, strings.Repeat("h", 5000))
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(499)
			return
		}
		w.Write(b)
	})
	big := strings.Repeat("x", 300<<10)
	cases := []struct{ name, raw, method string }{
		{"te+cl", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"cl+te", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"te-case", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ChUnKeD\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"http10-te+cl", "POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"chunk-ext", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b;c=\"d\"\r\nabc\r\n0\r\n\r\n", "POST"},
		{"chunk-trailer", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n", "POST"},
		{"chunk-bad-size", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", "POST"},
		{"chunk-size-ws", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n", "POST"},
		{"chunk-bare-lf", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", "POST"},
		{"chunk-overrun", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", "POST"},
		{"chunk-neg", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"chunk-0x", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"te-list", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"te-two-lines", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "POST"},
		{"te-identity", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"cl-dup-same", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"cl-dup-diff", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "POST"},
		{"cl-comma", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", "POST"},
		{"cl-plus", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc", "POST"},
		{"cl-empty", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", "POST"},
		{"body-longer-than-cl", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGARBAGE\r\n\r\n", "POST"},
		{"noread-small", "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "POST"},
		{"noread-big", "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big, "POST"},
		{"close-small", "POST /close HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "POST"},
		{"noread-chunked-small", "POST /noread HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "POST"},
		{"expect-noread", "POST /noread HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", "POST"},
		{"expect-http10", "POST / HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"expect-other", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"expect-empty", "POST / HTTP/1.1\r\nHost: x\r\nExpect: \r\nContent-Length: 3\r\n\r\nabc", "POST"},
		{"head-big", "HEAD /head HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD"},
		{"two-hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "GET"},
		{"host-bad", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "GET"},
		{"no-host-10", "GET / HTTP/1.0\r\n\r\n", "GET"},
		{"abs-uri", "GET http://other/p HTTP/1.1\r\nHost: x\r\n\r\n", "GET"},
		{"version-11x", "GET / HTTP/1.10\r\nHost: x\r\n\r\n", "GET"},
		{"version-2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", "GET"},
		{"options-star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS"},
		{"connect", "CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", "CONNECT"},
		{"nul-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", "GET"},
		{"lf-only", "GET / HTTP/1.1\nHost: x\n\n", "GET"},
		{"space-before-colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", "GET"},
		{"conn-close-token", "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n", "GET"},
	}
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, tc := range cases {
		std := h4Exchange(t, stdAddr, tc.raw, tc.method)
		ours := h4Exchange(t, ts.addr, tc.raw, tc.method)
		if std.status != ours.status || std.body != ours.body || std.reused != ours.reused {
			t.Errorf("%s:\n net/http:  %d %.40q reused=%v\n httpserve: %d %.40q reused=%v", tc.name,
				std.status, std.body, std.reused, ours.status, ours.body, ours.reused)
		}
	}
}
