//go:build linux || darwin || freebsd

package stream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// hostile12ScanLines is the oracle: bufio.Scanner with ScanLines and a buffer large
// enough for any line, over the same chunks.
func hostile12ScanLines(t *testing.T, script *hostile12Script) ([]string, error) {
	t.Helper()
	sc := bufio.NewScanner(&hostile12Source{s: script})
	sc.Buffer(make([]byte, 0, 16), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// hostile12LinesInputs cover CRLF, empty lines, a lone "\r", a final line with and
// without "\n" (or with a dangling "\r"), and lines around the limit used below (8).
var hostile12LinesInputs = []string{
	"", "\n", "\n\n", "\r\n", "\r", "a", "a\n", "a\r\n", "a\r", "a\r\r\n", "\r\r\n\n",
	"one\ntwo\r\n\nthree", "one\ntwo\r\n\nthree\n", "x\n\r\ny\r\rz\n",
	"12345678\n", "12345678\r\n", "123456789\n", "123456789", "12345678", "12345678\r",
	"ok\n123456789\nafter\n", "ok\r\n" + strings.Repeat("z", 40) + "\r\nafter\n",
	"1234567\r\r\n", "a\x00b\nc\xffd\n",
}

// TestHostile12LinesCodecVsScanner: LinesCodec (MaxLength 8) through a FrameReader, and
// BufReader.ReadLine, against bufio.Scanner+ScanLines on the same inputs and chunkings.
// Up to the first line longer than 8 bytes (its "\r\n" not counted, as LinesCodec
// documents) the three agree line by line; the codec then fails with ErrTooLong, where
// the Scanner (given room) returns the line. Both end with io.EOF / a nil Err.
func TestHostile12LinesCodecVsScanner(t *testing.T) {
	const limit = 8
	for _, in := range hostile12LinesInputs {
		for _, chunking := range [][]byte{{1}, {2, 0, 3}, {39}, {5, 0, 0, 1}} {
			cfg := append([]byte{0, 0, 0}, chunking...)
			script := hostile12BuildScript([]byte(in), cfg)
			want, werr := hostile12ScanLines(t, script)
			if werr != nil {
				t.Fatalf("%q: Scanner.Err = %v", in, werr)
			}
			tooLong := -1
			for i, l := range want {
				if len(l) > limit {
					tooLong = i
					break
				}
			}
			fr := NewFrameReader[string](&hostile12Source{s: script}, LinesCodec{MaxLength: limit})
			br := NewBufReader(&hostile12Source{s: script}, 16)
			for i, codecDone := 0, false; ; i++ {
				line := pollUntilReady(t, br.ReadLine(), 10000)
				if codecDone {
					// the codec failed with ErrTooLong: only ReadLine (limit 64 KiB) goes on
				} else if got := pollUntilReady(t, fr.Next(), 10000); tooLong == i {
					if got.Err != ErrTooLong {
						t.Fatalf("%q chunks %v: codec line %d = %q, %v; Scanner's line is %q, longer than %d: want ErrTooLong", in, chunking, i, got.Value, got.Err, want[i], limit)
					}
					codecDone = true
				} else if i == len(want) {
					if got.Err != io.EOF {
						t.Fatalf("%q chunks %v: codec after %d lines = %q, %v; want io.EOF", in, chunking, i, got.Value, got.Err)
					}
				} else if got.Err != nil || got.Value != want[i] {
					t.Fatalf("%q chunks %v: codec line %d = %q, %v; Scanner %q", in, chunking, i, got.Value, got.Err, want[i])
				}
				if i == len(want) {
					if line.Err != io.EOF {
						t.Fatalf("%q chunks %v: ReadLine after %d lines = %q, %v; want io.EOF", in, chunking, i, line.Value, line.Err)
					}
					break
				}
				if line.Err != nil || line.Value != want[i] {
					t.Fatalf("%q chunks %v: ReadLine %d = %q, %v; Scanner %q", in, chunking, i, line.Value, line.Err, want[i])
				}
			}
		}
	}
}

// TestHostile12LinesCodecLimitCountsNoEOL: LinesCodec's MaxLength is the line without
// its "\n" or "\r\n" (so a "\r\n" line of exactly MaxLength bytes passes, whichever
// chunks it comes in), unlike bufio.Scanner's maximum, which is the buffer holding the
// line and its end of line; one byte more fails, with or without the end of line.
func TestHostile12LinesCodecLimitCountsNoEOL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" means ErrTooLong
	}{
		{"abcd\r\n", "abcd"}, {"abcd\n", "abcd"}, {"abcd", "abcd"}, {"abcd\r", "abcd"},
		{"abcde\r\n", ""}, {"abcde\n", ""}, {"abcde", ""}, {"abc\r\r\n", "abc\r"}, {"abcd\r\r\n", ""},
	} {
		for _, size := range []byte{1, 3, 39} {
			script := hostile12BuildScript([]byte(c.in), []byte{0, 0, 0, size})
			fr := NewFrameReader[string](&hostile12Source{s: script}, LinesCodec{MaxLength: 4})
			got := pollUntilReady(t, fr.Next(), 1000)
			if c.want == "" && got.Err != ErrTooLong || c.want != "" && (got.Err != nil || got.Value != c.want) {
				t.Fatalf("LinesCodec{MaxLength: 4} on %q in chunks of %d = %q, %v; want %q (empty: ErrTooLong)", c.in, size, got.Value, got.Err, c.want)
			}
		}
	}
	// The Scanner's limit is the buffer: "abcd\r\n" needs 6 bytes of it.
	sc := bufio.NewScanner(strings.NewReader("abcd\r\n"))
	sc.Buffer(make([]byte, 0, 4), 5)
	if sc.Scan() || !errors.Is(sc.Err(), bufio.ErrTooLong) {
		t.Fatalf("oracle: Scanner with a 5-byte buffer on \"abcd\\r\\n\" = %q, %v; want bufio.ErrTooLong", sc.Text(), sc.Err())
	}
}

