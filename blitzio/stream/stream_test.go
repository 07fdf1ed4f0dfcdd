package stream

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// newRuntime starts a runtime closed at the end of the test.
func newRuntime(t testing.TB, workers int) *blitzio.Runtime {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// blockOn runs f on rt and fails the test if it does not finish within a generous
// watchdog (a hang is a bug, reported with the goroutines' stacks).
func blockOn[T any](t testing.TB, rt *blitzio.Runtime, f blitzio.Future[T]) T {
	t.Helper()
	type out struct {
		v   T
		err error
	}
	done := make(chan out, 1)
	go func() {
		v, err := blitzio.BlockOn(rt, f)
		done <- out{v, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("BlockOn: %v", o.err)
		}
		return o.v
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("watchdog: future did not finish in 30s\n%s", buf[:runtimeStack(buf)])
		panic("unreachable")
	}
}

// chunkReader yields data in the given chunk sizes (cycled), pending every other call,
// to exercise partial reads and wake-ups.
type chunkReader struct {
	data   []byte
	sizes  []int
	i      int
	toggle bool
	err    error // returned at the end instead of io.EOF, if set
}

func (c *chunkReader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	c.toggle = !c.toggle
	if c.toggle {
		cx.Waker().Wake()
		return blitzio.Result[int]{}, false
	}
	if len(c.data) == 0 {
		if c.err != nil {
			return blitzio.Result[int]{Err: c.err}, true
		}
		return blitzio.Result[int]{Err: io.EOF}, true
	}
	n := 1
	if len(c.sizes) > 0 {
		n = c.sizes[c.i%len(c.sizes)]
		c.i++
	}
	n = max(1, min(n, len(p), len(c.data)))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return blitzio.Result[int]{Value: n}, true
}

// pollUntilReady polls f by hand, with a waker that counts, at most limit times.
func pollUntilReady[T any](t *testing.T, f blitzio.Future[T], limit int) T {
	t.Helper()
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() {}))
	for range limit {
		if v, ok := f.Poll(cx); ok {
			return v
		}
	}
	t.Fatalf("future not ready after %d polls", limit)
	panic("unreachable")
}

func TestDuplexTransferThroughSmallBuffer(t *testing.T) {
	rt := newRuntime(t, 2)
	a, b := Duplex(7) // much smaller than the payload: many wake-ups each way
	payload := make([]byte, 256<<10)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	writer := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		r := blitzio.Await(co, WriteAll(a, payload))
		if r.Err != nil || r.Value != len(payload) {
			return fmt.Errorf("WriteAll = %d, %v", r.Value, r.Err)
		}
		return a.CloseWrite()
	}))
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) []byte {
		var out bytes.Buffer
		buf := make([]byte, 1000)
		for {
			r := blitzio.Await(co, Read(b, buf))
			if r.Err == io.EOF {
				return out.Bytes()
			}
			if r.Err != nil {
				t.Errorf("Read: %v", r.Err)
				return out.Bytes()
			}
			out.Write(buf[:r.Value])
		}
	}))
	if _, err := writer.Wait(); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(payload) {
		t.Fatalf("received %d bytes that differ from the %d sent", len(got), len(payload))
	}
}

func TestDuplexCloseSemantics(t *testing.T) {
	a, b := Duplex(16)
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() {}))
	if r, ok := a.PollWrite(cx, []byte("hi")); !ok || r.Err != nil || r.Value != 2 {
		t.Fatalf("write = %v %v", r, ok)
	}
	a.Close()
	buf := make([]byte, 8)
	if r, ok := b.PollRead(cx, buf); !ok || r.Err != nil || string(buf[:r.Value]) != "hi" {
		t.Fatalf("read after peer Close = %v %v, want the bytes written before it", r, ok)
	}
	if r, ok := b.PollRead(cx, buf); !ok || r.Err != io.EOF {
		t.Fatalf("second read = %v %v, want io.EOF", r, ok)
	}
	if r, ok := b.PollWrite(cx, []byte("x")); !ok || !errors.Is(r.Err, io.ErrClosedPipe) {
		t.Fatalf("write to a closed peer = %v %v, want io.ErrClosedPipe", r, ok)
	}
	if r, ok := a.PollRead(cx, buf); !ok || !errors.Is(r.Err, io.ErrClosedPipe) {
		t.Fatalf("read on the closed end = %v %v, want io.ErrClosedPipe", r, ok)
	}
}

