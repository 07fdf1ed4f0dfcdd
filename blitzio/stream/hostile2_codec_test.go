package stream

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// decodeAll runs a FrameReader over data delivered in the given chunk sizes and returns
// the frames and the error that ended it (io.EOF at a clean end).
func decodeAll[T any](t *testing.T, data []byte, sizes []int, dec Decoder[T]) ([]T, error) {
	t.Helper()
	fr := NewFrameReader[T](&chunkReader{data: bytes.Clone(data), sizes: sizes}, dec)
	var out []T
	for range 100000 {
		r := pollUntilReady(t, fr.Next(), 100000)
		if r.Err != nil {
			// The error is sticky.
			if r2 := pollUntilReady(t, fr.Next(), 10); r2.Err != r.Err {
				t.Fatalf("error not sticky: %v then %v", r.Err, r2.Err)
			}
			return out, r.Err
		}
		out = append(out, r.Value)
	}
	t.Fatal("FrameReader never ended")
	return nil, nil
}

// TestHostile2LinesCodecMaxLengthAtEOF: MaxLength is "the longest line accepted,
// without its end of line". A line of MaxLength+1 bytes is refused when a "\n" follows
// it; it must be refused just the same when it is the last line of the stream, with no
// "\n" after it. (The +1 slack Decode keeps for a possible "\r" is not a "\r" here.)
func TestHostile2LinesCodecMaxLengthAtEOF(t *testing.T) {
	c := LinesCodec{MaxLength: 3}
	for _, sizes := range [][]int{{1}, {100}} {
		if got, err := decodeAll(t, []byte("abcd\n"), sizes, Decoder[string](c)); err != ErrTooLong {
			t.Fatalf("sizes %v: \"abcd\\n\" with MaxLength 3 = %q, %v; want ErrTooLong", sizes, got, err)
		}
		got, err := decodeAll(t, []byte("ok\nabcd"), sizes, Decoder[string](c))
		if err != ErrTooLong {
			t.Fatalf("sizes %v: last line \"abcd\" (no newline) with MaxLength 3 = %q, %v; want [\"ok\"], ErrTooLong", sizes, got, err)
		}
	}
}

// TestHostile2LinesCodecBoundaries checks the lengths right at MaxLength, with and
// without "\r", in the middle and at the end of the stream.
func TestHostile2LinesCodecBoundaries(t *testing.T) {
	c := LinesCodec{MaxLength: 3}
	for _, sizes := range [][]int{{1}, {2, 5}, {100}} {
		got, err := decodeAll(t, []byte("abc\nab\r\nabc\r\n\n\r\nxyz\r"), sizes, Decoder[string](c))
		if err != io.EOF || strings.Join(got, "|") != "abc|ab|abc|||xyz" {
			t.Fatalf("sizes %v: %q, %v", sizes, got, err)
		}
		if got, err := decodeAll(t, []byte("abcd\r\n"), sizes, Decoder[string](c)); err != ErrTooLong {
			t.Fatalf("sizes %v: \"abcd\\r\\n\" = %q, %v; want ErrTooLong", sizes, got, err)
		}
	}
}

func ldFrame(size uint32, payload string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, size), payload...)
}

