package stream

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile9LinesCodecMaxLengthMaxInt: MaxLength: math.MaxInt means "no limit of my
// own". The check for an unfinished line computed MaxLength+1, which wraps to
// math.MinInt, so every line still waiting for its "\n" failed with ErrTooLong.
func TestHostile9LinesCodecMaxLengthMaxInt(t *testing.T) {
	c := LinesCodec{MaxLength: math.MaxInt}
	if line, n, err := c.Decode([]byte("abc"), false); err != nil || n != 0 {
		t.Fatalf("Decode of an unfinished line = %q, %d, %v; want more bytes", line, n, err)
	}
	got, err := decodeAll(t, []byte("one\r\ntwo\nthree"), []int{1, 2}, Decoder[string](c))
	if err != io.EOF || strings.Join(got, "|") != "one|two|three" {
		t.Fatalf("lines = %q, %v; want [one two three], io.EOF", got, err)
	}
}

// TestHostile9BufReaderMaxLineMaxInt: SetMaxLine(math.MaxInt) grew the buffer to
// min(2*len, maxLine+1), and maxLine+1 wraps negative: the first line longer than the
// buffer panicked in make instead of growing it.
func TestHostile9BufReaderMaxLineMaxInt(t *testing.T) {
	br := NewBufReader(&tinyReader{data: []byte("a long line\nx"), size: 3}, 4)
	br.SetMaxLine(math.MaxInt)
	var lines []string
	hostile8Within(t, "ReadLine", func() {
		for {
			r := pollUntilReady(t, br.ReadLine(), 100)
			if r.Err != nil {
				if r.Err != io.EOF {
					t.Errorf("ReadLine: %v", r.Err)
				}
				return
			}
			lines = append(lines, r.Value)
		}
	})
	if strings.Join(lines, "|") != "a long line|x" {
		t.Fatalf("lines = %q", lines)
	}
}

// TestHostile9FrameNilCodec: a nil Decoder or Encoder is a programmer error; it must be
// reported when the FrameReader or FrameWriter is made, with a message naming it,
// rather than as a nil dereference at the first frame, far from the mistake.
func TestHostile9FrameNilCodec(t *testing.T) {
	mustPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			p := recover()
			if p == nil || !strings.Contains(fmtAny(p), want) {
				t.Errorf("%s: panic %v; want one mentioning %q", what, p, want)
			}
		}()
		f()
	}
	mustPanic("NewFrameReader(r, nil)", "nil Decoder", func() { NewFrameReader[string](&tinyReader{}, nil) })
	mustPanic("NewFrameWriter(w, nil)", "nil Encoder", func() { NewFrameWriter[string](&smallWriter{max: 1}, nil) })
	mustPanic("NewFrameReader(nil, dec)", "nil AsyncReader", func() { NewFrameReader[string](nil, LinesCodec{}) })
	mustPanic("NewFrameWriter(nil, enc)", "nil AsyncWriter", func() { NewFrameWriter[string](nil, LinesCodec{}) })
}

func fmtAny(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// TestHostile9FrameWriterEncoderDropsBuffered: Feed handed the Encoder its whole
// buffer as dst, so an Encoder that treats dst as scratch (append(dst[:0], ...)) or
// returns a slice of its own, common mistakes in hand-written encoders, silently
// dropped or overwrote the frames fed before and not yet flushed; in the middle of a
// flush the writer then sent the tail of the wrong bytes. Whatever such an encoder
// does with dst, the frames already buffered must go out intact, followed by its own.
func TestHostile9FrameWriterEncoderDropsBuffered(t *testing.T) {
	encoders := map[string]encoderFunc{
		"scratch": func(dst []byte, s string) ([]byte, error) { return append(append(dst[:0], s...), '\n'), nil },
		"fresh":   func(dst []byte, s string) ([]byte, error) { return []byte(s + "\n"), nil },
	}
	for name, enc := range encoders {
		w := &smallWriter{max: 2}
		fw := NewFrameWriter[string](w, enc)
		if err := fw.Feed("first"); err != nil {
			t.Fatal(err)
		}
		// A short write: part of "first\n" is out, the rest buffered.
		cx := noopCx()
		for range 2 {
			fw.PollFlush(cx)
		}
		for _, f := range []string{"second", "third"} {
			if err := fw.Feed(f); err != nil {
				t.Fatal(err)
			}
		}
		if r := pollUntilReady(t, fw.Flush(), 100); r.Err != nil {
			t.Fatal(r.Err)
		}
		if w.out.String() != "first\nsecond\nthird\n" {
			t.Errorf("%s encoder: wrote %q; want \"first\\nsecond\\nthird\\n\"", name, w.out.String())
		}
	}
}

type encoderFunc func(dst []byte, s string) ([]byte, error)

func (f encoderFunc) Encode(dst []byte, s string) ([]byte, error) { return f(dst, s) }

// countingDecoder counts its calls and asks for more bytes until it sees "!".
type countingDecoder struct{ calls *int }

func (d countingDecoder) Decode(buf []byte, atEOF bool) (string, int, error) {
	*d.calls++
	if i := strings.IndexByte(string(buf), '!'); i >= 0 {
		return string(buf[:i]), i + 1, nil
	}
	return "", 0, nil
}

// pendingReader is never ready: every poll is a spurious wake-up.
type pendingReader struct{}

func (pendingReader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	return blitzio.Result[int]{}, false
}

// TestHostile9FrameReaderNoRedecodeWithoutNewBytes: polling a FrameReader again when no
// byte has arrived since its Decoder asked for more (a spurious wake-up, a select
// polling every branch, a timeout retried in a loop) must not run the Decoder again on
// the same bytes, as tokio-util's FramedRead decodes only after a read: with a decoder
// that searches its whole buffer, each such poll cost a full search.
func TestHostile9FrameReaderNoRedecodeWithoutNewBytes(t *testing.T) {
	calls := 0
	r := &hostile8Reader{steps: []hostile8Step{step("abc", nil)}}
	fr := NewFrameReader[string](readerChain{r, pendingReader{}}, countingDecoder{&calls})
	cx := noopCx()
	for range 100 {
		if res, ok := fr.PollNext(cx); ok {
			t.Fatalf("PollNext = %v without a whole frame", res)
		}
	}
	if calls != 1 {
		t.Fatalf("Decoder called %d times for one read; want 1", calls)
	}
}

// readerChain reads from a until it has served its script, then from b.
type readerChain struct {
	a *hostile8Reader
	b blitzio.AsyncReader
}

func (c readerChain) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(c.a.steps) > 0 {
		return c.a.PollRead(cx, p)
	}
	return c.b.PollRead(cx, p)
}

