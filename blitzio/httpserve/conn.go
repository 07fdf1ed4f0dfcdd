//go:build linux || darwin || freebsd

package httpserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// connStream is what the server serves: a blitzio TCP or Unix stream.
type connStream interface {
	blitzio.AsyncReadWriter
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// Who may touch a connection's buffers and its reading side. The task owns them while
// it reads a request head; the handler goroutine from dispatch to hand-back.
const (
	ownTask int32 = iota
	ownHandler
	// ownHandlerWoken: the task was polled while the handler owned the connection (a
	// timer, a Shutdown, a deadline change): the hand-back must wake it, or it would
	// miss what woke it. This closes the race where the goroutine's hand-back without
	// a wake-up (it left the task's waker with the driver) crosses such a wake-up.
	ownHandlerWoken
	// ownDetached: the connection was hijacked; the task ends without closing it.
	ownDetached
)

// Who reads the socket while a handler runs (conn.wstate, under conn.rmu). net/http
// reads in the background while a handler runs, once its request body has been read,
// to see a client that goes away; this is that watch. While it is on, the task owns
// the read buffer and reads into it when woken; the handler goroutine takes it back
// when the handler returns (or hijacks).
const (
	watchOff  uint8 = iota // the handler goroutine (or its body reader) owns the read side
	watchBody              // the handler runs; the watch starts when its body reaches its end
	watchOn                // the task watches the socket
)

// Task phases while the task owns the connection.
const (
	phaseRead   uint8 = iota // waiting for or reading a request head
	phaseErr                 // writing an error response, then closing
	phaseLinger              // after a 431 or 413: half-closed, draining the client
	phaseClose               // closing
)

const (
	readBufSize      = 4 << 10
	outFlushSize     = 32 << 10 // batched response bytes written once this many are queued
	stageSize        = 2048     // body bytes held back to compute a Content-Length (net/http's)
	maxDiscardBody   = 256 << 10
	lingerTime       = 500 * time.Millisecond
	maxChunkLineSize = 4096
)

var (
	readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}
	outBufs  = sync.Pool{New: func() any { b := make([]byte, 0, readBufSize); return &b }}
)

// conn is one connection: it is the future of its task (Poll below), and the state the
// handler goroutine works on while a request is in flight. An idle keep-alive conn is
// this struct and its task, with no buffer and no goroutine.
type conn struct {
	srv *Server
	rt  *blitzio.Runtime
	s   connStream

	owner     atomic.Int32
	wakerSet  atomic.Bool
	taskWaker blitzio.Waker
	aborted   atomic.Bool // Server.Close: stop at once
	// readArmed: a read with the task's waker returned pending since the task's last
	// poll, so the task will be polled when bytes come (a poll clears it). Starting the
	// watch then needs no read of its own.
	readArmed atomic.Bool
	ext       *connExt // set when the Server has ConnState, BaseContext or ConnContext

	// Task-side state.
	phase   uint8
	fresh   bool // no byte read yet: idleDL is the first request's header deadline
	linger  bool
	dropped bool
	active  bool  // StateActive reported (owned like the buffers)
	wstate  uint8 // the watch of the socket while a handler runs (see watchOff), under rmu
	// unreadBody: the connection closes after a response whose request body was left
	// unread (too large to drain, not worth draining before a close, or never asked
	// for with 100 Continue). It then lingers (phaseLinger) instead of closing at
	// once: a close with bytes unread resets the connection, and the reset can destroy
	// the response before the client has read it. Set by the handler goroutine
	// (body.discardRest), read by the task once the connection is handed back.
	unreadBody bool
	sleep      *blitzio.SleepFuture
	armed      int64   // the deadline the sleep is armed for (unix ns), 0 for none
	idleDL     int64   // idle or header deadline of the read phase, 0 for none
	errOut     *[]byte // the error response being written (phaseErr); what is left of it

	// Owned by whoever owns the connection (see owner).
	rbuf       *[]byte
	r0, r1     int
	out        *[]byte
	closeAfter bool
	// bodyBusy: a goroutine the handler left behind was still reading the request body
	// when the handler returned (the body's lock was held). From then on rbuf, r0 and r1
	// are that reader's: the server neither reads nor releases them (the buffer is left
	// to the garbage collector, not pooled, so no other connection can see it), and the
	// connection closes, which ends the read.
	bodyBusy bool
	lastPost bool
	hijacked bool
	// rEOF: the watch saw the end of the stream or a read error. No more bytes will
	// come: the requests already buffered are served, with their contexts cancelled,
	// and the connection closes after them.
	rEOF   atomic.Bool
	req    *http.Request
	bundle *reqBundle
	// guards: the Coordinator guards of the request in flight and of those whose
	// responses are queued in out, not yet written; released once they are (or the
	// connection has failed). Made on first use: only with a Coordinator.
	guards     *[]*blitzio.WorkGuard
	remoteAddr string
	// rmu guards wstate; while wstate is watchOn, rbuf, r0 and r1 are the task's, used
	// under rmu.
	rmu sync.Mutex

	// Deadlines of the request in flight (unix ns, 0 for none); the task's timer sets
	// the hit flags and wakes the parked reader or writer.
	rdl, wdl       atomic.Int64
	rdlHit, wdlHit atomic.Bool
	rpark, wpark   atomic.Pointer[parker]
	mustClose      atomic.Bool // set from any goroutine: do not reuse the connection
	// wfail: a write to the socket has failed (wfailDeadline, wfailOther). It is
	// sticky, as the error of net/http's buffered writer is: the bytes of that write
	// were dropped (the head of a response among them, maybe), so nothing written
	// after may go out, even once the cause has gone (a write deadline cleared).
	wfail atomic.Uint32
	cur   atomic.Pointer[reqCtx]
}

// connExt is what a connection of a Server with ConnState, BaseContext or ConnContext
// holds beside its stream: the net.Conn the hooks and Hijack see, and the context its
// requests derive from (nil for none).
type connExt struct {
	nc  *stream.Conn
	ctx context.Context
}

