package stream

import (
	"io"
	"net"
	"sync"

	"github.com/blitzgo/blitz/blitzio"
)

// DuplexStream is one end of an in-memory bidirectional stream made by Duplex. It is an
// AsyncReadWriter and an AsyncCloseWriter, and safe for one reading task and one
// writing task at a time (as a socket's two halves are).
type DuplexStream struct {
	rd *pipeBuf // what the peer writes, we read
	wr *pipeBuf // what we write, the peer reads
}

// pipeBuf is one direction: a bounded ring of bytes with a waker for each side.
type pipeBuf struct {
	mu         sync.Mutex
	buf        []byte
	start, n   int
	writeDone  bool // the writer closed: the reader sees EOF after the bytes
	readDone   bool // the reader closed: writes fail with io.ErrClosedPipe
	readWaker  blitzio.Waker
	writeWaker blitzio.Waker
}

// Duplex returns two connected streams: what one writes the other reads, through a
// buffer of size bytes in each direction (writes wait while it is full), like Tokio's
// io::duplex. It is the stream to test protocol code with, without sockets. Duplex
// panics if size < 1.
func Duplex(size int) (*DuplexStream, *DuplexStream) {
	if size < 1 {
		panic("stream: Duplex with a buffer size < 1")
	}
	ab := &pipeBuf{buf: make([]byte, size)}
	ba := &pipeBuf{buf: make([]byte, size)}
	return &DuplexStream{rd: ba, wr: ab}, &DuplexStream{rd: ab, wr: ba}
}

// PollRead implements blitzio.AsyncReader.
func (d *DuplexStream) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	b := d.rd
	b.mu.Lock()
	switch {
	case b.readDone:
		b.mu.Unlock()
		return blitzio.Result[int]{Err: io.ErrClosedPipe}, true
	case b.n == 0 && b.writeDone:
		b.mu.Unlock()
		return blitzio.Result[int]{Err: io.EOF}, true
	case b.n == 0:
		b.readWaker = cx.Waker()
		b.mu.Unlock()
		return blitzio.Result[int]{}, false
	}
	if !cx.ConsumeBudget() {
		b.mu.Unlock()
		return blitzio.Result[int]{}, false
	}
	n := 0
	for n < len(p) && b.n > 0 {
		end := min(b.start+b.n, len(b.buf))
		c := copy(p[n:], b.buf[b.start:end])
		n += c
		b.start = (b.start + c) % len(b.buf)
		b.n -= c
	}
	w := b.writeWaker
	b.writeWaker = blitzio.Waker{}
	b.mu.Unlock()
	w.WakeFrom(cx)
	return blitzio.Result[int]{Value: n}, true
}

// PollWrite implements blitzio.AsyncWriter.
func (d *DuplexStream) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	b := d.wr
	b.mu.Lock()
	switch {
	case b.writeDone || b.readDone:
		b.mu.Unlock()
		return blitzio.Result[int]{Err: io.ErrClosedPipe}, true
	case b.n == len(b.buf):
		b.writeWaker = cx.Waker()
		b.mu.Unlock()
		return blitzio.Result[int]{}, false
	}
	if !cx.ConsumeBudget() {
		b.mu.Unlock()
		return blitzio.Result[int]{}, false
	}
	n := 0
	for n < len(p) && b.n < len(b.buf) {
		at := (b.start + b.n) % len(b.buf)
		end := len(b.buf)
		if at < b.start {
			end = b.start
		}
		c := copy(b.buf[at:end], p[n:])
		n += c
		b.n += c
	}
	w := b.readWaker
	b.readWaker = blitzio.Waker{}
	b.mu.Unlock()
	w.WakeFrom(cx)
	return blitzio.Result[int]{Value: n}, true
}

// CloseWrite shuts down the write side: the peer reads what was written, then EOF.
// Later writes fail with io.ErrClosedPipe. It implements blitzio.AsyncCloseWriter.
func (d *DuplexStream) CloseWrite() error {
	d.wr.close(true)
	return nil
}

// Close closes both directions: the peer reads EOF after what was written, the peer's
// writes fail with io.ErrClosedPipe, and our own reads and writes fail with
// io.ErrClosedPipe. Close is idempotent.
func (d *DuplexStream) Close() error {
	d.wr.close(true)
	d.rd.close(false)
	return nil
}

// close ends a direction from the writer's side (writer) or the reader's, and wakes
// whoever waits on it.
func (b *pipeBuf) close(writer bool) {
	b.mu.Lock()
	if writer {
		b.writeDone = true
	} else {
		b.readDone = true
		b.n = 0 // nobody will read them
	}
	rw, ww := b.readWaker, b.writeWaker
	b.readWaker, b.writeWaker = blitzio.Waker{}, blitzio.Waker{}
	b.mu.Unlock()
	rw.Wake()
	ww.Wake()
}

// duplexAddr is the address of both ends of a Duplex.
type duplexAddr struct{}

func (duplexAddr) Network() string { return "duplex" }
func (duplexAddr) String() string  { return "duplex" }

// LocalAddr returns the address "duplex" (a Duplex has no real addresses), so that a
// DuplexStream is a ConnStream and NewConn can make it a net.Conn.
func (d *DuplexStream) LocalAddr() net.Addr { return duplexAddr{} }

// RemoteAddr returns the address "duplex".
func (d *DuplexStream) RemoteAddr() net.Addr { return duplexAddr{} }
