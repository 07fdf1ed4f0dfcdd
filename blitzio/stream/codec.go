package stream

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/blitzgo/blitz/blitzio"
)

// Decoder splits a byte stream into frames of type T (tokio-util's Decoder).
//
// Decode looks for one frame at the start of buf. It returns the frame and the number
// of bytes the frame used (n > 0); or n == 0 and a nil error to ask for more bytes; or an
// error, after which the stream is considered corrupt. atEOF reports that no more bytes
// will come: a decoder holding a partial frame then returns a final frame or an error
// (io.ErrUnexpectedEOF). Decode must not retain buf.
type Decoder[T any] interface {
	Decode(buf []byte, atEOF bool) (frame T, n int, err error)
}

// Encoder appends the wire form of a frame to dst (tokio-util's Encoder).
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

// FrameReader reads frames from a stream with a Decoder. Next is cancellation-safe: a
// frame is taken from the buffer only when whole.
type FrameReader[T any] struct {
	r          blitzio.AsyncReader
	dec        Decoder[T]
	buf        []byte
	start, end int
	eof        bool
	err        error
	rerr       error // a read error that came with bytes: f.err once they are decoded
	next       nextFrame[T]
}

// NewFrameReader returns a FrameReader that decodes r with dec.
func NewFrameReader[T any](r blitzio.AsyncReader, dec Decoder[T]) *FrameReader[T] {
	f := &FrameReader[T]{r: r, dec: dec, buf: make([]byte, DefaultBufSize)}
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
		if f.end > f.start || f.eof {
			frame, n, err := f.dec.Decode(f.buf[f.start:f.end], f.eof)
			switch {
			case err != nil:
				f.err = err
				continue
			case n < 0 || n > f.end-f.start:
				f.err = fmt.Errorf("stream: Decoder returned n = %d for %d bytes", n, f.end-f.start)
				continue
			case n > 0:
				f.start += n
				return blitzio.Result[T]{Value: frame}, true
			case f.eof:
				if f.end > f.start {
					f.err = io.ErrUnexpectedEOF
				} else {
					f.err = io.EOF
				}
				continue
			}
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

// NewFrameWriter returns a FrameWriter that encodes with enc onto w.
func NewFrameWriter[T any](w blitzio.AsyncWriter, enc Encoder[T]) *FrameWriter[T] {
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
	n := len(f.buf)
	out, err := f.enc.Encode(f.buf, frame)
	if err != nil {
		f.buf = f.buf[:n]
		return err
	}
	f.buf = out
	return nil
}

// PollFlush writes the buffered frames.
func (f *FrameWriter[T]) PollFlush(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	for f.err == nil && f.off < len(f.buf) {
		res, ok := f.w.PollWrite(cx, f.buf[f.off:])
		if !ok {
			return blitzio.Result[struct{}]{}, false
		}
		switch {
		case res.Err != nil:
			f.err = res.Err
		case res.Value <= 0 || res.Value > len(f.buf)-f.off:
			f.err = errNoProgress
		default:
			f.off += res.Value
		}
	}
	if f.err == nil {
		f.buf, f.off = f.buf[:0], 0
	}
	return blitzio.Result[struct{}]{Err: f.err}, true
}

type frameFlush[T any] struct{ f *FrameWriter[T] }

// Poll implements blitzio.Future.
func (n *frameFlush[T]) Poll(cx *blitzio.Context) (blitzio.Result[struct{}], bool) {
	return n.f.PollFlush(cx)
}

// Flush returns a future that writes the buffered frames. It is owned by f.
func (f *FrameWriter[T]) Flush() blitzio.Future[blitzio.Result[struct{}]] { return &f.flush }

// Send encodes frame and returns the future that flushes it (with any frame fed before).
// An encoding error is returned by the future.
func (f *FrameWriter[T]) Send(frame T) blitzio.Future[blitzio.Result[struct{}]] {
	if err := f.Feed(frame); err != nil {
		return blitzio.Ready(blitzio.Result[struct{}]{Err: err})
	}
	return &f.flush
}

// LinesCodec frames a stream as lines ending in "\n" (a "\r" before it is dropped when
// decoding), the framing of text protocols such as SMTP, Redis inline commands or
// line-delimited JSON. Encode appends "\n".
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

// Decode implements Decoder. A last line without "\n" at the end of the stream is
// returned as a line.
func (c LinesCodec) Decode(buf []byte, atEOF bool) (string, int, error) {
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		if len(bytes.TrimSuffix(buf[:i], []byte{'\r'})) > c.max() {
			return "", 0, ErrTooLong
		}
		return string(trimEOL(buf[:i+1])), i + 1, nil
	}
	if len(buf) > c.max()+1 { // +1: a "\r" may still be followed by "\n"
		return "", 0, ErrTooLong
	}
	if atEOF && len(buf) > 0 {
		line := bytes.TrimSuffix(buf, []byte{'\r'})
		if len(line) > c.max() { // the byte kept for a "\r" was not one
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

// DefaultMaxFrame is LengthDelimitedCodec's limit when MaxFrameLength is 0: 8 MiB,
// tokio-util's default.
const DefaultMaxFrame = 8 << 20

// LengthDelimitedCodec frames a stream as payloads each preceded by its length, a 4-byte
// big-endian unsigned integer: the framing of many binary protocols. Decoded frames are
// fresh slices the caller owns.
type LengthDelimitedCodec struct {
	// MaxFrameLength is the largest payload accepted; 0 means DefaultMaxFrame. A larger
	// length header fails with ErrTooLong before the payload is read. The header is 4
	// bytes, so no frame is larger than 4 GiB - 1 whatever MaxFrameLength says.
	MaxFrameLength int
}

func (c LengthDelimitedCodec) max() int {
	if c.MaxFrameLength <= 0 {
		return DefaultMaxFrame
	}
	return c.MaxFrameLength
}

// Decode implements Decoder.
func (c LengthDelimitedCodec) Decode(buf []byte, atEOF bool) ([]byte, int, error) {
	if len(buf) < 4 {
		return nil, 0, nil
	}
	size := binary.BigEndian.Uint32(buf)
	if uint64(size) > uint64(c.max()) {
		return nil, 0, ErrTooLong
	}
	if len(buf)-4 < int(size) {
		return nil, 0, nil
	}
	return bytes.Clone(buf[4 : 4+size : 4+size]), 4 + int(size), nil
}

// Encode implements Encoder.
func (c LengthDelimitedCodec) Encode(dst []byte, frame []byte) ([]byte, error) {
	if len(frame) > c.max() || uint64(len(frame)) > math.MaxUint32 {
		return dst, ErrTooLong // the 4-byte header cannot say more, whatever MaxFrameLength says
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(frame)))
	return append(dst, frame...), nil
}