func TestDuplexWakesWaitingReaderOnClose(t *testing.T) {
	a, b := Duplex(4)
	woke := make(chan struct{}, 1)
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woke <- struct{}{} }))
	if _, ok := b.PollRead(cx, make([]byte, 4)); ok {
		t.Fatal("read of an empty pipe was ready")
	}
	a.CloseWrite()
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("CloseWrite did not wake the waiting reader")
	}
}

func TestReadFullEOFs(t *testing.T) {
	for _, tc := range []struct {
		data string
		want int
		err  error
	}{
		{"", 0, io.EOF},
		{"abc", 3, io.ErrUnexpectedEOF},
		{"abcdef", 5, nil},
	} {
		r := &chunkReader{data: []byte(tc.data), sizes: []int{1, 2}}
		p := make([]byte, 5)
		res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, p)), 100)
		if res.Value != tc.want || res.Err != tc.err {
			t.Errorf("ReadFull of %q = (%d, %v), want (%d, %v)", tc.data, res.Value, res.Err, tc.want, tc.err)
		}
	}
}

func TestReadFullReadErrorKeepsCount(t *testing.T) {
	boom := errors.New("boom")
	r := &chunkReader{data: []byte("ab"), err: boom}
	res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, make([]byte, 4))), 100)
	if res.Value != 2 || res.Err != boom {
		t.Fatalf("ReadFull = (%d, %v), want (2, boom)", res.Value, res.Err)
	}
}

// lyingReader reports ready with no bytes and no error: the loops must not spin.
type lyingReader struct{}

func (lyingReader) PollRead(*blitzio.Context, []byte) (blitzio.Result[int], bool) {
	return blitzio.Result[int]{}, true
}
func (lyingReader) PollWrite(*blitzio.Context, []byte) (blitzio.Result[int], bool) {
	return blitzio.Result[int]{}, true
}

func TestContractViolationsFailInsteadOfSpinning(t *testing.T) {
	p := make([]byte, 4)
	if r := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(lyingReader{}, p)), 1); r.Err != errNoProgress {
		t.Errorf("ReadFull over a zero-byte reader: %v", r.Err)
	}
	if r := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](WriteAll(lyingReader{}, p)), 1); r.Err != errNoProgress {
		t.Errorf("WriteAll over a zero-byte writer: %v", r.Err)
	}
	if r := pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](Copy(lyingReader{}, &chunkReader{data: p})), 10); r.Err != errNoProgress {
		t.Errorf("Copy into a zero-byte writer: %v", r.Err)
	}
	br := NewBufReader(lyingReader{}, 8)
	if r := pollUntilReady(t, br.ReadLine(), 1); r.Err != errNoProgress {
		t.Errorf("ReadLine over a zero-byte reader: %v", r.Err)
	}
	fr := NewFrameReader[string](lyingReader{}, LinesCodec{})
	if r := pollUntilReady(t, fr.Next(), 1); r.Err != errNoProgress {
		t.Errorf("FrameReader over a zero-byte reader: %v", r.Err)
	}
}

func TestBufReaderLines(t *testing.T) {
	text := "one\r\ntwo\n\nthree"
	for _, sizes := range [][]int{{1}, {2, 3}, {100}} {
		br := NewBufReader(&chunkReader{data: []byte(text), sizes: sizes}, 2)
		var got []string
		for {
			r := pollUntilReady(t, br.ReadLine(), 1000)
			if r.Err == io.EOF {
				break
			}
			if r.Err != nil {
				t.Fatalf("chunks %v: ReadLine: %v", sizes, r.Err)
			}
			got = append(got, r.Value)
		}
		if want := []string{"one", "two", "", "three"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("chunks %v: lines %q, want %q", sizes, got, want)
		}
	}
}

func TestBufReaderLineTooLong(t *testing.T) {
	br := NewBufReader(&chunkReader{data: []byte(strings.Repeat("x", 100) + "\nok\n"), sizes: []int{7}}, 4)
	br.SetMaxLine(50)
	if r := pollUntilReady(t, br.ReadLine(), 1000); r.Err != ErrTooLong {
		t.Fatalf("ReadLine of a 101-byte line with limit 50 = %q, %v; want ErrTooLong", r.Value, r.Err)
	}
	if br.Buffered() > 51 {
		t.Errorf("the buffer grew to hold %d bytes past a limit of 50", br.Buffered())
	}
}

