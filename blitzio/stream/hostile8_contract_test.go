package stream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// hostile8Within runs f on a goroutine and fails the test (instead of hanging) if it
// has not returned within a generous watchdog. A panic in f fails the test too.
func hostile8Within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("watchdog: %s did not return (spinning or blocked)\n%s", what, buf[:runtimeStack(buf)])
	}
}

// hostile8Reader serves a script of raw PollRead results, copying data into p as far as
// it fits but reporting n as scripted: it may lie (n > len(p), n < 0, bytes together
// with an error). After the script it reports io.EOF.
type hostile8Reader struct {
	steps []hostile8Step
	calls int
}

type hostile8Step struct {
	data string
	n    int // reported count; -1 in the script means "len(data)"
	err  error
}

func (r *hostile8Reader) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	r.calls++
	if r.calls > 1000 {
		panic("hostile8Reader: polled 1000 times: the caller spins")
	}
	if len(r.steps) == 0 {
		return blitzio.Result[int]{Err: io.EOF}, true
	}
	s := r.steps[0]
	r.steps = r.steps[1:]
	copy(p, s.data)
	return blitzio.Result[int]{Value: s.n, Err: s.err}, true
}

func step(data string, err error) hostile8Step {
	return hostile8Step{data: data, n: len(data), err: err}
}

// TestHostile8ReadFullOverlongCount: a reader claiming more bytes than p holds must be
// caught (the package's errNoProgress, like bufio's panic on a bad count but without
// the panic), not reported as a count larger than p that makes p[:n] panic.
func TestHostile8ReadFullOverlongCount(t *testing.T) {
	p := make([]byte, 4)
	r := &hostile8Reader{steps: []hostile8Step{{data: "ab", n: 2}, {data: "cd", n: 7}}}
	res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, p)), 1)
	if res.Err == nil || res.Value > len(p) || res.Value < 0 {
		t.Fatalf("ReadFull over a reader reporting 7 bytes into 2 = (%d, %v); want an error and a count <= %d", res.Value, res.Err, len(p))
	}
	r = &hostile8Reader{steps: []hostile8Step{{n: -3}}}
	res = pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, p)), 1)
	if res.Err == nil || res.Value != 0 {
		t.Fatalf("ReadFull over a reader reporting -3 bytes = (%d, %v); want (0, error)", res.Value, res.Err)
	}
}

// TestHostile8BufReaderDirectReadBadCount: a BufReader read at least as large as its
// buffer goes straight to the underlying reader; the counts it reports must be checked
// there as on the buffered path (which turns them into errNoProgress), not passed on.
func TestHostile8BufReaderDirectReadBadCount(t *testing.T) {
	cx := noopCx()
	p := make([]byte, 16)
	for _, s := range []hostile8Step{{data: "x", n: 20}, {n: -1}, {n: 0}} {
		br := NewBufReader(&hostile8Reader{steps: []hostile8Step{s}}, 4)
		var res blitzio.Result[int]
		hostile8Within(t, "BufReader.PollRead", func() { res, _ = br.PollRead(cx, p) })
		if res.Err == nil || res.Value < 0 || res.Value > len(p) {
			t.Errorf("BufReader.PollRead(16 bytes) over a reader reporting n = %d with no error = (%d, %v); want an error", s.n, res.Value, res.Err)
		}
	}
}

// TestHostile8BytesTogetherWithEOF: AsyncReader promises never to return bytes with an
// error, but a reader ported from io.Reader may (io.Reader allows it: "Callers should
// always process the n > 0 bytes returned before considering the error"). The bytes
// must not be silently dropped: io.ReadFull, io.Copy and bufio keep them.
func TestHostile8BytesTogetherWithEOF(t *testing.T) {
	// ReadFull: the last bytes and EOF at once complete p: io.ReadFull returns (4, nil).
	p := make([]byte, 4)
	r := &hostile8Reader{steps: []hostile8Step{step("ab", nil), step("cd", io.EOF)}}
	res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, p)), 1)
	if res.Value != 4 || res.Err != nil || string(p) != "abcd" {
		t.Errorf("ReadFull = (%d, %v, %q); want (4, nil, \"abcd\") as io.ReadFull", res.Value, res.Err, p)
	}
	// ... or fall short of it: io.ErrUnexpectedEOF with the count of every byte read.
	p = make([]byte, 4)
	r = &hostile8Reader{steps: []hostile8Step{step("ab", nil), step("c", io.EOF)}}
	res = pollUntilReady(t, blitzio.Future[blitzio.Result[int]](ReadFull(r, p)), 1)
	if res.Value != 3 || res.Err != io.ErrUnexpectedEOF {
		t.Errorf("ReadFull = (%d, %v); want (3, io.ErrUnexpectedEOF)", res.Value, res.Err)
	}

	// Copy: io.Copy writes the bytes, then reports the error (none for EOF).
	boom := errors.New("boom")
	for _, end := range []error{io.EOF, boom} {
		var out bytes.Buffer
		w := writerFunc(func(p []byte) (int, error) { return out.Write(p) })
		r = &hostile8Reader{steps: []hostile8Step{step("hello ", nil), step("world", end)}}
		cres := pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](Copy(w, r)), 1)
		want := error(nil)
		if end != io.EOF {
			want = boom
		}
		if cres.Value != 11 || cres.Err != want || out.String() != "hello world" {
			t.Errorf("Copy with the last bytes and %v together = (%d, %v, %q); want (11, %v, \"hello world\")", end, cres.Value, cres.Err, out.String(), want)
		}
	}

	// BufReader: the last line arrives with EOF.
	br := NewBufReader(&hostile8Reader{steps: []hostile8Step{step("a\nb", io.EOF)}}, 8)
	var lines []string
	for {
		l := pollUntilReady(t, br.ReadLine(), 1)
		if l.Err != nil {
			if l.Err != io.EOF {
				t.Errorf("ReadLine error %v, want io.EOF", l.Err)
			}
			break
		}
		lines = append(lines, l.Value)
	}
	if strings.Join(lines, "|") != "a|b" {
		t.Errorf("BufReader lines = %q; want [a b] (bufio.Scanner keeps bytes read with EOF)", lines)
	}

	// FrameReader: the same through a codec.
	fr := NewFrameReader[string](&hostile8Reader{steps: []hostile8Step{step("x\ny\n", io.EOF)}}, LinesCodec{})
	lines = nil
	for {
		l := pollUntilReady(t, fr.Next(), 1)
		if l.Err != nil {
			if l.Err != io.EOF {
				t.Errorf("FrameReader error %v, want io.EOF", l.Err)
			}
			break
		}
		lines = append(lines, l.Value)
	}
	if strings.Join(lines, "|") != "x|y" {
		t.Errorf("FrameReader lines = %q; want [x y]", lines)
	}
}

