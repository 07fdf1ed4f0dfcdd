package stream

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// Decoder splits a byte stream into frames of type T (tokio-util's Decoder).
//
// Decode looks for one frame at the start of buf. It returns the frame and the number
// of bytes the frame used (n > 0); or n == 0 and a nil error to ask for more bytes; or an
// error, after which the stream is considered corrupt. atEOF reports that no more bytes
// will come: a decoder holding a partial frame then returns a final frame or an error
// (io.ErrUnexpectedEOF). Decode must not retain buf.
//
// A FrameReader calls Decode again after it asked for more only once more bytes have
// arrived or the stream has ended, and always with the bytes of the earlier call at the
// start of buf.
type Decoder[T any] interface {
	Decode(buf []byte, atEOF bool) (frame T, n int, err error)
}

// Encoder appends the wire form of a frame to dst (tokio-util's Encoder) and returns
// the extended slice. On an error, what it appended is discarded. A FrameWriter passes
// an empty dst (with spare capacity to append into), so the frames it buffered earlier
// are out of the encoder's reach.
type Encoder[T any] interface {
	Encode(dst []byte, frame T) ([]byte, error)
}

// Codec is a Decoder and an Encoder of the same frame type.
type Codec[T any] interface {
	Decoder[T]
	Encoder[T]
}

// maxFrameBuffer bounds a FrameReader's buffer whatever its Decoder asks for: a decoder
// that keeps asking for more bytes fails with ErrTooLong instead of exhausting memory.
const maxFrameBuffer = 1 << 30

// FrameReader reads frames from a stream with a Decoder (tokio-util's FramedRead).
// Next is cancellation-safe: a frame is taken from the buffer only when whole, so a
// Next abandoned by a timeout loses nothing and the next call carries on.
//
// Its buffer grows to hold the largest frame, up to 1 GiB: a Decoder that still asks
// for more bytes then fails with ErrTooLong, whatever the codec's own limit says.
type FrameReader[T any] struct {
	r          blitzio.AsyncReader
	dec        Decoder[T]
	buf        []byte
	start, end int
	eof        bool
	err        error
	rerr       error // a read error that came with bytes: f.err once they are decoded
	res        resumer[T]
	seen       int // bytes of buf[start:end] the last Decode was given, when it asked for more
	next       nextFrame[T]
}

// resumer is implemented by the package's delimiter codecs: decodeFrom is Decode told
// that buf[:seen] was given to the previous call, which asked for more bytes, so that a
// search carries on where it stopped (tokio-util's LinesCodec keeps this index in the
// codec; here the FrameReader keeps it, and the codec stays a value).
type resumer[T any] interface {
	decodeFrom(buf []byte, seen int, atEOF bool) (frame T, n int, err error)
}

// resumerOf returns dec's resumer when dec is exactly one of the package's delimiter
// codecs. A type that embeds one has its own Decode, which must not be bypassed.
func resumerOf[T any](dec Decoder[T]) resumer[T] {
	switch any(dec).(type) {
	case LinesCodec, *LinesCodec:
		r, _ := dec.(resumer[T])
		return r
	}
	return nil
}

// NewFrameReader returns a FrameReader that decodes r with dec. It panics if r or dec
// is nil.
func NewFrameReader[T any](r blitzio.AsyncReader, dec Decoder[T]) *FrameReader[T] {
	if r == nil {
		panic("stream: NewFrameReader with a nil AsyncReader")
	}
	if dec == nil {
		panic("stream: NewFrameReader with a nil Decoder")
	}
	f := &FrameReader[T]{r: r, dec: dec, res: resumerOf(dec), buf: make([]byte, DefaultBufSize)}
	f.next.f = f
	return f
}

// PollNext decodes the next frame, reading as needed. At the clean end of the stream it
// returns io.EOF; a decode error or a read error is returned again by every later call.
func (f *FrameReader[T]) PollNext(cx *blitzio.Context) (blitzio.Result[T], bool) {
	for {
		if f.err != nil {
			return blitzio.Result[T]{Err: f.err}, true
		}
		// Decode when bytes arrived since the decoder last asked for more (or the
		// stream ended): a poll with nothing new does not search the same bytes again.
		if f.end-f.start > f.seen || f.eof {
			var (
				frame T
				n     int
				err   error
			)
			if f.res != nil {
				frame, n, err = f.res.decodeFrom(f.buf[f.start:f.end], f.seen, f.eof)
			} else {
				frame, n, err = f.dec.Decode(f.buf[f.start:f.end], f.eof)
			}
			switch {
			case err != nil:
				f.err = err
				continue
			case n < 0 || n > f.end-f.start:
				f.err = fmt.Errorf("stream: Decoder returned n = %d for %d bytes", n, f.end-f.start)
				continue
			case n > 0:
				f.start += n
				f.seen = 0
				return blitzio.Result[T]{Value: frame}, true
			case f.eof:
				if f.end > f.start {
					f.err = io.ErrUnexpectedEOF
				} else {
					f.err = io.EOF
				}
				continue
			}
			f.seen = f.end - f.start
		}
		if !f.read(cx) {
			return blitzio.Result[T]{}, false
		}
	}
}

