//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h4Result is what a client sees for one exchange: the raw response head, the body,
// and whether the connection was still usable for a second request afterwards.
type h4Result struct {
	status  int
	header  http.Header
	body    string
	bodyErr error
	reused  bool
}

// h4StartNetHTTP serves h with net/http on a loopback port.
func h4StartNetHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ErrorLog: discardLog()}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return l.Addr().String()
}

// h4Exchange sends raw on a new connection, reads one response (for method), then sends
// a plain GET and reports whether it was answered.
func h4Exchange(t *testing.T, addr, raw, method string) h4Result {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s: reading response to %q: %v", addr, raw, err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	b, berr := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := h4Result{status: resp.StatusCode, header: resp.Header, body: string(b), bodyErr: berr}
	if berr != nil {
		return r
	}
	if _, err := io.WriteString(c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
		if resp2, err := http.ReadResponse(br, nil); err == nil {
			io.ReadAll(resp2.Body)
			r.reused = true
		}
	}
	return r
}

// h4Both runs the same handler on net/http and on this package and returns what a
// client sees from each for the same bytes.
func h4Both(t *testing.T, h http.Handler, raw, method string) (std, ours h4Result) {
	t.Helper()
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	return h4Exchange(t, stdAddr, raw, method), h4Exchange(t, ts.addr, raw, method)
}

// TestHostile4ResponseTEIdentity: a handler setting "Transfer-Encoding: identity" (the
// Server-Sent Events recommendation net/http's server code cites) gets, from net/http,
// a body delimited by the close with no Transfer-Encoding header. A response that
// carries "Transfer-Encoding: identity" is refused by net/http's own client
// ("unsupported transfer encoding").
func TestHostile4ResponseTEIdentity(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			return
		}
		w.Header().Set("Transfer-Encoding", "identity")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: hello\n\n")
	})
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, tc := range []struct{ name, addr string }{{"net/http", stdAddr}, {"httpserve", ts.addr}} {
		cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
		resp, err := cl.Get("http://" + tc.addr + "/")
		if err != nil {
			t.Errorf("%s: net/http's client: %v", tc.name, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "data: hello\n\n" {
			t.Errorf("%s: body %q, %v", tc.name, b, err)
		}
		if te := resp.Header.Get("Transfer-Encoding"); te != "" || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: Transfer-Encoding %q %q", tc.name, te, resp.TransferEncoding)
		}
	}
}

// TestHostile4ResponseTEAndContentLength: a handler that sets both Content-Length and
// "Transfer-Encoding: chunked". net/http logs it and drops the Content-Length; a
// message with both is forbidden (RFC 9112 section 6.2: "A sender MUST NOT send a
// Content-Length header field in any message that contains a Transfer-Encoding header
// field"), and is the stuff of response smuggling through intermediaries.
func TestHostile4ResponseTEAndContentLength(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			return
		}
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "hello")
	})
	std := h4Exchange(t, h4StartNetHTTP(t, h), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
	if std.header.Get("Content-Length") != "" {
		t.Fatalf("net/http sent Content-Length %q", std.header.Get("Content-Length"))
	}
	// http.ReadResponse drops Content-Length when chunked: read the raw head instead.
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	c := ts.dial(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	head := h4RawHead(t, c)
	lower := strings.ToLower(head)
	if strings.Contains(lower, "content-length:") && strings.Contains(lower, "transfer-encoding:") {
		t.Fatalf("response carries both Content-Length and Transfer-Encoding:\n%s", head)
	}
}

// h4RawHead reads a response head up to the empty line.
func h4RawHead(t *testing.T, c net.Conn) string {
	t.Helper()
	br := bufio.NewReader(c)
	var sb strings.Builder
	for {
		line, err := br.ReadString('\n')
		sb.WriteString(line)
		if err != nil {
			t.Fatalf("reading head: %v (so far %q)", err, sb.String())
		}
		if line == "\r\n" {
			return sb.String()
		}
	}
}

// TestHostile4HeadWithHandlerTE: a HEAD whose handler sets "Transfer-Encoding: chunked"
// (as the GET handler it shares would). net/http deletes the header (no body) and keeps
// the connection.
func TestHostile4HeadWithHandlerTE(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			return
		}
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "hello")
	})
	std, ours := h4Both(t, h, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD")
	if std.status != ours.status || std.reused != ours.reused {
		t.Fatalf("net/http: %d reused=%v; httpserve: %d reused=%v", std.status, std.reused, ours.status, ours.reused)
	}
}

// TestHostile4ExpectTokenList: net/http looks for the 100-continue token in Expect's
// comma-separated list (Request.expectsContinue, hasToken); only an Expect without it
// gets 417.
func TestHostile4ExpectTokenList(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	for _, ex := range []string{"100-continue, x-foo", "100-Continue ", "x-foo,100-continue"} {
		raw := "POST / HTTP/1.1\r\nHost: x\r\nExpect: " + ex + "\r\nContent-Length: 3\r\n\r\nabc"
		std, ours := h4Both(t, h, raw, "POST")
		if std.status != ours.status || std.body != ours.body {
			t.Errorf("Expect %q: net/http %d %q; httpserve %d %q", ex, std.status, std.body, ours.status, ours.body)
		}
	}
}
