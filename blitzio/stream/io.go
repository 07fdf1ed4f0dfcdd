package stream

import (
	"fmt"
	"io"

	"github.com/blitzgo/blitz/blitzio"
)

// errNoProgress is returned when a reader or writer breaks its contract by reporting
// ready with zero bytes and no error, which would make a loop spin forever, or a count
// outside 0..len(p). It wraps io.ErrNoProgress, bufio's error for the first case.
var errNoProgress = fmt.Errorf("stream: reader or writer reported no progress and no error, or a count outside its buffer: %w", io.ErrNoProgress)

// counted checks a ready PollRead or PollWrite result for a buffer of size > 0 bytes.
// It returns the bytes moved and the error, and the caller takes the bytes before it
// looks at the error: AsyncReader and AsyncWriter promise never to report both, but a
// stream adapted from io.Reader or io.Writer may, and io.Copy, io.ReadFull and bufio
// keep such bytes ("Callers should always process the n > 0 bytes returned before
// considering the error"). A count below 0 or above size (which bufio answers with a
// panic), or no bytes and no error, is errNoProgress with no bytes.
func counted(res blitzio.Result[int], size int) (int, error) {
	if res.Value < 0 || res.Value > size || (res.Value == 0 && res.Err == nil) {
		return 0, errNoProgress
	}
	return res.Value, res.Err
}

// ReadFuture is the future Read returns.
type ReadFuture struct {
	r    blitzio.AsyncReader
	p    []byte
	done bool
	res  blitzio.Result[int]
}

// Read returns a future that reads up to len(p) bytes from r into p, with r.PollRead's
// results (io.EOF at the end). It is cancellation-safe: dropped before it is ready, it
// has consumed nothing.
func Read(r blitzio.AsyncReader, p []byte) *ReadFuture { return &ReadFuture{r: r, p: p} }

// Poll implements blitzio.Future.
func (f *ReadFuture) Poll(cx *blitzio.Context) (blitzio.Result[int], bool) {
	if f.done {
		return f.res, true
	}
	res, ok := f.r.PollRead(cx, f.p)
	if ok {
		f.done, f.res = true, res
	}
	return res, ok
}

// ReadFullFuture is the future ReadFull returns.
type ReadFullFuture struct {
	r    blitzio.AsyncReader
	p    []byte
	n    int
	done bool
	err  error
}

// ReadFull returns a future that reads exactly len(p) bytes into p, like io.ReadFull: its
// result is the count read and io.EOF if the stream ended before any byte, or
// io.ErrUnexpectedEOF if it ended part-way. Dropped part-way, the bytes it consumed are
// in p[:n] but lost to the caller: use a BufReader and Fill/Consume when a read must be
// abandoned without loss.
func ReadFull(r blitzio.AsyncReader, p []byte) *ReadFullFuture {
	return &ReadFullFuture{r: r, p: p}
}

// Poll implements blitzio.Future.
func (f *ReadFullFuture) Poll(cx *blitzio.Context) (blitzio.Result[int], bool) {
	for !f.done && f.n < len(f.p) {
		res, ok := f.r.PollRead(cx, f.p[f.n:])
		if !ok {
			return blitzio.Result[int]{}, false
		}
		n, err := counted(res, len(f.p)-f.n)
		f.n += n
		switch {
		case f.n == len(f.p):
			// Full: like io.ReadFull, an error that came with the last bytes is not
			// this read's (the stream reports it again).
		case err == io.EOF:
			f.done, f.err = true, io.EOF
			if f.n > 0 {
				f.err = io.ErrUnexpectedEOF
			}
		case err != nil:
			f.done, f.err = true, err
		}
	}
	f.done = true
	return blitzio.Result[int]{Value: f.n, Err: f.err}, true
}

// WriteAllFuture is the future WriteAll returns.
type WriteAllFuture struct {
	w    blitzio.AsyncWriter
	p    []byte
	n    int
	done bool
	err  error
}

// WriteAll returns a future that writes all of p to w, looping over short writes. Its
// result is the count written and the first error. Dropped part-way, a prefix of p may
// have been written; it reports nothing.
func WriteAll(w blitzio.AsyncWriter, p []byte) *WriteAllFuture {
	return &WriteAllFuture{w: w, p: p}
}

// Poll implements blitzio.Future.
func (f *WriteAllFuture) Poll(cx *blitzio.Context) (blitzio.Result[int], bool) {
	for !f.done && f.n < len(f.p) {
		res, ok := f.w.PollWrite(cx, f.p[f.n:])
		if !ok {
			return blitzio.Result[int]{}, false
		}
		n, err := counted(res, len(f.p)-f.n)
		f.n += n // written even with an error, as io.Writer's count is
		if err != nil {
			f.done, f.err = true, err
		}
	}
	f.done = true
	return blitzio.Result[int]{Value: f.n, Err: f.err}, true
}

