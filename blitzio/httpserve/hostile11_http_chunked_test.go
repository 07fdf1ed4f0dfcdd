//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h11Echo answers with the request body it read, or with 499 and no body when the read
// failed: a client sees whether the server accepted the body's framing.
func h11Echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/second" {
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(499)
		return
	}
	w.Write(b)
}

// h11ChunkedRaw is a chunked POST whose body is body (chunk lines and trailers as given).
func h11ChunkedRaw(body string) string {
	return "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
}

// TestHostile11ChunkedSameAsNetHTTP sends chunked bodies that probe the chunk-size
// parser (hex digits, lengths, white space) and the trailer checks to net/http's server
// and to this package, with the same handler, and compares the status, the body and
// whether the connection served a second request.
func TestHostile11ChunkedSameAsNetHTTP(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	ten := "0123456789"
	cases := []struct{ name, body string }{
		{"hex-upper", "A\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-mixed", "1a\r\n" + strings.Repeat("m", 26) + "\r\n0\r\n\r\n"},
		{"hex-mixed-upper", "1A\r\n" + strings.Repeat("m", 26) + "\r\n0\r\n\r\n"},
		{"hex-16-digits", "000000000000000A\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-17-digits", "0000000000000000A\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-zero-16", "0000000000000000\r\n\r\n"},
		{"hex-empty", "\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-g", "g\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-plus", "+a\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-lead-space", " a\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-trail-tab", "a\t\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-tab-ext", "a\t;x=1\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-ext-only", ";x\r\n" + ten + "\r\n0\r\n\r\n"},
		{"hex-cr-inside", "a\rb\r\n" + ten + "\r\n0\r\n\r\n"},
		{"last-chunk-ext", "a\r\n" + ten + "\r\n0;last=1\r\n\r\n"},
		{"trailer-ok", "a\r\n" + ten + "\r\n0\r\nX-A: v\r\n\r\n"},
		{"trailer-no-space", "a\r\n" + ten + "\r\n0\r\nX-A:v\r\n\r\n"},
		{"trailer-empty-value", "a\r\n" + ten + "\r\n0\r\nX-A:\r\n\r\n"},
		{"trailer-obs-text", "a\r\n" + ten + "\r\n0\r\nX-A: \xffv\r\n\r\n"},
		{"trailer-tab-value", "a\r\n" + ten + "\r\n0\r\nX-A: a\tb\r\n\r\n"},
		{"trailer-space-in-key", "a\r\n" + ten + "\r\n0\r\nX A: v\r\n\r\n"},
		{"trailer-folded-first", "a\r\n" + ten + "\r\n0\r\n X-A: v\r\n\r\n"},
		{"trailer-tab-first", "a\r\n" + ten + "\r\n0\r\n\tX-A: v\r\n\r\n"},
		{"trailer-no-colon", "a\r\n" + ten + "\r\n0\r\nX-A\r\n\r\n"},
		{"trailer-empty-key", "a\r\n" + ten + "\r\n0\r\n: v\r\n\r\n"},
		{"trailer-bad-key", "a\r\n" + ten + "\r\n0\r\nX(A): v\r\n\r\n"},
		{"trailer-utf8-key", "a\r\n" + ten + "\r\n0\r\nX-\xc3\xa9: v\r\n\r\n"},
		{"trailer-ctl-value", "a\r\n" + ten + "\r\n0\r\nX-A: a\x01b\r\n\r\n"},
		{"trailer-del-value", "a\r\n" + ten + "\r\n0\r\nX-A: a\x7fb\r\n\r\n"},
		{"trailer-nul-value", "a\r\n" + ten + "\r\n0\r\nX-A: a\x00b\r\n\r\n"},
		{"trailer-many-small", "a\r\n" + ten + "\r\n0\r\n" + strings.Repeat("X-A: v\r\n", 50) + "\r\n"},
		// A trailer section far beyond net/http's bound (its buffer, 4 KB): refused
		// there as "suspiciously long", so that trailers are not a way around every
		// body limit.
		{"trailer-huge", "a\r\n" + ten + "\r\n0\r\n" + strings.Repeat("X-Padding: "+strings.Repeat("p", 90)+"\r\n", 200) + "\r\n"},
		// The bound's edge: the section (lines, their CRLFs and the final CRLF) is
		// 4096 bytes, then 4097.
		{"trailer-4096", "a\r\n" + ten + "\r\n0\r\nX-P: " + strings.Repeat("p", 4087) + "\r\n\r\n"},
		{"trailer-4097", "a\r\n" + ten + "\r\n0\r\nX-P: " + strings.Repeat("p", 4088) + "\r\n\r\n"},
		{"chunk-line-4094", "a;" + strings.Repeat("e", 4092) + "\r\n" + ten + "\r\n0\r\n\r\n"},
		{"chunk-line-4095", "a;" + strings.Repeat("e", 4093) + "\r\n" + ten + "\r\n0\r\n\r\n"},
		{"chunk-line-4000", "a;" + strings.Repeat("e", 3998) + "\r\n" + ten + "\r\n0\r\n\r\n"},
		{"chunk-line-5000", "a;" + strings.Repeat("e", 4998) + "\r\n" + ten + "\r\n0\r\n\r\n"},
		{"data-missing-crlf", "a\r\n" + ten + "0\r\n\r\n"},
		{"data-lf-only", "a\r\n" + ten + "\n0\r\n\r\n"},
	}
	h := http.HandlerFunc(h11Echo)
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, tc := range cases {
		raw := h11ChunkedRaw(tc.body)
		std := h4Exchange(t, stdAddr, raw, "POST")
		ours := h4Exchange(t, ts.addr, raw, "POST")
		if std.status != ours.status || std.body != ours.body || std.reused != ours.reused {
			t.Errorf("%s:\n net/http:  %d %.40q reused=%v\n httpserve: %d %.40q reused=%v", tc.name,
				std.status, std.body, std.reused, ours.status, ours.body, ours.reused)
		}
	}
}