// TestBufReaderReadLineCancellationSafe abandons ReadLine while half a line is buffered
// (as a timeout or a select would) and checks that the next ReadLine gets the whole line.
func TestBufReaderReadLineCancellationSafe(t *testing.T) {
	a, b := Duplex(64)
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() {}))
	br := NewBufReader(b, 16)
	a.PollWrite(cx, []byte("hello, wo"))
	if _, ok := br.ReadLine().Poll(cx); ok {
		t.Fatal("ReadLine ready without a newline")
	}
	// Abandon it; the bytes stay buffered.
	a.PollWrite(cx, []byte("rld\nnext"))
	a.CloseWrite()
	if r := pollUntilReady(t, br.ReadLine(), 10); r.Err != nil || r.Value != "hello, world" {
		t.Fatalf("ReadLine after an abandoned one = %q, %v", r.Value, r.Err)
	}
	if r := pollUntilReady(t, br.ReadLine(), 10); r.Err != nil || r.Value != "next" {
		t.Fatalf("last line = %q, %v", r.Value, r.Err)
	}
}

func TestBufReaderReadUntilAndRead(t *testing.T) {
	br := NewBufReader(&chunkReader{data: []byte("a;bb;ccc"), sizes: []int{2}}, 3)
	r := pollUntilReady(t, br.ReadUntil(';', nil), 100)
	if r.Err != nil || string(r.Value) != "a;" {
		t.Fatalf("ReadUntil = %q, %v", r.Value, r.Err)
	}
	p := make([]byte, 2)
	if n := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(br, p)), 100); n.Err != nil || string(p) != "bb" {
		t.Fatalf("ReadFull through BufReader = %q, %v", p, n.Err)
	}
	r = pollUntilReady(t, br.ReadUntil(';', []byte("prefix:")), 100)
	if r.Err != nil || string(r.Value) != "prefix:;" {
		t.Fatalf("ReadUntil = %q, %v", r.Value, r.Err)
	}
	r = pollUntilReady(t, br.ReadUntil(';', nil), 100)
	if r.Err != io.EOF || string(r.Value) != "ccc" {
		t.Fatalf("ReadUntil at the end = %q, %v; want \"ccc\", io.EOF", r.Value, r.Err)
	}
}

// smallWriter accepts at most max bytes per write, pending every other call.
type smallWriter struct {
	out    bytes.Buffer
	max    int
	toggle bool
	writes int
}

func (w *smallWriter) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	w.toggle = !w.toggle
	if w.toggle {
		cx.Waker().Wake()
		return blitzio.Result[int]{}, false
	}
	n := min(len(p), w.max)
	w.out.Write(p[:n])
	w.writes++
	return blitzio.Result[int]{Value: n}, true
}

func TestBufWriterCoalescesAndFlushes(t *testing.T) {
	w := &smallWriter{max: 1 << 20}
	bw := NewBufWriter(w, 64)
	for i := range 100 {
		if r := pollUntilReady(t, bw.Write([]byte(fmt.Sprintf("%02d,", i))), 100); r.Err != nil || r.Value != 3 {
			t.Fatalf("Write = %v", r)
		}
	}
	if r := pollUntilReady(t, bw.Flush(), 100); r.Err != nil {
		t.Fatal(r.Err)
	}
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "%02d,", i)
	}
	if w.out.String() != want.String() {
		t.Fatalf("wrote %q, want %q", w.out.String(), want.String())
	}
	if w.writes > 300/64+1 {
		t.Errorf("%d writes reached the stream for 300 bytes through a 64-byte buffer", w.writes)
	}
	// A short-writing stream: every byte still arrives, in order.
	w2 := &smallWriter{max: 5}
	bw2 := NewBufWriter(w2, 16)
	big := bytes.Repeat([]byte("0123456789"), 10)
	pollUntilReady(t, bw2.Write(big), 1000)
	pollUntilReady(t, bw2.Flush(), 1000)
	if !bytes.Equal(w2.out.Bytes(), big) {
		t.Fatalf("short writes: got %q", w2.out.Bytes())
	}
}

