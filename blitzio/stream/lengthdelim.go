package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrame is LengthDelimitedCodec's limit when MaxFrameLength is 0: 8 MiB,
// tokio-util's default.
const DefaultMaxFrame = 8 << 20

// ErrInvalidLength is returned by LengthDelimitedCodec for a length field that cannot
// describe a frame: once LengthAdjustment is added it is negative, or the frame it
// gives would end inside its own header (Decode); or a frame whose length the
// configured field cannot say with that adjustment (Encode). The stream is corrupt (or
// the configuration wrong), as after ErrTooLong.
var ErrInvalidLength = errors.New("stream: length field does not describe a valid frame")

// errLengthConfig is wrapped by the errors that report an invalid LengthDelimitedCodec.
var errLengthConfig = errors.New("stream: invalid LengthDelimitedCodec")

// LengthDelimitedCodec frames a stream as frames each preceded by its length: the
// framing of many binary protocols. Decoded frames are fresh slices the caller owns.
//
// The zero value reads and writes a 4-byte big-endian length followed by that many
// bytes of payload. The other fields describe other headers, as tokio-util's
// LengthDelimitedCodec builder does. On the wire a frame is
//
//	+-- LengthFieldOffset --+-- length field --+------ rest ------+
//	|   (bytes before it)   | LengthFieldLength|                  |
//	+-----------------------+------------------+------------------+
//
// Decode reads the length field, an unsigned integer v, adds LengthAdjustment to it,
// and returns the n = v + LengthAdjustment bytes that follow the first NumSkip bytes of
// the frame, consuming NumSkip + n bytes. By default NumSkip is the whole header
// (LengthFieldOffset + LengthFieldLength), so v counts the bytes after the length field
// and the frame is what follows the header. Some common layouts:
//
//   - a 2-byte length: LengthFieldLength: 2.
//   - a length that counts the header too (the 2-byte length 13 before 11 bytes of
//     payload): LengthFieldLength: 2, LengthAdjustment: -2.
//   - frames returned with their header, which the caller parses: LengthFieldLength: 2,
//     LengthAdjustment: 2, NumSkip: -1 (skip nothing).
//   - a version byte, a 2-byte length, then a type byte that the caller wants in the
//     frame: LengthFieldOffset: 1, LengthFieldLength: 2, LengthAdjustment: 1,
//     NumSkip: 3.
//
// A configuration the codec cannot use (see Validate) makes Decode and Encode return
// an error that says why; call Validate to check one up front. Lengths are checked
// without overflow whatever the field holds: an 8-byte length of 2^64-1 is a frame
// over MaxFrameLength (ErrTooLong), never a negative or wrapped int.
type LengthDelimitedCodec struct {
	// MaxFrameLength is the largest frame accepted, counted as the bytes Decode returns
	// and Encode is given (after LengthAdjustment, without the skipped bytes); 0 means
	// DefaultMaxFrame. A larger length field fails with ErrTooLong before the frame is
	// read, and Encode refuses a larger frame with ErrTooLong. (tokio-util compares
	// the raw length field instead; the two agree when LengthAdjustment is 0.) No frame
	// is larger than the length field can say, whatever MaxFrameLength says.
	MaxFrameLength int

	// LengthFieldOffset is the number of header bytes before the length field; 0 by
	// default.
	LengthFieldOffset int

	// LengthFieldLength is the size of the length field in bytes, 1 to 8; 0 means 4.
	LengthFieldLength int

	// LengthAdjustment is added to the length field's value to give the frame's length
	// (it may be negative, for a length that counts header bytes as well).
	LengthAdjustment int

	// NumSkip is the number of bytes dropped from the start of each frame before the
	// bytes Decode returns. 0 means the whole header, LengthFieldOffset +
	// LengthFieldLength (tokio-util's default); a negative value means none, so that
	// the frame starts with its header.
	NumSkip int

	// LittleEndian reads and writes the length field least significant byte first;
	// the default is big-endian (network order).
	LittleEndian bool
}

// isDefault reports whether c has the default header: a 4-byte big-endian length of
// the payload that follows it.
func (c LengthDelimitedCodec) isDefault() bool {
	return c.LengthFieldOffset == 0 && c.LengthFieldLength == 0 && c.LengthAdjustment == 0 &&
		c.NumSkip == 0 && !c.LittleEndian
}

