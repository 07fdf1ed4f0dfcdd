//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio/stream"
)

// decodeChunked runs the server's chunked body reader over data held in memory (the
// peer of the in-memory stream has closed: reading past data is an unexpected EOF).
func decodeChunked(data []byte) ([]byte, error) {
	a, b := stream.Duplex(16)
	b.CloseWrite()
	c := &conn{srv: &Server{}, s: a}
	buf := make([]byte, max(len(data), readBufSize))
	copy(buf, data)
	c.rbuf, c.r0, c.r1 = &buf, 0, len(data)
	bd := &body{c: c, chunked: true}
	return io.ReadAll(bd)
}

// FuzzChunkedBody compares the chunked decoder with net/http's on the same body bytes:
// the same bytes, or both failing.
func FuzzChunkedBody(f *testing.F) {
	f.Add([]byte("2\r\nab\r\n1;x=y\r\nc\r\n0\r\n\r\n"))
	f.Add([]byte("0\r\nTrailer: v\r\n\r\n"))
	f.Add([]byte("zz\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte("\n ")) || bytes.Contains(data, []byte("\n\t")) {
			return // folded trailer lines: refused here, joined by net/http (deliberate)
		}
		raw := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + string(data)
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		want, werr := io.ReadAll(req.Body)
		got, gerr := decodeChunked(data)
		if (werr == nil) != (gerr == nil) {
			if werr != nil && strings.Contains(werr.Error(), "too much non-data") {
				return // net/http's overhead limit; we bound lines instead
			}
			if werr == nil && bytes.Contains(bytes.ReplaceAll(data, []byte("\r\n"), nil), []byte("\n")) {
				// A trailer line ending in a bare LF: net/http reads the trailer as a
				// header block (bare LF accepted) once it sees a CRLF CRLF coming; we
				// want every trailer line to end in CRLF (deliberate, stricter).
				return
			}
			t.Fatalf("body %q: ours %q %v, net/http's %q %v", data, got, gerr, want, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("body %q: ours %q, net/http's %q", data, got, want)
		}
	})
}
