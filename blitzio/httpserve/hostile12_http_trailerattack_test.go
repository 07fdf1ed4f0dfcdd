//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h12aHandler answers by path; what the request's body and Trailer looked like to the
// handler goes into the response body (errors as a bool only: the two servers' error
// texts differ by design).
func h12aHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch r.URL.Path {
	case "/second":
		io.WriteString(w, "2")
	case "/ignore":
		// The body is left unread: the server discards it, trailers and all.
		io.WriteString(w, "ignored")
	case "/ignore-flushed":
		io.WriteString(w, "ignored")
		w.(http.Flusher).Flush()
	case "/read":
		before := h12TrailerString(r.Trailer)
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "before=%s n=%d err=%v after=%s", before, len(b), err != nil, h12TrailerString(r.Trailer))
	case "/close-early":
		// Close discards the rest, trailers included: the handler sees their values.
		err := r.Body.Close()
		_, rerr := r.Body.Read(make([]byte, 1))
		fmt.Fprintf(w, "close=%v read=%v trailer=%s", err != nil, rerr, h12TrailerString(r.Trailer))
	case "/resp-trailer-after-wh":
		// A Trailer field set after WriteHeader is not in the head's snapshot: the
		// response is not chunked for it, and nothing is declared.
		w.WriteHeader(200)
		h.Set("Trailer", "X-T")
		io.WriteString(w, "body")
		h.Set("X-T", "v")
	case "/resp-prefix-after-wh":
		w.WriteHeader(200)
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-P", "p")
	case "/resp-prefix-after-flush":
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		h.Set(http.TrailerPrefix+"X-P", "p")
		h.Set("Trailer", "X-Late") // not in the snapshot: not declared
		h.Set("X-Late", "no")
	case "/resp-trailer-flush-first":
		h.Set("Trailer", "X-T")
		w.(http.Flusher).Flush()
		h.Set("X-T", "v")
	case "/resp-trailer-204":
		h.Set("Trailer", "X-T")
		h.Set(http.TrailerPrefix+"X-P", "p")
		w.WriteHeader(204)
		h.Set("X-T", "v")
	case "/resp-trailer-304":
		h.Set("Trailer", "X-T")
		w.WriteHeader(304)
		h.Set("X-T", "v")
	case "/resp-trailer-big":
		h.Set("Trailer", "X-Big")
		io.WriteString(w, "body")
		h.Set("X-Big", strings.Repeat("v", 40<<10))
	case "/resp-trailer-big-body":
		h.Set("Trailer", "X-T")
		io.WriteString(w, strings.Repeat("b", 40<<10))
		h.Set("X-T", "v")
	case "/resp-trailer-crlf":
		h.Set("Trailer", "X-T, X-U")
		io.WriteString(w, "body")
		h.Set("X-T", "a\r\nInjected: 1")
		h["X-U"] = []string{"  padded\t", "two"}
		h[http.TrailerPrefix+"Bad Name"] = []string{"v"}
		h[http.TrailerPrefix+"X-Nl"] = []string{"x\ny"}
	case "/resp-trailer-noncanon":
		h["trailer"] = []string{"x-t"} // not the canonical key: no Trailer field at all
		h.Set("Trailer", "x-u , X-V,,")
		io.WriteString(w, "body")
		h["x-u"] = []string{"not found: the declared name is canonical"}
		h.Set("X-U", "u")
		h.Set("X-V", "v1")
		h.Add("X-V", "v2")
		h.Set(http.TrailerPrefix+"X-V", "p") // both forms: both sent
	case "/resp-trailer-hijack":
		h.Set("Trailer", "X-T")
		io.WriteString(w, "body")
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		bw.WriteString("RAW")
		bw.Flush()
		c.Close()
	case "/resp-trailer-panic":
		h.Set("Trailer", "X-T")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		h.Set("X-T", "v")
		panic(http.ErrAbortHandler)
	case "/resp-trailer-panic-held":
		h.Set("Trailer", "X-T")
		io.WriteString(w, "body")
		h.Set("X-T", "v")
		panic(http.ErrAbortHandler)
	case "/resp-trailer-1xx":
		h.Set("Trailer", "X-T")
		h.Set(http.TrailerPrefix+"X-P", "p")
		h.Set("Link", "</a>")
		w.WriteHeader(103)
		h.Del("Link")
		io.WriteString(w, "body")
		h.Set("X-T", "v")
	}
}

