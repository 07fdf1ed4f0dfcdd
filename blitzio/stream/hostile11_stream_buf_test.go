//go:build linux || darwin || freebsd

package stream

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// hostile11Panics reports the value f panicked with, or nil.
func hostile11Panics(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// hostile11Fill polls PollFill by hand until it is ready (at most 100 polls).
func hostile11Fill(t *testing.T, br *BufReader) blitzio.Result[[]byte] {
	t.Helper()
	return pollUntilReady(t, blitzio.Future[blitzio.Result[[]byte]](blitzio.PollFn(br.PollFill)), 100)
}

// hostile11Flush polls PollFlush by hand until it is ready (at most limit polls).
func hostile11Flush(t *testing.T, bw *BufWriter, limit int) blitzio.Result[struct{}] {
	t.Helper()
	return pollUntilReady(t, bw.Flush(), limit)
}

// TestHostile11BufReaderSetMaxLineRestoresDefault: SetMaxLine(n <= 0) restores
// DefaultMaxLine, both for a lowered limit and for a raised one.
func TestHostile11BufReaderSetMaxLineRestoresDefault(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, reset := range []int{0, -1, -1 << 40} {
		br := NewBufReader(&scriptReader{chunks: []string{long + "\n" + long + "\n"}}, 16)
		br.SetMaxLine(10)
		if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != ErrTooLong {
			t.Fatalf("ReadLine of 101 bytes with SetMaxLine(10) = %d bytes, %v; want ErrTooLong", len(r.Value), r.Err)
		}
		br.SetMaxLine(reset)
		if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != nil || r.Value != long {
			t.Fatalf("ReadLine after SetMaxLine(%d) = %d bytes, %v; want the 100-byte line", reset, len(r.Value), r.Err)
		}
	}
	// Raised, then restored: a line one byte over DefaultMaxLine fails again.
	over := strings.Repeat("y", DefaultMaxLine) + "\n"
	br := NewBufReader(&scriptReader{chunks: []string{over}}, 0)
	br.SetMaxLine(DefaultMaxLine + 10)
	br.SetMaxLine(0)
	if r := pollUntilReady(t, br.ReadUntil('\n', nil), 1000); r.Err != ErrTooLong || len(r.Value) != 0 {
		t.Fatalf("ReadUntil of DefaultMaxLine+1 bytes after SetMaxLine(0) = %d bytes, %v; want ErrTooLong and dst untouched", len(r.Value), r.Err)
	}
}

// TestHostile11BufReaderTooLongLosesNothing: ErrTooLong consumes nothing (ReadLine is
// documented as consuming nothing until the whole line is in), so asking again fails
// the same way instead of returning the tail of the long line as a line, and raising
// the limit recovers the whole line and the ones after it.
func TestHostile11BufReaderTooLongLosesNothing(t *testing.T) {
	long := strings.Repeat("L", 40)
	br := NewBufReader(&scriptReader{chunks: []string{long[:7], "", long[7:] + "\nnext\n"}}, 8)
	br.SetMaxLine(20)
	for i := range 3 {
		if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != ErrTooLong {
			t.Fatalf("ReadLine #%d of a 41-byte line, limit 20 = %q, %v; want ErrTooLong", i, r.Value, r.Err)
		}
	}
	if r := pollUntilReady(t, br.ReadUntil('\n', []byte("keep")), 100); r.Err != ErrTooLong || string(r.Value) != "keep" {
		t.Fatalf("ReadUntil after ErrTooLong = %q, %v; want dst \"keep\" unchanged and ErrTooLong", r.Value, r.Err)
	}
	br.SetMaxLine(41)
	var got []string
	for {
		r := pollUntilReady(t, br.ReadLine(), 100)
		if r.Err == io.EOF {
			break
		}
		if r.Err != nil {
			t.Fatalf("ReadLine after raising the limit: %v", r.Err)
		}
		got = append(got, r.Value)
	}
	if strings.Join(got, "|") != long+"|next" {
		t.Fatalf("lines after raising the limit = %q; want [%s next]", got, long)
	}
}

// TestHostile11BufReaderFillConsume: PollFill is Rust's fill_buf: it reads only when
// nothing is buffered, returns what is buffered otherwise, and Consume marks bytes used.
// Consume outside 0..Buffered panics and leaves the buffer as it was.
func TestHostile11BufReaderFillConsume(t *testing.T) {
	r := &hostile8Reader{steps: []hostile8Step{step("hello", nil), step("world", nil)}}
	br := NewBufReader(r, 8)
	if res := hostile11Fill(t, br); res.Err != nil || string(res.Value) != "hello" {
		t.Fatalf("PollFill = %q, %v; want \"hello\"", res.Value, res.Err)
	}
	br.Consume(0)
	br.Consume(2)
	if res := hostile11Fill(t, br); res.Err != nil || string(res.Value) != "llo" || r.calls != 1 {
		t.Fatalf("PollFill with 3 bytes buffered = %q, %v after %d reads; want \"llo\" without a read", res.Value, res.Err, r.calls)
	}
	for _, n := range []int{-1, 4, 1 << 30} {
		if p := hostile11Panics(func() { br.Consume(n) }); p == nil {
			t.Errorf("Consume(%d) with 3 bytes buffered did not panic", n)
		}
		if br.Buffered() != 3 {
			t.Fatalf("Buffered = %d after Consume(%d) panicked; want 3", br.Buffered(), n)
		}
	}
	br.Consume(3)
	if res := hostile11Fill(t, br); res.Err != nil || string(res.Value) != "world" {
		t.Fatalf("PollFill after consuming all = %q, %v; want \"world\"", res.Value, res.Err)
	}
	br.Consume(5)
	for i := range 3 {
		if res := hostile11Fill(t, br); res.Err != io.EOF || len(res.Value) != 0 {
			t.Fatalf("PollFill #%d at the end = %q, %v; want io.EOF and no bytes", i, res.Value, res.Err)
		}
	}
	if p := hostile11Panics(func() { br.Consume(1) }); p == nil {
		t.Error("Consume(1) at EOF did not panic")
	}
	// A ReadLine after Fill/Consume sees the rest.
	br = NewBufReader(&scriptReader{chunks: []string{"ab", "", "cd\nef"}}, 4)
	if res := hostile11Fill(t, br); string(res.Value) != "ab" {
		t.Fatalf("PollFill = %q", res.Value)
	}
	br.Consume(1)
	if r := pollUntilReady(t, br.ReadLine(), 100); r.Err != nil || r.Value != "bcd" {
		t.Fatalf("ReadLine after Consume(1) = %q, %v; want \"bcd\"", r.Value, r.Err)
	}
	if res := hostile11Fill(t, br); string(res.Value) != "ef" {
		t.Fatalf("PollFill after the line = %q, %v; want \"ef\"", res.Value, res.Err)
	}
}

// TestHostile11BufReaderFillBytesWithError: a reader adapted from io.Reader may return
// bytes and an error together; PollFill hands out the bytes first and the error once
// they are consumed, as bufio.Reader does, and the error then sticks.
func TestHostile11BufReaderFillBytesWithError(t *testing.T) {
	boom := errors.New("boom")
	br := NewBufReader(&hostile8Reader{steps: []hostile8Step{step("abc", boom)}}, 8)
	if res := hostile11Fill(t, br); res.Err != nil || string(res.Value) != "abc" {
		t.Fatalf("PollFill = %q, %v; want \"abc\" and no error yet", res.Value, res.Err)
	}
	br.Consume(3)
	for i := range 2 {
		if res := hostile11Fill(t, br); res.Err != boom || len(res.Value) != 0 {
			t.Fatalf("PollFill #%d after the bytes = %q, %v; want boom", i, res.Value, res.Err)
		}
	}
	p := make([]byte, 4)
	if res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 1); res.Err != boom {
		t.Fatalf("Read after the error = %d, %v; want boom", res.Value, res.Err)
	}
}

