//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// response is the http.ResponseWriter of a request; one per connection, reset for each
// request. It implements http.Flusher, http.Hijacker, io.StringWriter and the methods
// http.ResponseController looks for (FlushError, SetReadDeadline, SetWriteDeadline,
// EnableFullDuplex).
type response struct {
	mu   sync.Mutex // Write, Flush, Hijack and the body's 100-continue
	c    *conn
	req  *http.Request
	pr   *parsedRequest
	body *body

	header        http.Header
	status        int
	contentLength int64 // declared by the handler or computed; -1 unknown
	written       int64
	stageStart    int // where this response's held-back body starts in c.out
	wroteHeader   bool
	headSent      bool
	chunked       bool
	isHead        bool
	declaredCL    bool // contentLength is the handler's, taken at WriteHeader
	done          bool
	warned        bool
	sent100       bool   // the handler wrote a 100 Continue itself (WriteHeader(100))
	declaredCLStr string // the header value it was parsed from
	// cx: for a request with a body, what the watch of the socket needs when the body
	// reaches its end (conn.bodyEnded): the serving goroutine's Context with the
	// task's waker.
	cx *blitzio.Context
}

// headerMaps are response header maps, cleared, kept with their storage: a handler
// that sets a few headers then allocates nothing for them. A map is the response's from
// reset to the end of its request (release); after that, Header returns a map of its
// own, never the one the next request gets. (A handler that kept the map itself past
// its return, which the http.ResponseWriter contract forbids as for any use of the
// writer after ServeHTTP returned, would share it with a later request.)
var headerMaps = sync.Pool{New: func() any { return make(http.Header) }}

func (w *response) reset(c *conn, req *http.Request, pr *parsedRequest) {
	*w = response{c: c, req: req, pr: pr, header: headerMaps.Get().(http.Header), contentLength: -1, isHead: req.Method == "HEAD"}
	if c.out == nil {
		c.out = outBufs.Get().(*[]byte)
	}
	w.stageStart = len(*c.out)
}

// Header implements http.ResponseWriter. After the handler has returned it gives an
// empty map of its own (the response's went back to the pool).
func (w *response) Header() http.Header {
	w.mu.Lock()
	h := w.header
	w.mu.Unlock()
	if h == nil {
		return make(http.Header)
	}
	return h
}

// releaseHeader returns the header map to the pool; the caller holds w.mu and has set
// w.done, so the handler's later calls see none of it.
func (w *response) releaseHeader() {
	if h := w.header; h != nil && len(h) <= 32 {
		clear(h)
		headerMaps.Put(h)
	}
	w.header = nil
}

// WriteHeader implements http.ResponseWriter. As in net/http, a code outside 100-999
// panics, 1xx codes other than 101 are sent at once as informational responses (103
// Early Hints), and a second call is logged and ignored.
func (w *response) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *response) writeHeaderLocked(code int) {
	if w.done || w.c.hijacked {
		if !w.warned {
			w.warned = true
			w.c.srv.logf("http: response.WriteHeader on hijacked connection or after the handler returned")
		}
		return
	}
	if w.wroteHeader {
		if !w.warned {
			w.warned = true
			w.c.srv.logf("http: superfluous response.WriteHeader call")
		}
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	// The head is built from the header as it is now (net/http's snapshot at
	// WriteHeader): a field changed later has no effect, even while the head is still
	// held back with the first bytes of the body. The list keeps the value slices, so
	// a Set or Del after this point leaves it as it was; it lives in the request's
	// pooled record, so taking it allocates nothing in the steady state.
	w.pr.snap = collectFields(w.pr.snap[:0], w.header)
	// As net/http, the handler's Content-Length is taken now: a Write past it fails with
	// http.ErrContentLength (before the head is sent too), and a change to the header
	// after WriteHeader does not change the framing (net/http's header snapshot).
	if i := indexFields(w.pr.snap).cl; i >= 0 {
		cl := w.pr.snap[i].v
		v, err := uint64(0), error(nil)
		if len(cl) == 1 {
			v, err = strconv.ParseUint(cl[0], 10, 63) // no trimming: net/http refuses " 5 " too
		} else {
			err = errors.New("not one value")
		}
		if err == nil {
			w.contentLength = int64(v)
			w.declaredCL, w.declaredCLStr = true, cl[0]
		} else {
			if len(cl) > 0 {
				w.c.srv.logf("http: invalid Content-Length of %q", cl[0])
			}
			delete(w.header, "Content-Length")
		}
	}
}

func (w *response) writeInformational(code int) {
	if code == http.StatusContinue {
		// The handler answered the Expect itself: no automatic 100 when it reads the
		// body (net/http's WriteHeader(100) turns its own off too).
		w.sent100 = true
	}
	c := w.c
	out := (*c.out)[:w.stageStart]
	out = appendStatusLine(out, code, w.pr.major == 1 && w.pr.minor == 0)
	out = appendHeaderMap(out, w.header, suppressedHeaders(code))
	out = append(out, "\r\n"...)
	*c.out = out
	w.stageStart = len(out)
	c.flushOut()
	w.stageStart = 0
}

// Headers net/http leaves out of a response without a body (its suppressedHeaders and
// excludedHeadersNoBody): no Content-Length or Transfer-Encoding in a 1xx or 204, and no
// Content-Type either in a 304 (RFC 9110 sections 8.6 and 15.4.5).
var (
	suppressedNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}
	suppressed304    = map[string]bool{"Content-Type": true, "Content-Length": true, "Transfer-Encoding": true}
)

