//go:build linux || darwin || freebsd

package stream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// Differential tests of BufWriter against bufio.Writer: the same writes go through both
// into sinks that fail at the same byte, and results, Buffered/Available and what the
// sinks received are compared.

// hostile12Sink records what it is given and fails at byte failAt (if failErr is set).
// As an AsyncWriter it may pend (a 0 in sizes, at most 3 in a row) and, with short,
// accept fewer bytes than offered (sizes, cycled); with withData the failing write
// reports its bytes together with the error, as an io.Writer adapter does. As an
// io.Writer it takes everything up to failAt and returns the error with a short count.
type hostile12Sink struct {
	got      []byte
	failAt   int
	failErr  error
	short    bool
	withData bool
	sizes    []byte
	i, calls int
	pends    int
}

func (s *hostile12Sink) take(n int) (int, error) {
	if s.failErr != nil && len(s.got)+n > s.failAt {
		return s.failAt - len(s.got), s.failErr
	}
	return n, nil
}

func (s *hostile12Sink) Write(p []byte) (int, error) {
	n, err := s.take(len(p))
	s.got = append(s.got, p[:n]...)
	return n, err
}

// WriteString makes the sink an io.StringWriter, so that bufio.Writer.WriteString writes
// a large string straight through as Write does (without one it always copies).
func (s *hostile12Sink) WriteString(str string) (int, error) { return s.Write([]byte(str)) }

func (s *hostile12Sink) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	s.calls++
	if s.calls > 100000 {
		panic("hostile12Sink: written 100000 times: the caller spins")
	}
	want := len(p)
	if len(s.sizes) > 0 {
		b := s.sizes[s.i%len(s.sizes)]
		s.i++
		if b == 0 && s.pends < 3 {
			s.pends++
			cx.Waker().Wake()
			return blitzio.Result[int]{}, false
		}
		if s.short {
			want = min(want, int(b%9)+1)
		}
	}
	s.pends = 0
	n, err := s.take(want)
	if err != nil && n > 0 && !s.withData {
		err = nil // the bytes now, the error at the next call
	}
	s.got = append(s.got, p[:n]...)
	return blitzio.Result[int]{Value: n, Err: err}, true
}

var hostile12WriterSizes = []int{1, 2, 3, 5, 8, 16, 32}

var hostile12WriteErrs = []error{errHostile12Custom, io.ErrShortWrite, io.ErrClosedPipe}