// TestHostile11BufReaderFillNoProgress: a reader reporting (0, nil) makes PollFill fail
// with io.ErrNoProgress (bufio's error) instead of returning an empty buffer that a
// Fill/Consume loop would spin on; so does one that claims more than the buffer.
func TestHostile11BufReaderFillNoProgress(t *testing.T) {
	for _, s := range []hostile8Step{{n: 0}, {data: "x", n: 9}, {data: "x", n: -1}} {
		br := NewBufReader(&hostile8Reader{steps: []hostile8Step{s}}, 4)
		res := hostile11Fill(t, br)
		if !errors.Is(res.Err, io.ErrNoProgress) || len(res.Value) != 0 {
			t.Errorf("PollFill over a reader reporting %d = %q, %v; want io.ErrNoProgress", s.n, res.Value, res.Err)
		}
	}
}

// TestHostile11BufReaderFillPendingThenData: PollFill over a reader that is not ready
// returns pending with the buffer untouched, and the bytes once they come.
func TestHostile11BufReaderFillPendingThenData(t *testing.T) {
	a, b := Duplex(16)
	br := NewBufReader(b, 4)
	woken := 0
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woken++ }))
	if res, ok := br.PollFill(cx); ok {
		t.Fatalf("PollFill on an empty pipe = %q, %v; want pending", res.Value, res.Err)
	}
	if _, ok := a.PollWrite(noopCx(), []byte("0123456789")); !ok {
		t.Fatal("PollWrite not ready")
	}
	if woken == 0 {
		t.Fatal("PollFill's waker not woken by the write")
	}
	var got []byte
	for len(got) < 10 {
		res, ok := br.PollFill(cx)
		if !ok || res.Err != nil || len(res.Value) == 0 || len(res.Value) > 4 {
			t.Fatalf("PollFill = %q, %v, ready %v; want 1..4 bytes", res.Value, res.Err, ok)
		}
		got = append(got, res.Value[0])
		br.Consume(1) // one byte at a time: the buffer refills only when empty
	}
	if string(got) != "0123456789" {
		t.Fatalf("bytes through PollFill = %q", got)
	}
}