func suppressedHeaders(code int) map[string]bool {
	switch {
	case code == http.StatusNotModified:
		return suppressed304
	case !bodyAllowedForStatus(code):
		return suppressedNoBody
	}
	return nil
}

func bodyAllowedForStatus(code int) bool {
	switch {
	case code >= 100 && code <= 199:
		return false
	case code == 204, code == 304:
		return false
	}
	return true
}

// Write implements http.ResponseWriter.
func (w *response) Write(p []byte) (int, error) { return w.write(p, "") }

// WriteString implements io.StringWriter (io.WriteString uses it: no copy to []byte).
func (w *response) WriteString(s string) (int, error) { return w.write(nil, s) }

func (w *response) write(p []byte, s string) (int, error) {
	n := len(p) + len(s)
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.c
	if w.done {
		return 0, errAfterHandler
	}
	if c.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if n == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength != -1 && w.written+int64(n) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(n)
	if w.isHead {
		// Eaten, but the first bytes are kept to sniff a Content-Type, as net/http does.
		if !w.headSent {
			if room := 512 - (len(*c.out) - w.stageStart); room > 0 {
				*c.out = append(*c.out, p[:min(room, len(p))]...)
				*c.out = append(*c.out, s[:min(max(room-len(p), 0), len(s))]...)
			}
		}
		return n, nil
	}
	if !w.headSent {
		if len(*c.out)-w.stageStart+n <= stageSize {
			*c.out = append(append(*c.out, p...), s...)
			return n, nil
		}
		w.sendHead(false, p, s)
	}
	if err := w.writeBody(p, s); err != nil {
		return 0, err
	}
	return n, nil
}

var errAfterHandler = errors.New("httpserve: write after the handler returned")

// writeBody queues body bytes after the head, framed if chunked, and writes the batch
// once it is large.
func (w *response) writeBody(p []byte, s string) error {
	c := w.c
	out := *c.out
	if n := len(p) + len(s); n >= outFlushSize {
		// A large write goes to the socket from the caller's buffer, after what is
		// queued, instead of being copied into the batch.
		if w.chunked {
			out = strconv.AppendInt(out, int64(n), 16)
			out = append(out, "\r\n"...)
		}
		*c.out = out
		if err := c.flushOut(); err != nil {
			return err
		}
		if p == nil {
			p = []byte(s)
		}
		if err := c.writeAll(p); err != nil {
			c.mustClose.Store(true)
			return err
		}
		if w.chunked {
			*c.out = append(*c.out, "\r\n"...)
		}
		return nil
	}
	if w.chunked {
		out = strconv.AppendInt(out, int64(len(p)+len(s)), 16)
		out = append(out, "\r\n"...)
	}
	out = append(append(out, p...), s...)
	if w.chunked {
		out = append(out, "\r\n"...)
	}
	*c.out = out
	if len(out) >= outFlushSize {
		return c.flushOut()
	}
	return nil
}

