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

// Differential tests of BufReader against bufio.Reader: the same byte source, delivered
// in the same chunks (with zero-byte reads and an error at a chosen point), is read
// through both with the same operations, and every result is compared.

// errHostile12Custom is the custom error a scripted source can fail with.
var errHostile12Custom = errors.New("hostile12: custom source error")

// hostile12Chunk is one read of a scripted source: data, or a zero-byte read (pending
// for the AsyncReader, (0, nil) for the io.Reader).
type hostile12Chunk struct {
	data  []byte
	empty bool
}

// hostile12Script is a byte source: chunks, then err for ever (sticky, as readers are).
// With errWithData the error comes together with the last chunk's bytes.
type hostile12Script struct {
	chunks      []hostile12Chunk
	err         error
	errWithData bool
}

// full returns every byte the source delivers before its error.
func (s *hostile12Script) full() []byte {
	var b []byte
	for _, c := range s.chunks {
		b = append(b, c.data...)
	}
	return b
}

// hostile12Source plays a script; a read smaller than the chunk leaves the rest of it
// for the next read. It is both an AsyncReader (for BufReader) and an io.Reader (for
// bufio.Reader), so that both see exactly the same chunks.
type hostile12Source struct {
	s        *hostile12Script
	idx, off int
	consumed int // bytes delivered
	calls    int
}

func (r *hostile12Source) next(p []byte) (n int, err error, empty bool) {
	r.calls++
	if r.calls > 100000 {
		panic("hostile12Source: read 100000 times: the caller spins")
	}
	if r.idx == len(r.s.chunks) {
		return 0, r.s.err, false
	}
	c := r.s.chunks[r.idx]
	if c.empty {
		r.idx++
		return 0, nil, true
	}
	n = copy(p, c.data[r.off:])
	r.off += n
	r.consumed += n
	if r.off == len(c.data) {
		r.idx, r.off = r.idx+1, 0
		if r.idx == len(r.s.chunks) && r.s.errWithData {
			return n, r.s.err, false
		}
	}
	return n, nil, false
}

func (r *hostile12Source) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err, _ := r.next(p)
	return n, err
}

func (r *hostile12Source) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	n, err, empty := r.next(p)
	if empty {
		cx.Waker().Wake()
		return blitzio.Result[int]{}, false
	}
	return blitzio.Result[int]{Value: n, Err: err}, true
}

// hostile12ReaderSizes are the buffer sizes tried: bufio.Reader's minimum is 16.
var hostile12ReaderSizes = []int{16, 17, 19, 24, 32, 64}

// hostile12Errs are the errors a source can end with.
var hostile12Errs = []error{io.EOF, io.ErrUnexpectedEOF, errHostile12Custom}

// hostile12BuildScript decodes a source: cfg[1] picks the error (and whether it comes
// with the last bytes), cfg[2] cuts data early (the source ends there), cfg[3:] are chunk
// sizes, cycled, 0 meaning a zero-byte read (at most 3 in a row).
func hostile12BuildScript(data, cfg []byte) *hostile12Script {
	at := func(i int) byte {
		if i < len(cfg) {
			return cfg[i]
		}
		return 0
	}
	s := &hostile12Script{err: hostile12Errs[int(at(1))%len(hostile12Errs)], errWithData: at(1)&4 != 0}
	if c := at(2); c&0x80 != 0 && len(data) > 0 {
		data = data[:int(c&0x7f)%(len(data)+1)]
	}
	sizes := []byte{7}
	if len(cfg) > 3 {
		sizes = cfg[3:]
	}
	empties := 0
	for i := 0; len(data) > 0; i++ {
		b := sizes[i%len(sizes)]
		if b == 0 && empties < 3 {
			empties++
			s.chunks = append(s.chunks, hostile12Chunk{empty: true})
			continue
		}
		empties = 0
		n := min(int(b%40)+1, len(data))
		s.chunks = append(s.chunks, hostile12Chunk{data: data[:n:n]})
		data = data[n:]
	}
	if at(2)&0x40 != 0 { // a zero-byte read just before the error
		s.chunks = append(s.chunks, hostile12Chunk{empty: true})
	}
	return s
}