// max is MaxFrameLength with its default applied.
func (c LengthDelimitedCodec) max() int {
	if c.MaxFrameLength <= 0 {
		return DefaultMaxFrame
	}
	return c.MaxFrameLength
}

// lengthLayout is a validated LengthDelimitedCodec, with the defaults applied.
type lengthLayout struct {
	offset, size, skip, head int
	adj, max                 int
	little                   bool
}

// Validate reports whether the codec's configuration can be used: LengthFieldLength
// must be 0 or 1 to 8, and LengthFieldOffset must be 0 or more (and small enough for
// the header's size to be an int). Decode and Encode return the same error for an
// invalid configuration.
func (c LengthDelimitedCodec) Validate() error {
	_, err := c.layout()
	return err
}

func (c LengthDelimitedCodec) layout() (lengthLayout, error) {
	l := lengthLayout{offset: c.LengthFieldOffset, size: c.LengthFieldLength, adj: c.LengthAdjustment,
		max: c.MaxFrameLength, little: c.LittleEndian}
	if l.size == 0 {
		l.size = 4
	}
	if l.size < 1 || l.size > 8 || l.offset < 0 || l.offset > math.MaxInt-8 {
		return l, c.configError()
	}
	l.max = c.max()
	switch {
	case c.NumSkip == 0:
		l.skip = l.offset + l.size
	case c.NumSkip > 0:
		l.skip = c.NumSkip
	}
	l.head = max(l.offset+l.size, l.skip)
	return l, nil
}

// configError says what is wrong with a configuration layout refused. It is apart
// from layout, which runs for every frame, to keep that one small.
//
//go:noinline
func (c LengthDelimitedCodec) configError() error {
	if c.LengthFieldLength < 0 || c.LengthFieldLength > 8 {
		return fmt.Errorf("%w: LengthFieldLength is %d, want 1 to 8 (or 0 for 4)", errLengthConfig, c.LengthFieldLength)
	}
	return fmt.Errorf("%w: LengthFieldOffset is %d, want 0 or more", errLengthConfig, c.LengthFieldOffset)
}

// field reads the length field at the start of b.
func (l *lengthLayout) field(b []byte) uint64 {
	if l.little {
		switch l.size {
		case 2:
			return uint64(binary.LittleEndian.Uint16(b))
		case 4:
			return uint64(binary.LittleEndian.Uint32(b))
		case 8:
			return binary.LittleEndian.Uint64(b)
		}
		var v uint64
		for i := range l.size {
			v |= uint64(b[i]) << (8 * i)
		}
		return v
	}
	switch l.size {
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	case 8:
		return binary.BigEndian.Uint64(b)
	}
	var v uint64
	for i := range l.size {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// putField writes v into the length field at the start of b.
func (l *lengthLayout) putField(b []byte, v uint64) {
	for i := range l.size {
		if l.little {
			b[i] = byte(v >> (8 * i))
		} else {
			b[l.size-1-i] = byte(v >> (8 * i))
		}
	}
}

// adjMagnitude returns -adj as a uint64 for adj < 0 (math.MinInt included).
func adjMagnitude(adj int) uint64 { return uint64(-(adj + 1)) + 1 }

// invalidLength returns ErrInvalidLength with the details; it is out of line to keep
// the per-frame paths small.
//
//go:noinline
func invalidLength(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidLength}, args...)...)
}

// frameLen turns the length field v into the frame's length, checking every bound
// without overflow.
func (l *lengthLayout) frameLen(v uint64) (int, error) {
	var n uint64
	if l.adj >= 0 {
		n = v + uint64(l.adj)
		if n < v { // wrapped: more than any int
			return 0, ErrTooLong
		}
	} else {
		m := adjMagnitude(l.adj)
		if v < m {
			return 0, invalidLength("length field %d with LengthAdjustment %d is negative", v, l.adj)
		}
		n = v - m
	}
	if n > uint64(l.max) || int(n) > math.MaxInt-l.skip {
		return 0, ErrTooLong
	}
	if l.skip+int(n) < l.head {
		return 0, invalidLength("a frame of %d bytes after %d skipped ends inside its %d-byte header", n, l.skip, l.head)
	}
	return int(n), nil
}