// hostile8Conn is a ConnStream whose reads and writes report scripted counts.
type hostile8Conn struct {
	readN, writeN int
	readErr       error
	writes        int
}

func (c *hostile8Conn) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	return blitzio.Result[int]{Value: c.readN, Err: c.readErr}, true
}

func (c *hostile8Conn) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	c.writes++
	if c.writes > 1000 {
		// Stop the spin so that the watchdog reports instead of burning a core.
		return blitzio.Result[int]{Err: errors.New("hostile8Conn: written 1000 times: Write spins")}, true
	}
	return blitzio.Result[int]{Value: c.writeN}, true
}

func (c *hostile8Conn) Close() error         { return nil }
func (c *hostile8Conn) LocalAddr() net.Addr  { return duplexAddr{} }
func (c *hostile8Conn) RemoteAddr() net.Addr { return duplexAddr{} }

// TestHostile8ConnWriteNoProgress: Conn.Write over a stream that reports (0, nil) must
// fail (io.Writer: "Write must return a non-nil error if it returns n < len(p)";
// bufio.Writer reports io.ErrShortWrite), not loop forever; a count beyond the buffer
// must be an error too, not a count > len(b) or a panic on b[n:].
func TestHostile8ConnWriteNoProgress(t *testing.T) {
	b := []byte("hello")
	for _, n := range []int{0, 9, -2} {
		s := &hostile8Conn{writeN: n}
		c := NewConn(s)
		var (
			got int
			err error
		)
		hostile8Within(t, "Conn.Write", func() { got, err = c.Write(b) })
		if err == nil || got < 0 || got > len(b) || s.writes > 1 {
			t.Errorf("Conn.Write over a stream reporting %d written = (%d, %v) after %d writes; want (0, error) after 1", n, got, err, s.writes)
		}
		if n == 0 && !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("Conn.Write over a zero-byte stream: %v; want io.ErrShortWrite", err)
		}
	}
}

// TestHostile8ConnReadBadCount: Conn.Read must never return n > len(b) or n < 0
// (io.Reader's contract; bufio panics on a negative count), and a stream that reports
// (0, nil) for a non-empty buffer is io.ErrNoProgress, as bufio reports it, instead of
// a (0, nil) that makes io.Copy spin.
func TestHostile8ConnReadBadCount(t *testing.T) {
	b := make([]byte, 4)
	for _, n := range []int{9, -1, 0} {
		c := NewConn(&hostile8Conn{readN: n})
		var (
			got int
			err error
		)
		hostile8Within(t, "Conn.Read", func() { got, err = c.Read(b) })
		if err == nil || got < 0 || got > len(b) {
			t.Errorf("Conn.Read over a stream reporting %d read = (%d, %v); want (0, error)", n, got, err)
		}
		if n == 0 && !errors.Is(err, io.ErrNoProgress) {
			t.Errorf("Conn.Read over a zero-byte stream: %v; want io.ErrNoProgress", err)
		}
	}
	// Bytes with EOF together are passed on as io.Reader allows.
	c := NewConn(&hostile8Conn{readN: 3, readErr: io.EOF})
	if got, err := c.Read(b); got != 3 || err != io.EOF {
		t.Errorf("Conn.Read = (%d, %v); want (3, io.EOF)", got, err)
	}
}

// TestHostile8WriteAllBytesWithError: a writer that reports a partial write and an
// error together (io.Writer's form) has written those bytes: WriteAll's count, like
// io.Copy's, must include them.
func TestHostile8WriteAllBytesWithError(t *testing.T) {
	boom := errors.New("boom")
	w := writerFunc(func(p []byte) (int, error) { return 3, boom })
	res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](WriteAll(w, []byte("abcdefgh"))), 1)
	if res.Value != 3 || res.Err != boom {
		t.Errorf("WriteAll = (%d, %v); want (3, boom)", res.Value, res.Err)
	}
	cres := pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](Copy(w, &hostile8Reader{steps: []hostile8Step{step("abcdefgh", nil)}})), 1)
	if cres.Value != 3 || cres.Err != boom {
		t.Errorf("Copy = (%d, %v); want (3, boom)", cres.Value, cres.Err)
	}
}