// h12aChunked is a chunked POST to path with the given Trailer declaration (none if
// empty), a 4-byte body and the trailer section's lines (without the final CRLF).
func h12aChunked(path, extra, decl, trailer string) string {
	s := "POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + extra
	if decl != "" {
		s += "Trailer: " + decl + "\r\n"
	}
	return s + "\r\n4\r\nbody\r\n0\r\n" + trailer + "\r\n"
}

// h12aTrailerOf returns trailer lines "X-Pad: vvv" whose section (the lines, each with
// its CRLF, and the final CRLF) is size bytes long.
func h12aTrailerOf(size int) string {
	const pre = "X-Pad: "
	n := size - 2 - len(pre) - 2
	return pre + strings.Repeat("v", n) + "\r\n"
}

func h12aMany(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-F%d: %d\r\n", i%40, i)
	}
	return b.String()
}

// TestHostile12RequestTrailersMatchNetHTTP: request trailers read by the handler, by an
// early Close, and by the server's discard of a body the handler left unread (the
// pipelined request after it must then be answered, or the connection closed as
// net/http closes it), at and past the trailer section's size bound, invalid,
// duplicated, many, and after a 100-continue.
func TestHostile12RequestTrailersMatchNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	cases := []string{
		h12aChunked("/ignore", "", "X-A", "X-A: 1\r\nX-B: 2\r\n"),
		h12aChunked("/ignore-flushed", "", "X-A", "X-A: 1\r\n"),
		h12aChunked("/read", "", "X-A, X-Never", "X-A: 1\r\nx-a: 2\r\nX-A: 3\r\n"),
		h12aChunked("/read", "", "", h12aMany(150)),
		h12aChunked("/close-early", "", "X-A, X-Gone", "X-A: 1\r\n"),
		h12aChunked("/close-early", "", "", ""),
		// The section's bound: 4096 bytes with its final CRLF pass, 4097 do not.
		h12aChunked("/read", "", "", h12aTrailerOf(4096)),
		h12aChunked("/read", "", "", h12aTrailerOf(4097)),
		h12aChunked("/ignore", "", "", h12aTrailerOf(4096)),
		h12aChunked("/ignore", "", "", h12aTrailerOf(4097)),
		h12aChunked("/close-early", "", "", h12aTrailerOf(4097)),
		// Expect: 100-continue with a chunked body and trailers.
		h12aChunked("/read", "Expect: 100-continue\r\n", "X-A", "X-A: 1\r\n"),
	}
	// Invalid trailer lines, read by the handler and by the server's discard.
	for _, bad := range []string{
		"X-A 1\r\n", ": v\r\n", "X A: v\r\n", "X-A: a\x00b\r\n", " folded: v\r\n",
		"X-A: 1\rX-B: 2\r\n",
	} {
		cases = append(cases, h12aChunked("/read", "", "X-A", bad), h12aChunked("/ignore", "", "X-A", bad))
	}
	for _, raw := range cases {
		std, ours := h8Compare(t, http.HandlerFunc(h12aHandler), raw)
		if std != ours {
			t.Errorf("%.300q: responses differ\nnet/http:\n%.2000q\nours:\n%.2000q", raw, std, ours)
		}
	}
}

// TestHostile12ResponseTrailersMatchNetHTTP: response trailers declared or prefixed
// before and after WriteHeader and Flush, with 1xx, 204, 304, HEAD, HTTP/1.0, a
// hijack, a panic, large values, line breaks and names that are not canonical: the
// bytes are net/http's.
func TestHostile12ResponseTrailersMatchNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	paths := []string{
		"/resp-trailer-after-wh", "/resp-prefix-after-wh", "/resp-prefix-after-flush",
		"/resp-trailer-flush-first", "/resp-trailer-204", "/resp-trailer-304",
		"/resp-trailer-big", "/resp-trailer-crlf",
		"/resp-trailer-noncanon", "/resp-trailer-panic",
		"/resp-trailer-panic-held", "/resp-trailer-1xx",
	}
	for _, p := range paths {
		for _, form := range []string{
			"GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
			"HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
		} {
			raw := fmt.Sprintf(form, p)
			std, ours := h8Compare(t, http.HandlerFunc(h12aHandler), raw)
			if std != ours {
				t.Errorf("%q: responses differ\nnet/http:\n%.3000q\nours:\n%.3000q", raw, std, ours)
			}
		}
	}
}