// sendHead decides the framing and connection headers as net/http does and writes the
// head before the body bytes held back so far. final is true when the handler has
// returned: then a body that fitted in the held-back bytes gets a Content-Length.
func (w *response) sendHead(final bool, p []byte, s string) {
	w.headSent = true
	c := w.c
	pr := w.pr
	status := w.status
	bodyOK := bodyAllowedForStatus(status)
	staged := (*c.out)[w.stageStart:]
	fields := pr.snap
	f := indexFields(fields)
	connVals, _ := fieldAt(fields, f.conn)

	closeAfter := c.closeAfter || pr.close || c.srv.DisableKeepAlives || c.srv.inShutdown.Load() ||
		c.mustClose.Load() || headerHasToken(connVals, "close")
	if !final && !closeAfter && w.body != nil && w.body.unreadForbidsReuse() {
		// A head sent before the handler returns, while what is left of the request body
		// already rules out reusing the connection (a client waiting for 100 Continue,
		// too much left to drain): say so in it, as net/http decides at its head, rather
		// than close after a response that promised nothing.
		closeAfter = true
	}
	if pr.major == 1 && pr.minor == 0 && !pr.wants10KeepAlive {
		closeAfter = true
	}

	writeCL := false
	hasCL := w.declaredCL
	// The Content-Length is the one taken at WriteHeader (as net/http's snapshot of the
	// header): the map may have changed since, but the bytes accepted were counted
	// against that one, and it is what goes out.
	if hasCL {
		// The usual case, the map unchanged, is a comparison of the same string (no
		// formatting, no allocation).
		if cl, _ := fieldAt(fields, f.cl); len(cl) != 1 || cl[0] != w.declaredCLStr {
			fields, f = setField(fields, f.cl, "Content-Length", []string{strconv.FormatInt(w.contentLength, 10)})
		}
	} else {
		f = delField(fields, f.cl)
	}
	// A Transfer-Encoding the handler set is handled as net/http does: a response
	// without a body drops it (and stays reusable); a Content-Length wins over any but
	// identity (the Content-Length goes, as it must never be sent with chunked);
	// identity, the Server-Sent Events setup, means no framing: the header goes and the
	// close ends the body; chunked is done here; another coding is sent as set, and the
	// close ends the body.
	hasTE := false
	identity := false
	// teSet: the handler set a Transfer-Encoding (net/http's hasTE, whose value it does
	// not revise): no Content-Type is sniffed then, even when the field goes below.
	te, ok := fieldAt(fields, f.te)
	teSet := len(te) > 0 && te[0] != ""
	if ok {
		hasTE = true
		first := ""
		if len(te) > 0 {
			first = te[0]
		}
		if hasCL && first != "identity" {
			c.srv.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", first, w.contentLength)
			f = delField(fields, f.cl)
			w.contentLength, hasCL, w.declaredCL = -1, false, false
		}
		switch {
		case w.isHead || !bodyOK:
			f = delField(fields, f.te)
			hasTE = false
		case hasCL:
			f = delField(fields, f.te)
			hasTE = false
		case first == "identity" || pr.major == 1 && pr.minor == 0:
			// No chunking (HTTP/1.0 cannot): the close ends the body.
			f = delField(fields, f.te)
			hasTE, identity, closeAfter = false, true, true
		case len(te) == 1 && first == "chunked":
			w.chunked = true
		default:
			closeAfter = true // a coding we do not apply: the close ends the body
		}
	}
	// Trailers, as net/http: fields named in a Trailer field (valid trailer names
	// only) and fields named with http.TrailerPrefix are sent after a chunked body, so
	// a body whose length would be computed here is chunked instead.
	trailers := f.prefixed
	if tv, _ := fieldAt(fields, f.trailer); len(tv) > 0 {
		trailers = true
		pr.respTrailer = declaredTrailers(tv)
	}
	// A Transfer-Encoding the handler set, even one dropped above (HEAD, a status
	// without a body), rules out a computed Content-Length, as in net/http.
	if w.contentLength == -1 && !teSet && !identity {
		switch {
		case !bodyOK:
		case final && (!w.isHead || w.written > 0) && !trailers:
			w.contentLength = w.written
			writeCL = true
		case w.isHead:
			// HEAD before the handler returned: no length to announce.
		case pr.major == 1 && pr.minor >= 1:
			w.chunked = true
		default:
			closeAfter = true // HTTP/1.0 with an unknown length: the close ends it
		}
	}
	if b := w.body; final && b != nil && b.mustCloseIfUnread() {
		// net/http: a body the handler did not read is discarded after the response if it
		// is small; a large one, or one the client waits to send (100-continue never
		// answered), means the connection cannot be reused. (Before the handler returns
		// it may still read the body, as this server lets it read while it writes; then
		// the check is finish's drain of the rest, before the head when the head waited
		// for the handler to return.)
		closeAfter = true
	}
	keepAlive10 := pr.major == 1 && pr.minor == 0 && !closeAfter && pr.wants10KeepAlive
	if closeAfter {
		c.closeAfter = true
	}

	ctype := ""
	if f.ct < 0 && bodyOK && !teSet && len(staged)+len(p)+len(s) > 0 {
		// As net/http, a Content-Encoding field with an empty value does not count.
		if ce, _ := fieldAt(fields, f.ce); len(ce) == 0 || ce[0] == "" {
			// net/http sniffs the first bytes it writes: those held back, or else those
			// of the write (p or s) too large to be held back.
			sample := staged
			if len(sample) == 0 {
				sample = p
				if sample == nil {
					sample = []byte(s[:min(len(s), 512)])
				}
			}
			ctype = http.DetectContentType(sample)
		}
	}
	if w.isHead {
		*c.out = (*c.out)[:w.stageStart] // the sniffing sample, not a body
		staged = nil
	}

	// Build the head after the held-back body, then rotate it in front of it.
	start := len(*c.out)
	out := appendStatusLine(*c.out, status, pr.major == 1 && pr.minor == 0)
	if f.date < 0 {
		out = append(out, "Date: "...)
		out = appendDate(out)
		out = append(out, "\r\n"...)
	}
	if writeCL {
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, w.contentLength, 10)
		out = append(out, "\r\n"...)
	}
	if w.chunked && !hasTE {
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	}
	if ctype != "" {
		out = append(out, "Content-Type: "...)
		out = append(out, ctype...)
		out = append(out, "\r\n"...)
	}
	connLine := ""
	if closeAfter && (c.srv.DisableKeepAlives || !headerHasToken(connVals, "close")) {
		// As net/http: the handler's Connection field goes (it may say keep-alive or
		// name an upgrade the close makes moot), and an HTTP/1.1 response says close.
		delField(fields, f.conn)
		if pr.major > 1 || pr.major == 1 && pr.minor >= 1 {
			connLine = "Connection: close\r\n"
		}
	} else if keepAlive10 && f.conn < 0 {
		connLine = "Connection: keep-alive\r\n"
	}
	out = appendFields(out, fields, suppressedHeaders(status))
	out = append(out, connLine...)
	out = append(out, "\r\n"...)
	headLen := len(out) - start
	nstaged := len(staged)
	if nstaged > 0 {
		// out = [... staged head] -> [... head staged]
		out = append(out, out[w.stageStart:w.stageStart+nstaged]...)
		copy(out[w.stageStart:], out[start:start+headLen+nstaged])
		out = out[:w.stageStart+headLen+nstaged]
		if w.chunked {
			// The held-back bytes become the first chunk.
			body := append([]byte(nil), out[w.stageStart+headLen:]...)
			out = out[:w.stageStart+headLen]
			out = strconv.AppendInt(out, int64(len(body)), 16)
			out = append(out, "\r\n"...)
			out = append(out, body...)
			out = append(out, "\r\n"...)
		}
	}
	*c.out = out
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	// What the handler left of the request body is read and dropped before the head
	// is built, as net/http does when it writes the head: a drain that fails (a
	// malformed chunk or trailer, a chunked body too large to drain) then puts
	// "Connection: close" in this response, where draining after the head would close
	// a connection whose response promised to keep it. (The server's own drain after
	// finish then finds the body at its end, or fails again at once.) It runs before
	// the response's lock is taken: a drain may wait for the client's bytes.
	if b := w.body; b != nil && !b.discardRest() {
		w.c.closeAfter = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(true, nil, "")
	}
	c := w.c
	if w.chunked {
		// The trailer section is built from the header map as the handler left it
		// whenever the body is chunked, as net/http's: a field named with
		// http.TrailerPrefix after the head was fixed (a Flush, a large body) is sent
		// too, though the snapshot taken at WriteHeader knew nothing of it.
		*c.out = append(*c.out, "0\r\n"...)
		if t := w.finalTrailers(); t != nil {
			*c.out = appendHeaderMap(*c.out, t, nil)
		}
		*c.out = append(*c.out, "\r\n"...)
	}
	if w.contentLength != -1 && w.written != w.contentLength && bodyAllowedForStatus(w.status) && !w.isHead {
		c.closeAfter = true // the body is shorter than announced: the close tells the client
	}
	w.done = true
	if len(*c.out) >= outFlushSize {
		c.flushOut()
	}
}