// closeStream closes the socket, through the hooks' net.Conn if there is one (so that
// its own calls fail with net.ErrClosed too).
func (c *conn) closeStream() {
	if c.ext != nil {
		c.ext.nc.Close()
		return
	}
	c.s.Close()
}

// setState reports a state change to Server.ConnState. It is called by whoever owns the
// connection (the task or the handler goroutine; the hand-offs between them order the
// calls). A panic in the hook is logged and closes the connection, as net/http's
// connection goroutine recovers it. A runtime.Goexit in it cannot be stopped: called
// from the task (StateNew, StateActive, StateClosed), it ends the task's poll, and the
// runtime completes the task without polling it again, so the connection is closed and
// forgotten here before the goroutine goes; called from the handler goroutine, serve's
// deferred clean-up closes it.
func (c *conn) setState(st http.ConnState) {
	f := c.srv.ConnState
	if f == nil || c.ext == nil {
		return
	}
	switch st {
	case http.StateActive:
		c.active = true
	case http.StateIdle:
		c.active = false
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		c.mustClose.Store(true)
		c.closeAfter = true
		if v := recover(); v != nil {
			c.srv.logf("http: panic in ConnState(%v) for %v: %v\n%s", st, c.ext.nc.RemoteAddr(), v, stack())
			return
		}
		c.srv.logf("http: runtime.Goexit in ConnState(%v) for %v", st, c.ext.nc.RemoteAddr())
		if st == http.StateNew || st == http.StateActive || st == http.StateClosed {
			if st != http.StateClosed { // finish has done this before StateClosed
				c.dropped = true
				c.disarm()
				c.releaseRead()
				c.releaseOut()
			}
			c.closeStream()
			c.srv.untrack(c)
		}
	}()
	f(c.ext.nc, st)
	returned = true
}

// markActive reports StateActive once the first bytes of a request are in.
func (c *conn) markActive() {
	if !c.active && c.ext != nil {
		c.setState(http.StateActive)
	}
}

func stack() []byte {
	buf := make([]byte, 64<<10)
	return buf[:runtime.Stack(buf, false)]
}

func newConn(srv *Server, rt *blitzio.Runtime, a acceptedConn) *conn {
	c := &conn{srv: srv, rt: rt, s: a.s, fresh: true}
	// As net/http: the first request's header timeout runs from the accept, so a client
	// that connects and sends nothing is closed after it (the idle timeout applies only
	// between the requests of a keep-alive connection).
	if d := srv.headerTimeout(); d > 0 {
		c.idleDL = time.Now().Add(d).UnixNano()
	}
	return c
}

// wakeTask wakes the connection's task, if it has been polled once (before that it will
// be polled anyway).
func (c *conn) wakeTask() {
	if c.wakerSet.Load() {
		c.taskWaker.Wake()
	}
}

// abort closes the connection at once (Server.Close): parked reads and writes fail.
func (c *conn) abort() {
	c.aborted.Store(true)
	c.mustClose.Store(true)
	c.closeStream()
	if x := c.cur.Load(); x != nil {
		x.cancel()
	}
	c.wakeTask()
}

// Poll is the connection's task.
func (c *conn) Poll(cx *blitzio.Context) (struct{}, bool) {
	c.readArmed.Store(false) // this poll may be the wake-up of a pending read
	if !c.wakerSet.Load() {
		c.taskWaker = cx.Waker()
		c.wakerSet.Store(true)
		// StateNew from the connection's own task rather than the accept loop: a hook
		// that calls runtime.Goexit then ends this connection only, not the server.
		c.setState(http.StateNew)
	}
	for {
		switch c.owner.Load() {
		case ownHandler:
			if !c.owner.CompareAndSwap(ownHandler, ownHandlerWoken) {
				continue
			}
			c.pollHandlerTimers(cx)
			c.pollWatch(cx)
			return struct{}{}, false
		case ownHandlerWoken:
			c.pollHandlerTimers(cx)
			c.pollWatch(cx)
			return struct{}{}, false
		case ownDetached:
			c.disarm()
			return struct{}{}, true
		}
		if c.aborted.Load() {
			c.phase = phaseClose
		}
		switch c.phase {
		case phaseRead:
			if !c.pollRead(cx) {
				return struct{}{}, false
			}
		case phaseErr:
			if !c.pollWriteErr(cx) {
				return struct{}{}, false
			}
		case phaseLinger:
			if !c.pollLinger(cx) {
				return struct{}{}, false
			}
		default:
			c.finish()
			return struct{}{}, true
		}
	}
}

// Drop is called when the runtime drops the task (its shutdown): the connection closes.
func (c *conn) Drop() {
	if c.dropped {
		return
	}
	c.dropped = true
	c.closeStream()
	if c.owner.Load() == ownTask {
		c.finish()
		return
	}
	c.disarm()
	c.srv.untrack(c)
}

func (c *conn) disarm() {
	if c.sleep != nil {
		c.sleep.Drop()
		c.armed = 0
	}
}

// finish closes the connection from the task and releases what it holds.
func (c *conn) finish() {
	c.dropped = true
	c.disarm()
	c.closeStream()
	c.releaseRead()
	c.releaseOut()
	if x := c.cur.Load(); x != nil {
		x.cancel()
	}
	c.srv.untrack(c)
	if c.wakerSet.Load() { // StateNew was reported (a task dropped unpolled had none)
		c.setState(http.StateClosed)
	}
}

func (c *conn) releaseRead() {
	if c.bodyBusy {
		return // the leftover body reader's (see bodyBusy)
	}
	if c.rbuf != nil {
		if cap(*c.rbuf) == readBufSize {
			readBufs.Put(c.rbuf)
		}
		c.rbuf = nil
	}
	c.r0, c.r1 = 0, 0
}

