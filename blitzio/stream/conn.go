package stream

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// ConnStream is what NewConn adapts: a bidirectional async stream with addresses and
// Close, such as a blitzio TCP or Unix stream.
type ConnStream interface {
	blitzio.AsyncReadWriter
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// Conn is an async stream seen as a net.Conn, for code written for goroutines:
// net/http, crypto/tls, a database driver. Read and Write block the calling goroutine
// (parking it the Go way, on a channel; no thread is held and nothing spins) while the
// stream waits for readiness; the runtime's driver wakes it. Deadlines are honoured
// (timeouts are os.ErrDeadlineExceeded, a net.Error whose Timeout is true), and Close
// unblocks every waiting call with net.ErrClosed. It is safe for concurrent use as the
// net.Conn contract requires: reads are serialised with reads and writes with writes.
//
// Calls on a Conn block, so they must not be made from a task: a task uses the stream's
// futures directly.
type Conn struct {
	s        ConnStream
	rmu, wmu sync.Mutex
	// rp and wp park Read and Write. Each Conn owns its two parkers, and they are never
	// shared: a call that ends without a final poll (a deadline, Close) leaves its waker
	// registered with the stream, which has no way to withdraw it, and the stream keeps
	// one entry per distinct waker. With parkers pooled across connections (as an early
	// version did), net/http's pattern of cancelling its background read by a past read
	// deadline on every request filled each stream's waiter list with the wakers of
	// other connections' calls, and every readiness woke them all: a wake-up storm that
	// grew with the number of connections. A Conn's own parker is listed at most once
	// per direction, and a stale wake of it only makes its next call poll once more.
	rp, wp   connParker
	closeMu  sync.Mutex
	closed   chan struct{}
	isClosed bool
	rdl, wdl deadline
}

// NewConn returns s as a net.Conn. The Conn owns s: closing the Conn closes s. s must
// already belong to a runtime's driver, as a stream from Dial, DialTCP or an accept
// does; one that joins a runtime when first polled, such as blitzio.DialUnix's, needs
// NewConnOn.
func NewConn(s ConnStream) *Conn { return NewConnOn(nil, s) }

// NewConnOn is NewConn for a stream served by rt's driver: a stream that is not yet
// registered with a runtime (blitzio.DialUnix's) joins rt at the first Read or Write.
// A nil rt is NewConn.
func NewConnOn(rt *blitzio.Runtime, s ConnStream) *Conn {
	if s == nil {
		panic("stream: NewConn with a nil stream")
	}
	c := &Conn{s: s, closed: make(chan struct{}), rdl: makeDeadline(), wdl: makeDeadline()}
	c.rp.init(rt)
	c.wp.init(rt)
	return c
}

// Stream returns the adapted stream.
func (c *Conn) Stream() ConnStream { return c.s }

func (c *Conn) opError(op string, err error) error {
	local, remote := c.s.LocalAddr(), c.s.RemoteAddr()
	return &net.OpError{Op: op, Net: netOf(local, remote), Source: local, Addr: remote, Err: err}
}

// netOf names the network from whichever address is known: a closed socket may no
// longer know its local address (an accepted TCP connection looks it up lazily), and
// its errors must still say "tcp", as net's do.
func netOf(local, remote net.Addr) string {
	for _, a := range []net.Addr{local, remote} {
		if a != nil {
			return a.Network()
		}
	}
	return "stream"
}

// wait parks until p is woken, the deadline passes or the Conn closes; it returns the
// error that ends the call, or nil to poll again.
func (c *Conn) wait(p *connParker, dl *deadline) error {
	select {
	case <-p.ch:
		return nil
	case <-c.closed:
		return net.ErrClosed
	case <-dl.wait():
		return os.ErrDeadlineExceeded
	}
}

// Read implements net.Conn.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if err := c.check(&c.rdl); err != nil {
		return 0, c.opError("read", err)
	}
	if len(b) == 0 {
		return 0, nil
	}
	p := &c.rp
	for {
		r, ok := c.s.PollRead(p.cx, b)
		if ok {
			// Never a count outside 0..len(b) (io.Reader's contract), nor (0, nil),
			// which makes io.Copy spin: io.ErrNoProgress, as bufio reports it.
			n, err := counted(r, len(b))
			if err == nil || err == io.EOF {
				return n, err // io.EOF unwrapped, as net.Conn's Read gives it
			}
			return n, c.ioError("read", err)
		}
		if err := c.wait(p, &c.rdl); err != nil {
			return 0, c.opError("read", err)
		}
	}
}