// hostile12WriterRun runs ops (two bytes each) on a BufWriter and a bufio.Writer. cfg[0]
// is the size, cfg[1] the failure (bit 0x80 none, low bits the error, 0x40 bytes with
// the error, 0x20 short writes), cfg[2] the failing byte, cfg[3:] the async sink's sizes.
func hostile12WriterRun(t *testing.T, payload, cfg, ops []byte) int {
	t.Helper()
	at := func(i int) byte {
		if i < len(cfg) {
			return cfg[i]
		}
		return 0
	}
	if len(ops) > 400 {
		ops = ops[:400]
	}
	if len(payload) == 0 {
		payload = []byte("payload")
	}
	size := hostile12WriterSizes[int(at(0))%len(hostile12WriterSizes)]
	sinkA := &hostile12Sink{failAt: int(at(2)), short: at(1)&0x20 != 0, withData: at(1)&0x40 != 0}
	if at(1)&0x80 == 0 {
		sinkA.failErr = hostile12WriteErrs[int(at(1)&0x1f)%len(hostile12WriteErrs)]
	}
	if len(cfg) > 3 {
		sinkA.sizes = cfg[3:]
	}
	sinkB := &hostile12Sink{failAt: sinkA.failAt, failErr: sinkA.failErr}
	bw := NewBufWriter(sinkA, size)
	bb := bufio.NewWriterSize(sinkB, size)
	// exact: BufWriter's sink behaves as bufio's io.Writer does (whole writes, the bytes
	// of the failing write reported with its error), so every count must match. With
	// short writes (legal for an AsyncWriter) when bytes reach the sink, and so when a
	// failure is seen, may differ: only the invariants are checked.
	exact := !sinkA.short && (sinkA.failErr == nil || sinkA.withData)
	lost := 0 // bytes bufio still holds that BufWriter reported unwritten (see Write)
	var acceptedA, acceptedB []byte
	var errA, errB error // first error each reported
	trace := []string{}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("size %d, failAt %d %v, short %v withData %v sizes %v\nops %v\n"+format,
			append([]any{size, sinkA.failAt, sinkA.failErr, sinkA.short, sinkA.withData, sinkA.sizes, trace}, args...)...)
	}
	checkErr := func(what string, err error, first *error) {
		t.Helper()
		if err == nil {
			return
		}
		if sinkA.failErr == nil || !errors.Is(err, sinkA.failErr) {
			fail("%s: error %v; the sink fails only with %v", what, err, sinkA.failErr)
		}
		if *first == nil {
			*first = err
		}
	}
	nops := 0
	off := 0
	for i := 0; i+1 < len(ops); i += 2 {
		kind, arg := ops[i]%4, ops[i+1]
		trace = append(trace, fmt.Sprintf("%d:%d", kind, arg))
		k := int(arg) % 70
		p := make([]byte, k)
		for j := range p {
			p[j] = payload[(off+j)%len(payload)]
		}
		off += k
		switch kind {
		case 0, 1: // Write (kind 1: through stream.WriteAll and PollWrite; bufio.WriteString)
			b0, hadErr := bb.Buffered(), errA != nil
			var res blitzio.Result[int]
			if kind == 0 {
				res = pollUntilReady(t, bw.Write(p), 100000)
			} else {
				res = pollUntilReady(t, blitzio.Future[blitzio.Result[int]](WriteAll(bw, p)), 100000)
			}
			var n2 int
			var err2 error
			if kind == 0 {
				n2, err2 = bb.Write(p)
			} else {
				n2, err2 = bb.WriteString(string(p))
			}
			checkErr("Write", res.Err, &errA)
			checkErr("bufio Write", err2, &errB)
			if res.Value < 0 || res.Value > k || (res.Err == nil && res.Value != k) {
				fail("Write(%d) = %d, %v", k, res.Value, res.Err)
			}
			if k == 0 && (res.Value != 0 || res.Err != nil) {
				fail("Write(empty) = %d, %v; AsyncWriter's contract is 0, nil at once", res.Value, res.Err)
			}
			if hadErr && k > 0 && (res.Value != 0 || res.Err == nil) {
				fail("Write(%d) after the error %v = %d, %v; want 0 and the error again", k, errA, res.Value, res.Err)
			}
			acceptedA, acceptedB = append(acceptedA, p[:res.Value]...), append(acceptedB, p[:n2]...)
			if !exact || k == 0 {
				break
			}
			// Documented: a write of at least the buffer's size with nothing buffered goes
			// straight to the stream; bufio copies one of exactly the buffer's size into
			// the buffer instead. Where that happens (the whole write, or what is left of
			// it once the buffer is filled and flushed), bufio is flushed too.
			direct := b0 == 0 && k == size || b0 > 0 && k-(size-b0) == size
			if direct && err2 == nil && !hadErr {
				err2 = bb.Flush()
				checkErr("bufio Flush", err2, &errB)
				lost = bb.Buffered()
				n2 -= lost
			}
			if res.Value != n2 || !hostile12SameErr(res.Err, err2) {
				fail("Write(%d) with %d buffered = %d, %v; bufio.Write = %d, %v", k, b0, res.Value, res.Err, n2, err2)
			}
		case 2: // Flush
			res := pollUntilReady(t, bw.Flush(), 100000)
			err2 := bb.Flush()
			checkErr("Flush", res.Err, &errA)
			checkErr("bufio Flush", err2, &errB)
			if res.Err == nil && (bw.Buffered() != 0 || !bytes.Equal(sinkA.got, acceptedA)) {
				fail("Flush = nil but %d still buffered, the sink got %d of %d bytes", bw.Buffered(), len(sinkA.got), len(acceptedA))
			}
			if exact && !hostile12SameErr(res.Err, err2) {
				fail("Flush = %v; bufio.Flush = %v", res.Err, err2)
			}
		case 3: // empty write: AsyncWriter's contract is (0, nil) at once, even after an
			// error (bufio.Writer.Write(nil) would report the error: both are legal).
			res := pollUntilReady(t, bw.Write(nil), 10)
			if res.Value != 0 || res.Err != nil {
				fail("Write(nil) = %d, %v; want 0, nil", res.Value, res.Err)
			}
		}
		nops++
		// Invariants, on both: what was accepted is what the sink got plus what is
		// buffered; the sink got a prefix of it; the space adds up.
		if bw.Buffered()+bw.Available() != size || bb.Buffered()+bb.Available() != size {
			fail("Buffered+Available = %d, bufio %d; want %d", bw.Buffered()+bw.Available(), bb.Buffered()+bb.Available(), size)
		}
		if len(sinkA.got)+bw.Buffered() != len(acceptedA) || !bytes.HasPrefix(acceptedA, sinkA.got) {
			fail("BufWriter accepted %d bytes, the sink got %d (a prefix: %v) and %d are buffered",
				len(acceptedA), len(sinkA.got), bytes.HasPrefix(acceptedA, sinkA.got), bw.Buffered())
		}
		if len(sinkB.got)+bb.Buffered() != len(acceptedB) || !bytes.HasPrefix(acceptedB, sinkB.got) {
			fail("oracle: bufio accepted %d bytes, the sink got %d and %d are buffered", len(acceptedB), len(sinkB.got), bb.Buffered())
		}
		if exact {
			if bw.Buffered()+lost != bb.Buffered() || !bytes.Equal(sinkA.got, sinkB.got) || !bytes.Equal(acceptedA, acceptedB[:len(acceptedB)-lost]) {
				fail("Buffered = %d, bufio %d (%d lost); sinks got %d and %d bytes", bw.Buffered(), bb.Buffered(), lost, len(sinkA.got), len(sinkB.got))
			}
		}
	}
	// The end: a last Flush delivers everything accepted, or fails having delivered
	// exactly the bytes before the failing one; both writers agree on which.
	resA := pollUntilReady(t, bw.Flush(), 100000)
	errFB := bb.Flush()
	checkErr("final Flush", resA.Err, &errA)
	checkErr("bufio final Flush", errFB, &errB)
	for _, side := range []struct {
		name     string
		got, acc []byte
		err      error
	}{{"BufWriter", sinkA.got, acceptedA, resA.Err}, {"bufio", sinkB.got, acceptedB, errFB}} {
		if side.err == nil && !bytes.Equal(side.got, side.acc) {
			fail("%s: final Flush ok but the sink got %d of %d accepted bytes", side.name, len(side.got), len(side.acc))
		}
		if side.err != nil && len(side.got) != sinkA.failAt {
			fail("%s: final Flush = %v with %d bytes delivered; the sink fails at %d", side.name, side.err, len(side.got), sinkA.failAt)
		}
	}
	if (resA.Err == nil) != (errFB == nil) || !bytes.Equal(sinkA.got, sinkB.got) {
		fail("final Flush = %v, bufio %v; sinks got %q and %q", resA.Err, errFB, sinkA.got, sinkB.got)
	}
	return nops
}