func (c *conn) releaseOut() {
	if c.out != nil {
		if cap(*c.out) <= 64<<10 {
			*c.out = (*c.out)[:0]
			outBufs.Put(c.out)
		}
		c.out = nil
	}
}

// arm makes the task's sleep fire at dl (unix ns; 0 disarms) and reports whether it has
// fired already.
func (c *conn) arm(cx *blitzio.Context, dl int64) bool {
	if dl == 0 {
		if c.armed != 0 {
			c.disarm()
		}
		return false
	}
	now := time.Now().UnixNano()
	if dl <= now {
		c.disarm()
		return true
	}
	if c.sleep == nil {
		c.sleep = blitzio.Sleep(time.Duration(dl - now))
		c.armed = dl
	} else if c.armed != dl {
		c.sleep.Reset(time.Duration(dl - now))
		c.armed = dl
	}
	if _, ok := c.sleep.Poll(cx); ok {
		c.armed = 0
		return true
	}
	return false
}

// pollHandlerTimers runs while a handler owns the connection: it arms the task's sleep
// for the earliest read or write deadline, and when one passes it sets its flag and
// wakes the goroutine parked on it, so that the read or write fails with
// os.ErrDeadlineExceeded as on a net.Conn.
func (c *conn) pollHandlerTimers(cx *blitzio.Context) {
	for {
		now := time.Now().UnixNano()
		next := int64(0)
		if d := c.rdl.Load(); d != 0 && !c.rdlHit.Load() {
			if d <= now {
				c.rdlHit.Store(true)
				if p := c.rpark.Load(); p != nil {
					p.wake()
				}
			} else {
				next = d
			}
		}
		if d := c.wdl.Load(); d != 0 && !c.wdlHit.Load() {
			if d <= now {
				c.wdlHit.Store(true)
				if p := c.wpark.Load(); p != nil {
					p.wake()
				}
			} else if next == 0 || d < next {
				next = d
			}
		}
		if !c.arm(cx, next) {
			return
		}
	}
}

// pollRead reads and parses a request head and hands it to a handler goroutine. It
// returns false when the task must wait.
func (c *conn) pollRead(cx *blitzio.Context) bool {
	srv := c.srv
	for {
		if c.bodyBusy {
			c.phase = phaseClose // and leave the read state to the body's reader
			return true
		}
		if c.closeAfter || c.mustClose.Load() || srv.inShutdown.Load() {
			// The connection ends here, even with bytes of a next request buffered: as
			// net/http, nothing after a response that closes (Connection: close, a body
			// left unread or malformed, a shutdown) is read as a request; serving it
			// would let a client smuggle one past a front proxy in what it sent as body.
			c.phase = phaseClose
			if c.unreadBody && !c.aborted.Load() {
				c.beginLinger()
			}
			return true
		}
		if c.r0 == c.r1 {
			// Idle: nothing buffered. The buffer goes back to the pool while we wait.
			buf := c.rbuf
			if buf == nil {
				buf = readBufs.Get().(*[]byte)
			}
			c.rbuf = nil
			c.r0, c.r1 = 0, 0
			r, ok := c.s.PollRead(cx, *buf)
			if !ok {
				c.readArmed.Store(true)
				if cap(*buf) == readBufSize {
					readBufs.Put(buf)
				}
				if c.idleDL == 0 {
					if d := srv.idleTimeout(); d > 0 {
						c.idleDL = time.Now().Add(d).UnixNano()
					}
				}
				if c.arm(cx, c.idleDL) {
					c.phase = phaseClose // idle for too long
					return true
				}
				return false
			}
			if r.Err != nil {
				readBufs.Put(buf)
				c.phase = phaseClose
				return true
			}
			c.rbuf, c.r1 = buf, r.Value
			if !c.fresh { // the first head keeps the deadline that started at accept
				c.idleDL = 0
				if d := srv.headerTimeout(); d > 0 {
					c.idleDL = time.Now().Add(d).UnixNano()
				}
			}
			c.fresh = false
		}
		if c.lastPost {
			// RFC 7230 section 3.5: tolerate the CRLF some old clients add after a POST
			// body (as net/http does).
			for k := 0; k < 4 && c.r0 < c.r1; k++ {
				if b := (*c.rbuf)[c.r0]; b != '\r' && b != '\n' {
					break
				}
				c.r0++
			}
			c.lastPost = false
			if c.r0 == c.r1 {
				continue
			}
		}
		c.markActive()
		b := (*c.rbuf)[c.r0:c.r1]
		n := headEnd(b)
		max := srv.maxHeaderBytes()
		if n == 0 || n > max {
			if len(b) >= max || n > max {
				c.fail(errHeaderTooLarge)
				return true
			}
			// Need more: make room at the end of the buffer.
			if c.r1 == len(*c.rbuf) {
				if c.r0 > 0 {
					copy(*c.rbuf, b)
					c.r0, c.r1 = 0, len(b)
				} else {
					nb := make([]byte, min(2*len(*c.rbuf), max))
					copy(nb, b)
					if cap(*c.rbuf) == readBufSize {
						readBufs.Put(c.rbuf)
					}
					c.rbuf = &nb
				}
			}
			if c.idleDL == 0 {
				// Part of a head the handler goroutine left (pipelining): its header
				// timeout starts now.
				if d := srv.headerTimeout(); d > 0 {
					c.idleDL = time.Now().Add(d).UnixNano()
				}
			}
			r, ok := c.s.PollRead(cx, (*c.rbuf)[c.r1:])
			if !ok {
				c.readArmed.Store(true)
				if c.arm(cx, c.idleDL) {
					c.phase = phaseClose // the head is late: drop it, as net/http does
					return true
				}
				return false
			}
			if r.Err != nil {
				c.phase = phaseClose
				return true
			}
			c.r1 += r.Value
			continue
		}
		c.disarm()
		c.idleDL = 0
		if perr := c.parseRequest(n, nil); perr != nil {
			c.fail(perr)
			return true
		}
		c.dispatch(cx)
		return false
	}
}

