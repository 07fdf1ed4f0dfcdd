package stream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// noopCx is a hand-made Context whose waker does nothing (tests poll by hand).
func noopCx() *blitzio.Context { return blitzio.NewContext(nil, blitzio.WakerFunc(func() {})) }

// TestHostile2ReadUntilAbandonedThenOtherDelim abandons a ReadUntil(';') that has
// scanned the buffered bytes without finding ';' (a timeout, a select), then asks for a
// line. ReadLine is documented as cancellation-safe and the abandoned call consumed
// nothing, so the next call must see the "\n" that is already buffered: the line is
// "ab", not "ab\ncd..." glued to whatever comes later.
func TestHostile2ReadUntilAbandonedThenOtherDelim(t *testing.T) {
	a, b := Duplex(64)
	cx := noopCx()
	br := NewBufReader(b, 16)
	a.PollWrite(cx, []byte("ab\ncd"))
	if r, ok := br.ReadUntil(';', nil).Poll(cx); ok {
		t.Fatalf("ReadUntil(';') ready without a ';': %q %v", r.Value, r.Err)
	}
	// Abandoned. Nothing was consumed:
	if br.Buffered() != 5 {
		t.Fatalf("Buffered = %d after an abandoned ReadUntil, want 5", br.Buffered())
	}
	a.PollWrite(cx, []byte("ef\n"))
	a.CloseWrite()
	var got []string
	for {
		r := pollUntilReady(t, br.ReadLine(), 100)
		if r.Err == io.EOF {
			break
		}
		if r.Err != nil {
			t.Fatalf("ReadLine: %v", r.Err)
		}
		got = append(got, r.Value)
	}
	if want := []string{"ab", "cdef"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines after an abandoned ReadUntil(';') = %q, want %q", got, want)
	}
}

// TestHostile2ReadUntilSwitchDelimAfterPending is the same with ReadUntil on both sides:
// a pending ReadUntil(' ') followed by ReadUntil(':') on the same bytes.
func TestHostile2ReadUntilSwitchDelimAfterPending(t *testing.T) {
	r := &scriptReader{chunks: []string{"key:value", "", " rest"}}
	br := NewBufReader(r, 32)
	cx := noopCx()
	// First poll: reads "key:value", no ' ' in it: pending.
	if res, ok := br.ReadUntil(' ', nil).Poll(cx); ok {
		t.Fatalf("ReadUntil(' ') ready: %q %v", res.Value, res.Err)
	}
	res := pollUntilReady(t, br.ReadUntil(':', nil), 100)
	if res.Err != nil || string(res.Value) != "key:" {
		t.Fatalf("ReadUntil(':') after an abandoned ReadUntil(' ') = %q, %v; want \"key:\"", res.Value, res.Err)
	}
}

// scriptReader returns its chunks one per call; an empty chunk means "pending" (it
// wakes the caller at once). After the chunks: io.EOF.
type scriptReader struct {
	chunks []string
}

func (s *scriptReader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	if len(s.chunks) == 0 {
		return blitzio.Result[int]{Err: io.EOF}, true
	}
	c := s.chunks[0]
	if c == "" {
		s.chunks = s.chunks[1:]
		cx.Waker().Wake()
		return blitzio.Result[int]{}, false
	}
	n := copy(p, c)
	if n < len(c) {
		s.chunks[0] = c[n:]
	} else {
		s.chunks = s.chunks[1:]
	}
	return blitzio.Result[int]{Value: n}, true
}