// abandon drops the part of this response not yet written (its handler panicked).
func (w *response) abandon() {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.c
	if c.out != nil && !w.headSent && len(*c.out) >= w.stageStart {
		*c.out = (*c.out)[:w.stageStart]
	}
	w.done = true
	c.closeAfter = true
}

// Flush implements http.Flusher: the head and the body so far go out now (chunked when
// the length is unknown).
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush reporting the write error (http.ResponseController.Flush).
func (w *response) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.c.hijacked {
		return errAfterHandler
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(false, nil, "")
	}
	return w.c.flushOut()
}

// SetReadDeadline sets the deadline of the request body's reads (for
// http.ResponseController). The zero time means none.
func (w *response) SetReadDeadline(t time.Time) error {
	if w.finished() {
		return errAfterHandler // it would move the next request's deadline
	}
	setDeadline(&w.c.rdl, &w.c.rdlHit, w.c.rpark.Load(), t)
	w.c.wakeTask()
	return nil
}

// SetWriteDeadline sets the deadline of the response's writes (for
// http.ResponseController). The zero time means none.
func (w *response) SetWriteDeadline(t time.Time) error {
	if w.finished() {
		return errAfterHandler
	}
	setDeadline(&w.c.wdl, &w.c.wdlHit, w.c.wpark.Load(), t)
	w.c.wakeTask()
	return nil
}