// parseRequest parses the head of n bytes at rbuf[r0:] into c.req. hw, the handler
// goroutine parsing pipelined requests (nil on the task), lends its batch string.
func (c *conn) parseRequest(n int, hw *hworker) *parseError {
	var head string
	if hw != nil {
		head = hw.headString((*c.rbuf)[c.r0:c.r1], c.r0, n)
	} else {
		head = string((*c.rbuf)[c.r0 : c.r0+n])
	}
	c.r0 += n
	if c.r0 == c.r1 {
		c.r0, c.r1 = 0, 0
	}
	bd := new(reqBundle)
	p := parsedPool.Get().(*parsedRequest)
	p.urlStore = &bd.url
	bd.pr = p
	// Size the map for the header lines (the Host line stays out of it); with none
	// but Host, make allocates no storage until a first insert. The hint is capped as
	// net/textproto caps its own, so that a head of empty lines allocates no large map
	// before it is refused. The values get one array, sized as the map is (a value
	// slice each, a single value the usual case): a request with no header but Host
	// allocates none.
	var vals []string
	if n := strings.Count(head, "\n") - 3; n > 0 {
		p.header = make(http.Header, min(n, maxHeaderHint))
		vals = make([]string, min(n, maxValsHint))
	} else {
		p.header = make(http.Header)
	}
	if perr := parseHead(head, p, vals); perr != nil {
		putParsed(p)
		return perr
	}
	if p.contentLength > 0 && c.srv.MaxBodyBytes > 0 && p.contentLength > c.srv.MaxBodyBytes {
		putParsed(p)
		return errBodyTooLarge
	}
	if c.remoteAddr == "" {
		if a := c.s.RemoteAddr(); a != nil {
			c.remoteAddr = a.String()
		}
	}
	bd.ctx.c = c
	var rb io.ReadCloser = http.NoBody
	if p.contentLength > 0 || p.chunked {
		// Apart from the bundle: most requests have no body.
		rb = &body{c: c, remain: p.contentLength, chunked: p.chunked, limit: c.srv.MaxBodyBytes,
			continueNeeded: p.expectContinue && (p.major > 1 || p.minor >= 1), reqClose: p.close}
	}
	var te []string
	if p.chunked {
		te = chunkedTE
	}
	tmp := http.Request{
		Method:           p.method,
		URL:              p.url,
		Proto:            p.proto,
		ProtoMajor:       p.major,
		ProtoMinor:       p.minor,
		Header:           p.header,
		Body:             rb,
		ContentLength:    p.contentLength,
		TransferEncoding: te,
		Close:            p.close,
		Host:             p.host,
		RemoteAddr:       c.remoteAddr,
		RequestURI:       p.uri,
		Trailer:          p.trailer,
	}
	// The copy lets the compiler keep WithContext's new Request on the stack (it is
	// inlined): the request lives in the bundle, one allocation for both.
	bd.req = *tmp.WithContext(&bd.ctx)
	c.req = &bd.req
	c.bundle = bd
	c.lastPost = p.method == "POST"
	return nil
}

var chunkedTE = []string{"chunked"}

// fail answers a request the server refuses and closes the connection.
func (c *conn) fail(perr *parseError) {
	msg := errorResponse(perr)
	c.errOut = &msg
	c.linger = perr == errHeaderTooLarge || perr == errBodyTooLarge
	c.phase = phaseErr
}

// errorResponse is the bytes net/http's server answers a refused request with.
func errorResponse(perr *parseError) []byte {
	const hdrs = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	switch perr {
	case errUnsupportedTE:
		return []byte("HTTP/1.1 501 Not Implemented" + hdrs + "Unsupported transfer encoding")
	case errExpectationFail, errExpectationFail10:
		// net/http answers it through its response writer: in the request's version,
		// with a Date.
		b := appendStatusLine(nil, http.StatusExpectationFailed, perr == errExpectationFail10)
		b = append(b, "Content-Length: 0\r\nConnection: close\r\nDate: "...)
		b = appendDate(b)
		return append(b, "\r\n\r\n"...)
	}
	s := perr.Error()
	return []byte("HTTP/1.1 " + s + hdrs + s)
}

func (c *conn) pollWriteErr(cx *blitzio.Context) bool {
	for len(*c.errOut) > 0 {
		r, ok := c.s.PollWrite(cx, *c.errOut)
		if !ok {
			return false
		}
		if r.Err != nil {
			c.phase = phaseClose
			return true
		}
		*c.errOut = (*c.errOut)[r.Value:]
	}
	c.errOut = nil
	c.phase = phaseClose
	if c.linger {
		// The client may still be sending the request we refused: half-close and read
		// what it sends for a moment, so that our answer is not lost to a reset.
		c.beginLinger()
	}
	return true
}

// beginLinger half-closes the connection and moves the task to phaseLinger, which
// reads and drops what the client still sends until it closes or lingerTime passes
// (net/http's closeWriteAndWait): the responses written are not lost to the reset a
// close with unread bytes sends. Without a writing side to close, the task closes.
func (c *conn) beginLinger() {
	cw, ok := c.s.(blitzio.AsyncCloseWriter)
	if !ok || c.bodyBusy {
		return // phaseClose
	}
	cw.CloseWrite()
	c.releaseRead()
	c.phase = phaseLinger
	c.idleDL = time.Now().Add(lingerTime).UnixNano()
}

func (c *conn) pollLinger(cx *blitzio.Context) bool {
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	for {
		r, ok := c.s.PollRead(cx, *buf)
		if !ok {
			if c.arm(cx, c.idleDL) {
				c.phase = phaseClose
				return true
			}
			return false
		}
		if r.Err != nil {
			c.phase = phaseClose
			return true
		}
	}
}