// hostile12BufioRead is bufio.Reader.Read as a caller uses it: (0, nil) means "nothing
// happened", so read again. Bytes that come with an error (bufio returns the direct
// read's error with its bytes) count as a read of those bytes: the sticky source reports
// the error again at the next read, which is what BufReader (an AsyncReader, which never
// returns both) does.
func hostile12BufioRead(t *testing.T, bb *bufio.Reader, p []byte) (int, error) {
	t.Helper()
	for range 1000 {
		n, err := bb.Read(p)
		if n > 0 {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
	t.Fatal("bufio.Reader.Read returned (0, nil) 1000 times")
	return 0, nil
}

func hostile12SameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) || errors.Is(b, a)
}

// hostile12ReaderRun runs the ops (two bytes each: kind, argument) on a BufReader and a
// bufio.Reader over the same script and fails at the first difference. It returns the
// number of ops run.
func hostile12ReaderRun(t *testing.T, data, cfg, ops []byte) int {
	t.Helper()
	if len(data) > 600 {
		data = data[:600]
	}
	if len(ops) > 400 {
		ops = ops[:400]
	}
	size := hostile12ReaderSizes[0]
	if len(cfg) > 0 {
		size = hostile12ReaderSizes[int(cfg[0])%len(hostile12ReaderSizes)]
	}
	script := hostile12BuildScript(data, cfg)
	full, serr := script.full(), script.err
	srcA, srcB := &hostile12Source{s: script}, &hostile12Source{s: script}
	br := NewBufReader(srcA, size)
	bb := bufio.NewReaderSize(srcB, size)
	if bb.Size() != size {
		t.Fatalf("bufio size %d, want %d", bb.Size(), size)
	}
	maxLine := DefaultMaxLine
	pos := 0 // bytes of full both readers have handed out

	// inSync: both sources are at the same point and both buffers hold the same bytes in
	// a buffer of the same size; counts that depend on chunk boundaries (Read's n,
	// PollFill's length) must then match exactly. A delimited read may ask the source for
	// a different amount (BufReader grows for a long line, bufio slides), after which only
	// the bytes and errors are compared until the two meet again.
	inSync := func() bool {
		return srcA.idx == srcB.idx && srcA.off == srcB.off && len(br.buf) == size
	}
	trace := []string{}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("buf %d, script %d chunks err %v withData %v, data %q\nops: %v\n"+format,
			append([]any{size, len(script.chunks), serr, script.errWithData, full, trace}, args...)...)
	}
	checkContent := func(what string, got []byte) {
		t.Helper()
		if pos+len(got) > len(full) || !bytes.Equal(got, full[pos:pos+len(got)]) {
			fail("%s returned %q at offset %d; the stream holds %q there", what, got, pos, full[pos:min(pos+len(got), len(full))])
		}
	}
	// expectUntil is what a ReadUntil(delim) must do from pos: the chunk (delimiter
	// included) and its error, or ErrTooLong (nothing consumed) past maxLine.
	expectUntil := func(delim byte) ([]byte, error) {
		rem := full[pos:]
		if i := bytes.IndexByte(rem, delim); i >= 0 {
			if i+1 > maxLine {
				return nil, ErrTooLong
			}
			return rem[:i+1], nil
		}
		if len(rem) > maxLine {
			return nil, ErrTooLong
		}
		return rem, serr
	}
	checkUntil := func(delim byte, prefix []byte, res blitzio.Result[[]byte]) {
		t.Helper()
		want, werr := expectUntil(delim)
		if werr == ErrTooLong {
			if res.Err != ErrTooLong || !bytes.Equal(res.Value, prefix) {
				fail("ReadUntil(%q) = %q, %v; want dst %q untouched and ErrTooLong (limit %d)", delim, res.Value, res.Err, prefix, maxLine)
			}
			return
		}
		line, err := bb.ReadBytes(delim)
		if !bytes.Equal(line, want) || !hostile12SameErr(err, werr) {
			fail("oracle bufio.ReadBytes(%q) = %q, %v; the script says %q, %v", delim, line, err, want, werr)
		}
		if !bytes.HasPrefix(res.Value, prefix) || !bytes.Equal(res.Value[len(prefix):], line) || !hostile12SameErr(res.Err, err) {
			fail("ReadUntil(%q, dst %q) = %q, %v; bufio.ReadBytes = %q, %v", delim, prefix, res.Value, res.Err, line, err)
		}
		pos += len(line)
	}
	checkLine := func(res blitzio.Result[string]) {
		t.Helper()
		want, werr := expectUntil('\n')
		switch {
		case werr == ErrTooLong:
		case werr == io.EOF && len(want) > 0:
			werr = nil // a last line without "\n"
		case werr != nil:
			want = nil // another error: nothing consumed, the partial line stays
		}
		if res.Err != nil || werr != nil {
			if !hostile12SameErr(res.Err, werr) || res.Value != "" {
				fail("ReadLine = %q, %v; want error %v", res.Value, res.Err, werr)
			}
			return
		}
		line, err := bb.ReadBytes('\n')
		if !bytes.Equal(line, want) || (err != nil && err != io.EOF) {
			fail("oracle bufio.ReadBytes('\\n') = %q, %v; the script says %q", line, err, want)
		}
		if res.Value != string(trimEOL(line)) {
			fail("ReadLine = %q; bufio.ReadBytes gives %q", res.Value, line)
		}
		pos += len(line)
	}

	delims := []byte{'\n', 'a', ',', 0}
	nops := 0
	for i := 0; i+1 < len(ops); i += 2 {
		kind, arg := ops[i]%9, ops[i+1]
		synced := inSync()
		trace = append(trace, fmt.Sprintf("%d:%d", kind, arg))
		switch kind {
		case 0: // Read
			k := int(arg) % 70
			p := make([]byte, k)
			res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 10000)
			if k == 0 {
				// AsyncReader's contract: (0, nil) at once. (bufio.Reader.Read(nil)
				// may return a pending error instead; both are io.Reader-legal.)
				if res.Value != 0 || res.Err != nil {
					fail("Read(empty) = %d, %v; want 0, nil", res.Value, res.Err)
				}
				break
			}
			if res.Value < 0 || res.Value > k || (res.Value == 0) == (res.Err == nil) || (res.Value > 0 && res.Err != nil) {
				fail("Read(%d) = %d, %v: breaks AsyncReader's contract", k, res.Value, res.Err)
			}
			checkContent("Read", p[:res.Value])
			if synced {
				q := make([]byte, k)
				n2, err2 := hostile12BufioRead(t, bb, q)
				if n2 != res.Value || !hostile12SameErr(res.Err, err2) || !bytes.Equal(p[:n2], q[:n2]) {
					fail("Read(%d) = %d %q, %v; bufio.Read = %d %q, %v", k, res.Value, p[:res.Value], res.Err, n2, q[:n2], err2)
				}
			} else if res.Err != nil {
				if n2, err2 := hostile12BufioRead(t, bb, make([]byte, k)); n2 != 0 || !hostile12SameErr(res.Err, err2) {
					fail("Read(%d) = 0, %v; bufio.Read = %d, %v", k, res.Err, n2, err2)
				}
			} else if _, err := io.ReadFull(bb, make([]byte, res.Value)); err != nil {
				fail("bufio could not read the %d bytes Read returned: %v", res.Value, err)
			}
			pos += res.Value
		case 1: // ReadFull
			k := int(arg) % 50
			p, q := make([]byte, k), make([]byte, k)
			res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(br, p)), 10000)
			n2, err2 := io.ReadFull(bb, q)
			if res.Value != n2 || !hostile12SameErr(res.Err, err2) || !bytes.Equal(p[:n2], q[:n2]) {
				fail("ReadFull(%d) = %d %q, %v; io.ReadFull(bufio) = %d %q, %v", k, res.Value, p[:res.Value], res.Err, n2, q[:n2], err2)
			}
			checkContent("ReadFull", p[:res.Value])
			pos += n2
		case 2, 3: // ReadUntil, into a nil or a non-empty dst
			delim := delims[int(arg)%len(delims)]
			var prefix []byte
			if kind == 3 {
				prefix = []byte("dst:")
			}
			res := pollUntilReady(t, br.ReadUntil(delim, bytes.Clone(prefix)), 10000)
			checkUntil(delim, prefix, res)
		case 4: // ReadLine
			checkLine(pollUntilReady(t, br.ReadLine(), 10000))
		case 5: // PollFill
			res := pollUntilReady(t, blitzio.Future[blitzio.Result[[]byte]](blitzio.PollFn(br.PollFill)), 10000)
			if (len(res.Value) == 0) == (res.Err == nil) {
				fail("PollFill = %q, %v: want bytes or an error", res.Value, res.Err)
			}
			checkContent("PollFill", res.Value)
			if res.Err != nil && (pos != len(full) || !hostile12SameErr(res.Err, serr)) {
				fail("PollFill = %v at offset %d of %d; want the source's %v at the end only", res.Err, pos, len(full), serr)
			}
			if synced {
				// bufio's fill_buf: Peek(1) reads once if empty, then take all buffered.
				got, err := bb.Peek(1)
				if err == nil {
					got, err = bb.Peek(bb.Buffered())
				}
				if !bytes.Equal(got, res.Value) || !hostile12SameErr(err, res.Err) {
					fail("PollFill = %q, %v; bufio Peek = %q, %v", res.Value, res.Err, got, err)
				}
			}
		case 6: // Consume (beyond Buffered it must panic and change nothing)
			buffered := br.Buffered()
			n := int(arg) % (buffered + 2)
			if n > buffered {
				if p := hostile11Panics(func() { br.Consume(n) }); p == nil || br.Buffered() != buffered {
					fail("Consume(%d) with %d buffered: panic %v, Buffered now %d", n, buffered, p, br.Buffered())
				}
				break
			}
			br.Consume(n)
			q := make([]byte, n)
			if _, err := io.ReadFull(bb, q); err != nil {
				fail("bufio could not skip the %d bytes Consume took: %v", n, err)
			}
			checkContent("bufio after Consume", q)
			pos += n
		case 7: // SetMaxLine
			v := int(arg%48) - 8
			br.SetMaxLine(v)
			maxLine = v
			if v <= 0 {
				maxLine = DefaultMaxLine
			}
		case 8: // ReadUntil or ReadLine abandoned after a few polls (cancellation)
			delim := delims[int(arg>>2)%len(delims)]
			cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() {}))
			budget := int(arg%4) + 1
			if arg&0x80 != 0 {
				f := br.ReadLine()
				for range budget {
					if res, ok := f.Poll(cx); ok {
						checkLine(res)
						break
					}
				}
			} else {
				f := br.ReadUntil(delim, nil)
				for range budget {
					if res, ok := f.Poll(cx); ok {
						checkUntil(delim, nil, res)
						break
					}
				}
			}
		}
		nops++
		// Buffered is what the source delivered minus what was handed out, on both.
		if br.Buffered() != srcA.consumed-pos || bb.Buffered() != srcB.consumed-pos {
			fail("after op %d: Buffered = %d (source gave %d), bufio %d (source gave %d), %d handed out",
				nops, br.Buffered(), srcA.consumed, bb.Buffered(), srcB.consumed, pos)
		}
	}
	// Whatever is left reads the same through both, and both end with the source's error.
	var restA, restB []byte
	var errA, errB error
	for errA == nil {
		p := make([]byte, 23)
		res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 10000)
		restA, errA = append(restA, p[:res.Value]...), res.Err
	}
	for errB == nil {
		p := make([]byte, 23)
		var n int
		n, errB = bb.Read(p)
		restB = append(restB, p[:n]...)
	}
	if !bytes.Equal(restA, full[pos:]) || !bytes.Equal(restB, full[pos:]) || !hostile12SameErr(errA, serr) || !hostile12SameErr(errB, serr) {
		fail("the rest reads %q, %v; bufio %q, %v; want %q, %v", restA, errA, restB, errB, full[pos:], serr)
	}
	return nops
}