// read makes room and reads once; it returns false if the stream is not ready.
func (f *FrameReader[T]) read(cx *blitzio.Context) bool {
	if f.rerr != nil {
		f.err = f.rerr
		return true
	}
	if f.start == f.end {
		f.start, f.end = 0, 0
	}
	if f.end == len(f.buf) {
		if f.start > 0 {
			f.end = copy(f.buf, f.buf[f.start:f.end])
			f.start = 0
		} else {
			if len(f.buf) >= maxFrameBuffer {
				f.err = ErrTooLong
				return true
			}
			grown := make([]byte, 2*len(f.buf))
			f.end = copy(grown, f.buf[f.start:f.end])
			f.buf = grown
		}
	}
	res, ok := f.r.PollRead(cx, f.buf[f.end:])
	if !ok {
		return false
	}
	// Bytes that came with an error are decoded before it is reported (io.Reader's
	// rule, which tokio-util's FramedRead follows for EOF).
	n, err := counted(res, len(f.buf)-f.end)
	f.end += n
	switch {
	case err == io.EOF:
		f.eof = true
	case err != nil && n > 0:
		f.rerr = err
	case err != nil:
		f.err = err
	}
	return true
}

// Buffered returns the bytes read from the stream and not yet taken as frames
// (tokio-util's FramedRead.read_buffer): a partial frame, or bytes of another protocol
// that came with the last frame. A protocol that switches framing (a line-based
// handshake followed by raw bytes, for example) reads them from here before it reads
// the stream directly. The slice is valid until the next call on f.
func (f *FrameReader[T]) Buffered() []byte { return f.buf[f.start:f.end:f.end] }

type nextFrame[T any] struct{ f *FrameReader[T] }

