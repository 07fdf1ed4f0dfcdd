//go:build linux || darwin || freebsd

package httpserve

import (
	"io"

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