// TestHostile11BufReaderRandomMix: lines, delimited chunks, plain reads and
// Fill/Consume interleaved at random over a reader with random chunk sizes return the
// bytes in order, none lost or repeated, for buffers smaller and larger than the lines.
func TestHostile11BufReaderRandomMix(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var src bytes.Buffer
		for range 200 {
			src.WriteString(strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(30)))
			src.WriteByte("\n;"[rng.IntN(2)])
		}
		src.WriteByte('\n')
		data := src.Bytes()
		br := NewBufReader(&chunkReader{data: bytes.Clone(data), sizes: []int{1 + rng.IntN(40), 1 + rng.IntN(7)}}, 1+rng.IntN(40))
		var out []byte
		for {
			var err error
			switch rng.IntN(4) {
			case 0:
				r := pollUntilReady(t, br.ReadLine(), 1000)
				if r.Err == nil {
					// ReadLine drops the "\n" (and a "\r", never written here).
					out = append(append(out, r.Value...), '\n')
				}
				err = r.Err
			case 1:
				r := pollUntilReady(t, br.ReadUntil(';', out), 1000)
				out, err = r.Value, r.Err
			case 2:
				p := make([]byte, 1+rng.IntN(50))
				r := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 1000)
				out, err = append(out, p[:r.Value]...), r.Err
			default:
				r := hostile11Fill(t, br)
				n := rng.IntN(len(r.Value) + 1)
				out = append(out, r.Value[:n]...)
				br.Consume(n)
				err = r.Err
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		// The data ends with "\n", so every line ReadLine returns had one.
		if !bytes.Equal(out, data) {
			t.Fatalf("seed %d: read %d bytes, want %d; first difference at %d", seed, len(out), len(data), firstDiffBytes(out, data))
		}
	}
}

func firstDiffBytes(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestHostile11BufWriterBufferedAvailable: Buffered and Available track the buffer as
// bufio.Writer's do, across writes that fit, a write that fills it, a write that forces
// a flush, and Flush; a size <= 0 means DefaultBufSize.
func TestHostile11BufWriterBufferedAvailable(t *testing.T) {
	for _, size := range []int{0, -7} {
		if bw := NewBufWriter(&smallWriter{max: 1}, size); bw.Available() != DefaultBufSize || bw.Buffered() != 0 {
			t.Errorf("NewBufWriter(w, %d): Available %d, Buffered %d; want %d, 0", size, bw.Available(), bw.Buffered(), DefaultBufSize)
		}
	}
	w := &smallWriter{max: 1 << 20}
	bw := NewBufWriter(w, 8)
	check := func(what string, buffered int) {
		t.Helper()
		if bw.Buffered() != buffered || bw.Available() != 8-buffered {
			t.Fatalf("%s: Buffered %d, Available %d; want %d, %d", what, bw.Buffered(), bw.Available(), buffered, 8-buffered)
		}
	}
	check("new", 0)
	pollUntilReady(t, bw.Write([]byte("abc")), 10)
	check("after 3 bytes", 3)
	pollUntilReady(t, bw.Write([]byte("defgh")), 10)
	check("full", 8)
	if w.out.Len() != 0 {
		t.Fatalf("wrote %q before the buffer overflowed", w.out.String())
	}
	pollUntilReady(t, bw.Write([]byte("i")), 10)
	check("after the overflowing byte", 1)
	if w.out.String() != "abcdefgh" {
		t.Fatalf("stream holds %q; want the flushed \"abcdefgh\"", w.out.String())
	}
	if r := hostile11Flush(t, bw, 10); r.Err != nil {
		t.Fatal(r.Err)
	}
	check("flushed", 0)
	if w.out.String() != "abcdefghi" {
		t.Fatalf("stream holds %q", w.out.String())
	}
}

// TestHostile11BufWriterShortWritesKeepOrder: over a stream that takes a few bytes at a
// time and is pending every other call, writes of random sizes (below, at and above
// the buffer size) arrive whole and in order, and at every step the bytes on the
// stream plus Buffered are what was written.
func TestHostile11BufWriterShortWritesKeepOrder(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 1))
		w := &smallWriter{max: 1 + rng.IntN(5)}
		bw := NewBufWriter(w, 1+rng.IntN(16))
		var want []byte
		for range 100 {
			p := make([]byte, rng.IntN(40))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			r := pollUntilReady(t, bw.Write(p), 10000)
			if r.Err != nil || r.Value != len(p) {
				t.Fatalf("seed %d: Write(%d bytes) = %d, %v", seed, len(p), r.Value, r.Err)
			}
			want = append(want, p...)
			if w.out.Len()+bw.Buffered() != len(want) {
				t.Fatalf("seed %d: %d on the stream + %d buffered != %d written", seed, w.out.Len(), bw.Buffered(), len(want))
			}
		}
		if r := hostile11Flush(t, bw, 10000); r.Err != nil {
			t.Fatal(r.Err)
		}
		if !bytes.Equal(w.out.Bytes(), want) || bw.Buffered() != 0 {
			t.Fatalf("seed %d: stream holds %d bytes (first difference at %d), Buffered %d; want %d", seed, w.out.Len(), firstDiffBytes(w.out.Bytes(), want), bw.Buffered(), len(want))
		}
	}
}