// Poll implements blitzio.Future.
func (n *nextFrame[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) { return n.f.PollNext(cx) }

// Next returns a future of the next frame (io.EOF at the clean end of the stream). The
// future is owned by f and reused by the next call.
func (f *FrameReader[T]) Next() blitzio.Future[blitzio.Result[T]] { return &f.next }

// FrameWriter writes frames to a stream with an Encoder, through a buffer: Feed encodes
// without writing, Flush writes, Send does both.
type FrameWriter[T any] struct {
	w     blitzio.AsyncWriter
	enc   Encoder[T]
	buf   []byte
	off   int
	err   error
	flush frameFlush[T]
}

// NewFrameWriter returns a FrameWriter that encodes with enc onto w. It panics if w or
// enc is nil.
func NewFrameWriter[T any](w blitzio.AsyncWriter, enc Encoder[T]) *FrameWriter[T] {
	if w == nil {
		panic("stream: NewFrameWriter with a nil AsyncWriter")
	}
	if enc == nil {
		panic("stream: NewFrameWriter with a nil Encoder")
	}
	f := &FrameWriter[T]{w: w, enc: enc}
	f.flush.f = f
	return f
}

// Feed encodes frame into the buffer without writing it. It fails if the encoder
// rejects the frame (nothing is buffered then) or an earlier write failed.
func (f *FrameWriter[T]) Feed(frame T) error {
	if f.err != nil {
		return f.err
	}
	if f.off == len(f.buf) {
		f.buf, f.off = f.buf[:0], 0
	}
	// The encoder gets an empty dst over the free space after the buffered frames, so
	// that one which treats dst as scratch (append(dst[:0], ...)) or returns a slice of
	// its own cannot overwrite or drop them.
	n := len(f.buf)
	out, err := f.enc.Encode(f.buf[n:n], frame)
	if err != nil {
		return err
	}
	if free := f.buf[n:cap(f.buf)]; len(out) > 0 && len(out) <= len(free) && &out[0] == &free[0] {
		f.buf = f.buf[:n+len(out)] // appended in place
	} else {
		f.buf = append(f.buf, out...)
	}
	return nil
}

// PollFlush writes the buffered frames.
func (f *FrameWriter[T]) PollFlush(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	for f.err == nil && f.off < len(f.buf) {
		res, ok := f.w.PollWrite(cx, f.buf[f.off:])
		if !ok {
			return blitzio.Result[struct{}]{}, false
		}
		// Bytes written together with an error (a writer adapted from io.Writer) were
		// sent: Buffered no longer counts them.
		n, err := counted(res, len(f.buf)-f.off)
		f.off += n
		f.err = err
	}
	if f.err == nil {
		f.buf, f.off = f.buf[:0], 0
	}
	return blitzio.Result[struct{}]{Err: f.err}, true
}

// Buffered returns the number of encoded bytes not yet written to the stream
// (tokio-util's FramedWrite.write_buffer). FrameWriter does not bound its buffer: a
// producer that feeds frames faster than the stream takes them can check Buffered and
// wait for Flush before feeding more.
func (f *FrameWriter[T]) Buffered() int { return len(f.buf) - f.off }

type frameFlush[T any] struct{ f *FrameWriter[T] }

// Poll implements blitzio.Future.
func (n *frameFlush[T]) Poll(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	return n.f.PollFlush(cx)
}

// Flush returns a future that writes the buffered frames. It is owned by f.
func (f *FrameWriter[T]) Flush() blitzio.Future[blitzio.Result[struct{}]] { return &f.flush }

// Send encodes frame and returns the future that flushes it (with any frame fed before).
// An encoding error is returned by the future.
//
// The frame is buffered when Send is called, not when the future is polled: a Send
// dropped before it is ready (by a timeout or a select) still writes its frame with the
// next Flush or Send. Retry it with Flush, not with another Send, or the frame goes
// out twice.
func (f *FrameWriter[T]) Send(frame T) blitzio.Future[blitzio.Result[struct{}]] {
	if err := f.Feed(frame); err != nil {
		return blitzio.Ready(blitzio.Result[struct{}]{Err: err})
	}
	return &f.flush
}

// LinesCodec frames a stream as lines ending in "\n" (a "\r" before it is dropped when
// decoding), the framing of text protocols such as SMTP, Redis inline commands or
// line-delimited JSON. Encode appends "\n".
//
// A last line without "\n" is a line only at a clean end of the stream (io.EOF): when
// the stream fails with another error part-way through a line, a FrameReader returns
// that error and not the partial line (bufio.Scanner returns the partial line first).
type LinesCodec struct {
	// MaxLength is the longest line accepted, without its end of line; 0 means
	// DefaultMaxLine. A longer line fails with ErrTooLong.
	MaxLength int
}

func (c LinesCodec) max() int {
	if c.MaxLength <= 0 {
		return DefaultMaxLine
	}
	return c.MaxLength
}

// linesScanHook, when set (by tests), is told how many bytes each LinesCodec search
// looks at.
var linesScanHook atomic.Pointer[func(n int)]

// Decode implements Decoder. A last line without "\n" at the end of the stream is
// returned as a line. Decode looks at no more than MaxLength+2 bytes of buf (the
// longest line, a "\r" and the "\n"), however many it is given.
//
// A FrameReader does not search the same bytes twice: while a line is incomplete, each
// call carries on where the last one stopped (as tokio-util's LinesCodec does), so a
// line that arrives a byte at a time costs time linear in its length.
func (c LinesCodec) Decode(buf []byte, atEOF bool) (string, int, error) {
	return c.decodeFrom(buf, 0, atEOF)
}

// decodeFrom is Decode for a buf whose first seen bytes were passed to an earlier call
// that asked for more: they hold no "\n", and the search starts after them.
func (c LinesCodec) decodeFrom(buf []byte, seen int, atEOF bool) (string, int, error) {
	limit := c.max()
	// The "\n" ends a line of at most limit bytes and a "\r": it is among the first
	// limit+2 bytes, or the line is too long. (limit+2 cannot overflow: it is only
	// computed when smaller than len(buf).)
	end := len(buf)
	if end-2 > limit {
		end = limit + 2
	}
	from := min(max(seen, 0), end)
	i := bytes.IndexByte(buf[from:end], '\n')
	if h := linesScanHook.Load(); h != nil {
		if i >= 0 {
			(*h)(i + 1)
		} else {
			(*h)(end - from)
		}
	}
	if i >= 0 {
		i += from
		line := buf[:i]
		if i > 0 && line[i-1] == '\r' {
			line = line[:i-1]
		}
		if len(line) > limit {
			return "", 0, ErrTooLong
		}
		return string(line), i + 1, nil
	}
	if len(buf)-1 > limit { // a "\r" may still be followed by "\n" (and limit+1 may overflow)
		return "", 0, ErrTooLong
	}
	if atEOF && len(buf) > 0 {
		line := bytes.TrimSuffix(buf, []byte{'\r'})
		if len(line) > limit { // the byte kept for a "\r" was not one
			return "", 0, ErrTooLong
		}
		return string(line), len(buf), nil
	}
	return "", 0, nil
}

// Encode implements Encoder. A line containing "\n" is rejected: it would become two
// frames at the other end.
func (c LinesCodec) Encode(dst []byte, line string) ([]byte, error) {
	if strings.IndexByte(line, '\n') >= 0 {
		return dst, fmt.Errorf("stream: LinesCodec cannot encode a line containing a newline")
	}
	if len(line) > c.max() {
		return dst, ErrTooLong
	}
	dst = append(dst, line...)
	return append(dst, '\n'), nil
}
