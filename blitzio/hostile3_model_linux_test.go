//go:build linux

package blitzio

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// hostile3Model is what the file should hold and where the stream position is.
type hostile3Model struct {
	data []byte
	pos  int64
}

func (m *hostile3Model) writeAt(p []byte, off int64) {
	if end := off + int64(len(p)); end > int64(len(m.data)) {
		m.data = append(m.data, make([]byte, end-int64(len(m.data)))...)
	}
	copy(m.data[off:], p)
}

// TestHostile3FileRandomModel drives one File with a random mix of stream reads (some
// abandoned while in flight, whose bytes must then be served to the next read or be
// accounted for by SeekTo and the next write), stream writes, ReadAt, WriteAt, SeekTo,
// SetLen and Stat, checking every result against a byte-slice model, on both backends
// and in every BLITZIO_FILEIO mode.
func TestHostile3FileRandomModel(t *testing.T) {
	for _, be := range []Backend{BackendIOUring, BackendEpoll} {
		for _, mode := range []string{"auto", "ring", "pool", "nowait"} {
			t.Run(be.String()+"/"+mode, func(t *testing.T) {
				t.Setenv(fileIOEnv, mode)
				rt, err := New(Config{Workers: 2, Backend: be})
				if err != nil {
					t.Skip(err)
				}
				defer rt.Close()
				for seed := range hostile3Seeds {
					hostile3RunModel(t, rt, seed)
				}
			})
		}
	}
}

func hostile3RunModel(t *testing.T, rt *Runtime, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	name := filepath.Join(t.TempDir(), "m")
	init := make([]byte, rng.IntN(20000))
	for i := range init {
		init[i] = byte(rng.IntN(256))
	}
	if err := os.WriteFile(name, init, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &hostile3Model{data: append([]byte(nil), init...)}
	f := must(t, rt, OpenOptions{Read: true, Write: true}.Open(name))
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after %v: %s", seed, log, fmt.Sprintf(format, args...))
	}
	abandoned := false // a stream read was left in flight: its bytes are read ahead
	for step := 0; step < 150; step++ {
		op := rng.IntN(9)
		if abandoned && (op == 3 || op == 4 || op == 6 || op == 8) {
			// Positioned writes and SetLen would make the read-ahead stale; Stat
			// loses it (TestHostile3MetadataOpAfterDroppedReadLosesBytes).
			op = 5
		}
		switch op {
		case 0, 1: // stream read, maybe abandoned
			n := 1 + rng.IntN(5000)
			p := make([]byte, n)
			abandon := rng.IntN(3) == 0
			r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
				r, ok := f.PollRead(cx, p)
				if !ok && abandon {
					return Result[int]{Value: -1}, true
				}
				return r, ok
			}))
			log = append(log, fmt.Sprintf("read(%d)=%d,%v", n, r.Value, r.Err))
			if r.Value == -1 {
				abandoned = true
				continue
			}
			avail := max(int64(len(m.data))-m.pos, 0)
			switch {
			case avail == 0:
				if r.Err != io.EOF || r.Value != 0 {
					fail("read at EOF = %d, %v", r.Value, r.Err)
				}
			case r.Err != nil || r.Value <= 0 || int64(r.Value) > min(avail, int64(n)):
				fail("read = %d, %v; %d available", r.Value, r.Err, avail)
			case !bytes.Equal(p[:r.Value], m.data[m.pos:m.pos+int64(r.Value)]):
				fail("read the wrong bytes at %d", m.pos)
			}
			m.pos += int64(r.Value)
		case 2: // stream write
			p := make([]byte, 1+rng.IntN(5000))
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			must(t, rt, writeAll(f, p))
			if rng.IntN(2) == 0 {
				must(t, rt, f.Flush())
			}
			log = append(log, fmt.Sprintf("write(%d)@%d", len(p), m.pos))
			m.writeAt(p, m.pos)
			m.pos += int64(len(p))
			abandoned = false
		case 3: // WriteAt
			must(t, rt, f.Flush())
			p := make([]byte, rng.IntN(3000))
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			off := int64(rng.IntN(len(m.data) + 2000))
			if n := must(t, rt, f.WriteAt(p, off)); n != len(p) {
				fail("WriteAt = %d", n)
			}
			log = append(log, fmt.Sprintf("writeAt(%d,%d)", len(p), off))
			m.writeAt(p, off)
		case 4: // SetLen
			size := int64(rng.IntN(len(m.data) + 3000))
			must(t, rt, f.SetLen(size))
			log = append(log, fmt.Sprintf("setLen(%d)", size))
			if size < int64(len(m.data)) {
				m.data = m.data[:size]
			} else {
				m.data = append(m.data, make([]byte, size-int64(len(m.data)))...)
			}
		case 5: // SeekTo
			var off int64
			whence := rng.IntN(3)
			switch whence {
			case io.SeekStart:
				off = int64(rng.IntN(len(m.data) + 100))
			case io.SeekCurrent:
				off = int64(rng.IntN(200)) - min(m.pos, 100)
			case io.SeekEnd:
				off = -int64(rng.IntN(len(m.data) + 1))
			}
			got := must(t, rt, f.SeekTo(off, whence))
			want := [3]int64{off, m.pos + off, int64(len(m.data)) + off}[whence]
			log = append(log, fmt.Sprintf("seek(%d,%d)=%d", off, whence, got))
			if got != want {
				fail("SeekTo(%d, %d) = %d, want %d", off, whence, got, want)
			}
			m.pos = want
			abandoned = false
		case 6, 7: // ReadAt, or AwaitReadAt
			must(t, rt, f.Flush()) // ReadAt does not wait for stream writes
			n := rng.IntN(4000)
			off := int64(rng.IntN(len(m.data) + 100))
			p := make([]byte, n)
			var r Result[int]
			if op == 6 {
				r = run(t, rt, f.ReadAt(p, off))
			} else {
				r = run(t, rt, Async(func(co *Co) Result[int] {
					n, err := f.AwaitReadAt(co, p, off)
					return Result[int]{Value: n, Err: err}
				}))
			}
			log = append(log, fmt.Sprintf("readAt(%d,%d)=%d,%v", n, off, r.Value, r.Err))
			want := int(max(min(int64(n), int64(len(m.data))-off), 0))
			if r.Value != want || (want < n) != (r.Err == io.EOF) || (want == n && r.Err != nil) {
				fail("ReadAt(%d, %d) = %d, %v; want %d bytes", n, off, r.Value, r.Err, want)
			}
			if want > 0 && !bytes.Equal(p[:want], m.data[off:off+int64(want)]) {
				fail("ReadAt(%d, %d) read the wrong bytes", n, off)
			}
		case 8: // Stat
			st := must(t, rt, f.Stat())
			log = append(log, "stat")
			if st.Size() != int64(len(m.data)) {
				fail("Stat size %d, want %d", st.Size(), len(m.data))
			}
			abandoned = false
		}
	}
	must(t, rt, f.Close())
	got, _ := os.ReadFile(name)
	if !bytes.Equal(got, m.data) {
		t.Fatalf("seed %d: file differs from the model (%d vs %d bytes) after %v", seed, len(got), len(m.data), log)
	}
}

// hostile3Seeds is how many random runs each backend and mode gets.
var hostile3Seeds = uint64(8)