// TestHostile11BufWriterErrorMidFlush: a stream that fails after taking part of the
// buffer: Flush reports the error, Buffered counts only the bytes not taken (as
// bufio.Writer's does), and the error sticks for Write and Flush; an empty write is
// still (0, nil).
func TestHostile11BufWriterErrorMidFlush(t *testing.T) {
	boom := errors.New("boom")
	w := &failAfterWriter{max: 3, limit: 5, err: boom}
	bw := NewBufWriter(w, 8)
	for _, p := range []string{"0123", "4567"} {
		if r := pollUntilReady(t, bw.Write([]byte(p)), 1); r.Err != nil || r.Value != 4 {
			t.Fatalf("Write into the buffer = %d, %v", r.Value, r.Err)
		}
	}
	if bw.Buffered() != 8 || w.out.Len() != 0 {
		t.Fatalf("Buffered %d, stream %q before Flush; want 8 and nothing", bw.Buffered(), w.out.String())
	}
	if r := hostile11Flush(t, bw, 10); r.Err != boom {
		t.Fatalf("Flush = %v; want boom", r.Err)
	}
	if w.out.String() != "01234" || bw.Buffered() != 3 {
		t.Fatalf("stream holds %q, Buffered %d; want \"01234\" and 3", w.out.String(), bw.Buffered())
	}
	if r := pollUntilReady(t, bw.Write([]byte("x")), 1); r.Err != boom || r.Value != 0 {
		t.Fatalf("Write after the error = %d, %v; want 0, boom", r.Value, r.Err)
	}
	if r := hostile11Flush(t, bw, 1); r.Err != boom {
		t.Fatalf("second Flush = %v; want boom", r.Err)
	}
	if r, ok := bw.PollWrite(noopCx(), nil); !ok || r.Err != nil || r.Value != 0 {
		t.Fatalf("empty PollWrite after the error = %d, %v, %v; want (0, nil) at once", r.Value, r.Err, ok)
	}
}

// TestHostile11BufWriterBytesWithError: a stream adapted from io.Writer may report a
// partial write and its error together. Those bytes were written: Flush must drop them
// from the buffer (bufio.Writer does), and a Write that went straight to the stream must
// count them, as WriteAll and Copy do (io.Writer's count); a count beyond p is never
// passed on.
func TestHostile11BufWriterBytesWithError(t *testing.T) {
	boom := errors.New("boom")
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		n := min(3, len(p))
		out.Write(p[:n])
		return n, boom
	})
	bw := NewBufWriter(w, 8)
	pollUntilReady(t, bw.Write([]byte("abcdef")), 1)
	if r := hostile11Flush(t, bw, 1); r.Err != boom {
		t.Fatalf("Flush = %v; want boom", r.Err)
	}
	if bw.Buffered() != 3 {
		t.Errorf("Buffered after a flush that wrote 3 of 6 bytes with an error = %d; want 3", bw.Buffered())
	}
	// Straight to the stream: a write at least as large as the buffer.
	out.Reset()
	bw = NewBufWriter(w, 8)
	r := pollUntilReady(t, bw.Write([]byte("0123456789abcdef")), 10)
	if r.Value != out.Len() || r.Err != boom {
		t.Errorf("Write(16 bytes) over a stream taking 3 with an error = %d, %v; the stream took %d", r.Value, r.Err, out.Len())
	}
	// A count outside p, with an error, is not passed on.
	bw = NewBufWriter(writerFunc(func(p []byte) (int, error) { return len(p) + 5, boom }), 4)
	res, _ := bw.PollWrite(noopCx(), []byte("01234567"))
	if res.Value < 0 || res.Value > 8 || res.Err == nil {
		t.Errorf("PollWrite(8 bytes) over a stream claiming 13 = %d, %v; want a count within 0..8 and an error", res.Value, res.Err)
	}
}