type hostile12WriterCase struct {
	name              string
	payload, cfg, ops string
}

// hostile12WriterCases are hand-picked; they are also FuzzBufWriter's seeds.
var hostile12WriterCases = []hostile12WriterCase{
	{"small writes and flushes", "abcdefgh", "\x03\x80\x00", "\x00\x02\x00\x03\x00\x04\x02\x00\x00\x09\x02\x00"},
	{"exactly a buffer, empty", "0123456789", "\x04\x80\x00", "\x00\x08\x00\x08\x02\x00\x00\x10\x00\x03\x00\x0d\x02\x00"},
	{"exactly a buffer, failing", "0123456789", "\x04\x40\x05", "\x00\x08\x00\x08\x02\x00\x03\x00\x00\x01"},
	{"failure in a flush with bytes", "xyz", "\x05\x41\x0b", "\x00\x05\x00\x05\x00\x05\x01\x07\x02\x00\x00\x01"},
	{"short async writes", "the quick brown fox", "\x02\x20\x1d\x03\x01\x00\x02", "\x00\x11\x01\x05\x02\x00\x00\x40\x00\x02"},
	{"short writes then failure", "0123", "\x03\x22\x09\x02\x00\x05", "\x00\x07\x00\x07\x02\x00\x00\x07\x02\x00"},
	{"error before any byte", "q", "\x00\x40\x00", "\x00\x01\x00\x01\x02\x00\x03\x00"},
	{"large direct writes", "ABCDEFGHIJKLMNOP", "\x06\x80\x00\x00", "\x00\x45\x01\x21\x00\x20\x00\x01\x00\x3f\x02\x00"},
}

func TestHostile12BufWriterTable(t *testing.T) {
	for _, c := range hostile12WriterCases {
		t.Run(c.name, func(t *testing.T) {
			if n := hostile12WriterRun(t, []byte(c.payload), []byte(c.cfg), []byte(c.ops)); n == 0 {
				t.Fatal("no op ran: the case is empty")
			}
		})
	}
}

// TestHostile12BufWriterMatrix: every size, failing or not, with and without bytes
// reported with the error, whole or short writes, over seeded random write sequences
// whose sizes cluster around the buffer size.
func TestHostile12BufWriterMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 0xb1f))
	ran := 0
	for si, size := range hostile12WriterSizes {
		for _, mode := range []byte{0x80, 0x00, 0x40, 0x41, 0x22, 0x62, 0xa0} {
			for range 10 {
				cfg := []byte{byte(si), mode, byte(rng.IntN(120))}
				for range rng.IntN(5) {
					cfg = append(cfg, byte(rng.IntN(12)))
				}
				ops := make([]byte, 0, 60)
				for range 5 + rng.IntN(25) {
					k := rng.IntN(70)
					if rng.IntN(2) == 0 {
						k = max(0, size-2+rng.IntN(5)) % 70
					}
					ops = append(ops, byte(rng.IntN(4)), byte(k))
				}
				ran += hostile12WriterRun(t, []byte("0123456789abcdefghij"), cfg, ops)
			}
		}
	}
	if ran < 1000 {
		t.Fatalf("only %d ops ran", ran)
	}
}

// FuzzBufWriter: payload is the bytes written (cycled), cfg the size and the sink (see
// hostile12WriterRun), ops the operations.
func FuzzBufWriter(f *testing.F) {
	for _, c := range hostile12WriterCases {
		f.Add([]byte(c.payload), []byte(c.cfg), []byte(c.ops))
	}
	f.Fuzz(func(t *testing.T, payload, cfg, ops []byte) {
		hostile12WriterRun(t, payload, cfg, ops)
	})
}