// TestHostile11ChunkLineInGrownBuffer: a request head over 4 KB makes the server grow
// its read buffer; a chunk-size line over net/http's 4 KB line bound that arrives in
// the same read must still be refused (the bound is the line's, not the free space's).
// net/http refuses it.
func TestHostile11ChunkLineInGrownBuffer(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(h11Echo)
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	pad := "X-Pad: " + strings.Repeat("p", 6000) + "\r\n"
	for _, ext := range []int{4000, 4093, 4094, 4095, 5000, 7000} {
		raw := "POST / HTTP/1.1\r\nHost: x\r\n" + pad + "Transfer-Encoding: chunked\r\n\r\n" +
			"3;" + strings.Repeat("e", ext-2) + "\r\nabc\r\n0\r\n\r\n"
		std := h4Exchange(t, stdAddr, raw, "POST")
		ours := h4Exchange(t, ts.addr, raw, "POST")
		if std.status != ours.status || std.body != ours.body || std.reused != ours.reused {
			t.Errorf("chunk line of %d bytes (and CRLF) after a 6 KB head:\n net/http:  %d %.40q reused=%v\n httpserve: %d %.40q reused=%v",
				ext, std.status, std.body, std.reused, ours.status, ours.body, ours.reused)
		}
	}
}

// TestHostile11ChunkedAtBufferBoundary: the chunk-size lines, chunk data, the last chunk
// and a pipelined request are placed across the 4 KB read buffer's end (the head's
// length shifts them byte by byte), sent in one write and in two writes split there.
// Every body must come out whole and the pipelined request must be served, as by
// net/http.
func TestHostile11ChunkedAtBufferBoundary(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: http.HandlerFunc(h11Echo), ErrorLog: discardLog()})
	data := strings.Repeat("d", 40)
	body := "28\r\n" + data + "\r\n1;ext=" + strings.Repeat("x", 30) + "\r\nZ\r\n0\r\nX-T: 1\r\n\r\n"
	want := data + "Z"
	for shift := 0; shift < len(body)+8; shift += 3 {
		head := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Pad: "
		// Make the body start shift bytes before the end of the first 4 KB.
		padLen := readBufSize - shift - len(head) - len("\r\n\r\n")
		raw := head + strings.Repeat("p", padLen) + "\r\n\r\n" + body + "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
		for _, split := range []bool{false, true} {
			c := ts.dial(t)
			if split {
				cut := readBufSize
				if _, err := io.WriteString(c, raw[:cut]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // two segments, most of the time (not asserted)
				if _, err := io.WriteString(c, raw[cut:]); err != nil {
					t.Fatal(err)
				}
			} else if _, err := io.WriteString(c, raw); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp := roundTrip(t, c, br, "", "POST")
			if got := readBody(t, resp); resp.StatusCode != 200 || got != want {
				t.Fatalf("shift %d split %v: %d %q, want 200 %q", shift, split, resp.StatusCode, got, want)
			}
			resp = roundTrip(t, c, br, "", "GET")
			readBody(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("shift %d split %v: pipelined request answered %d", shift, split, resp.StatusCode)
			}
			c.Close()
		}
	}
}