// TestHostile11BufWriterDirectShortWrites: writes at least as large as the buffer go
// straight to the stream while nothing is buffered, short writes included; the tail
// that fits is buffered and reaches the stream at Flush.
func TestHostile11BufWriterDirectShortWrites(t *testing.T) {
	var out bytes.Buffer
	calls := 0
	w := writerFunc(func(p []byte) (int, error) {
		calls++
		n := min(5, len(p))
		out.Write(p[:n])
		return n, nil
	})
	bw := NewBufWriter(w, 8)
	data := []byte("abcdefghijklmnopqrst") // 20
	if r := pollUntilReady(t, bw.Write(data), 1); r.Err != nil || r.Value != 20 {
		t.Fatalf("Write = %d, %v", r.Value, r.Err)
	}
	if out.String() != "abcdefghijklmno" || bw.Buffered() != 5 || calls != 3 {
		t.Fatalf("after Write: stream %q, Buffered %d, %d writes; want 15 bytes direct in 3 writes and 5 buffered", out.String(), bw.Buffered(), calls)
	}
	if r := hostile11Flush(t, bw, 1); r.Err != nil || out.String() != string(data) {
		t.Fatalf("Flush = %v; stream %q", r.Err, out.String())
	}
}

// TestHostile11BufWriterPendingStream: while the stream is not ready a Write that needs
// room is pending and keeps what it took; once the stream drains, everything arrives in
// order and nothing twice.
func TestHostile11BufWriterPendingStream(t *testing.T) {
	a, b := Duplex(4)
	bw := NewBufWriter(a, 4)
	cx := noopCx()
	if r := pollUntilReady(t, bw.Write([]byte("01")), 1); r.Err != nil || r.Value != 2 {
		t.Fatalf("Write = %d, %v", r.Value, r.Err)
	}
	f := bw.Write([]byte("23456789"))
	// The buffer fills, is flushed into the 4-byte pipe, and the rest waits.
	if r, ok := f.Poll(cx); ok {
		t.Fatalf("Write of 10 bytes through a 4-byte pipe and buffer ready: %d, %v", r.Value, r.Err)
	}
	var got []byte
	p := make([]byte, 3)
	for range 100 {
		if r, ok := b.PollRead(cx, p); ok && r.Err == nil {
			got = append(got, p[:r.Value]...)
		}
		if r, ok := f.Poll(cx); ok {
			if r.Err != nil || r.Value != 8 {
				t.Fatalf("Write = %d, %v; want 8", r.Value, r.Err)
			}
			break
		}
	}
	for range 100 {
		if _, ok := bw.PollFlush(cx); ok {
			break
		}
		if r, ok := b.PollRead(cx, p); ok && r.Err == nil {
			got = append(got, p[:r.Value]...)
		}
	}
	if r, ok := bw.PollFlush(cx); !ok || r.Err != nil {
		t.Fatalf("Flush not done: %v %v", ok, r.Err)
	}
	a.CloseWrite()
	for {
		r, ok := b.PollRead(cx, p)
		if !ok || r.Err != nil {
			break
		}
		got = append(got, p[:r.Value]...)
	}
	if string(got) != "0123456789" {
		t.Fatalf("peer read %q; want \"0123456789\"", got)
	}
}

// TestHostile11FrameReaderBytesWithReadError: bytes that came with a read error are
// decoded into the frames they hold first; then the error (not io.ErrUnexpectedEOF:
// the stream failed, it did not end) is returned, and again by every later call; the
// partial frame stays in Buffered.
func TestHostile11FrameReaderBytesWithReadError(t *testing.T) {
	boom := errors.New("boom")
	fr := NewFrameReader[string](&hostile8Reader{steps: []hostile8Step{step("a\nb\nc", boom)}}, LinesCodec{})
	for _, want := range []string{"a", "b"} {
		if r := pollUntilReady(t, fr.Next(), 10); r.Err != nil || r.Value != want {
			t.Fatalf("Next = %q, %v; want %q", r.Value, r.Err, want)
		}
	}
	for i := range 2 {
		if r := pollUntilReady(t, fr.Next(), 10); r.Err != boom {
			t.Fatalf("Next #%d after the frames = %q, %v; want boom", i, r.Value, r.Err)
		}
	}
	if string(fr.Buffered()) != "c" {
		t.Fatalf("Buffered = %q; want the partial \"c\"", fr.Buffered())
	}
	// With io.EOF instead, the last line without "\n" is a frame, then io.EOF.
	fr = NewFrameReader[string](&hostile8Reader{steps: []hostile8Step{step("x\ny", io.EOF)}}, LinesCodec{})
	var got []string
	for {
		r := pollUntilReady(t, fr.Next(), 10)
		if r.Err != nil {
			if r.Err != io.EOF {
				t.Fatalf("Next: %v; want io.EOF", r.Err)
			}
			break
		}
		got = append(got, r.Value)
	}
	if strings.Join(got, "|") != "x|y" {
		t.Fatalf("frames = %q; want [x y]", got)
	}
}

