//go:build linux || darwin || freebsd

package httpserve

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"sync"
	"sync/atomic"
)

// body is a request body: Content-Length or chunked framing over the connection's read
// buffer and socket. Reads block the calling goroutine, parked on a channel until the
// driver reports bytes (never spinning). It is safe for use from one goroutine at a
// time, and Close may come from any (it does not wait for a Read in progress).
type body struct {
	mu             sync.Mutex
	c              *conn
	w              *response
	remain         int64 // Content-Length mode: bytes left; chunked: bytes left in the chunk
	chunked        bool
	chunkState     uint8
	limit          int64 // MaxBodyBytes, 0 for none
	total          int64
	continueNeeded bool
	// reqClose: the request itself ends the connection after its response ("Connection:
	// close", HTTP/1.0 without keep-alive); fixed when the head is parsed.
	reqClose bool
	eof      bool
	ended    bool          // conn.bodyEnded called
	closed   atomic.Uint32 // bodyOpen...; set without the lock: a parked Read holds it
	err      error
}

// body.closed: reads fail once the handler has closed the body or its request has ended.
const (
	bodyOpen uint32 = iota
	bodyClosed
	bodyDone // endRequest: the request has ended
)

const (
	chunkSize uint8 = iota
	chunkData
	chunkCRLF
	chunkTrailer
)

var (
	errMalformedChunk = errors.New("httpserve: malformed chunked encoding")
	errBodyAfterClose = http.ErrBodyReadAfterClose
	errNotDrained     = errors.New("httpserve: request body too large to drain")
	errTrailerTooLong = errors.New("httpserve: chunked body trailer too long")
)

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	if b.closed.Load() != bodyOpen {
		return 0, errBodyAfterClose
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() != bodyOpen {
		return 0, errBodyAfterClose
	}
	return b.readLocked(p)
}

// Close implements io.Closer: reads after it fail. As net/http's, it first reads and
// drops what is left of the body, less than 256 KB, so that the connection can serve
// the next request (a rest of 256 KB or more, or a client waiting for 100 Continue,
// gets the connection closed after the response instead; so does a Content-Length
// body of a request that closes the connection itself, which is not read at all);
// with the body read to its end, the socket is watched while the handler runs. It
// returns the error of that drain when the body's framing is broken (a malformed
// chunk or trailer). A Close while a Read is in progress on another goroutine does not
// wait for it, and drops nothing (the server does after the handler).
func (b *body) Close() error {
	if !b.closed.CompareAndSwap(bodyOpen, bodyClosed) {
		return nil
	}
	var err error
	if b.mu.TryLock() {
		// As net/http's, a drain that fails on the body's framing (a malformed chunk,
		// a trailer section too long or invalid) is reported: the handler that closes
		// the body to get at Request.Trailer learns why it is empty. A rest too large
		// to drain is not an error of the body (net/http's Close returns nil then too).
		//
		// A chunked body whose read had already failed before Close: net/http's chunked
		// reader keeps its error (a sticky error) and its Close drains through it, so
		// the handler gets the same error again from Close. Not after a failed trailer
		// section (net/http's body counts as closed then, and its Close says nil), nor
		// the error of a limit (MaxBodyBytes), which is not one of the body's framing.
		before := b.err
		var drained bool
		if b.reqClose && !b.chunked && !b.eof {
			// Nothing follows this request on the connection: the rest of a
			// Content-Length body is not worth waiting for (net/http's Close skips it
			// too, "closing the connection next"). A client that sends its body only
			// in part, or slowly, would hold the handler here for nothing.
		} else {
			drained = b.discardLocked(true) // false at once when a read had failed
		}
		var mbe *http.MaxBytesError
		switch {
		case before == nil:
			if !drained && b.err != errNotDrained {
				err = b.err
			}
		case b.chunked && b.chunkState != chunkTrailer && before != errNotDrained && !errors.As(before, &mbe):
			err = before
		}
		b.mu.Unlock()
	}
	return err
}

// close ends the body when its request ends; it never blocks.
func (b *body) close() { b.closed.Store(bodyDone) }

// mustCloseIfUnread reports whether what is left of the body forbids reusing the
// connection: a client still waiting for 100 Continue, or maxDiscardBody bytes or more
// declared and unread (net/http's limit: it closes from maxPostHandlerReadBytes on).
//
// The server calls it holding the response's lock, so it never waits for the body's: a
// Read in progress on another goroutine (a handler that returned while a goroutine of
// its own still reads) counts as unread, and the connection closes, which ends that
// read.
func (b *body) mustCloseIfUnread() bool {
	if !b.mu.TryLock() {
		b.c.bodyBusy = true
		return true
	}
	defer b.mu.Unlock()
	return !b.eof && (b.continueNeeded || !b.chunked && b.remain >= maxDiscardBody)
}

// unreadForbidsReuse reports, for a head sent while the handler runs, whether the
// connection already cannot be reused: the client still waits for 100 Continue (a head
// that goes first means the body was not asked for). A body too large to drain does not
// decide it yet: the handler may still read it while it writes (full duplex, see the
// package doc). A Read in progress (the body's lock held) says nothing yet either; the
// end of the request decides (mustCloseIfUnread).
func (b *body) unreadForbidsReuse() bool {
	if !b.mu.TryLock() {
		return false
	}
	defer b.mu.Unlock()
	return !b.eof && b.continueNeeded
}

