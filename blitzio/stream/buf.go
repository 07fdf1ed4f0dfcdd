package stream

import (
	"bytes"
	"errors"
	"io"

	"github.com/blitzgo/blitz/blitzio"
)

// DefaultBufSize is the buffer size NewBufReader and NewBufWriter use for size <= 0.
const DefaultBufSize = 4096

// DefaultMaxLine is the longest line (or ReadUntil chunk) a BufReader accepts unless
// SetMaxLine says otherwise: 64 KiB, bufio.Scanner's default.
const DefaultMaxLine = 64 << 10

// ErrTooLong is returned when a line or frame is longer than the reader's limit; most
// protocols close the connection then. A BufReader has consumed nothing of that line:
// every later ReadLine or ReadUntil fails the same way until SetMaxLine raises the limit
// (the whole line is then read) or Consume skips bytes. A FrameReader returns the error
// again at every later call.
var ErrTooLong = errors.New("stream: line or frame too long")

// BufReader adds a buffer to an AsyncReader: reads of a few bytes cost no system call
// each, and lines and delimited chunks can be read whole. It is itself an AsyncReader.
//
// ReadLine and ReadUntil are cancellation-safe: they consume nothing until the whole
// line is in the buffer, so a ReadLine abandoned by a timeout or a select leaves the
// partial line for the next call. The buffer grows to hold the longest line seen, up to
// the limit set by SetMaxLine.
//
// The end of the stream (io.EOF) and read errors are final: once the buffered bytes are
// read, every later call reports them again without reading the stream, as an
// AsyncReader's end is final. (bufio.Reader reports an error once and then reads again,
// so it passes on bytes a reader such as a terminal delivers after an io.EOF.)
type BufReader struct {
	r          blitzio.AsyncReader
	buf        []byte
	start, end int
	err        error // sticky error from r (io.EOF included), reported once the buffer is empty
	maxLine    int
	scanned    int  // bytes from start already searched for scanDelim
	scanDelim  byte // the delimiter scanned was counted for
	until      untilFuture
	line       lineFuture
}

// NewBufReader returns a BufReader over r with a buffer of size bytes (DefaultBufSize if
// size <= 0).
func NewBufReader(r blitzio.AsyncReader, size int) *BufReader {
	if size <= 0 {
		size = DefaultBufSize
	}
	b := &BufReader{r: r, buf: make([]byte, size), maxLine: DefaultMaxLine}
	b.until.b, b.line.b = b, b
	return b
}

// SetMaxLine sets the longest line ReadLine and ReadUntil accept (delimiter included);
// n <= 0 restores DefaultMaxLine.
func (b *BufReader) SetMaxLine(n int) {
	if n <= 0 {
		n = DefaultMaxLine
	}
	b.maxLine = n
}

// Buffered returns the number of bytes that can be read without reading from the stream.
func (b *BufReader) Buffered() int { return b.end - b.start }

// PollRead implements blitzio.AsyncReader. A read at least as large as the buffer, with
// nothing buffered, goes straight to the underlying reader.
func (b *BufReader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	if b.start == b.end {
		if b.err != nil {
			return blitzio.Result[int]{Err: b.err}, true
		}
		if len(p) >= len(b.buf) {
			// Checked as fill checks: no count outside p, no (0, nil), and bytes that
			// came with an error are returned first, the error kept for the next call.
			res, ok := b.r.PollRead(cx, p)
			if !ok {
				return res, false
			}
			// The error is recorded whether or not bytes came with it: an end of stream
			// is final (sticky) on this path as on the buffered one, or whether the
			// next call reads the stream again would depend on the caller's len(p).
			n, err := counted(res, len(p))
			b.err = err
			if n > 0 {
				return blitzio.Result[int]{Value: n}, true
			}
			return blitzio.Result[int]{Err: err}, true
		}
	}
	data, ok := b.PollFill(cx)
	if !ok {
		return blitzio.Result[int]{}, false
	}
	if data.Err != nil {
		return blitzio.Result[int]{Err: data.Err}, true
	}
	n := copy(p, data.Value)
	b.Consume(n)
	return blitzio.Result[int]{Value: n}, true
}

// PollFill returns the buffered bytes, reading from the stream first if there are none
// (Rust's fill_buf). The slice is valid until the next call on b; mark what was used
// with Consume. At the end of the stream it returns io.EOF (or the stream's error) with
// no bytes.
func (b *BufReader) PollFill(cx *blitzio.Context) (blitzio.Result[[]byte], bool) {
	if b.start == b.end {
		if b.err != nil {
			return blitzio.Result[[]byte]{Err: b.err}, true
		}
		b.start, b.end, b.scanned = 0, 0, 0
		if !b.fill(cx) {
			return blitzio.Result[[]byte]{}, false
		}
		if b.start == b.end {
			return blitzio.Result[[]byte]{Err: b.err}, true
		}
	}
	return blitzio.Result[[]byte]{Value: b.buf[b.start:b.end]}, true
}