// TestHostile12LinesErrorAfterPartialLine: when the stream fails with an error other
// than io.EOF in the middle of a line, bufio.Scanner returns the partial line as a
// complete one before reporting the error (it splits with atEOF for any error). The
// codec and ReadLine do not pass a truncated line off as a line: they return the error,
// and ReadLine leaves the partial bytes buffered, as their docs say. The lines before
// the failure agree.
func TestHostile12LinesErrorAfterPartialLine(t *testing.T) {
	for _, errKind := range []byte{1, 2, 4, 5} { // ErrUnexpectedEOF, custom; alone or with the bytes
		script := hostile12BuildScript([]byte("first\r\nsecond\npart"), []byte{0, errKind, 0, 4})
		want, werr := hostile12ScanLines(t, script)
		if strings.Join(want, "|") != "first|second|part" || !errors.Is(werr, script.err) {
			t.Fatalf("oracle: Scanner = %q, %v; want the partial line then %v", want, werr, script.err)
		}
		fr := NewFrameReader[string](&hostile12Source{s: script}, LinesCodec{})
		br := NewBufReader(&hostile12Source{s: script}, 16)
		for _, w := range want[:2] {
			if got := pollUntilReady(t, fr.Next(), 1000); got.Err != nil || got.Value != w {
				t.Fatalf("codec = %q, %v; want %q", got.Value, got.Err, w)
			}
			if got := pollUntilReady(t, br.ReadLine(), 1000); got.Err != nil || got.Value != w {
				t.Fatalf("ReadLine = %q, %v; want %q", got.Value, got.Err, w)
			}
		}
		for range 2 {
			if got := pollUntilReady(t, fr.Next(), 1000); got.Err == nil || !errors.Is(got.Err, script.err) {
				t.Fatalf("codec on the partial line (%v) = %q, %v; want the error", script.err, got.Value, got.Err)
			}
			if got := pollUntilReady(t, br.ReadLine(), 1000); got.Err == nil || !errors.Is(got.Err, script.err) {
				t.Fatalf("ReadLine on the partial line (%v) = %q, %v; want the error", script.err, got.Value, got.Err)
			}
		}
		p := make([]byte, 16)
		if got := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 1000); got.Err != nil || !bytes.Equal(p[:got.Value], []byte("part")) {
			t.Fatalf("Read after ReadLine failed = %q, %v; want the partial line \"part\" still buffered", p[:got.Value], got.Err)
		}
	}
}

// hostile12EOFThenMore reports io.EOF once, then more bytes (a terminal after Ctrl-D, a
// file being appended to), then io.EOF for good.
type hostile12EOFThenMore struct{ calls int }

func (r *hostile12EOFThenMore) step() (string, error) {
	r.calls++
	switch r.calls {
	case 1:
		return "first", nil
	case 2:
		return "", io.EOF
	case 3:
		return "more", nil
	}
	return "", io.EOF
}

func (r *hostile12EOFThenMore) Read(p []byte) (int, error) {
	s, err := r.step()
	return copy(p, s), err
}

func (r *hostile12EOFThenMore) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	s, err := r.step()
	return blitzio.Result[int]{Value: copy(p, s), Err: err}, true
}

// TestHostile12BufReaderEOFIsFinal: the documented difference from bufio.Reader: after
// io.EOF, BufReader does not read the stream again, where bufio.Reader does and passes on
// what came after it. It holds whatever the size of the reads: reads at least as large
// as the buffer go straight to the stream, and once forgot an io.EOF that came alone, so
// that the next read asked the stream again (and the outcome depended on the caller's
// buffer size).
func TestHostile12BufReaderEOFIsFinal(t *testing.T) {
	bb := bufio.NewReaderSize(&hostile12EOFThenMore{}, 16)
	var fromBufio []string
	for range 4 {
		p := make([]byte, 16)
		n, err := bb.Read(p)
		fromBufio = append(fromBufio, string(p[:n])+"/"+fmt.Sprint(err))
	}
	if got := strings.Join(fromBufio, " "); got != "first/<nil> /EOF more/<nil> /EOF" {
		t.Fatalf("oracle: bufio.Reader reads %s", got)
	}
	for _, size := range []int{8, 16, 64} { // through the buffer, and straight through
		src := &hostile12EOFThenMore{}
		br := NewBufReader(src, 16)
		var fromOurs []string
		for range 4 {
			p := make([]byte, size)
			res := pollUntilReady(t, blitzio.Future[blitzio.Result[int]](Read(br, p)), 10)
			fromOurs = append(fromOurs, string(p[:res.Value])+"/"+fmt.Sprint(res.Err))
		}
		if got := strings.Join(fromOurs, " "); got != "first/<nil> /EOF /EOF /EOF" || src.calls != 2 {
			t.Fatalf("BufReader (16 bytes) read in %d-byte reads = %s after %d reads of the stream; want \"first\", then io.EOF for good after 2 reads", size, got, src.calls)
		}
		if r := pollUntilReady(t, br.ReadLine(), 10); r.Err != io.EOF || src.calls != 2 {
			t.Fatalf("ReadLine after io.EOF = %q, %v after %d reads of the stream; want io.EOF without a read", r.Value, r.Err, src.calls)
		}
	}
}