func (b *body) readLocked(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.continueNeeded {
		b.continueNeeded = false
		if err := b.w.sendContinue(); err != nil {
			b.err = err
			return 0, err
		}
	}
	var n int
	var err error
	if b.chunked {
		n, err = b.readChunked(p)
	} else {
		n, err = b.readN(p)
		if err == nil && b.remain == 0 {
			b.eof = true
			err = io.EOF
		}
	}
	if n > 0 && b.limit > 0 {
		b.total += int64(n)
		if b.total > b.limit {
			b.c.mustClose.Store(true)
			err = &http.MaxBytesError{Limit: b.limit}
			n -= int(b.total - b.limit)
			b.total = b.limit
		}
	}
	if err != nil && err != io.EOF {
		b.err = err
		b.c.mustClose.Store(true)
	}
	if b.eof && !b.ended {
		b.ended = true
		b.c.bodyEnded(b) // the socket is watched from now on
	}
	return n, err
}

// readN reads up to min(len(p), remain) bytes: buffered ones first, then from the
// socket straight into p.
func (b *body) readN(p []byte) (int, error) {
	c := b.c
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	var n int
	if c.rbuf != nil && c.r0 < c.r1 {
		n = copy(p, (*c.rbuf)[c.r0:c.r1])
		c.r0 += n
		if c.r0 == c.r1 {
			c.r0, c.r1 = 0, 0
		}
	} else {
		var err error
		n, err = c.readSome(p)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			b.remain -= int64(n)
			return n, err
		}
	}
	b.remain -= int64(n)
	return n, nil
}

// readChunked decodes the chunked framing (RFC 9112 section 7.1): size lines with
// optional extensions, data, CRLF, and a last chunk followed by trailer lines, which
// are read and dropped.
func (b *body) readChunked(p []byte) (int, error) {
	c := b.c
	for {
		switch b.chunkState {
		case chunkSize:
			line, err := c.readLine()
			if err != nil {
				return 0, err
			}
			line = bytes.TrimRight(line, " \t")
			if i := bytes.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			n, ok := parseHex(line)
			if !ok {
				return 0, errMalformedChunk
			}
			if n == 0 {
				b.chunkState = chunkTrailer
				continue
			}
			b.remain = n
			b.chunkState = chunkData
		case chunkData:
			n, err := b.readN(p)
			if b.remain == 0 {
				b.chunkState = chunkCRLF
			}
			return n, err
		case chunkCRLF:
			line, err := c.readLine()
			if err != nil {
				return 0, err
			}
			if len(line) != 0 {
				return 0, errMalformedChunk
			}
			b.chunkState = chunkSize
		case chunkTrailer:
			// The trailer section as a whole is bounded as net/http bounds it (it must
			// fit in its 4 KB read buffer): bounding each line only would let a client
			// send trailer lines forever, bytes that no body limit counts.
			size := 0
			var tr http.Header
			for {
				line, err := c.readLine()
				if err != nil {
					return 0, err
				}
				if size += len(line) + 2; size > maxChunkLineSize {
					return 0, errTrailerTooLong
				}
				if len(line) == 0 {
					break
				}
				if !validTrailerLine(line) {
					return 0, errMalformedChunk
				}
				k, v, _ := bytes.Cut(line, []byte(":"))
				key, _ := canonicalKey(string(k))
				if tr == nil {
					tr = make(http.Header)
				}
				tr[key] = append(tr[key], textproto.TrimString(string(v)))
			}
			// As net/http: the fields received replace the request's Trailer values
			// (declared or not) once the body has reached its end.
			if tr != nil && b.w != nil && b.w.req != nil {
				if req := b.w.req; req.Trailer == nil {
					req.Trailer = tr
				} else {
					for k, vv := range tr {
						req.Trailer[k] = vv
					}
				}
			}
			b.eof = true
			return 0, io.EOF
		}
	}
}