// hostile12ReaderCase is one table row.
type hostile12ReaderCase struct {
	name           string
	data, cfg, ops string
}

// hostile12ReaderCases are hand-picked scripts; they are also FuzzBufReader's seeds.
var hostile12ReaderCases = []hostile12ReaderCase{
	{"reads of every size", "hello world, a line\nand another\nlast", "\x00\x00\x00\x05\x00\x09", "\x00\x03\x00\x10\x00\x40\x00\x00\x00\x11\x00\x45"},
	{"lines CRLF and a final line", "one\r\ntwo\n\nthree\r\nfour", "\x01\x00\x00\x03\x01", "\x04\x00\x04\x00\x04\x00\x04\x00\x04\x00\x04\x00\x04\x00"},
	{"until with dst, data with EOF", "a,b,,c,dd", "\x02\x04\x00\x02", "\x03\x02\x02\x02\x03\x02\x02\x02\x02\x02\x02\x02"},
	{"custom error keeps the partial line", "full line\npartial", "\x00\x02\x00\x04", "\x04\x00\x04\x00\x04\x00\x00\x20\x00\x20"},
	{"unexpected EOF with the data", "abc\ndef", "\x03\x05\x00\x01", "\x04\x00\x01\x09\x04\x00"},
	{"line over the limit then raised", "short\n" + string(bytes.Repeat([]byte("L"), 30)) + "\nend\n", "\x00\x00\x00\x07\x00", "\x07\x18\x04\x00\x04\x00\x04\x00\x02\x00\x07\x00\x04\x00\x04\x00\x04\x00"},
	{"fill and consume", "0123456789abcdefghijklmnopqrstuvwxyz", "\x01\x00\x00\x0b", "\x05\x00\x06\x03\x05\x00\x06\x63\x05\x00\x06\x01\x00\x05\x05\x00"},
	{"early EOF cut", "abcdefghij\nklmnop", "\x00\x00\x85\x02", "\x01\x31\x01\x03\x00\x05"},
	{"abandoned until then line", "key value\nnext line\n", "\x00\x00\x00\x00\x02\x00\x03", "\x08\x05\x08\x01\x08\x83\x04\x00\x08\x00\x04\x00\x04\x00"},
	{"direct reads and data with error", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxyyyy", "\x00\x06\x00\x27", "\x00\x45\x00\x45\x00\x45\x00\x45"},
	{"empty stream", "", "\x00\x01\x40", "\x04\x00\x00\x05\x05\x00\x02\x00\x01\x03"},
	{"zero delimiter and limit at the edge", "ab\x00cd\x00efgh", "\x00\x00\x00\x01\x00", "\x07\x0b\x02\x03\x02\x03\x07\x0b\x02\x03\x02\x03"},
}

func TestHostile12BufReaderTable(t *testing.T) {
	for _, c := range hostile12ReaderCases {
		t.Run(c.name, func(t *testing.T) {
			if n := hostile12ReaderRun(t, []byte(c.data), []byte(c.cfg), []byte(c.ops)); n == 0 {
				t.Fatal("no op ran: the case is empty")
			}
		})
	}
}

// TestHostile12BufReaderMatrix: every buffer size and every source error, with and
// without the error coming with the last bytes, over seeded random chunkings and op
// sequences on line-shaped data.
func TestHostile12BufReaderMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 0xb0f))
	alphabet := []byte("ab,\n\r\x00xyz")
	ran := 0
	for si := range hostile12ReaderSizes {
		for ei := range hostile12Errs {
			for _, withData := range []bool{false, true} {
				for range 30 {
					data := make([]byte, rng.IntN(120))
					for i := range data {
						data[i] = alphabet[rng.IntN(len(alphabet))]
					}
					cfg := []byte{byte(si), byte(ei), byte(rng.IntN(256))}
					if withData {
						cfg[1] |= 4
					}
					for range 1 + rng.IntN(6) {
						cfg = append(cfg, byte(rng.IntN(50)))
					}
					ops := make([]byte, 2*(5+rng.IntN(30)))
					for i := range ops {
						ops[i] = byte(rng.IntN(256))
					}
					ran += hostile12ReaderRun(t, data, cfg, ops)
				}
			}
		}
	}
	if ran < 1000 {
		t.Fatalf("only %d ops ran", ran)
	}
}

// FuzzBufReader: data is the stream, cfg the buffer size, error and chunking (see
// hostile12BuildScript), ops the operations (see hostile12ReaderRun).
func FuzzBufReader(f *testing.F) {
	for _, c := range hostile12ReaderCases {
		f.Add([]byte(c.data), []byte(c.cfg), []byte(c.ops))
	}
	f.Fuzz(func(t *testing.T, data, cfg, ops []byte) {
		hostile12ReaderRun(t, data, cfg, ops)
	})
}