// dispatch hands the parsed request to a handler goroutine.
func (c *conn) dispatch(cx *blitzio.Context) {
	srv := c.srv
	c.rdlHit.Store(false)
	c.wdlHit.Store(false)
	if d := srv.ReadTimeout; d > 0 {
		c.rdl.Store(time.Now().Add(d).UnixNano())
	} else {
		c.rdl.Store(0)
	}
	if d := srv.WriteTimeout; d > 0 {
		c.wdl.Store(time.Now().Add(d).UnixNano())
	} else {
		c.wdl.Store(0)
	}
	if pr := c.bundle.pr; pr.contentLength <= 0 && !pr.chunked {
		// No body: the socket is watched from now on (see pollWatch). Its first read
		// is done here, before the hand-off, so that the task's waker is with the
		// driver; an end of stream seen now cancels the context as the handler starts.
		c.rmu.Lock()
		c.wstate = watchOn
		c.watchLocked(cx)
		c.rmu.Unlock()
	}
	c.owner.Store(ownHandler)
	srv.pool.get().ch <- c
	// Let the handler goroutine just made runnable have this P now. Otherwise it waits
	// until this worker yields its P: it runs its other tasks first, and a worker whose
	// poller cannot park on Go's netpoller parks in epoll_wait or io_uring_enter, a
	// system call that keeps its P until the Go scheduler's monitor takes it back (tens
	// of microseconds or more). Either is most of a keep-alive request's latency.
	// Measured with blitzbench -suite http (Plaintext p1, same run, 3 runs each): about
	// 1.4x the requests per second. Yielding is not blocking: the worker is runnable
	// and carries on with its other tasks next.
	runtime.Gosched()
	c.pollHandlerTimers(cx)
}

// handBack returns the connection to its task. With wake false the caller has left the
// task's waker with the driver (the read-ahead found nothing): the task is woken by the
// next bytes, unless it was polled meanwhile (ownHandlerWoken), when it is woken now.
func (c *conn) handBack(wake bool, to int32) {
	if !wake && to == ownTask && c.owner.CompareAndSwap(ownHandler, ownTask) {
		return
	}
	c.owner.Store(to)
	c.taskWaker.Wake()
}

// pollWatch is the task's part of the watch: woken while a handler runs, it reads what
// came into the read buffer, and cancels the request's context at the end of the
// stream or on a read error.
func (c *conn) pollWatch(cx *blitzio.Context) {
	c.rmu.Lock()
	ended := c.wstate == watchOn && c.watchLocked(cx)
	c.rmu.Unlock()
	if ended {
		c.cancelIfEnded()
	}
}

// watchLocked reads what the socket has into the read buffer, with cx's waker left
// with the driver when it has nothing, until the buffer is full (then it stops: the
// bytes wait in the socket until the buffer drains, as net/http stops reading once it
// holds a byte of the next request). It reports whether it saw the end of the stream
// or an error, which it records in rEOF. The caller holds rmu and owns the read side
// (the task while wstate is watchOn, or the goroutine starting the watch).
func (c *conn) watchLocked(cx *blitzio.Context) bool {
	if c.rEOF.Load() {
		return false
	}
	for {
		if c.readRoom() {
			return false // full
		}
		r, ok := c.s.PollRead(cx, (*c.rbuf)[c.r1:])
		if !ok {
			c.readArmed.Store(true)
			return false
		}
		if r.Err != nil {
			c.rEOF.Store(true)
			return true
		}
		c.r1 += r.Value
	}
}

// cancelIfEnded cancels the request in flight, with context.Canceled as net/http, once
// the watch has seen the end of the stream. (Both the watch, after it sets rEOF, and
// the goroutine, after it publishes the request in cur, call it: one of them sees the
// other's store.)
func (c *conn) cancelIfEnded() {
	if c.rEOF.Load() {
		c.cancelCurrent()
	}
}

// beginWatch starts the watch for a request without a body, from the serving
// goroutine before its handler runs (the task has started it already for the request
// it dispatched); cx has the task's waker. If a read with the task's waker is pending,
// the task will be woken by the next bytes and do the reading; otherwise this does the
// first read.
func (c *conn) beginWatch(cx *blitzio.Context) {
	c.rmu.Lock()
	if c.wstate != watchOn {
		c.wstate = watchOn
		if !c.readArmed.Load() {
			c.watchLocked(cx)
		}
	}
	c.rmu.Unlock()
	c.cancelIfEnded()
}

// bodyEnded starts the watch when the handler has read its request's body to the end
// (net/http's background read starts then too). b's reader calls it, holding b.mu.
func (c *conn) bodyEnded(b *body) {
	c.rmu.Lock()
	if c.wstate != watchBody || b.closed.Load() == bodyDone {
		// The handler has returned: this is a reader it left behind (endRequest ended
		// the body before any next request could set watchBody).
		c.rmu.Unlock()
		return
	}
	c.wstate = watchOn
	if !c.readArmed.Load() {
		c.watchLocked(b.w.cx)
	}
	c.rmu.Unlock()
	c.cancelIfEnded()
}

// stopWatch gives the read side back to the serving goroutine: the handler has
// returned, or is hijacking the connection. Idempotent.
func (c *conn) stopWatch() {
	c.rmu.Lock()
	c.wstate = watchOff
	c.rmu.Unlock()
}

// releaseGuards releases the Coordinator guards held: called between requests, when
// the responses queued have been written (or can no longer be).
func (c *conn) releaseGuards() {
	if c.guards == nil {
		return
	}
	gs := *c.guards
	for i, g := range gs {
		g.Release()
		gs[i] = nil
	}
	*c.guards = gs[:0]
}