// hostile11PanicOnce is a Decoder of lines that panics the first time it sees "bad".
type hostile11PanicOnce struct{ panicked *bool }

func (d hostile11PanicOnce) Decode(buf []byte, atEOF bool) (string, int, error) {
	line, n, err := LinesCodec{}.Decode(buf, atEOF)
	if n > 0 && line == "bad" && !*d.panicked {
		*d.panicked = true
		panic("decoder bug")
	}
	return line, n, err
}

// TestHostile11FrameReaderDecoderPanic: a Decoder that panics (a bug in user code,
// recovered by the caller, as a task's panic is) leaves the FrameReader as it was: the
// next call decodes the same frame again, none is lost or repeated.
func TestHostile11FrameReaderDecoderPanic(t *testing.T) {
	panicked := false
	fr := NewFrameReader[string](&scriptReader{chunks: []string{"ok\nbad\nlast\n"}}, hostile11PanicOnce{&panicked})
	var got []string
	for range 10 {
		var r blitzio.Result[string]
		if p := hostile11Panics(func() { r = pollUntilReady(t, fr.Next(), 10) }); p != nil {
			got = append(got, "<panic>")
			continue
		}
		if r.Err == io.EOF {
			break
		}
		if r.Err != nil {
			t.Fatalf("Next: %v", r.Err)
		}
		got = append(got, r.Value)
	}
	if strings.Join(got, "|") != "ok|<panic>|bad|last" {
		t.Fatalf("frames = %q; want [ok <panic> bad last]", got)
	}
}

// TestHostile11FrameWriterFlushSinks: FrameWriter.PollFlush over a stream taking two
// bytes at a time (pending every other call) writes every frame in order; over one
// that fails part-way it reports the error, which sticks for Feed, Send and Flush, and
// Buffered counts what the stream did not take; over one that takes nothing it fails
// with io.ErrNoProgress instead of spinning.
func TestHostile11FrameWriterFlushSinks(t *testing.T) {
	w := &smallWriter{max: 2}
	fw := NewFrameWriter[string](w, LinesCodec{})
	for _, l := range []string{"alpha", "", "gamma"} {
		if err := fw.Feed(l); err != nil {
			t.Fatal(err)
		}
	}
	if r := pollUntilReady(t, fw.Flush(), 100); r.Err != nil || w.out.String() != "alpha\n\ngamma\n" || fw.Buffered() != 0 {
		t.Fatalf("Flush = %v; stream %q, Buffered %d", r.Err, w.out.String(), fw.Buffered())
	}

	boom := errors.New("boom")
	fa := &failAfterWriter{max: 4, limit: 6, err: boom}
	fw = NewFrameWriter[string](fa, LinesCodec{})
	if r := pollUntilReady(t, fw.Send("0123456789"), 10); r.Err != boom {
		t.Fatalf("Send over a failing stream = %v; want boom", r.Err)
	}
	if fw.Buffered() != 5 || fa.out.String() != "012345" {
		t.Fatalf("Buffered %d, stream %q; want 5 and \"012345\"", fw.Buffered(), fa.out.String())
	}
	if err := fw.Feed("x"); err != boom {
		t.Fatalf("Feed after the error = %v; want boom", err)
	}
	if r := pollUntilReady(t, fw.Send("y"), 1); r.Err != boom {
		t.Fatalf("Send after the error = %v; want boom", r.Err)
	}
	if r := pollUntilReady(t, fw.Flush(), 1); r.Err != boom {
		t.Fatalf("Flush after the error = %v; want boom", r.Err)
	}

	// Bytes and an error together (io.Writer's form): the bytes were written.
	var out bytes.Buffer
	fw = NewFrameWriter[string](writerFunc(func(p []byte) (int, error) {
		out.Write(p[:3])
		return 3, boom
	}), LinesCodec{})
	if r := pollUntilReady(t, fw.Send("abcdef"), 1); r.Err != boom {
		t.Fatalf("Send = %v; want boom", r.Err)
	}
	if fw.Buffered() != 7-out.Len() {
		t.Errorf("Buffered = %d after the stream took %d of 7 bytes with an error; want %d", fw.Buffered(), out.Len(), 7-out.Len())
	}

	fw = NewFrameWriter[string](&zeroWriter{}, LinesCodec{})
	var r blitzio.Result[struct{}]
	hostile8Within(t, "Send over a zero-byte stream", func() { r = pollUntilReady(t, fw.Send("z"), 1) })
	if !errors.Is(r.Err, io.ErrNoProgress) {
		t.Fatalf("Send over a zero-byte stream = %v; want io.ErrNoProgress", r.Err)
	}
}

