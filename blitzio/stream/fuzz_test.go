package stream

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// modelLines is what LinesCodec must produce: the lines of data split at "\n", each
// without a trailing "\r", and a last line without a newline if it is not empty.
func modelLines(data string) []string {
	parts := strings.Split(data, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		parts[i] = strings.TrimSuffix(p, "\r")
	}
	return parts
}

// FuzzLines decodes arbitrary bytes, delivered in arbitrary chunk sizes, with
// FrameReader+LinesCodec and with BufReader.ReadLine, and checks both against the model.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), []byte{1, 2, 3})
	f.Add([]byte("\r\r\n\n\r"), []byte{5})
	f.Add([]byte(strings.Repeat("long line ", 20)+"\n"), []byte{7, 1})
	f.Fuzz(func(t *testing.T, data []byte, chunks []byte) {
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c%16) + 1
		}
		want := modelLines(string(data))
		const maxLine = 64
		tooLong := false
		for _, l := range want {
			if len(l)+2 > maxLine {
				tooLong = true
			}
		}
		fr := NewFrameReader[string](&chunkReader{data: bytes.Clone(data), sizes: sizes}, LinesCodec{MaxLength: maxLine})
		br := NewBufReader(&chunkReader{data: bytes.Clone(data), sizes: sizes}, 3)
		br.SetMaxLine(maxLine + 2)
		for i := 0; ; i++ {
			a := pollUntilReady(t, fr.Next(), 10000)
			b := pollUntilReady(t, br.ReadLine(), 10000)
			if a.Err == ErrTooLong || b.Err == ErrTooLong {
				if !tooLong {
					t.Fatalf("line %d: ErrTooLong (%v, %v) but no line is longer than %d", i, a.Err, b.Err, maxLine)
				}
				return
			}
			if i == len(want) {
				if a.Err != io.EOF || b.Err != io.EOF {
					t.Fatalf("after %d lines: %q %v / %q %v, want io.EOF", i, a.Value, a.Err, b.Value, b.Err)
				}
				return
			}
			if a.Err != nil || b.Err != nil || a.Value != want[i] || b.Value != want[i] {
				t.Fatalf("line %d: codec %q %v, ReadLine %q %v; want %q", i, a.Value, a.Err, b.Value, b.Err, want[i])
			}
		}
	})
}

// FuzzLengthDelimited encodes frames cut from the input, decodes them through arbitrary
// chunk sizes, and checks they come back whole and in order.
func FuzzLengthDelimited(f *testing.F) {
	f.Add([]byte("hello world"), []byte{3, 0, 5}, []byte{1})
	f.Fuzz(func(t *testing.T, data, cuts, chunks []byte) {
		var frames [][]byte
		rest := data
		for _, c := range cuts {
			n := min(int(c), len(rest))
			frames = append(frames, rest[:n])
			rest = rest[n:]
		}
		frames = append(frames, rest)
		var wire []byte
		for _, fr := range frames {
			var err error
			if wire, err = (LengthDelimitedCodec{}).Encode(wire, fr); err != nil {
				t.Fatal(err)
			}
		}
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c%32) + 1
		}
		r := NewFrameReader[[]byte](&chunkReader{data: wire, sizes: sizes}, LengthDelimitedCodec{})
		for i, want := range frames {
			got := pollUntilReady(t, r.Next(), 100000)
			if got.Err != nil || !bytes.Equal(got.Value, want) {
				t.Fatalf("frame %d: %q %v, want %q", i, got.Value, got.Err, want)
			}
		}
		if got := pollUntilReady(t, r.Next(), 100); got.Err != io.EOF {
			t.Fatalf("after the frames: %v, want io.EOF", got.Err)
		}
	})
}