// nextRequestBuffered parses a pipelined request already in the buffer. It returns
// false when there is none (or only part of one); a malformed one is answered with its
// error and the connection marked to close.
func (c *conn) nextRequestBuffered(hw *hworker) bool {
	if c.r0 == c.r1 || c.rbuf == nil {
		return false
	}
	if c.lastPost {
		for k := 0; k < 4 && c.r0 < c.r1; k++ {
			if b := (*c.rbuf)[c.r0]; b != '\r' && b != '\n' {
				break
			}
			c.r0++
		}
		c.lastPost = false
	}
	if c.r0 == c.r1 {
		return false
	}
	c.markActive()
	b := (*c.rbuf)[c.r0:c.r1]
	n := headEnd(b)
	max := c.srv.maxHeaderBytes()
	if n == 0 {
		if len(b) >= max {
			c.appendOut(errorResponse(errHeaderTooLarge))
			c.closeAfter = true
		}
		return false
	}
	if n > max {
		c.appendOut(errorResponse(errHeaderTooLarge))
		c.closeAfter = true
		return false
	}
	if perr := c.parseRequest(n, hw); perr != nil {
		c.appendOut(errorResponse(perr))
		c.closeAfter = true
		return false
	}
	// The deadlines are the new request's, as in dispatch: none without the server's
	// timeouts, whatever the previous handler set through http.ResponseController (it
	// would fail this request's body reads or writes).
	c.rdlHit.Store(false)
	c.wdlHit.Store(false)
	if d := c.srv.ReadTimeout; d > 0 {
		c.rdl.Store(time.Now().Add(d).UnixNano())
	} else {
		c.rdl.Store(0)
	}
	if d := c.srv.WriteTimeout; d > 0 {
		c.wdl.Store(time.Now().Add(d).UnixNano())
	} else {
		c.wdl.Store(0)
	}
	return true
}

func (c *conn) appendOut(b []byte) {
	if c.out == nil {
		c.out = outBufs.Get().(*[]byte)
	}
	*c.out = append(*c.out, b...)
}

// serve runs on a pooled goroutine: the request in c.req, then the pipelined ones
// already buffered, then a read-ahead for the next; it writes the batch of responses
// with one write and hands the connection back to its task.
func (c *conn) serve(hw *hworker) {
	normal := false
	defer func() {
		if !normal {
			// runtime.Goexit in the handler (a panic was recovered below): the
			// connection is closed, and this goroutine ends (the pool starts another).
			if c.hijacked {
				// Not the server's connection any more: the hijacker keeps it open.
				c.endRequest()
				c.releaseGuards()
				c.releaseRead()
				c.releaseOut()
				c.handBack(true, ownDetached)
				return
			}
			c.closeAfter = true
			c.endRequest()
			c.flushOut()
			c.releaseGuards()
			c.releaseRead()
			c.releaseOut()
			c.handBack(true, ownTask)
		}
	}()
	srv := c.srv
	needTimer := srv.idleTimeout() > 0 || srv.headerTimeout() > 0
	// The Context of the read-ahead and of the watch's first reads (the runtime and the
	// task's waker) lives for this busy period only: an idle connection keeps none.
	hw.cx = *blitzio.NewContext(c.rt, c.taskWaker)
	defer func() { hw.batch = "" }() // keep no request's bytes alive while parked
	for {
		keep := c.serveRequest(&hw.cx)
		if c.hijacked {
			normal = true
			c.releaseGuards() // the responses before it were written by Hijack
			c.releaseRead()
			c.releaseOut()
			c.handBack(true, ownDetached)
			return
		}
		if !keep || srv.inShutdown.Load() || c.mustClose.Load() {
			c.closeAfter = true
			break
		}
		if c.ext != nil && srv.ConnState != nil {
			// As net/http, the response is on the wire before StateIdle is reported: a
			// hook may close idle connections, which must not cut it. (This gives up the
			// batching of pipelined responses, only when ConnState is set.)
			err := c.flushOut()
			c.releaseGuards()
			if err != nil {
				c.closeAfter = true
				break
			}
			c.setState(http.StateIdle)
		}
		if c.closeAfter {
			break // the hook panicked
		}
		if c.nextRequestBuffered(hw) {
			continue // pipelined: its response joins the batch
		}
		if c.closeAfter {
			break
		}
		if c.r0 != c.r1 {
			break // part of a head: the task reads the rest
		}
		err := c.flushOut()
		c.releaseGuards()
		if err != nil {
			c.closeAfter = true
			break
		}
		if c.rEOF.Load() {
			c.closeAfter = true // the client has sent all it will: nothing more to serve
			break
		}
		if needTimer || c.rbuf == nil {
			break
		}
		// Read-ahead with the task's waker: if the next request is here, serve it on
		// this goroutine; if not, the task's waker stays with the driver and the
		// connection goes idle without waking the task.
		r, ok := c.s.PollRead(&hw.cx, *c.rbuf)
		if !ok {
			c.readArmed.Store(true)
			c.releaseRead()
			c.releaseOut()
			normal = true
			c.handBack(false, ownTask)
			return
		}
		if r.Err != nil {
			c.closeAfter = true
			break
		}
		c.r0, c.r1 = 0, r.Value
		if !c.nextRequestBuffered(hw) {
			break
		}
	}
	c.flushOut()
	c.releaseGuards()
	if !c.bodyBusy && c.r0 == c.r1 {
		c.releaseRead()
	}
	c.releaseOut()
	normal = true
	c.handBack(true, ownTask)
}

// maxBatchString bounds the bytes headString copies at once (the read buffer's size):
// what a request's strings can keep alive beyond its own head.
const maxBatchString = readBufSize

// headString returns the request head of n bytes at the start of b (the buffered bytes
// from buffer offset off) as a string. The first head of a pipelined batch copies the
// whole batch into one string (up to maxBatchString bytes) and the next heads are
// substrings of it: one allocation for the batch's heads instead of one each. The
// cached string is used only where its bytes equal the head's, so it can never give
// a request anything but its own head, whatever the buffer did meanwhile.
func (hw *hworker) headString(b []byte, off, n int) string {
	if k := off - hw.batchOff; hw.batch != "" && k >= 0 && k+n <= len(hw.batch) && hw.batch[k:k+n] == string(b[:n]) {
		return hw.batch[k : k+n]
	}
	if len(b) == n || len(b) > maxBatchString {
		return string(b[:n])
	}
	hw.batch, hw.batchOff = string(b), off
	return hw.batch[:n]
}

