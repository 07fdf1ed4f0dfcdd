package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// awaitReadAt is f.AwaitReadAt(p, off) in an Async future, for the tests.
func awaitReadAt(f *File, p []byte, off int64) Future[Result[int]] {
	return Async(func(co *Co) Result[int] {
		n, err := f.AwaitReadAt(co, p, off)
		return Result[int]{Value: n, Err: err}
	})
}

// TestAwaitReadAtMatchesOS: in every BLITZIO_FILEIO mode, AwaitReadAt returns what
// os.File.ReadAt returns for the same file: whole reads, a short read at the end of the
// file (io.EOF with the count), an empty read, negative and huge offsets (os's error
// or none), and fs.ErrClosed in an *fs.PathError after Close; and what ReadAt's future
// returns, byte for byte.
func TestAwaitReadAtMatchesOS(t *testing.T) {
	for _, mode := range []string{"auto", "ring", "pool", "nowait"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			name := filepath.Join(t.TempDir(), "f")
			data := make([]byte, 100_000)
			for i := range data {
				data[i] = byte(i*13 + i>>9)
			}
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			osf, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer osf.Close()
			f := must(t, rt, Open(name))
			cases := []struct {
				n   int
				off int64
			}{
				{4096, 0}, {4096, 8192}, {1, 99_999}, {5000, 98_000}, {100, 100_000},
				{100, 200_000}, {0, 10}, {0, -1}, {10, -1}, {100, math.MaxInt64 - 10},
				{100_000, 0}, {70_000, 30_001},
			}
			for _, c := range cases {
				want := make([]byte, c.n)
				wn, werr := osf.ReadAt(want, c.off)
				got := bytes.Repeat([]byte{'z'}, c.n)
				r := run(t, rt, awaitReadAt(f, got, c.off))
				viaFuture := bytes.Repeat([]byte{'z'}, c.n)
				fr := run(t, rt, f.ReadAt(viaFuture, c.off))
				what := fmt.Sprintf("AwaitReadAt(%d bytes, %d)", c.n, c.off)
				if r.Value != wn || (r.Err == nil) != (werr == nil) || (werr == io.EOF) != (r.Err == io.EOF) {
					t.Fatalf("%s: (%d, %v); os.File.ReadAt: (%d, %v)", what, r.Value, r.Err, wn, werr)
				}
				if fr.Value != r.Value || (fr.Err == nil) != (r.Err == nil) {
					t.Fatalf("%s: (%d, %v); ReadAt's future: (%d, %v)", what, r.Value, r.Err, fr.Value, fr.Err)
				}
				if !bytes.Equal(got[:r.Value], want[:wn]) || !bytes.Equal(got[:r.Value], viaFuture[:r.Value]) {
					t.Fatalf("%s: wrong bytes", what)
				}
			}
			must(t, rt, f.Close())
			_, err = run(t, rt, awaitReadAt(f, make([]byte, 10), 0)).Get()
			var pe *fs.PathError
			if !errors.As(err, &pe) || !errors.Is(err, fs.ErrClosed) {
				t.Fatalf("AwaitReadAt after Close: %v, want *fs.PathError with fs.ErrClosed", err)
			}
		})
	}
}

// TestAwaitReadAtMisuse: AwaitReadAt with a nil *Co, or with the *Co of an Async
// function that has returned, panics as Await does, naming the misuse, instead of
// reading.
func TestAwaitReadAtMisuse(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	defer run(t, rt, f.Close())
	mustPanic := func(what string, fn func()) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil {
				t.Fatalf("%s: no panic", what)
			} else if s := fmt.Sprint(r); !bytes.Contains([]byte(s), []byte("Await")) {
				t.Fatalf("%s: panic %q does not name Await", what, s)
			}
		}()
		fn()
	}
	mustPanic("nil *Co", func() { f.AwaitReadAt(nil, make([]byte, 10), 0) })
	var kept *Co
	run(t, rt, Async(func(co *Co) struct{} { kept = co; return struct{}{} }))
	mustPanic("*Co of a returned function", func() { f.AwaitReadAt(kept, make([]byte, 10), 0) })
}

// TestAwaitReadAtManyYields: a task reading more times than its budget allows in one
// poll yields (the worker serves other tasks) and goes on with the worker's reads: all
// reads are right, and a task queued behind it gets to run before it ends.
func TestAwaitReadAtManyYields(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	name := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	const reads = 4 * budgetPerPoll
	var otherRan, sawOther bool
	h := Spawn(rt, Async(func(co *Co) error {
		Spawn(co, PollFn(func(*Context) (struct{}, bool) { otherRan = true; return struct{}{}, true }))
		p := make([]byte, 4096)
		for i := range reads {
			off := int64(i*4096) % int64(len(data)-4096)
			if n, err := f.AwaitReadAt(co, p, off); err != nil || n != len(p) {
				return fmt.Errorf("read %d: (%d, %v)", i, n, err)
			}
			if !bytes.Equal(p, data[off:off+4096]) {
				return fmt.Errorf("read %d: wrong bytes", i)
			}
		}
		sawOther = otherRan
		return nil
	}))
	if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
		t.Fatal(err, jerr)
	}
	if !sawOther {
		t.Fatalf("%d reads in one task and the other task never ran: the reads did not spend the budget", reads)
	}
	must(t, rt, f.Close())
}

// TestAwaitReadAtTwoRuntimes: one File read with AwaitReadAt by tasks of two runtimes at
// once (their workers share the count's shards by worker number), then closed: every
// read returns the file's bytes and the close completes.
func TestAwaitReadAtTwoRuntimes(t *testing.T) {
	rt1, rt2 := fileRT(t), fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt1, Open(name))
	var hs []JoinHandle[error]
	for i := range 16 {
		rt := rt1
		if i%2 == 1 {
			rt = rt2
		}
		hs = append(hs, Spawn(rt, Async(func(co *Co) error {
			var p [1000]byte
			for k := range 100 {
				off := int64((k*4099 + i*511) % (len(data) - len(p)))
				if n, err := f.AwaitReadAt(co, p[:], off); err != nil || n != len(p) {
					return fmt.Errorf("task %d read %d: (%d, %v)", i, k, n, err)
				}
				if !bytes.Equal(p[:], data[off:off+int64(len(p))]) {
					return fmt.Errorf("task %d read %d at %d: wrong bytes", i, k, off)
				}
			}
			return nil
		})))
	}
	for _, h := range hs {
		if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
			t.Fatal(err, jerr)
		}
	}
	must(t, rt2, f.Close())
	if n := f.b.refs.total(); n != 0 {
		t.Fatalf("operation count %d after Close", n)
	}
}