// finished reports whether the request has ended (or the connection was hijacked), so
// that a deadline set through a writer kept past its handler cannot move the next
// request's. It never waits for the response's lock: a Write or Flush holding it may be
// parked on a full socket, and a deadline set from another goroutine is what releases
// it (as SetWriteDeadline on a net.Conn releases a blocked Write). While the lock is
// held, the request is in flight until endRequest takes it from cur.
func (w *response) finished() bool {
	if !w.mu.TryLock() {
		return w.c.cur.Load() == nil
	}
	defer w.mu.Unlock()
	return w.done || w.c.hijacked
}

func setDeadline(dl *atomic.Int64, hit *atomic.Bool, p *parker, t time.Time) {
	if t.IsZero() {
		dl.Store(0)
		hit.Store(false)
		return
	}
	dl.Store(t.UnixNano())
	past := !t.After(time.Now())
	hit.Store(past)
	if past && p != nil {
		p.wake()
	}
}

// EnableFullDuplex is for http.ResponseController: this server lets a handler read the
// request body while it writes the response in any case, so it only returns nil.
func (w *response) EnableFullDuplex() error { return nil }

// Hijack implements http.Hijacker: the caller takes the connection over as a net.Conn
// (a stream.Conn over the blitzio stream; calls on it block the calling goroutine), with
// a bufio.ReadWriter whose reader holds the bytes the server had read past the request.
// The responses queued before (pipelining) are written first. The server forgets the
// connection: Shutdown does not wait for it, Close does not close it.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.c
	if w.done {
		return nil, nil, errAfterHandler
	}
	if c.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader && !w.headSent {
		w.sendHead(false, nil, "")
	}
	if err := c.flushOut(); err != nil {
		return nil, nil, err
	}
	c.stopWatch() // the read buffer is the hijacker's now
	c.hijacked = true
	c.srv.untrack(c)
	c.setState(http.StateHijacked)
	var rest []byte
	if c.rbuf != nil && c.r0 < c.r1 {
		rest = append([]byte(nil), (*c.rbuf)[c.r0:c.r1]...)
		c.r0, c.r1 = 0, 0
	}
	var nc *stream.Conn
	if c.ext != nil {
		nc = c.ext.nc // the net.Conn the hooks have seen
	} else {
		nc = stream.NewConn(c.s)
	}
	var r io.Reader = nc
	if len(rest) > 0 {
		r = io.MultiReader(bytes.NewReader(rest), nc)
	}
	return nc, bufio.NewReadWriter(bufio.NewReader(r), bufio.NewWriter(nc)), nil
}