// TestHostile11BodyReadSemantics: the request body's Read and Close as a handler sees
// them, against net/http's for the same bytes: a zero-length Read, io.EOF again after
// the end, Close twice (nil both times), http.ErrBodyReadAfterClose after it, and a
// framing error that stays (a second Read fails too).
func TestHostile11BodyReadSemantics(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			return
		}
		n0, e0 := r.Body.Read(nil)
		b, e1 := io.ReadAll(r.Body)
		n2, e2 := r.Body.Read(make([]byte, 4))
		c1 := r.Body.Close()
		c2 := r.Body.Close()
		n3, e3 := r.Body.Read(make([]byte, 4))
		fmt.Fprintf(w, "%d %v|%q %v|%d %v|%v %v|%d %v", n0, e0, b, e1 != nil, n2, e2, c1, c2, n3, e3 == http.ErrBodyReadAfterClose)
	})
	sticky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			return
		}
		_, e1 := io.ReadAll(r.Body)
		_, e2 := r.Body.Read(make([]byte, 4))
		fmt.Fprintf(w, "%v %v", e1 != nil, e2 != nil)
	})
	for _, tc := range []struct {
		h   http.Handler
		raw string
	}{
		{h, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"},
		{h, h11ChunkedRaw("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")},
		{sticky, h11ChunkedRaw("3\r\nabcX\r\n0\r\n\r\n")},
		{sticky, h11ChunkedRaw("zz\r\n")},
	} {
		std, ours := h4Both(t, tc.h, tc.raw, "POST")
		if std.status != ours.status || std.body != ours.body || std.reused != ours.reused {
			t.Errorf("%q:\n net/http:  %d %q reused=%v\n httpserve: %d %q reused=%v", tc.raw,
				std.status, std.body, std.reused, ours.status, ours.body, ours.reused)
		}
	}
}

// TestHostile11UnreadChunkedBodyTooLargeToDrain: a handler that does not read a chunked
// body over 256 KB gets its connection closed after the response (draining it would
// cost more than a new connection), as with net/http; a smaller one is drained and the
// connection serves the next request.
func TestHostile11UnreadChunkedBodyTooLargeToDrain(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "unread") })
	for _, size := range []int{200 << 10, 300 << 10} {
		var body strings.Builder
		for left := size; left > 0; left -= 16 << 10 {
			n := min(left, 16<<10)
			fmt.Fprintf(&body, "%x\r\n%s\r\n", n, strings.Repeat("u", n))
		}
		body.WriteString("0\r\n\r\n")
		std, ours := h4Both(t, h, h11ChunkedRaw(body.String()), "POST")
		if std.status != ours.status || std.body != ours.body || std.reused != ours.reused {
			t.Errorf("%d KB unread:\n net/http:  %d %q reused=%v\n httpserve: %d %q reused=%v", size>>10,
				std.status, std.body, std.reused, ours.status, ours.body, ours.reused)
		}
	}
}

// TestHostile11ParseHex: the chunk-size parser takes 1 to 16 hex digits of either case
// and refuses anything else, and sizes that do not fit in an int64.
func TestHostile11ParseHex(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"a", 10, true}, {"A", 10, true}, {"fF", 255, true}, {"10", 16, true},
		{"7fffffffffffffff", 1<<63 - 1, true}, {"000000000000000f", 15, true},
		{"8000000000000000", 0, false}, {"ffffffffffffffff", 0, false}, {"00000000000000000", 0, false},
		{"", 0, false}, {"g", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"0x1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"\x00", 0, false},
	} {
		got, ok := parseHex([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseHex(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