// TestHostile12ResponseTrailersLargeBody: a response with a declared trailer whose body
// is sent before the handler returns (larger than what is held back, in one write and
// in many) carries the trailer, as net/http's does; the chunk sizes do not count.
func TestHostile12ResponseTrailersLargeBody(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			io.WriteString(w, "2")
			return
		}
		w.Header().Set("Trailer", "X-T")
		if r.URL.Path == "/many" {
			for range 100 {
				io.WriteString(w, strings.Repeat("m", 700))
			}
		} else {
			io.WriteString(w, strings.Repeat("b", 40<<10))
		}
		w.Header().Set("X-T", "v")
		w.Header().Set(http.TrailerPrefix+"X-P", "p")
	})
	for _, raw := range []string{
		"GET /one HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /many HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /one HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
	} {
		std, ours := h12bCompare(t, h, raw)
		if std != ours {
			t.Errorf("%q: responses differ\nnet/http:\n%s\nours:\n%s", raw, std, ours)
		}
		if strings.Contains(raw, "1.1") && !strings.Contains(ours, `trailer={X-P=["p"] X-T=["v"]}`) {
			t.Errorf("%q: trailers lost:\n%s", raw, ours)
		}
	}
}

// TestHostile12UnreadLargeChunkedBodySaysClose: a chunked body the handler left unread
// and too large to drain closes the connection after the response, and the response
// says so ("Connection: close"), as net/http's does: a client must not be promised a
// connection the server then closes.
func TestHostile12UnreadLargeChunkedBodySaysClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ignored") })
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, addr := range []string{stdAddr, ts.addr} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		go func() {
			// The server may close before all of it is sent: write errors are expected.
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
			chunk := "4000\r\n" + strings.Repeat("c", 0x4000) + "\r\n"
			for range 20 { // 320 KB, more than the 256 KB drained
				if _, err := io.WriteString(c, chunk); err != nil {
					return
				}
			}
			io.WriteString(c, "0\r\n\r\n")
		}()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("%s: %v", addr, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "ignored" || !resp.Close {
			t.Errorf("%s: body %q, Close %v (header %q): want the body and Connection: close", addr, b, resp.Close, resp.Header["Connection"])
		}
		c.Close()
	}
}

// TestHostile12TrailerDocumentedDifferences checks this server's side of the
// differences the package documentation lists for request trailers, and the
// Connection field: a folded trailer line fails the body's read and closes the
// connection; a body whose client waits for 100 Continue is not read by Close, so its
// trailers stay unknown; a "close" in any value of the handler's Connection field
// closes the connection (net/http looks at the first value only, and keeps a
// connection whose response said "close").
func TestHostile12TrailerDocumentedDifferences(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/conn":
			w.Header()["Connection"] = []string{"Upgrade", "x, close"}
			io.WriteString(w, "c")
		default:
			h12aHandler(w, r)
		}
	}), ErrorLog: discardLog()})
	for _, tc := range []struct{ raw, method, body string }{
		{h12aChunked("/read", "", "X-A", "X-A: 1\r\n\tcont\r\n"), "POST", `before={X-A=[]} n=4 err=true after={X-A=[]}`},
		{h12aChunked("/close-early", "Expect: 100-continue\r\n", "X-A", "X-A: 1\r\n"), "POST",
			`close=false read=http: invalid Read on closed Body trailer={X-A=[]}`},
		{"GET /conn HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "c"},
		{"GET /conn HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET", "c"},
	} {
		c := ts.dial(t)
		br := bufio.NewReader(c)
		resp := roundTrip(t, c, br, tc.raw, tc.method)
		if b := readBody(t, resp); b != tc.body {
			t.Errorf("%q: body %q, want %q", tc.raw, b, tc.body)
		}
		if !resp.Close {
			t.Errorf("%q: the response does not say close", tc.raw)
		}
		// The connection is closed: a next request gets no answer (an end of stream, or
		// a reset when the request reached the socket after the server had closed it).
		io.WriteString(c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
		if extra, err := io.ReadAll(br); len(extra) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%q: after a close, read %q, %v", tc.raw, extra, err)
		}
	}
}