// ---- formatting ----

var statusLines = func() (t [600][]byte) {
	for code := 100; code < 600; code++ {
		if text := http.StatusText(code); text != "" {
			t[code] = []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n")
		}
	}
	return t
}()

// appendStatusLine appends the status line for code; http10 answers an HTTP/1.0
// request in its own version, as net/http does.
func appendStatusLine(b []byte, code int, http10 bool) []byte {
	start := len(b)
	if code < len(statusLines) && statusLines[code] != nil {
		b = append(b, statusLines[code]...)
	} else {
		b = append(b, "HTTP/1.1 "...)
		b = strconv.AppendInt(b, int64(code), 10)
		text := http.StatusText(code)
		if text == "" {
			text = "status code " + strconv.Itoa(code)
		}
		b = append(b, ' ')
		b = append(b, text...)
		b = append(b, "\r\n"...)
	}
	if http10 {
		b[start+len("HTTP/1.")] = '0'
	}
	return b
}

// appendHeaderMap writes h sorted by key, as net/http does, skipping invalid names and
// turning line breaks in values into spaces (no header injection).
func appendHeaderMap(b []byte, h http.Header, skip map[string]bool) []byte {
	var buf [8]hdrField
	return appendFields(b, collectFields(buf[:0], h), skip)
}