// TestHostile9FrameReaderBufferedAfterSwitch: a protocol that reads a line-based
// handshake with a FrameReader and then switches to raw bytes lost whatever the
// FrameReader had read past the last line (the sender wrote both at once): there was no
// way to get those bytes back. Buffered returns them, as tokio-util's read_buffer does.
func TestHostile9FrameReaderBufferedAfterSwitch(t *testing.T) {
	src := &tinyReader{data: []byte("HELLO v1\r\n\x00\x01\x02raw bytes"), size: 14}
	fr := NewFrameReader[string](src, LinesCodec{})
	if r := pollUntilReady(t, fr.Next(), 10); r.Err != nil || r.Value != "HELLO v1" {
		t.Fatalf("handshake = %q, %v", r.Value, r.Err)
	}
	rest := string(fr.Buffered()) + string(src.data)
	if rest != "\x00\x01\x02raw bytes" {
		t.Fatalf("bytes after the handshake = %q; want %q", rest, "\x00\x01\x02raw bytes")
	}
	// A FrameWriter reports what it holds: a producer can wait when it grows.
	w := &smallWriter{max: 1}
	fw := NewFrameWriter[string](w, LinesCodec{})
	fw.Feed("abc")
	fw.Feed("de")
	fw.PollFlush(noopCx()) // pending
	fw.PollFlush(noopCx()) // one byte written
	if fw.Buffered() != 6 {
		t.Fatalf("FrameWriter.Buffered = %d after writing 1 of 7 bytes; want 6", fw.Buffered())
	}
}

// TestHostile9FrameWriterFullStreamThenRetry: Send into a stream that is full (the peer
// reads nothing) stays pending without spinning; dropped and retried with Flush after
// more frames were fed, every frame reaches the peer once, in order, and Buffered counts
// down to 0.
func TestHostile9FrameWriterFullStreamThenRetry(t *testing.T) {
	a, b := Duplex(8)
	fw := NewFrameWriter[string](a, LinesCodec{})
	cx := noopCx()
	send := fw.Send("hello, world")
	for range 3 {
		if _, ok := send.Poll(cx); ok {
			t.Fatal("Send into a full 8-byte pipe finished")
		}
	}
	if fw.Buffered() != 5 { // 8 of 13 bytes went into the pipe
		t.Fatalf("Buffered = %d; want 5", fw.Buffered())
	}
	// The Send is dropped (a timeout); more frames are fed; the peer starts reading.
	if err := fw.Feed("again"); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 3)
	for range 100 {
		if r, ok := fw.PollFlush(cx); ok && r.Err == nil && fw.Buffered() == 0 {
			break
		}
		if r, ok := b.PollRead(cx, buf); ok && r.Err == nil {
			got = append(got, buf[:r.Value]...)
		}
	}
	a.CloseWrite()
	for range 100 {
		r, ok := b.PollRead(cx, buf)
		if !ok || r.Err != nil {
			break
		}
		got = append(got, buf[:r.Value]...)
	}
	if string(got) != "hello, world\nagain\n" || fw.Buffered() != 0 {
		t.Fatalf("peer read %q, Buffered %d; want \"hello, world\\nagain\\n\", 0", got, fw.Buffered())
	}
}