// TestHostile2LengthDelimitedEdges: zero-length frames, a frame exactly at the limit and
// one byte over it, a header cut short by EOF, a payload cut short by EOF, and the
// largest header with the largest limit (no overflow, no panic).
func TestHostile2LengthDelimitedEdges(t *testing.T) {
	for _, sizes := range [][]int{{1}, {3, 7}, {1000}} {
		var wire []byte
		wire = append(wire, ldFrame(0, "")...)
		wire = append(wire, ldFrame(0, "")...)
		wire = append(wire, ldFrame(5, "12345")...)
		wire = append(wire, ldFrame(0, "")...)
		got, err := decodeAll(t, wire, sizes, Decoder[[]byte](LengthDelimitedCodec{MaxFrameLength: 5}))
		if err != io.EOF || len(got) != 4 || string(got[2]) != "12345" || len(got[0])+len(got[1])+len(got[3]) != 0 {
			t.Fatalf("sizes %v: %q, %v", sizes, got, err)
		}

		over := append(ldFrame(5, "12345"), ldFrame(6, "123456")...)
		got, err = decodeAll(t, over, sizes, Decoder[[]byte](LengthDelimitedCodec{MaxFrameLength: 5}))
		if err != ErrTooLong || len(got) != 1 {
			t.Fatalf("sizes %v: frame over the limit: %q, %v; want one frame, then ErrTooLong", sizes, got, err)
		}

		got, err = decodeAll(t, append(ldFrame(1, "a"), 0, 0), sizes, Decoder[[]byte](LengthDelimitedCodec{}))
		if err != io.ErrUnexpectedEOF || len(got) != 1 {
			t.Fatalf("sizes %v: header cut by EOF: %q, %v", sizes, got, err)
		}
		got, err = decodeAll(t, ldFrame(10, "abc"), sizes, Decoder[[]byte](LengthDelimitedCodec{}))
		if err != io.ErrUnexpectedEOF || len(got) != 0 {
			t.Fatalf("sizes %v: payload cut by EOF: %q, %v", sizes, got, err)
		}
	}
	// The largest header with no effective limit: Decode waits for the payload (and the
	// stream ends), it does not overflow 4+size or panic.
	c := LengthDelimitedCodec{MaxFrameLength: math.MaxInt}
	for _, size := range []uint32{math.MaxUint32, math.MaxUint32 - 3, math.MaxInt32} {
		buf := ldFrame(size, "xyz")
		if f, n, err := c.Decode(buf, false); n != 0 || err != nil || f != nil {
			t.Fatalf("Decode of a %d-byte header over 3 bytes = %q, %d, %v; want more bytes", size, f, n, err)
		}
	}
	if _, err := decodeAll(t, ldFrame(math.MaxUint32, "xyz"), []int{100}, Decoder[[]byte](c)); err != io.ErrUnexpectedEOF {
		t.Fatalf("4 GiB header then EOF: %v", err)
	}
}

// TestHostile2FrameWriterEncodeErrorKeepsEarlierFrames: a frame the encoder refuses
// leaves the frames fed before it intact, and Send of a good frame after it flushes them.
func TestHostile2FrameWriterEncodeErrorKeepsEarlierFrames(t *testing.T) {
	w := &smallWriter{max: 3}
	fw := NewFrameWriter[string](w, LinesCodec{MaxLength: 4})
	if err := fw.Feed("one"); err != nil {
		t.Fatal(err)
	}
	if err := fw.Feed("too long"); err != ErrTooLong {
		t.Fatalf("Feed of a long line: %v", err)
	}
	if r := pollUntilReady(t, fw.Send("bad\nline"), 1); r.Err == nil {
		t.Fatal("Send of a line with a newline succeeded")
	}
	if r := pollUntilReady(t, fw.Send("two"), 100); r.Err != nil {
		t.Fatal(r.Err)
	}
	if w.out.String() != "one\ntwo\n" {
		t.Fatalf("wrote %q", w.out.String())
	}
}

// TestHostile2FrameWriterFlushAbandonedMidway: a Flush dropped after a short write
// (a timeout) resumes where it stopped; frames fed meanwhile follow in order.
func TestHostile2FrameWriterFlushAbandonedMidway(t *testing.T) {
	w := &smallWriter{max: 2}
	fw := NewFrameWriter[string](w, LinesCodec{})
	fw.Feed("hello")
	cx := noopCx()
	// poll a few times but not to completion
	for range 3 {
		if _, ok := fw.Flush().Poll(cx); ok {
			t.Fatal("flush finished too early for the test")
		}
	}
	fw.Feed("world")
	if r := pollUntilReady(t, fw.Flush(), 100); r.Err != nil {
		t.Fatal(r.Err)
	}
	if w.out.String() != "hello\nworld\n" {
		t.Fatalf("wrote %q", w.out.String())
	}
	var _ blitzio.Future[blitzio.Result[struct{}]] = fw.Flush()
}
