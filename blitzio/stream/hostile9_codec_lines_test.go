package stream

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// tinyReader serves data in reads of at most size bytes, always ready: the shape of a
// slow sender whose bytes trickle in one segment at a time.
type tinyReader struct {
	data []byte
	size int
}

func (r *tinyReader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(r.data) == 0 {
		return blitzio.Result[int]{Err: io.EOF}, true
	}
	n := copy(p[:min(len(p), r.size)], r.data)
	r.data = r.data[n:]
	return blitzio.Result[int]{Value: n}, true
}

// opaqueDecoder hides the codec inside it from FrameReader, which then sees a plain
// Decoder: the baseline in the benchmarks (every call searches from the start of the
// buffer).
type opaqueDecoder[T any] struct{ Decoder[T] }

// BenchmarkHostile9LinesLongLineTinyReads reads one line just under DefaultMaxLine that
// arrives in reads of 1 and 16 bytes, through FrameReader+LinesCodec ("resumed") and
// through the same codec hidden from FrameReader ("rescan", every Decode searches the
// whole buffer again).
func BenchmarkHostile9LinesLongLineTinyReads(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), DefaultMaxLine-16), '\n')
	cx := noopCx()
	for _, size := range []int{1, 16} {
		for _, mode := range []string{"resumed", "rescan"} {
			b.Run(fmt.Sprintf("read=%d/%s", size, mode), func(b *testing.B) {
				b.SetBytes(int64(len(line)))
				for b.Loop() {
					var dec Decoder[string] = LinesCodec{}
					if mode == "rescan" {
						dec = opaqueDecoder[string]{dec}
					}
					fr := NewFrameReader(&tinyReader{data: line, size: size}, dec)
					r, ok := fr.PollNext(cx)
					if !ok || r.Err != nil || len(r.Value) != len(line)-1 {
						b.Fatalf("PollNext = %d bytes, %v, %v", len(r.Value), ok, r.Err)
					}
				}
			})
		}
	}
}

// countLinesScan counts the bytes LinesCodec searches for "\n" until the test ends.
func countLinesScan(t *testing.T) *int {
	t.Helper()
	total := new(int)
	hook := func(n int) { *total += n }
	if !linesScanHook.CompareAndSwap(nil, &hook) {
		t.Fatal("linesScanHook already set")
	}
	t.Cleanup(func() { linesScanHook.Store(nil) })
	return total
}

// readLines reads every frame of fr until an error, polling by hand.
func readLines(t *testing.T, fr *FrameReader[string]) ([]string, error) {
	t.Helper()
	var got []string
	for range 1 << 20 {
		r := pollUntilReady(t, fr.Next(), 1<<20)
		if r.Err != nil {
			return got, r.Err
		}
		got = append(got, r.Value)
	}
	t.Fatal("FrameReader never ended")
	return nil, nil
}

// TestHostile9LinesCodecScanIsLinear: a line near MaxLength arriving one byte per read
// made FrameReader+LinesCodec search the whole buffered line again after every byte,
// n²/2 bytes for an n-byte line (2 GiB searched for a 64 KiB line). Like tokio-util's
// LinesCodec it must carry on where the last search stopped: every byte of the stream
// is searched at most once.
func TestHostile9LinesCodecScanIsLinear(t *testing.T) {
	scanned := countLinesScan(t)
	long := string(bytes.Repeat([]byte("y"), DefaultMaxLine-1))
	wire := []byte("a\r\n" + long + "\r\nb\n\n" + long + "\nlast\r")
	want := []string{"a", long, "b", "", long, "last"}
	for _, size := range []int{1, 2, 7, 4096} {
		*scanned = 0
		fr := NewFrameReader[string](&tinyReader{data: wire, size: size}, LinesCodec{})
		got, err := readLines(t, fr)
		if err != io.EOF || len(got) != len(want) {
			t.Fatalf("reads of %d: %d lines, %v; want %d lines, io.EOF", size, len(got), err, len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("reads of %d: line %d is %d bytes, want %d", size, i, len(got[i]), len(want[i]))
			}
		}
		if *scanned > len(wire) {
			t.Errorf("reads of %d bytes: LinesCodec searched %d bytes of a %d-byte stream; want each byte searched at most once", size, *scanned, len(wire))
		}
	}
}