// Write implements net.Conn: it writes all of b or returns the count written and the
// error that stopped it.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.check(&c.wdl); err != nil {
		return 0, c.opError("write", err)
	}
	p := &c.wp
	n := 0
	for n < len(b) {
		r, ok := c.s.PollWrite(p.cx, b[n:])
		if ok {
			m, err := counted(r, len(b)-n)
			n += m
			if r.Value == 0 && r.Err == nil {
				// A stream that takes nothing and reports nothing would make Write
				// loop forever: io.ErrShortWrite, as bufio.Writer reports it.
				err = io.ErrShortWrite
			}
			if err != nil {
				return n, c.ioError("write", err)
			}
			continue
		}
		if err := c.wait(p, &c.wdl); err != nil {
			return n, c.opError("write", err)
		}
	}
	return n, nil
}

// check reports net.ErrClosed after Close and os.ErrDeadlineExceeded after the deadline.
func (c *Conn) check(dl *deadline) error {
	select {
	case <-c.closed:
		return net.ErrClosed
	default:
	}
	select {
	case <-dl.wait():
		return os.ErrDeadlineExceeded
	default:
	}
	return nil
}

// closedOr returns net.ErrClosed if the Conn was closed (the stream's own error for a
// closed stream varies), else err.
// ioError is the error of a failed stream operation: net.ErrClosed once the Conn is
// closed; the stream's own *net.OpError as it is (blitzio's sockets report errors in
// net's form already, and Go's net never nests one OpError in another); else err in a
// *net.OpError naming op and the addresses.
func (c *Conn) ioError(op string, err error) error {
	err = c.closedOr(err)
	if oe, ok := err.(*net.OpError); ok {
		return oe
	}
	return c.opError(op, err)
}

func (c *Conn) closedOr(err error) error {
	select {
	case <-c.closed:
		return net.ErrClosed
	default:
		return err
	}
}

// Close implements net.Conn: waiting Reads and Writes return net.ErrClosed, and the
// stream is closed. A second Close returns an error wrapping net.ErrClosed.
func (c *Conn) Close() error {
	c.closeMu.Lock()
	if c.isClosed {
		c.closeMu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.isClosed = true
	close(c.closed)
	c.closeMu.Unlock()
	if err := c.s.Close(); err != nil {
		return c.opError("close", err)
	}
	return nil
}

// CloseWrite shuts down the writing side if the stream can (blitzio.AsyncCloseWriter),
// like net.TCPConn.CloseWrite; a stream that cannot gives an error wrapping
// errors.ErrUnsupported. After Close it fails with net.ErrClosed, as Read and Write do.
func (c *Conn) CloseWrite() error {
	// A closed Conn answers for itself: streams differ after Close (an in-memory pipe
	// accepts a second shutdown silently), and net.TCPConn reports net.ErrClosed.
	if err := c.closedOr(nil); err != nil {
		return c.opError("close", err)
	}
	cw, ok := c.s.(blitzio.AsyncCloseWriter)
	if !ok {
		return c.opError("close", errors.ErrUnsupported)
	}
	if err := cw.CloseWrite(); err != nil {
		// The stream's own *net.OpError as it is, never nested (see ioError).
		return c.ioError("close", err)
	}
	return nil
}

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr { return c.s.LocalAddr() }

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return c.s.RemoteAddr() }

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rdl.set(t); return nil }

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }

// deadline is a settable point in time with a channel closed when it passes, so that a
// parked call selects on it (the technique of net.Pipe).
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{} // closed when the deadline passes
}

func makeDeadline() deadline { return deadline{cancel: make(chan struct{})} }

// set moves the deadline; the zero time means none. Calls waiting on the old channel see
// it closed if the new deadline is in the past.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired and closed it: wait is over, start afresh below
	}
	d.timer = nil
	closed := isClosedChan(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosedChan(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// connParker parks a goroutine in Read, Write or Accept: a one-slot channel and a
// Context whose Waker sends to it without blocking. Made once per Conn (or Listener) and
// reused by every call, so a blocking call allocates nothing.
type connParker struct {
	ch chan struct{}
	cx *blitzio.Context
}

// init makes p's channel and a Context of rt (nil: none) whose Waker signals it.
func (p *connParker) init(rt *blitzio.Runtime) {
	ch := make(chan struct{}, 1)
	p.ch = ch
	p.cx = blitzio.NewContext(rt, blitzio.WakerFunc(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}))
}