// Consume marks n buffered bytes as read. It panics if n is negative or more than
// Buffered.
func (b *BufReader) Consume(n int) {
	if n < 0 || n > b.end-b.start {
		panic("stream: BufReader.Consume beyond the buffered bytes")
	}
	b.start += n
	b.scanned = max(b.scanned-n, 0)
}

// fill reads once into the free space after end, moving the data to the front (or
// growing the buffer, up to maxLine, when grow asks) first. It returns false if the
// stream is not ready. On an error or EOF it records b.err.
func (b *BufReader) fill(cx *blitzio.Context) bool {
	if b.start > 0 && b.end == len(b.buf) {
		n := copy(b.buf, b.buf[b.start:b.end])
		b.start, b.end = 0, n
	}
	res, ok := b.r.PollRead(cx, b.buf[b.end:])
	if !ok {
		return false
	}
	// Bytes that came with an error are kept, and the error reported after them, as
	// bufio.Reader does.
	n, err := counted(res, len(b.buf)-b.end)
	b.end += n
	b.err = err
	return true
}

// pollUntil waits until the buffer holds delim, returning the bytes up to and including
// it (not consumed), or an error: ErrTooLong past the limit, and at the end of the
// stream the bytes left with io.EOF.
func (b *BufReader) pollUntil(cx *blitzio.Context, delim byte) ([]byte, bool, error) {
	if b.scanDelim != delim {
		// The bytes scanned so far were searched for another delimiter (by a call that
		// was dropped before it found it): they may hold this one.
		b.scanned, b.scanDelim = 0, delim
	}
	for {
		if i := bytes.IndexByte(b.buf[b.start+b.scanned:b.end], delim); i >= 0 {
			n := b.scanned + i + 1
			if n > b.maxLine {
				return nil, true, ErrTooLong
			}
			return b.buf[b.start : b.start+n], true, nil
		}
		b.scanned = b.end - b.start
		if b.scanned > b.maxLine {
			return nil, true, ErrTooLong
		}
		if b.err != nil {
			return b.buf[b.start:b.end], true, b.err
		}
		// At exactly the limit only the end of the stream can still end the chunk (a
		// delimiter next would make it one byte too long): read on, into a buffer of
		// maxLine+1 bytes at most, to tell.
		if b.end == len(b.buf) {
			if b.start > 0 {
				n := copy(b.buf, b.buf[b.start:b.end])
				b.start, b.end = 0, n
			} else {
				size := 2 * len(b.buf)
				if b.maxLine < size-1 { // maxLine+1 would overflow for math.MaxInt
					size = b.maxLine + 1
				}
				grown := make([]byte, size)
				if len(grown) <= len(b.buf) {
					return nil, true, ErrTooLong
				}
				b.end = copy(grown, b.buf[b.start:b.end])
				b.start, b.buf = 0, grown
			}
		}
		if !b.fill(cx) {
			return nil, false, nil
		}
	}
}

type untilFuture struct {
	b     *BufReader
	delim byte
	dst   []byte
}

// Poll implements blitzio.Future.
func (f *untilFuture) Poll(cx *blitzio.Context) (blitzio.Result[[]byte], bool) {
	chunk, ok, err := f.b.pollUntil(cx, f.delim)
	if !ok {
		return blitzio.Result[[]byte]{}, false
	}
	if err == ErrTooLong {
		return blitzio.Result[[]byte]{Value: f.dst, Err: err}, true
	}
	f.dst = append(f.dst, chunk...)
	f.b.Consume(len(chunk))
	return blitzio.Result[[]byte]{Value: f.dst, Err: err}, true
}

// ReadUntil returns a future that reads up to and including delim and appends it to dst,
// like bufio.Reader.ReadBytes: the result is the extended dst, with io.EOF (or the
// stream's error) if the stream ended first (dst then holds what was left). It fails
// with ErrTooLong if no delim appears within the limit (SetMaxLine). The future is owned
// by b and reused by the next ReadUntil.
func (b *BufReader) ReadUntil(delim byte, dst []byte) blitzio.Future[blitzio.Result[[]byte]] {
	b.until.delim, b.until.dst = delim, dst
	return &b.until
}

type lineFuture struct{ b *BufReader }

// Poll implements blitzio.Future.
func (f *lineFuture) Poll(cx *blitzio.Context) (blitzio.Result[string], bool) {
	chunk, ok, err := f.b.pollUntil(cx, '\n')
	if !ok {
		return blitzio.Result[string]{}, false
	}
	switch {
	case err == ErrTooLong:
		return blitzio.Result[string]{Err: err}, true
	case err == io.EOF && len(chunk) > 0:
		err = nil // a last line without a newline is still a line
	case err != nil:
		return blitzio.Result[string]{Err: err}, true
	}
	f.b.Consume(len(chunk))
	return blitzio.Result[string]{Value: string(trimEOL(chunk))}, true
}

// trimEOL drops a trailing "\n" or "\r\n".
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'})
}