// serveRequest runs the handler on c.req and completes its response into the output
// batch. It reports whether the connection may serve another request.
func (c *conn) serveRequest(cx *blitzio.Context) (keep bool) {
	req := c.req
	bd := c.bundle
	if x := c.ext; x != nil && x.ctx != nil {
		bd.ctx.setParent(x.ctx)
	}
	c.cur.Store(&bd.ctx)
	if co := c.srv.Coordinator; co != nil {
		if g, err := co.Guard(); err == nil {
			if c.guards == nil {
				c.guards = new([]*blitzio.WorkGuard)
			}
			*c.guards = append(*c.guards, g)
		} else {
			c.closeAfter = true
		}
	}
	w := &bd.res
	w.reset(c, req, bd.pr)
	if b, ok := req.Body.(*body); ok {
		w.body = b
		b.w = w
		// The watch starts when the handler has read the body to its end.
		w.cx = cx
		c.rmu.Lock()
		c.wstate = watchBody
		c.rmu.Unlock()
	} else {
		c.beginWatch(cx)
	}
	returned := false
	defer func() {
		if !returned {
			// runtime.Goexit in the handler: as net/http, what it wrote and was not
			// sent yet is dropped (the held-back body must not go out without its
			// head), and the connection closes.
			c.stopWatch()
			w.abandon()
		}
		c.endRequest()
	}()
	ok := c.runHandler(w, req)
	c.stopWatch()
	returned = true
	if !ok {
		// The handler panicked: the connection closes after the responses before it.
		w.abandon()
		return false
	}
	if c.hijacked {
		return false
	}
	w.finish() // drains what the handler left of the body first
	return !c.closeAfter && !c.mustClose.Load()
}

// runHandler calls the handler, recovering a panic as net/http does: logged with its
// stack, unless it is http.ErrAbortHandler. It reports false after a panic.
func (c *conn) runHandler(w *response, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v == http.ErrAbortHandler {
				return
			}
			const size = 64 << 10
			buf := make([]byte, size)
			buf = buf[:runtime.Stack(buf, false)]
			c.srv.logf("http: panic serving %v: %v\n%s", c.remoteAddr, v, buf)
		}
	}()
	h := c.srv.handler()
	if req.RequestURI == "*" && req.Method == "OPTIONS" && !c.srv.DisableGeneralOptionsHandler {
		h = globalOptionsHandler{} // as net/http's serverHandler
	}
	h.ServeHTTP(w, req)
	return true
}

// endRequest ends the request in flight: its context is cancelled, its body closed. It
// is idempotent (it runs again after a Goexit).
func (c *conn) endRequest() {
	if x := c.cur.Swap(nil); x != nil {
		x.cancel()
	}
	if bd := c.bundle; bd != nil {
		w := &bd.res
		w.mu.Lock()
		w.done = true
		w.releaseHeader()
		w.pr = nil // under the lock: a leaked writer's calls never reach it again
		w.mu.Unlock()
		if b := w.body; b != nil {
			b.close()
		}
		if bd.pr != nil {
			putParsed(bd.pr)
			bd.pr = nil
		}
	}
	// The request's guard stays in guards until its response is written
	// (releaseGuards), so that the coordinator's InFlight counts it while it waits in
	// the batch or for the socket.
	c.bundle = nil
	c.req = nil
}

// flushOut writes the output batch; called by the goroutine that owns the connection or
// holds the response's lock.
func (c *conn) flushOut() error {
	if c.out == nil || len(*c.out) == 0 {
		return nil
	}
	err := c.writeAll(*c.out)
	*c.out = (*c.out)[:0]
	if err != nil {
		c.mustClose.Store(true)
	}
	return err
}

// conn.wfail's values.
const (
	wfailDeadline uint32 = 1 + iota
	wfailOther
)

var errEarlierWrite = errors.New("httpserve: an earlier write on the connection failed")