// TestHostile11ReadFuturePolledAgain: a ReadFuture polled after it was ready returns
// the same result again without reading a second time.
func TestHostile11ReadFuturePolledAgain(t *testing.T) {
	r := &hostile8Reader{steps: []hostile8Step{step("ab", nil), step("cd", nil)}}
	p := make([]byte, 4)
	f := Read(r, p)
	cx := noopCx()
	for i := range 3 {
		res, ok := f.Poll(cx)
		if !ok || res.Err != nil || res.Value != 2 || string(p[:2]) != "ab" {
			t.Fatalf("poll #%d = %d, %v, %v (%q)", i, res.Value, res.Err, ok, p[:2])
		}
	}
	if r.calls != 1 {
		t.Fatalf("the reader was polled %d times; want 1", r.calls)
	}
}

// TestHostile11CopyBufferBuffers: CopyBuffer follows io.CopyBuffer: a nil buffer
// means "allocate one" (the copy works), a non-nil empty one panics; a one-byte buffer
// copies everything through it, short writes and pending sides included.
func TestHostile11CopyBufferBuffers(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 300)
	w := &smallWriter{max: 7}
	var res blitzio.Result[int64]
	if p := hostile11Panics(func() {
		res = pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](CopyBuffer(w, &chunkReader{data: bytes.Clone(data), sizes: []int{100}}, nil)), 100000)
	}); p != nil {
		t.Errorf("CopyBuffer with a nil buffer panicked (io.CopyBuffer allocates one): %v", p)
	} else if res.Err != nil || res.Value != int64(len(data)) || !bytes.Equal(w.out.Bytes(), data) {
		t.Errorf("CopyBuffer(nil) = %d, %v; stream holds %d bytes", res.Value, res.Err, w.out.Len())
	}
	for _, buf := range [][]byte{{}, make([]byte, 0, 64)} {
		if p := hostile11Panics(func() { CopyBuffer(w, &chunkReader{}, buf) }); p == nil {
			t.Errorf("CopyBuffer with a non-nil empty buffer (cap %d) did not panic", cap(buf))
		}
	}
	w = &smallWriter{max: 3}
	one := make([]byte, 1)
	res = pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](CopyBuffer(w, &chunkReader{data: bytes.Clone(data), sizes: []int{5}}, one)), 100000)
	if res.Err != nil || res.Value != int64(len(data)) || !bytes.Equal(w.out.Bytes(), data) {
		t.Fatalf("CopyBuffer through 1 byte = %d, %v; stream holds %d bytes", res.Value, res.Err, w.out.Len())
	}
	if one[0] != data[len(data)-1] {
		t.Fatalf("the caller's buffer holds %q, not the last byte copied: CopyBuffer used another buffer", one)
	}
}

// TestHostile11CopyBufferErrors: a read error after some bytes, and a write error,
// end CopyBuffer with that error and the count of bytes written, as io.CopyBuffer.
func TestHostile11CopyBufferErrors(t *testing.T) {
	boom := errors.New("boom")
	w := &smallWriter{max: 100}
	src := &hostile8Reader{steps: []hostile8Step{step("hello", nil), step("!!", boom)}}
	res := pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](CopyBuffer(w, src, make([]byte, 8))), 100)
	if res.Err != boom || res.Value != 7 || w.out.String() != "hello!!" {
		t.Fatalf("CopyBuffer with a read error = %d, %v, stream %q; want 7, boom, \"hello!!\"", res.Value, res.Err, w.out.String())
	}
	fa := &failAfterWriter{max: 2, limit: 5, err: boom}
	res = pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](CopyBuffer(fa, &hostile8Reader{steps: []hostile8Step{step("0123456789", nil)}}, make([]byte, 16))), 100)
	if res.Err != boom || res.Value != 5 || fa.out.String() != "01234" {
		t.Fatalf("CopyBuffer with a write error = %d, %v, stream %q; want 5, boom, \"01234\"", res.Value, res.Err, fa.out.String())
	}
}