func TestFramesRoundTrip(t *testing.T) {
	rt := newRuntime(t, 2)
	a, b := Duplex(10)
	frames := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("ab"), 5000), []byte("end")}
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		fw := NewFrameWriter[[]byte](a, LengthDelimitedCodec{})
		for _, f := range frames {
			if r := blitzio.Await(co, fw.Send(f)); r.Err != nil {
				t.Errorf("Send: %v", r.Err)
			}
		}
		a.CloseWrite()
		return struct{}{}
	}))
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) [][]byte {
		fr := NewFrameReader[[]byte](b, LengthDelimitedCodec{})
		var got [][]byte
		for {
			r := blitzio.Await(co, fr.Next())
			if r.Err == io.EOF {
				return got
			}
			if r.Err != nil {
				t.Errorf("Next: %v", r.Err)
				return got
			}
			got = append(got, r.Value)
		}
	}))
	if len(got) != len(frames) {
		t.Fatalf("got %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Errorf("frame %d: %d bytes, want %d", i, len(got[i]), len(frames[i]))
		}
	}
}

func TestLengthDelimitedRejectsBadInput(t *testing.T) {
	huge := []byte{0x7f, 0xff, 0xff, 0xff, 'x'}
	fr := NewFrameReader[[]byte](&chunkReader{data: huge}, LengthDelimitedCodec{MaxFrameLength: 1 << 10})
	if r := pollUntilReady(t, fr.Next(), 100); r.Err != ErrTooLong {
		t.Errorf("a 2 GiB length header: %v, want ErrTooLong (before reading the payload)", r.Err)
	}
	short := []byte{0, 0, 0, 9, 'a', 'b'}
	fr = NewFrameReader[[]byte](&chunkReader{data: short}, LengthDelimitedCodec{})
	if r := pollUntilReady(t, fr.Next(), 100); r.Err != io.ErrUnexpectedEOF {
		t.Errorf("a truncated frame: %v, want io.ErrUnexpectedEOF", r.Err)
	}
	if _, err := (LengthDelimitedCodec{MaxFrameLength: 2}).Encode(nil, []byte("abc")); err != ErrTooLong {
		t.Errorf("Encode past the limit: %v", err)
	}
	if _, err := (LinesCodec{}).Encode(nil, "a\nb"); err == nil {
		t.Error("LinesCodec encoded a line with a newline in it")
	}
}

func TestCopyBidirectionalProxy(t *testing.T) {
	rt := newRuntime(t, 2)
	client, proxyIn := Duplex(5)
	proxyOut, server := Duplex(3)
	proxy := blitzio.Spawn(rt, CopyBidirectional(proxyIn, proxyOut))
	// The server upper-cases each line until EOF, then closes its write side.
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		lines := NewFrameReader[string](server, LinesCodec{})
		out := NewFrameWriter[string](server, LinesCodec{})
		for {
			r := blitzio.Await(co, lines.Next())
			if r.Err != nil {
				server.CloseWrite()
				return struct{}{}
			}
			blitzio.Await(co, out.Send(strings.ToUpper(r.Value)))
		}
	}))
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) string {
		blitzio.Await(co, WriteAll(client, []byte("ping\npong\n")))
		client.CloseWrite()
		var all bytes.Buffer
		r := blitzio.Await(co, Copy(writerFunc(all.Write), client))
		if r.Err != nil {
			t.Errorf("Copy: %v", r.Err)
		}
		return all.String()
	}))
	if got != "PING\nPONG\n" {
		t.Fatalf("through the proxy: %q", got)
	}
	c, err := proxy.Wait()
	if err != nil || c.Err != nil || c.Value.AToB != 10 || c.Value.BToA != 10 {
		t.Fatalf("proxy result %+v, %v", c, err)
	}
}

// writerFunc adapts an io.Writer-like function into an AsyncWriter that is always ready.
type writerFunc func([]byte) (int, error)

func (f writerFunc) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	n, err := f(p)
	return blitzio.Result[int]{Value: n, Err: err}, true
}

func TestBufReaderZeroAllocLines(t *testing.T) {
	data := []byte(strings.Repeat("line\n", 1000))
	r := &chunkReader{data: data, sizes: []int{64}}
	br := NewBufReader(r, 0)
	cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() {}))
	var dst []byte
	allocs := testing.AllocsPerRun(200, func() {
		dst = dst[:0]
		f := br.ReadUntil('\n', dst)
		for {
			if res, ok := f.Poll(cx); ok {
				dst = res.Value
				return
			}
		}
	})
	if allocs > 0 {
		t.Errorf("ReadUntil into a reused slice: %.1f allocations per line, want 0", allocs)
	}
}