// TestHostile9LinesCodecDecodeBoundedScan: Decode on a large buffer with no "\n" must
// look at no more than MaxLength+2 bytes (the line, a "\r" and the "\n") before it
// answers ErrTooLong, as tokio-util's LinesCodec bounds its search: a caller holding a
// big buffer pays for the limit, not for the buffer.
func TestHostile9LinesCodecDecodeBoundedScan(t *testing.T) {
	scanned := countLinesScan(t)
	buf := bytes.Repeat([]byte("z"), 1<<20)
	buf[len(buf)-1] = '\n'
	c := LinesCodec{MaxLength: 100}
	if _, n, err := c.Decode(buf, false); err != ErrTooLong || n != 0 {
		t.Fatalf("Decode = %d, %v; want ErrTooLong", n, err)
	}
	if *scanned > 102 {
		t.Errorf("Decode searched %d bytes; want at most MaxLength+2 = 102", *scanned)
	}
	// Right at the bound: the "\n" at index MaxLength+1 after a "\r" is still found.
	ok := append(bytes.Repeat([]byte("z"), 100), '\r', '\n', 'q')
	if line, n, err := c.Decode(ok, false); err != nil || n != 102 || len(line) != 100 {
		t.Fatalf("Decode of a line of exactly MaxLength with CRLF = %d bytes, n %d, %v", len(line), n, err)
	}
}

// upperLines embeds LinesCodec and decodes with its own Decode.
type upperLines struct{ LinesCodec }

func (u upperLines) Decode(buf []byte, atEOF bool) (string, int, error) {
	line, n, err := u.LinesCodec.Decode(buf, atEOF)
	return strings.ToUpper(line), n, err
}

// TestHostile9LinesCodecResumeKeepsOwnDecode: FrameReader's shortcut for LinesCodec
// must apply to LinesCodec itself (value or pointer) and never to a type that embeds it
// with a Decode of its own, whose Decode would otherwise be skipped.
func TestHostile9LinesCodecResumeKeepsOwnDecode(t *testing.T) {
	wire := []byte("ab\ncd\n")
	got, err := readLines(t, NewFrameReader[string](&tinyReader{data: wire, size: 1}, upperLines{}))
	if err != io.EOF || strings.Join(got, "|") != "AB|CD" {
		t.Fatalf("embedding codec: %q, %v; want [AB CD], io.EOF", got, err)
	}
	scanned := countLinesScan(t)
	got, err = readLines(t, NewFrameReader[string](&tinyReader{data: wire, size: 1}, &LinesCodec{MaxLength: 2}))
	if err != io.EOF || strings.Join(got, "|") != "ab|cd" || *scanned > len(wire) {
		t.Fatalf("*LinesCodec: %q, %v, %d bytes searched; want [ab cd], io.EOF, <= %d", got, err, *scanned, len(wire))
	}
}

// TestHostile9LinesCodecSharedBetweenReaders: the search position lives in each
// FrameReader, not in the codec, so one *LinesCodec shared by two readers polled in
// turn (or a codec value copied between them) cannot make one skip the other's bytes.
func TestHostile9LinesCodecSharedBetweenReaders(t *testing.T) {
	shared := &LinesCodec{MaxLength: 64}
	a := NewFrameReader[string](&tinyReader{data: []byte("aaaa\nbb\n"), size: 1}, shared)
	b := NewFrameReader[string](&tinyReader{data: []byte("c\ndddddd\n"), size: 1}, shared)
	var got []string
	for range 2 {
		ra := pollUntilReady(t, a.Next(), 100)
		rb := pollUntilReady(t, b.Next(), 100)
		got = append(got, ra.Value, rb.Value)
	}
	if strings.Join(got, "|") != "aaaa|c|bb|dddddd" {
		t.Fatalf("lines = %q", got)
	}
}