// ReadLine returns a future that reads one line and returns it without its "\n" or
// "\r\n", like bufio.Scanner: a last line without a newline is returned as a line, and
// io.EOF comes after it. A line longer than the limit (SetMaxLine) fails with
// ErrTooLong. The future is owned by b and reused by the next ReadLine.
//
// Unlike bufio.Scanner, a stream that fails with an error other than io.EOF (such as
// io.ErrUnexpectedEOF or a reset connection) in the middle of a line does not yield
// that partial line as if it were complete: ReadLine returns the error and leaves the
// partial line buffered, where Read or ReadUntil can still get it.
func (b *BufReader) ReadLine() blitzio.Future[blitzio.Result[string]] { return &b.line }

// BufWriter adds a buffer to an AsyncWriter: many small writes become one write to the
// stream. Call Flush when a message is complete. It is itself an AsyncWriter.
type BufWriter struct {
	w     blitzio.AsyncWriter
	buf   []byte
	n     int
	err   error // sticky write error
	write bufWriteFuture
	flush flushFuture
}

// NewBufWriter returns a BufWriter over w with a buffer of size bytes (DefaultBufSize if
// size <= 0).
func NewBufWriter(w blitzio.AsyncWriter, size int) *BufWriter {
	if size <= 0 {
		size = DefaultBufSize
	}
	b := &BufWriter{w: w, buf: make([]byte, size)}
	b.write.b, b.flush.b = b, b
	return b
}

// Buffered returns the number of bytes written into the buffer and not yet flushed.
func (b *BufWriter) Buffered() int { return b.n }

// Available returns the free space in the buffer.
func (b *BufWriter) Available() int { return len(b.buf) - b.n }

// PollWrite implements blitzio.AsyncWriter: it copies what fits into the buffer,
// flushing first when the buffer is full; a write at least as large as the buffer, with
// nothing buffered, goes straight to the stream.
func (b *BufWriter) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	if b.err != nil {
		return blitzio.Result[int]{Err: b.err}, true
	}
	if b.n == len(b.buf) {
		if r, ok := b.PollFlush(cx); !ok || r.Err != nil {
			return blitzio.Result[int]{Err: r.Err}, ok
		}
	}
	if b.n == 0 && len(p) >= len(b.buf) {
		res, ok := b.w.PollWrite(cx, p)
		if !ok {
			return blitzio.Result[int]{}, false
		}
		// A writer that takes nothing and reports no error would make Write loop
		// forever (io.ErrShortWrite's case in bufio), and a count outside p is a lie:
		// both are errNoProgress. Bytes that came with an error (a writer adapted from
		// io.Writer) were written: they are counted now and the error, kept sticky, is
		// reported by the next call, as AsyncWriter reports a late error.
		n, err := counted(res, len(p))
		b.err = err
		if n > 0 {
			return blitzio.Result[int]{Value: n}, true
		}
		return blitzio.Result[int]{Err: err}, true
	}
	n := copy(b.buf[b.n:], p)
	b.n += n
	return blitzio.Result[int]{Value: n}, true
}

// PollFlush writes the buffered bytes to the stream.
func (b *BufWriter) PollFlush(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	for b.err == nil && b.n > 0 {
		res, ok := b.w.PollWrite(cx, b.buf[:b.n])
		if !ok {
			return blitzio.Result[struct{}]{}, false
		}
		// Bytes written together with an error leave the buffer as bufio.Writer's
		// do, so that Buffered counts only what the stream did not take.
		n, err := counted(res, b.n)
		b.n = copy(b.buf, b.buf[n:b.n])
		b.err = err
	}
	return blitzio.Result[struct{}]{Err: b.err}, true
}

type bufWriteFuture struct {
	b *BufWriter
	p []byte
	n int
}

// Poll implements blitzio.Future.
func (f *bufWriteFuture) Poll(cx *blitzio.Context) (blitzio.Result[int], bool) {
	for f.n < len(f.p) {
		res, ok := f.b.PollWrite(cx, f.p[f.n:])
		if !ok {
			return blitzio.Result[int]{}, false
		}
		if res.Err != nil {
			return blitzio.Result[int]{Value: f.n, Err: res.Err}, true
		}
		f.n += res.Value
	}
	return blitzio.Result[int]{Value: f.n}, true
}

// Write returns a future that takes all of p into the buffer (flushing as it fills); the
// bytes reach the stream at the latest at Flush. The future is owned by b and reused by
// the next Write. It is not cancellation-safe, like WriteAll: dropped before it is
// ready, a prefix of p has been taken (buffered or written), and a retry with all of p
// would send that prefix twice.
func (b *BufWriter) Write(p []byte) blitzio.Future[blitzio.Result[int]] {
	b.write.p, b.write.n = p, 0
	return &b.write
}

type flushFuture struct{ b *BufWriter }

// Poll implements blitzio.Future.
func (f *flushFuture) Poll(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	return f.b.PollFlush(cx)
}

// Flush returns a future that writes the buffered bytes to the stream. The future is
// owned by b.
func (b *BufWriter) Flush() blitzio.Future[blitzio.Result[struct{}]] { return &b.flush }