// TestHostile11DuplexSizeAndAddr: Duplex panics for a size below 1; its ends name the
// address "duplex" on both sides; a 1-byte Duplex carries data.
func TestHostile11DuplexSizeAndAddr(t *testing.T) {
	for _, n := range []int{0, -1} {
		if p := hostile11Panics(func() { Duplex(n) }); p == nil {
			t.Errorf("Duplex(%d) did not panic", n)
		}
	}
	a, b := Duplex(1)
	for _, addr := range []net.Addr{a.LocalAddr(), a.RemoteAddr(), b.LocalAddr(), b.RemoteAddr()} {
		if addr.Network() != "duplex" || addr.String() != "duplex" {
			t.Errorf("Duplex address = %v/%v; want duplex/duplex", addr.Network(), addr)
		}
	}
	cx := noopCx()
	if r, ok := a.PollWrite(cx, []byte("xy")); !ok || r.Value != 1 {
		t.Fatalf("PollWrite on a 1-byte Duplex = %d, %v, %v; want 1 byte", r.Value, r.Err, ok)
	}
	if _, ok := a.PollWrite(cx, []byte("y")); ok {
		t.Fatal("PollWrite on a full 1-byte Duplex was ready")
	}
	p := make([]byte, 4)
	if r, ok := b.PollRead(cx, p); !ok || r.Value != 1 || p[0] != 'x' {
		t.Fatalf("PollRead = %d, %v, %v", r.Value, r.Err, ok)
	}
}

// TestHostile11DuplexAcrossRuntimes: the two ends of one Duplex driven by tasks of two
// different runtimes (the wakers cross runtimes) carry 64 KiB each way intact.
func TestHostile11DuplexAcrossRuntimes(t *testing.T) {
	rt1, rt2 := newRuntime(t, 1), newRuntime(t, 2)
	a, b := Duplex(7)
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	sum := sha256.Sum256(data)
	// a's task (rt1) writes data then half-closes, and reads back what b echoes.
	writer := blitzio.Spawn(rt1, blitzio.Async(func(co *blitzio.Co) blitzio.Result[int] {
		r := blitzio.Await(co, WriteAll(a, data))
		a.CloseWrite()
		return r
	}))
	reader := blitzio.Spawn(rt1, blitzio.Async(func(co *blitzio.Co) [32]byte {
		h := sha256.New()
		buf := make([]byte, 4096)
		for {
			r := blitzio.Await(co, Read(a, buf))
			if r.Err != nil {
				return [32]byte(h.Sum(nil))
			}
			h.Write(buf[:r.Value])
		}
	}))
	echo := blitzio.Spawn(rt2, blitzio.Async(func(co *blitzio.Co) blitzio.Result[int64] {
		r := blitzio.Await(co, CopyBuffer(b, b, make([]byte, 777)))
		b.CloseWrite()
		return r
	}))
	hostile8Within(t, "echo across two runtimes", func() {
		if w, err := writer.Wait(); err != nil || w.Err != nil || w.Value != len(data) {
			t.Errorf("writer = %+v, %v", w, err)
		}
		if e, err := echo.Wait(); err != nil || e.Err != nil || e.Value != int64(len(data)) {
			t.Errorf("echo = %+v, %v", e, err)
		}
		if got, err := reader.Wait(); err != nil || got != sum {
			t.Errorf("echoed data differs (err %v)", err)
		}
	})
}

// TestHostile11BufWriterWriteDropped: a Write dropped while the stream is full (a
// timeout, a select) has taken a prefix of p, as its doc says: what reaches the stream
// is that prefix and then the next Write's bytes, nothing lost from the middle and
// nothing repeated.
func TestHostile11BufWriterWriteDropped(t *testing.T) {
	for _, size := range []int{1, 3, 4} {
		a, b := Duplex(4)
		bw := NewBufWriter(a, size)
		cx := noopCx()
		payload := "0123456789"
		if r, ok := bw.Write([]byte(payload)).Poll(cx); ok {
			t.Fatalf("size %d: Write of 10 bytes through a 4-byte pipe ready: %d, %v", size, r.Value, r.Err)
		}
		// Dropped. The next Write and a Flush, while the peer drains.
		var got []byte
		p := make([]byte, 8)
		drain := func() {
			if r, ok := b.PollRead(cx, p); ok && r.Err == nil {
				got = append(got, p[:r.Value]...)
			}
		}
		f := bw.Write([]byte("abc"))
		done := false
		for range 1000 {
			drain()
			if !done {
				if r, ok := f.Poll(cx); ok {
					if r.Err != nil || r.Value != 3 {
						t.Fatalf("size %d: second Write = %d, %v", size, r.Value, r.Err)
					}
					done = true
				}
				continue
			}
			if r, ok := bw.PollFlush(cx); ok {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				break
			}
		}
		a.CloseWrite()
		for range 100 {
			drain()
		}
		s := string(got)
		if !strings.HasSuffix(s, "abc") || !strings.HasPrefix(payload, strings.TrimSuffix(s, "abc")) || len(s) < 4+3 {
			t.Fatalf("size %d: the stream got %q; want a prefix of %q (at least the 4 bytes the pipe took) then \"abc\"", size, s, payload)
		}
	}
}