// appendFields writes the fields of list in its order, as appendHeaderMap.
func appendFields(b []byte, list []hdrField, skip map[string]bool) []byte {
	for _, kv := range list {
		k := kv.k
		if skip != nil && skip[k] || !validFieldName(k) {
			continue
		}
		for _, v := range kv.v {
			b = append(b, k...)
			b = append(b, ": "...)
			v = trimOWS(v)
			// Two byte scans: for the short values of a head, cheaper than ContainsAny,
			// which builds a character set first.
			if strings.IndexByte(v, '\n') >= 0 || strings.IndexByte(v, '\r') >= 0 {
				for i := 0; i < len(v); i++ {
					ch := v[i]
					if ch == '\r' || ch == '\n' {
						ch = ' '
					}
					b = append(b, ch)
				}
			} else {
				b = append(b, v...) // the usual case: one copy
			}
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// declaredTrailers returns the trailer names a response's Trailer field declares,
// canonical, without those a trailer may not carry (net/http's declareTrailer).
func declaredTrailers(vv []string) []string {
	var names []string
	for _, v := range vv {
		for k := range strings.SplitSeq(v, ",") {
			if k = textproto.TrimString(k); k == "" {
				continue
			}
			k = http.CanonicalHeaderKey(k)
			if strings.HasPrefix(k, "If-") || badTrailer[k] {
				continue
			}
			names = append(names, k)
		}
	}
	return names
}

// badTrailer holds the fields RFC 9110 section 6.5.1 keeps out of trailers (the list
// of golang.org/x/net/http/httpguts.ValidTrailerHeader, which net/http applies).
var badTrailer = map[string]bool{
	"Authorization": true, "Cache-Control": true, "Connection": true, "Content-Encoding": true,
	"Content-Length": true, "Content-Range": true, "Content-Type": true, "Expect": true,
	"Host": true, "Keep-Alive": true, "Max-Forwards": true, "Pragma": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Range": true, "Realm": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Www-Authenticate": true,
}

// finalTrailers is the trailer section of a chunked response, from the header map as
// the handler left it (net/http's finalTrailers): the fields named with
// http.TrailerPrefix, then the values of the declared names.
func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.header {
		if kk, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.pr.respTrailer {
		if t == nil {
			t = make(http.Header)
		}
		for _, v := range w.header[k] {
			t.Add(k, v)
		}
	}
	return t
}

// fieldIndex holds the positions, in a list from collectFields, of the fields the
// framing decisions look at; -1 for absent. A head is built from that list with one
// iteration of the header map, where a lookup per decision, then a sort of the keys and
// a lookup per key, cost several map probes a field (a large part of a small
// response's cost).
type fieldIndex struct {
	conn, cl, te, ct, ce, date, trailer int
	// prefixed: a field named with http.TrailerPrefix, a trailer announced only at
	// the end (never part of the head: the colon makes its name invalid there).
	prefixed bool
}

// collectFields appends h's fields to buf, sorted by key as net/http writes them. With
// buf's storage reused (the request record's, or the caller's stack) a response of a
// few fields allocates nothing.
func collectFields(buf []hdrField, h http.Header) []hdrField {
	list := buf
	for k, v := range h {
		list = append(list, hdrField{k, v})
	}
	sortFields(list)
	return list
}

// sortFields sorts list by key with an insertion sort: a response has a handful of
// fields, and setField adds one to a list already sorted.
func sortFields(list []hdrField) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].k < list[j-1].k; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}

func indexFields(list []hdrField) fieldIndex {
	x := fieldIndex{-1, -1, -1, -1, -1, -1, -1, false}
	for i := range list {
		switch k := list[i].k; k {
		case "Connection":
			x.conn = i
		case "Content-Length":
			x.cl = i
		case "Transfer-Encoding":
			x.te = i
		case "Content-Type":
			x.ct = i
		case "Content-Encoding":
			x.ce = i
		case "Date":
			x.date = i
		case "Trailer":
			x.trailer = i
		default:
			if len(k) >= len(http.TrailerPrefix) && k[len(http.TrailerPrefix)-1] == ':' && strings.HasPrefix(k, http.TrailerPrefix) {
				x.prefixed = true
			}
		}
	}
	return x
}

// fieldAt returns the values of the field at position i (from a fieldIndex), as a
// lookup of the map would.
func fieldAt(list []hdrField, i int) ([]string, bool) {
	if i < 0 {
		return nil, false
	}
	return list[i].v, true
}

// setField sets key, whose position is i (-1 for absent), to v in list (the head's
// copy of the fields: the handler's map is left as it is, as net/http leaves it).
func setField(list []hdrField, i int, key string, v []string) ([]hdrField, fieldIndex) {
	if i >= 0 {
		list[i].v = v
		return list, indexFields(list)
	}
	list = append(list, hdrField{key, v})
	sortFields(list)
	return list, indexFields(list)
}

// delField deletes the field at position i (-1: none) from list: its key becomes
// empty, which appendFields skips as it skips any invalid name, so that the other
// positions stay as they are.
func delField(list []hdrField, i int) fieldIndex {
	if i >= 0 {
		list[i] = hdrField{}
	}
	return indexFields(list)
}

// dateVal is the Date header's value for one second of wall-clock time, valid until the
// monotonic clock (dateEpoch's) reaches until.
type dateVal struct {
	until time.Duration
	b     []byte
}

var (
	dateCache atomic.Pointer[dateVal]
	// dateEpoch is the base of the monotonic readings of dateVal.until.
	dateEpoch = time.Now()
)

// appendDate appends the Date header's value, formatted once per second. A request
// reads only the monotonic clock (time.Since: one clock read, where time.Now makes two,
// the wall and the monotonic clock); the wall clock is read, and the value formatted,
// when the monotonic clock passes the start of the next wall-clock second. A step of the
// wall clock (NTP, settimeofday) is therefore seen within a second, as net/http's own
// per-response time.Now would see it at once.
func appendDate(b []byte) []byte {
	d := dateCache.Load()
	if d == nil || time.Since(dateEpoch) >= d.until {
		now := time.Now()
		next := time.Second - time.Duration(now.Nanosecond())
		d = &dateVal{until: now.Sub(dateEpoch) + next, b: now.UTC().AppendFormat(nil, http.TimeFormat)}
		dateCache.Store(d)
	}
	return append(b, d.b...)
}