// partialAtEOF is the answer for an incomplete frame: more bytes, unless none will
// come.
func partialAtEOF(buf []byte, atEOF bool) error {
	if atEOF && len(buf) > 0 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Decode implements Decoder. A frame cut short by the end of the stream is
// io.ErrUnexpectedEOF; a length field over MaxFrameLength is ErrTooLong, and one that
// describes no valid frame ErrInvalidLength, both as soon as the header is in buf.
func (c LengthDelimitedCodec) Decode(buf []byte, atEOF bool) ([]byte, int, error) {
	if c.isDefault() {
		// The common header, read without building the layout: as cheap as the fixed
		// 4-byte header this codec had before it took a configuration.
		if len(buf) < 4 {
			return nil, 0, partialAtEOF(buf, atEOF)
		}
		size := binary.BigEndian.Uint32(buf)
		if uint64(size) > uint64(c.max()) {
			return nil, 0, ErrTooLong
		}
		if uint64(len(buf)-4) < uint64(size) {
			return nil, 0, partialAtEOF(buf, atEOF)
		}
		end := 4 + int(size)
		return bytes.Clone(buf[4:end:end]), end, nil
	}
	l, err := c.layout()
	if err != nil {
		return nil, 0, err
	}
	if len(buf) < l.head {
		return nil, 0, partialAtEOF(buf, atEOF)
	}
	n, err := l.frameLen(l.field(buf[l.offset:]))
	if err != nil {
		return nil, 0, err
	}
	if len(buf)-l.skip < n { // len(buf) >= head >= skip
		return nil, 0, partialAtEOF(buf, atEOF)
	}
	end := l.skip + n
	return bytes.Clone(buf[l.skip:end:end]), end, nil
}

// Encode implements Encoder. It writes the length field, LengthAdjustment taken off
// the frame's length, then the frame: the layout of the default NumSkip with the length
// field first (LengthFieldOffset 0). With NumSkip negative (nothing skipped) the frame
// includes its header: Encode writes the frame with the length field inside it set,
// the rest of the header as the caller wrote it. Other layouts have header bytes
// Encode cannot know, and it refuses them with an error wrapping errors.ErrUnsupported
// (tokio-util writes the length field alone, which its decoder cannot read back).
// A frame over MaxFrameLength, or whose length the field cannot say, fails with
// ErrTooLong.
func (c LengthDelimitedCodec) Encode(dst []byte, frame []byte) ([]byte, error) {
	if c.isDefault() {
		if len(frame) > c.max() || uint64(len(frame)) > math.MaxUint32 {
			return dst, ErrTooLong // the 4-byte field cannot say more, whatever MaxFrameLength says
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(frame)))
		return append(dst, frame...), nil
	}
	l, err := c.layout()
	if err != nil {
		return dst, err
	}
	if len(frame) > l.max {
		return dst, ErrTooLong
	}
	// The field holds len(frame) - adj, computed without overflow: len(frame) <=
	// MaxInt and -adj <= 2^63, so the sum fits a uint64.
	var v uint64
	if l.adj >= 0 {
		if len(frame) < l.adj {
			return dst, invalidLength("a frame of %d bytes is shorter than LengthAdjustment %d", len(frame), l.adj)
		}
		v = uint64(len(frame) - l.adj)
	} else {
		v = uint64(len(frame)) + adjMagnitude(l.adj)
	}
	if l.size < 8 && v>>(8*l.size) != 0 {
		return dst, ErrTooLong // the field cannot say it, whatever MaxFrameLength says
	}
	switch {
	case l.offset == 0 && l.skip == l.size:
		base := len(dst)
		dst = append(dst, make([]byte, l.size)...)
		l.putField(dst[base:], v)
		return append(dst, frame...), nil
	case l.skip == 0:
		if len(frame) < l.offset+l.size {
			return dst, invalidLength("a frame of %d bytes cannot hold its %d-byte header", len(frame), l.offset+l.size)
		}
		base := len(dst)
		dst = append(dst, frame...)
		l.putField(dst[base+l.offset:], v)
		return dst, nil
	}
	return dst, fmt.Errorf("stream: LengthDelimitedCodec cannot encode with LengthFieldOffset %d and NumSkip %d, which leave header bytes it does not know: %w",
		c.LengthFieldOffset, c.NumSkip, errors.ErrUnsupported)
}