// TestHostile2ReadLineCRLFSplitAcrossReads delivers "\r" and "\n" in separate reads, and
// lines longer than the initial buffer, with pending polls in between.
func TestHostile2ReadLineCRLFSplitAcrossReads(t *testing.T) {
	long := strings.Repeat("y", 37)
	r := &scriptReader{chunks: []string{"one\r", "", "\ntwo", "\r", "", "\n", long[:10], "", long[10:] + "\r", "\nlast\r"}}
	br := NewBufReader(r, 4)
	var got []string
	for {
		res := pollUntilReady(t, br.ReadLine(), 1000)
		if res.Err == io.EOF {
			break
		}
		if res.Err != nil {
			t.Fatalf("ReadLine: %v", res.Err)
		}
		got = append(got, res.Value)
	}
	if want := []string{"one", "two", long, "last"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

// TestHostile2ReadLineAtMaxLineBoundary: SetMaxLine(n) is "the longest line accepted,
// delimiter included". A line of exactly n bytes with its "\n" is accepted, one of n+1
// is not; and a last line of n bytes without a newline (nothing to include) is within
// the limit too.
func TestHostile2ReadLineAtMaxLineBoundary(t *testing.T) {
	// exactly the limit, with the newline
	br := NewBufReader(&scriptReader{chunks: []string{"abc\n", "x\n"}}, 2)
	br.SetMaxLine(4)
	if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != nil || r.Value != "abc" {
		t.Fatalf("4-byte line with a limit of 4 = %q, %v", r.Value, r.Err)
	}
	if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != nil || r.Value != "x" {
		t.Fatalf("next line = %q, %v", r.Value, r.Err)
	}
	// one past the limit
	br = NewBufReader(&scriptReader{chunks: []string{"abcd\n"}}, 2)
	br.SetMaxLine(4)
	if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != ErrTooLong {
		t.Fatalf("5-byte line with a limit of 4 = %q, %v; want ErrTooLong", r.Value, r.Err)
	}
}

// TestHostile2ReadLineLastLineAtLimitWithoutNewline: a final line of exactly SetMaxLine
// bytes, with no newline before EOF, is a line no longer than the limit: ReadLine must
// return it (as it does for a shorter last line), not ErrTooLong.
func TestHostile2ReadLineLastLineAtLimitWithoutNewline(t *testing.T) {
	br := NewBufReader(&scriptReader{chunks: []string{"abcd"}}, 2)
	br.SetMaxLine(4)
	r := pollUntilReady(t, br.ReadLine(), 100)
	if r.Err != nil || r.Value != "abcd" {
		t.Fatalf("last line \"abcd\" (no newline) with SetMaxLine(4) = %q, %v; want \"abcd\", nil", r.Value, r.Err)
	}
}

// TestHostile2ReadUntilEOFMidChunk: the stream ends in the middle of a chunk; the rest
// comes back with io.EOF, then io.EOF alone, and nothing is duplicated.
func TestHostile2ReadUntilEOFMidChunk(t *testing.T) {
	br := NewBufReader(&scriptReader{chunks: []string{"a,b", "", ",cc"}}, 2)
	var all []byte
	for i := 0; i < 10; i++ {
		r := pollUntilReady(t, br.ReadUntil(',', nil), 100)
		all = append(all, r.Value...)
		if r.Err == io.EOF {
			if string(r.Value) != "cc" {
				t.Fatalf("chunk at EOF = %q, want \"cc\"", r.Value)
			}
			break
		}
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if string(all) != "a,b,cc" {
		t.Fatalf("all = %q", all)
	}
	if r := pollUntilReady(t, br.ReadUntil(',', nil), 100); r.Err != io.EOF || len(r.Value) != 0 {
		t.Fatalf("after EOF = %q, %v", r.Value, r.Err)
	}
}

// TestHostile2BufReaderErrorAfterPartialLine: a read error (not EOF) after part of a
// line keeps being reported; the buffered bytes are still readable with Read.
func TestHostile2BufReaderErrorAfterPartialLine(t *testing.T) {
	boom := errors.New("boom")
	br := NewBufReader(&chunkReader{data: []byte("par"), sizes: []int{3}, err: boom}, 8)
	for range 2 {
		if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != boom {
			t.Fatalf("ReadLine = %q, %v; want boom", r.Value, r.Err)
		}
	}
	p := make([]byte, 8)
	r := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 100)
	if r.Err != nil || string(p[:r.Value]) != "par" {
		t.Fatalf("Read after the error = %q, %v", p[:r.Value], r.Err)
	}
	r = pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 100)
	if r.Err != boom {
		t.Fatalf("second Read = %d, %v; want boom", r.Value, r.Err)
	}
}

// zeroWriter reports every write ready with zero bytes and no error: a broken writer
// that the package promises to turn into errNoProgress instead of spinning.
type zeroWriter struct{ calls int }

func (w *zeroWriter) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	w.calls++
	if w.calls > 1000 {
		panic("zeroWriter: polled 1000 times: the caller spins on a zero-byte write")
	}
	return blitzio.Result[int]{}, true
}

// TestHostile2BufWriterLargeWriteZeroProgress: BufWriter.Write of a payload at least as
// large as the buffer goes straight to the stream. Over a writer that reports zero
// bytes and no error, every other loop of the package stops with errNoProgress (see
// TestContractViolationsFailInsteadOfSpinning); this one must too, not spin forever.
func TestHostile2BufWriterLargeWriteZeroProgress(t *testing.T) {
	bw := NewBufWriter(&zeroWriter{}, 8)
	var res blitzio.Result[int]
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("BufWriter.Write(16 bytes) over a zero-byte writer: %v", p)
			}
		}()
		res = pollUntilReady(t, bw.Write(bytes.Repeat([]byte("x"), 16)), 1)
	}()
	if res.Err != errNoProgress {
		t.Fatalf("BufWriter.Write over a zero-byte writer = %d, %v; want errNoProgress", res.Value, res.Err)
	}
}

// TestHostile2BufWriterSmallWriteZeroProgress is the buffered path of the same: the
// flush finds the broken writer.
func TestHostile2BufWriterSmallWriteZeroProgress(t *testing.T) {
	bw := NewBufWriter(&zeroWriter{}, 8)
	if res := pollUntilReady(t, bw.Write([]byte("01234")), 1); res.Err != nil || res.Value != 5 {
		t.Fatalf("first Write = %d, %v", res.Value, res.Err)
	}
	res := pollUntilReady(t, bw.Write([]byte("56789")), 10)
	if res.Err != errNoProgress {
		t.Fatalf("BufWriter.Write = %d, %v; want errNoProgress", res.Value, res.Err)
	}
}