// writeAll writes b from a goroutine, parking it while the socket is full. After a
// failed write every later one fails too (see wfail).
func (c *conn) writeAll(b []byte) error {
	var p *parker
	defer func() {
		if p != nil {
			c.wpark.Store(nil)
			putParker(p)
		}
	}()
	switch c.wfail.Load() {
	case wfailDeadline:
		return &net.OpError{Op: "write", Net: "tcp", Addr: c.s.RemoteAddr(), Err: os.ErrDeadlineExceeded}
	case wfailOther:
		return &net.OpError{Op: "write", Net: "tcp", Addr: c.s.RemoteAddr(), Err: errEarlierWrite}
	}
	for len(b) > 0 {
		if c.wdlHit.Load() {
			c.wfail.CompareAndSwap(0, wfailDeadline)
			return &net.OpError{Op: "write", Net: "tcp", Addr: c.s.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		if p == nil {
			p = getParker()
			c.wpark.Store(p)
		}
		r, ok := c.s.PollWrite(p.cx, b)
		if ok {
			if r.Err != nil {
				c.wfail.CompareAndSwap(0, wfailOther)
				return r.Err
			}
			b = b[r.Value:]
			continue
		}
		if c.wdlHit.Load() {
			continue
		}
		<-p.ch
	}
	return nil
}

// cancelCurrent cancels the context of the request in flight: a read of its body from
// the socket failed (the end of the stream, an error, the read deadline), which
// net/http's connection reader answers so too.
func (c *conn) cancelCurrent() {
	if x := c.cur.Load(); x != nil {
		x.cancelWith(context.Canceled)
	}
}

// readSome reads into p from a goroutine (a request body), parking it until bytes come.
func (c *conn) readSome(p []byte) (int, error) {
	var pk *parker
	defer func() {
		if pk != nil {
			c.rpark.Store(nil)
			putParker(pk)
		}
	}()
	for {
		if c.rdlHit.Load() {
			c.cancelCurrent()
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.s.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		if pk == nil {
			pk = getParker()
			c.rpark.Store(pk)
		}
		r, ok := c.s.PollRead(pk.cx, p)
		if ok {
			if r.Err != nil {
				c.cancelCurrent()
			}
			return r.Value, r.Err
		}
		if c.rdlHit.Load() {
			continue
		}
		<-pk.ch
	}
}

// readRoom makes room at the end of the read buffer for a read: it takes a buffer if
// the connection holds none, and moves the unread bytes to the front when they reach
// its end. It reports whether the buffer is still full (unread bytes fill all of it).
func (c *conn) readRoom() (full bool) {
	if c.rbuf == nil {
		c.rbuf = readBufs.Get().(*[]byte)
		c.r0, c.r1 = 0, 0
	}
	if c.r1 == len(*c.rbuf) && c.r0 > 0 {
		n := copy(*c.rbuf, (*c.rbuf)[c.r0:c.r1])
		c.r0, c.r1 = 0, n
	}
	return c.r1 == len(*c.rbuf)
}

// fill reads more bytes into the read buffer (compacting it, or growing it up to
// limit), for the chunked decoder.
func (c *conn) fill(limit int) error {
	if c.readRoom() {
		if len(*c.rbuf) >= limit {
			return errLineTooLong
		}
		nb := make([]byte, min(2*len(*c.rbuf), limit))
		copy(nb, *c.rbuf)
		c.rbuf = &nb
	}
	n, err := c.readSome((*c.rbuf)[c.r1:])
	c.r1 += n
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

var errLineTooLong = errors.New("httpserve: chunk header line too long")

// reqBundle is what one request allocates beside its header map and head string, in
// one allocation of 760 bytes (with the allocator's 8-byte header for an object over
// 512 bytes holding pointers, the 768-byte size class; TestHostile9SizeClasses keeps it
// there): its http.Request and URL, context, ResponseWriter, and the slots of
// single-valued headers. A body reader is allocated apart, when there is a body; the
// parsed head, which only the server sees, is pooled. Nothing of it is reused for
// another request, so a handler that keeps its ResponseWriter or body past its return
// (a bug net/http tolerates) only gets errors, never another request's data; and an
// idle connection keeps none of it.
type reqBundle struct {
	req http.Request
	ctx reqCtx
	res response
	pr  *parsedRequest // from parsedPool until endRequest
	url url.URL
}

// Bounds of the sizes parseRequest gives the header map and the values' array.
const (
	maxHeaderHint = 1000
	maxValsHint   = 32
)

// parsedPool holds parsed heads: the server's own record of a request, never seen by a
// handler, so it can serve one request after another.
var parsedPool = sync.Pool{New: func() any { return new(parsedRequest) }}

// putParsed clears p (it holds the request's strings) and pools it.
func putParsed(p *parsedRequest) {
	snap := p.snap
	clear(snap) // the handler's strings
	if cap(snap) > maxPooledFields {
		snap = nil
	}
	*p = parsedRequest{snap: snap[:0]}
	parsedPool.Put(p)
}

// maxPooledFields bounds the response fields' storage a pooled request record keeps.
const maxPooledFields = 32

// reqCtx is a request's context: cancelled when the handler returns or the connection
// closes, or when its parent (BaseContext's or ConnContext's) is. Done's channel is made
// only if asked for.
type reqCtx struct {
	mu     sync.Mutex
	done   chan struct{}
	err    error
	c      *conn
	parent context.Context // nil for none (context.Background())
	stop   func() bool     // context.AfterFunc's, for a parent that can be cancelled
}

// setParent makes x derive from parent; called before the handler runs, and always
// followed by cancel (endRequest), which stops the propagation.
func (x *reqCtx) setParent(parent context.Context) {
	x.parent = parent
	if parent.Done() != nil {
		x.stop = context.AfterFunc(parent, func() { x.cancelWith(parent.Err()) })
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Deadline returns the parent's.
func (x *reqCtx) Deadline() (time.Time, bool) {
	if x.parent != nil {
		return x.parent.Deadline()
	}
	return time.Time{}, false
}

func (x *reqCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		x.checkParentLocked()
		if x.err != nil {
			return closedChan
		}
		x.done = make(chan struct{})
	}
	return x.done
}

func (x *reqCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.checkParentLocked()
	return x.err
}

// checkParentLocked takes the parent's error if it is done: context.AfterFunc reports
// it from a goroutine of its own, and without this check Err could still return nil
// after the parent's Err has returned its error (a context derived with
// context.WithCancel never does).
func (x *reqCtx) checkParentLocked() {
	if x.err == nil && x.parent != nil {
		if err := x.parent.Err(); err != nil {
			x.err = err
			if x.done != nil {
				close(x.done)
			}
		}
	}
}

func (x *reqCtx) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return x.c.s.LocalAddr()
	}
	if x.parent != nil {
		return x.parent.Value(key)
	}
	return nil
}

func (x *reqCtx) String() string { return "httpserve.requestContext" }

func (x *reqCtx) cancel() {
	x.cancelWith(context.Canceled)
	if x.stop != nil {
		x.stop()
	}
}

func (x *reqCtx) cancelWith(err error) {
	x.mu.Lock()
	if x.err == nil {
		x.err = err
		if x.done != nil {
			close(x.done)
		}
	}
	x.mu.Unlock()
}

// globalOptionsHandler answers "OPTIONS *" as net/http's does: 200 with
// "Content-Length: 0", reading up to 4 KB of a body; beyond that the connection is not
// reused (net/http's MaxBytesReader marks it to close).
type globalOptionsHandler struct{}

func (globalOptionsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		mb := http.MaxBytesReader(w, r.Body, 4<<10)
		if _, err := io.Copy(io.Discard, mb); err != nil {
			if rw, ok := w.(*response); ok {
				rw.c.mustClose.Store(true)
			}
		}
	}
}
