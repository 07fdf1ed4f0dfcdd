//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h12bDecode reads the responses in got (the bytes a server sent for raw, then for
// h8Raw's pipelined GET /second) as net/http's client reads them, and describes what
// a client sees: status line, header fields (sorted), framing, body and trailers. The
// chunk sizes a server picks do not count.
func h12bDecode(raw, got string) string {
	var methods []string
	rr := bufio.NewReader(strings.NewReader(raw))
	for {
		req, err := http.ReadRequest(rr)
		if err != nil {
			break
		}
		io.Copy(io.Discard, req.Body)
		methods = append(methods, req.Method)
	}
	methods = append(methods, "GET")
	var out strings.Builder
	br := bufio.NewReader(strings.NewReader(got))
	for _, m := range methods {
		for {
			resp, err := http.ReadResponse(br, &http.Request{Method: m})
			if err != nil {
				fmt.Fprintf(&out, "[read: %v]", err != nil)
				return out.String()
			}
			var hs []string
			for k, vv := range resp.Header {
				hs = append(hs, fmt.Sprintf("%s=%q", k, vv))
			}
			sort.Strings(hs)
			b, berr := io.ReadAll(resp.Body)
			fmt.Fprintf(&out, "%s %s %v te=%v cl=%d close=%v body=%d:%.16q(%v) trailer=%s\n",
				resp.Proto, resp.Status, hs, resp.TransferEncoding, resp.ContentLength, resp.Close, len(b), b, berr != nil, h12TrailerString(resp.Trailer))
			if resp.StatusCode >= 200 || resp.StatusCode == 101 {
				break
			}
		}
	}
	if rest, _ := io.ReadAll(br); len(rest) > 0 {
		fmt.Fprintf(&out, "[extra %q]", rest)
	}
	return out.String()
}

// h12bCompare serves h with net/http and this package and returns what a client sees
// of each server's answer to raw (see h12bDecode).
func h12bCompare(t *testing.T, h http.Handler, raw string) (std, ours string) {
	t.Helper()
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	return h12bDecode(raw, h8Raw(t, stdAddr, raw)), h12bDecode(raw, h8Raw(t, ts.addr, raw))
}