func parseHex(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var n int64
	for _, ch := range s {
		var d byte
		switch {
		case '0' <= ch && ch <= '9':
			d = ch - '0'
		case 'a' <= ch && ch <= 'f':
			d = ch - 'a' + 10
		case 'A' <= ch && ch <= 'F':
			d = ch - 'A' + 10
		default:
			return 0, false
		}
		if n > (1<<63-1)>>4 {
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// readLine returns the next line of the read buffer without its CRLF (valid until the
// next read), reading more when needed; a line longer than maxChunkLineSize fails.
func (c *conn) readLine() ([]byte, error) {
	for {
		if c.rbuf != nil {
			b := (*c.rbuf)[c.r0:c.r1]
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				// The bound is the line's own (net/http's: the line and its LF within
				// its 4 KB buffer), whatever room the buffer has: a buffer grown for a
				// large head may hold a longer line already.
				if i >= maxChunkLineSize {
					return nil, errLineTooLong
				}
				line := b[:i]
				c.r0 += i + 1
				// Chunk and trailer lines end with CRLF, with no other CR (net/http's
				// rule for chunk lines; it also wants the trailer to end with CRLF CRLF).
				if j := bytes.IndexByte(line, '\r'); j < 0 || j != len(line)-1 {
					return nil, errMalformedChunk
				}
				if len(line) > 0 && line[len(line)-1] == '\r' {
					line = line[:len(line)-1]
				}
				return line, nil
			}
			if len(b) >= maxChunkLineSize {
				return nil, errLineTooLong
			}
		}
		if err := c.fill(maxChunkLineSize); err != nil {
			return nil, err
		}
	}
}

// discardRest reads and drops what the handler left of the body, less than
// maxDiscardBody bytes, so the connection can serve the next request. It reports
// false when the connection cannot be reused; then, if the body has not reached its
// end, the connection lingers as it closes (unreadBody).
//
// When the connection closes after this response anyway (the request's or the
// handler's "Connection: close", HTTP/1.0 without keep-alive, DisableKeepAlives, a
// shutdown), the body is not read at all: as net/http, which skips the drain once it
// knows it will close, the response must not wait for bytes nobody needs, which a
// client sending its body in part, or slowly, may never send.
func (b *body) discardRest() bool {
	if !b.mu.TryLock() {
		b.c.bodyBusy = true
		return false // still being read by a goroutine the handler left behind
	}
	defer b.mu.Unlock()
	if !b.eof && b.closingAnyway() {
		b.c.unreadBody = true
		return false
	}
	ok := b.discardLocked(false)
	if !ok && !b.eof {
		b.c.unreadBody = true
	}
	return ok
}

// closingAnyway reports whether the connection closes after the response whatever
// is left of the body. It runs on the serving goroutine after the handler returned,
// with b.mu held (the lock order is b.mu, then w.mu, as for the 100 Continue).
func (b *body) closingAnyway() bool {
	c, w := b.c, b.w
	if b.reqClose || c.mustClose.Load() || c.srv.DisableKeepAlives || c.srv.inShutdown.Load() {
		return true
	}
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.closeAfter {
		return true // a head sent already said close
	}
	// The handler's Connection field: in the head's snapshot once WriteHeader ran,
	// else in the map the snapshot will be taken from.
	var conn []string
	if w.wroteHeader && w.pr != nil {
		conn, _ = fieldAt(w.pr.snap, indexFields(w.pr.snap).conn)
	} else if w.header != nil {
		conn = w.header["Connection"]
	}
	return headerHasToken(conn, "close")
}

// discardLocked is discardRest with b.mu held (Close calls it too, with fromClose).
// The limits are net/http's: a Content-Length rest of maxDiscardBody bytes or more is
// not read; a chunked body is read until more than maxDiscardBody bytes of data have
// come, or, for Close (net/http's body.Close reads at most that many), until that
// many have.
func (b *body) discardLocked(fromClose bool) bool {
	if b.eof {
		return b.err == nil
	}
	if b.err != nil || b.continueNeeded {
		return false // a client waiting for 100 Continue has not sent the body
	}
	if !b.chunked && b.remain >= maxDiscardBody {
		return false
	}
	c := b.c
	var scratch *[]byte
	defer func() {
		if scratch != nil {
			readBufs.Put(scratch)
		}
	}()
	var total int64
	for !b.eof {
		if c.rbuf != nil && c.r0 < c.r1 && !b.chunked {
			k := min(int64(c.r1-c.r0), b.remain)
			c.r0 += int(k)
			b.remain -= k
			total += k
			if b.remain == 0 {
				b.eof = true
			}
			continue
		}
		if scratch == nil {
			scratch = readBufs.Get().(*[]byte)
		}
		n, err := b.readLocked(*scratch)
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil || total > maxDiscardBody || fromClose && total >= maxDiscardBody {
			if b.err == nil {
				b.err = errNotDrained // a later discard gives up at once
			}
			return false
		}
	}
	if c.r0 == c.r1 {
		c.r0, c.r1 = 0, 0
	}
	if !b.ended {
		b.ended = true
		c.bodyEnded(b) // the end was in the buffer: readLocked did not see it
	}
	return true
}

// sendContinue writes "100 Continue" when the handler first reads a body whose client
// asked for it (Expect: 100-continue), unless the handler has already answered.
func (w *response) sendContinue() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wroteHeader || w.done || w.c.hijacked || w.sent100 {
		return nil
	}
	c := w.c
	*c.out = append((*c.out)[:w.stageStart], "HTTP/1.1 100 Continue\r\n\r\n"...)
	err := c.flushOut()
	w.stageStart = 0
	return err
}

// validTrailerLine checks a trailer line as net/textproto checks a header line; a folded
// line is refused, as in the head.
func validTrailerLine(line []byte) bool {
	if line[0] == ' ' || line[0] == '\t' {
		return false
	}
	k, v, ok := bytes.Cut(line, []byte(":"))
	if !ok || len(k) == 0 {
		return false
	}
	if _, ok := canonicalKey(string(k)); !ok {
		return false
	}
	for _, c := range v {
		if !validValueByte(c) {
			return false
		}
	}
	return true
}