// copyBufSize is the buffer a Copy allocates, as io.Copy's.
const copyBufSize = 32 << 10

// copier moves bytes from one stream to another through a buffer; it is one direction
// of Copy and CopyBidirectional.
type copier struct {
	dst      blitzio.AsyncWriter
	src      blitzio.AsyncReader
	buf      []byte
	pos, end int
	total    int64
	rerr     error // src's error or io.EOF, acted on once buf[pos:end] is written
	err      error
}

// poll moves bytes until src ends (true), an error (true, with c.err), or a side is not
// ready (false).
func (c *copier) poll(cx *blitzio.Context) bool {
	if c.buf == nil {
		c.buf = make([]byte, copyBufSize)
	}
	for {
		if c.pos < c.end {
			res, ok := c.dst.PollWrite(cx, c.buf[c.pos:c.end])
			if !ok {
				return false
			}
			n, err := counted(res, c.end-c.pos)
			c.pos += n
			c.total += int64(n) // written even with an error, as io.Copy counts them
			if err != nil {
				c.err = err
				return true
			}
			continue
		}
		if c.rerr != nil {
			// As io.Copy: the bytes read with the error are written first.
			if c.rerr != io.EOF {
				c.err = c.rerr
			}
			return true
		}
		res, ok := c.src.PollRead(cx, c.buf)
		if !ok {
			return false
		}
		n, err := counted(res, len(c.buf))
		c.pos, c.end, c.rerr = 0, n, err
	}
}

// CopyFuture is the future Copy returns.
type CopyFuture struct {
	c    copier
	done bool
}

// Copy returns a future that copies from src to dst until src ends, like io.Copy: its
// result is the number of bytes written and the first error (io.EOF from src is not an
// error). It allocates one 32 KiB buffer at its first poll.
func Copy(dst blitzio.AsyncWriter, src blitzio.AsyncReader) *CopyFuture {
	return &CopyFuture{c: copier{dst: dst, src: src}}
}

// CopyBuffer is Copy through buf instead of an allocated buffer. As with
// io.CopyBuffer, a nil buf means Copy's own buffer, and a non-nil buf of length zero
// panics.
func CopyBuffer(dst blitzio.AsyncWriter, src blitzio.AsyncReader, buf []byte) *CopyFuture {
	if buf != nil && len(buf) == 0 {
		panic("stream: CopyBuffer with an empty buffer")
	}
	return &CopyFuture{c: copier{dst: dst, src: src, buf: buf}}
}

// Poll implements blitzio.Future.
func (f *CopyFuture) Poll(cx *blitzio.Context) (blitzio.Result[int64], bool) {
	if !f.done && !f.c.poll(cx) {
		return blitzio.Result[int64]{}, false
	}
	f.done = true
	return blitzio.Result[int64]{Value: f.c.total, Err: f.c.err}, true
}

// Copied is what CopyBidirectional moved in each direction.
type Copied struct {
	AToB, BToA int64
}

// CopyBidirectionalFuture is the future CopyBidirectional returns.
type CopyBidirectionalFuture struct {
	ab, ba         copier
	abDone, baDone bool
	done           bool
	err            error
}

// CopyBidirectional returns a future that copies from a to b and from b to a at once,
// the core of a proxy. When one side ends, the other side's write half is shut down
// (if it implements blitzio.AsyncCloseWriter) so its peer reads EOF; the future is ready
// when both directions have ended, or at the first error.
func CopyBidirectional(a, b blitzio.AsyncReadWriter) *CopyBidirectionalFuture {
	return &CopyBidirectionalFuture{ab: copier{dst: b, src: a}, ba: copier{dst: a, src: b}}
}

// Poll implements blitzio.Future.
func (f *CopyBidirectionalFuture) Poll(cx *blitzio.Context) (blitzio.Result[Copied], bool) {
	if !f.done {
		f.step(cx, &f.ab, &f.abDone)
		if f.err == nil {
			f.step(cx, &f.ba, &f.baDone)
		}
		f.done = f.err != nil || (f.abDone && f.baDone)
		if !f.done {
			return blitzio.Result[Copied]{}, false
		}
	}
	return blitzio.Result[Copied]{Value: Copied{AToB: f.ab.total, BToA: f.ba.total}, Err: f.err}, true
}

func (f *CopyBidirectionalFuture) step(cx *blitzio.Context, c *copier, done *bool) {
	if *done || !c.poll(cx) {
		return
	}
	*done = true
	if c.err != nil {
		f.err = c.err
		return
	}
	if cw, ok := c.dst.(blitzio.AsyncCloseWriter); ok {
		if err := cw.CloseWrite(); err != nil {
			f.err = err
		}
	}
}