// h12bHandler changes the header map after WriteHeader (or the first Write), with
// bodies below and above the held-back size, around 1xx responses and Flush, and with
// more fields than the pooled storage keeps.
func h12bHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	n, _ := strconv.Atoi(r.URL.Query().Get("n")) // body size
	body := strings.Repeat("b", n)
	switch r.URL.Path {
	case "/second":
		io.WriteString(w, "2")
	case "/after-wh":
		h.Set("X-A", "a")
		h.Set("Content-Type", "text/x-a")
		w.WriteHeader(201)
		h.Set("X-B", "b")
		h.Del("X-A")
		h.Set("Content-Type", "text/x-b")
		h.Set("Connection", "close")
		h.Set("Transfer-Encoding", "identity")
		h.Set("Trailer", "X-T")
		io.WriteString(w, body)
		h.Set("X-T", "t")
	case "/after-write":
		h.Set("X-A", "a")
		io.WriteString(w, body)
		h.Set("X-B", "b")
		h.Del("X-A")
		io.WriteString(w, body)
	case "/cl-set-after":
		w.WriteHeader(200)
		h.Set("Content-Length", strconv.Itoa(n+1))
		io.WriteString(w, body)
	case "/cl-changed":
		h.Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(200)
		h.Set("Content-Length", strconv.Itoa(n+7))
		io.WriteString(w, body)
	case "/cl-removed":
		h.Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(200)
		h.Del("Content-Length")
		io.WriteString(w, body)
	case "/cl-padded":
		h.Set("Content-Length", " "+strconv.Itoa(n)+" ")
		w.WriteHeader(200)
		io.WriteString(w, body)
	case "/1xx":
		h.Set("X-Hint", "1")
		h.Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(103)
		h.Del("X-Hint")
		h.Set("X-Final", "1")
		w.WriteHeader(103)
		h.Set("X-Final", "2")
		w.WriteHeader(200)
		h.Set("X-Late", "1")
		io.WriteString(w, body)
	case "/flush":
		h.Set("X-A", "a")
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		h.Set("X-B", "b")
		h.Set("Content-Length", "1")
		io.WriteString(w, body)
	case "/many":
		// More fields than the pooled storage keeps, then changed after WriteHeader.
		for i := range 45 {
			h.Set(fmt.Sprintf("X-Many-%02d", i), strconv.Itoa(i))
		}
		w.WriteHeader(200)
		for i := range 45 {
			h.Set(fmt.Sprintf("X-Many-%02d", i), "changed")
		}
		h.Set("X-After", "1")
		io.WriteString(w, body)
	case "/few":
		h.Set("X-Few", "1")
		io.WriteString(w, body)
	case "/none":
		io.WriteString(w, body)
	case "/conn-ka-on-close":
		// The handler's keep-alive must not survive a close the request asked for.
		h.Set("Connection", "keep-alive, Upgrade")
		io.WriteString(w, body)
	case "/conn-close-token":
		h["Connection"] = []string{"Upgrade", "x, close"}
		io.WriteString(w, body)
	case "/status":
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		h.Set("X-S", "s")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// TestHostile12SnapshotMatchesNetHTTP: the head is the header map as WriteHeader saw it
// (net/http's snapshot), whatever the handler changes afterwards and whether the head
// is still held back with the body (below the held-back size) or already sent (above
// it, or after a Flush); the Content-Length taken at WriteHeader frames the body; 1xx
// responses are sent from the live map; and pipelined responses share no field.
func TestHostile12SnapshotMatchesNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var cases []string
	for _, n := range []int{0, 5, 2048, 2049, 40 << 10} {
		for _, p := range []string{"/after-wh", "/after-write", "/cl-set-after", "/cl-changed", "/cl-removed", "/1xx", "/flush", "/many"} {
			cases = append(cases, fmt.Sprintf("GET %s?n=%d HTTP/1.1\r\nHost: x\r\n\r\n", p, n))
		}
	}
	for _, n := range []int{3, 3000} {
		// Pipelined: each response's fields are its own handler's.
		cases = append(cases, fmt.Sprintf("GET /many?n=%[1]d HTTP/1.1\r\nHost: x\r\n\r\n"+
			"GET /few?n=%[1]d HTTP/1.1\r\nHost: x\r\n\r\nGET /none?n=%[1]d HTTP/1.1\r\nHost: x\r\n\r\n"+
			"GET /many?n=%[1]d HTTP/1.1\r\nHost: x\r\n\r\nHEAD /few?n=3 HTTP/1.1\r\nHost: x\r\n\r\n"+
			"GET /1xx?n=%[1]d HTTP/1.1\r\nHost: x\r\n\r\nGET /none HTTP/1.1\r\nHost: x\r\n\r\n", n))
		for _, p := range []string{"/conn-ka-on-close"} {
			cases = append(cases,
				fmt.Sprintf("GET %s?n=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p, n),
				fmt.Sprintf("GET %s?n=%d HTTP/1.0\r\nHost: x\r\n\r\n", p, n),
				fmt.Sprintf("GET %s?n=%d HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", p, n))
		}
	}
	for _, raw := range cases {
		std, ours := h12bCompare(t, http.HandlerFunc(h12bHandler), raw)
		if std != ours {
			t.Errorf("%q: responses differ\nnet/http:\n%.3000s\nours:\n%.3000s", raw, std, ours)
		}
	}
}

// TestHostile12HTTP10StatusLineMatchesNetHTTP: an HTTP/1.0 request is answered in
// HTTP/1.0 (the status line, for every kind of status: 1xx, 204, 304, codes without
// a reason phrase), with and without keep-alive, as net/http answers it.
func TestHostile12HTTP10StatusLineMatchesNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, code := range []int{103, 200, 204, 304, 404, 418, 599, 600, 999} {
		for _, form := range []string{
			"GET /status?code=%d&n=3 HTTP/1.0\r\n\r\n",
			"GET /status?code=%d&n=3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
			"HEAD /status?code=%d&n=3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		} {
			raw := fmt.Sprintf(form, code)
			std, ours := h8Compare(t, http.HandlerFunc(h12bHandler), raw)
			if std != ours {
				t.Errorf("%q: responses differ\nnet/http:\n%q\nours:\n%q", raw, std, ours)
			}
		}
	}
}
