package blitzio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ringRT starts a runtime on io_uring with file operations on the ring, or skips.
func ringRT(t *testing.T) (*Runtime, *ringFiles) {
	t.Helper()
	rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	rf := fileRing(&Context{rt: rt})
	if rf == nil {
		t.Skip("this kernel has no IORING_OP_READ/WRITE")
	}
	return rt, rf
}

func ringOps(rf *ringFiles) int {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return len(rf.ops)
}

// TestFileIOBackends runs the same reads and writes on io_uring and epoll, in every
// BLITZIO_FILEIO mode: stream writes and reads, positioned writes and reads at random
// offsets checked against a model, a short ReadAt at the end of the file (io.EOF with
// the count), and the errors in package os's form. On io_uring with the ring modes it
// also checks that the ring did the work.
func TestFileIOBackends(t *testing.T) {
	for _, be := range []Backend{BackendIOUring, BackendEpoll} {
		for _, mode := range []string{"auto", "ring", "pool", "nowait"} {
			t.Run(be.String()+"/"+mode, func(t *testing.T) {
				t.Setenv(fileIOEnv, mode)
				rt, err := New(Config{Workers: 2, Backend: be})
				if err != nil {
					t.Skipf("%v unavailable: %v", be, err)
				}
				defer rt.Close()
				name := filepath.Join(t.TempDir(), "data")
				f := must(t, rt, Create(name))
				model := make([]byte, 0, 1<<16)
				chunk := bytes.Repeat([]byte("0123456789abcdef"), 1000)
				if r := run(t, rt, writeAll(f, chunk)); r.Err != nil {
					t.Fatal(r.Err)
				}
				model = append(model, chunk...)
				must(t, rt, f.Flush())
				rng := rand.New(rand.NewPCG(7, uint64(len(mode))))
				for range 50 {
					off := rng.IntN(len(model))
					p := make([]byte, 1+rng.IntN(3000))
					for i := range p {
						p[i] = byte(rng.Uint32())
					}
					n := must(t, rt, f.WriteAt(p, int64(off)))
					if n != len(p) {
						t.Fatalf("WriteAt: %d of %d", n, len(p))
					}
					if end := off + len(p); end > len(model) {
						model = append(model, make([]byte, end-len(model))...)
					}
					copy(model[off:], p)
					roff := rng.IntN(len(model))
					got := make([]byte, 1+rng.IntN(4000))
					r := run(t, rt, f.ReadAt(got, int64(roff)))
					want := model[roff:min(len(model), roff+len(got))]
					if len(want) < len(got) {
						if r.Err != io.EOF || r.Value != len(want) {
							t.Fatalf("ReadAt %d bytes at %d of %d: (%d, %v), want (%d, io.EOF)", len(got), roff, len(model), r.Value, r.Err, len(want))
						}
					} else if r.Err != nil || r.Value != len(got) {
						t.Fatalf("ReadAt: (%d, %v)", r.Value, r.Err)
					}
					if !bytes.Equal(got[:r.Value], want) {
						t.Fatalf("ReadAt at %d: wrong bytes", roff)
					}
				}
				// Empty reads and writes, and offsets past what a file can hold, as os.
				if r := run(t, rt, f.ReadAt(nil, 0)); r.Value != 0 || r.Err != nil {
					t.Fatalf("ReadAt(nil, 0): %+v, want (0, nil)", r)
				}
				if r := run(t, rt, f.WriteAt(nil, 3)); r.Value != 0 || r.Err != nil {
					t.Fatalf("WriteAt(nil, 3): %+v, want (0, nil)", r)
				}
				huge := int64(math.MaxInt64 - 10)
				_, osErr := f.OSFile().ReadAt(make([]byte, 100), huge)
				if r := run(t, rt, f.ReadAt(make([]byte, 100), huge)); r.Value != 0 || (r.Err == nil) != (osErr == nil) {
					t.Fatalf("ReadAt at MaxInt64-10: %+v; os.File.ReadAt: %v", r, osErr)
				}
				if r := run(t, rt, f.ReadAt(make([]byte, 10), 1)); r.Err != nil || r.Value != 10 {
					t.Fatalf("ReadAt after a refused offset: %+v", r)
				}
				// Stream read of everything from the start.
				if pos := must(t, rt, f.SeekTo(0, io.SeekStart)); pos != 0 {
					t.Fatalf("SeekTo: %d", pos)
				}
				all := must(t, rt, readAll(f))
				if !bytes.Equal(all, model) {
					t.Fatalf("stream read: %d bytes, want %d (or wrong bytes)", len(all), len(model))
				}
				// The stream position is where the reads reached, for os users too.
				if pos, _ := f.OSFile().Seek(0, io.SeekCurrent); pos != int64(len(model)) {
					t.Fatalf("OSFile position %d after reading %d bytes", pos, len(model))
				}
				// Errors in os's form: a write on a read-only file.
				ro := must(t, rt, Open(name))
				_, werr := run(t, rt, ro.WriteAt([]byte("x"), 0)).Get()
				var pe *fs.PathError
				if !errors.As(werr, &pe) || !errors.Is(werr, syscall.EBADF) || pe.Path != name {
					t.Fatalf("WriteAt on a read-only file: %v (%T), want *fs.PathError with EBADF", werr, werr)
				}
				must(t, rt, ro.Close())
				_, rerr := run(t, rt, ro.ReadAt(make([]byte, 4), 0)).Get()
				if !errors.As(rerr, &pe) || !errors.Is(rerr, fs.ErrClosed) {
					t.Fatalf("ReadAt after Close: %v, want *fs.PathError with fs.ErrClosed", rerr)
				}
				must(t, rt, f.Close())
				if be == BackendIOUring && (mode == "ring" || mode == "auto") {
					if rf := fileRing(&Context{rt: rt}); rf != nil && ringOps(rf) == 0 {
						t.Fatalf("mode %s on io_uring: no operation went through the ring", mode)
					}
				}
			})
		}
	}
}

// TestFileRingDropInFlight drops ReadAt futures at every await point (before the first
// poll, with the read in flight, after it completed but before the result was taken)
// many times with random timing, on a file of 'A's. The caller's buffer, filled with
// 'z', must never see an 'A' after Drop returned: the kernel writes only into memory
// the driver owns. Afterwards every operation has completed and gone back to the table.
func TestFileRingDropInFlight(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt, rf := ringRT(t)
	name := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(name, bytes.Repeat([]byte("A"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	var woken atomic.Int64
	cx := NewContext(rt, WakerFunc(func() { woken.Add(1) }))
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	deadline := time.Now().Add(60 * time.Second)
	inFlight := 0
	for i := range iters {
		p := bytes.Repeat([]byte("z"), 1+rng.IntN(64<<10))
		fut := f.ReadAt(p, int64(rng.IntN(1<<20-len(p))))
		polls := rng.IntN(4)
		for range polls {
			if r, ok := fut.Poll(cx); ok {
				if r.Err != nil || r.Value != len(p) {
					t.Fatalf("iteration %d: ReadAt (%d, %v)", i, r.Value, r.Err)
				}
				break
			}
			for range rng.IntN(3) {
				runtime.Gosched()
			}
		}
		completed := !bytes.ContainsRune(p, 'z')
		if pf := fut.(*positioned); pf.state == posRing {
			pf.ring.mu.Lock()
			if pf.ring.state == ringPending {
				inFlight++
			}
			pf.ring.mu.Unlock()
		}
		Drop(fut)
		if completed {
			continue
		}
		// p must stay 'z' from now on, whatever the kernel does with the operation.
		for range rng.IntN(20) {
			runtime.Gosched()
		}
		if j := bytes.IndexByte(p, 'A'); j >= 0 {
			t.Fatalf("iteration %d: the caller's buffer was written at %d after Drop", i, j)
		}
		if time.Now().After(deadline) {
			t.Fatalf("watchdog: %d iterations in 60s", i)
		}
	}
	t.Logf("%d of %d reads dropped while in flight", inFlight, iters)
	// Every record comes back once its completion arrived.
	waitFor(t, "every ring operation to complete", func() bool {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		return len(rf.free) == len(rf.ops)
	})
	must(t, rt, f.Close())
}

// TestFileRingDropPending drops a read that cannot complete (the ring waits on an empty
// pipe): Drop must return at once, the cancellation must end the operation and free
// its record, and the pipe's next byte must not have been taken by it.
func TestFileRingDropPending(t *testing.T) {
	rt, rf := ringRT(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if err := syscall.SetNonblock(int(pr.Fd()), false); err != nil { // the ring waits
		t.Fatal(err)
	}
	var refs fileRefs
	op, err := rf.start(rt.io, &refs, int(pr.Fd()), false, false, nil, 8, -1)
	if err != nil {
		t.Fatal(err)
	}
	cx := NewContext(rt, WakerFunc(func() {}))
	if _, _, done := op.poll(cx); done {
		t.Fatal("a read of an empty pipe completed")
	}
	op.drop()
	waitFor(t, "the dropped read's record to be freed", func() bool {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		return len(rf.free) == len(rf.ops)
	})
	if refs.total() != 0 {
		t.Fatalf("file references after the cancelled read: %d", refs.total())
	}
	pw.Write([]byte{7})
	var b [1]byte
	if n, _ := pr.Read(b[:]); n != 1 || b[0] != 7 {
		t.Fatalf("pipe byte after the cancelled read: %d %v", n, b)
	}
}

// TestFileRingCloseWaitsForOperations starts many ReadAt futures as tasks and closes
// the file at once: Close waits for those on the ring, and those that start after it
// fail with fs.ErrClosed, never with a read of another file that reused the number.
func TestFileRingCloseWaitsForOperations(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt, _ := ringRT(t)
	name := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(name, bytes.Repeat([]byte("A"), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		f := must(t, rt, Open(name))
		hs := make([]JoinHandle[Result[int]], 32)
		for i := range hs {
			p := make([]byte, 4096)
			hs[i] = Spawn(rt, Async(func(co *Co) Result[int] {
				r := Await(co, f.ReadAt(p, int64(i*512)))
				if r.Err == nil && !bytes.Equal(p, bytes.Repeat([]byte("A"), 4096)) {
					r.Err = errors.New("read something else than the file's bytes")
				}
				return r
			}))
		}
		must(t, rt, f.Close())
		// Open another file, which may get the same descriptor number.
		other := filepath.Join(t.TempDir(), "b")
		os.WriteFile(other, bytes.Repeat([]byte("B"), 1<<16), 0o644)
		g, _ := os.Open(other)
		for i, h := range hs {
			r, err := waitHandle(t, h)
			if err != nil {
				t.Fatal(err)
			}
			if r.Err != nil && !errors.Is(r.Err, fs.ErrClosed) {
				t.Fatalf("round %d read %d: %v", round, i, r.Err)
			}
		}
		g.Close()
	}
}

// TestFileRingShutdownWithOperation closes the runtime while a ring read waits: the
// BlockOn returns ErrRuntimeClosed and nothing hangs.
func TestFileRingShutdownWithOperation(t *testing.T) {
	rt, rf := ringRT(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	syscall.SetNonblock(int(pr.Fd()), false)
	var refs fileRefs
	op, err := rf.start(rt.io, &refs, int(pr.Fd()), false, false, nil, 8, -1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, PollFn(func(cx *Context) (int, bool) {
			n, _, ok := op.poll(cx)
			return n, ok
		}))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	rt.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRuntimeClosed) {
			_, rerr, ok := op.poll(NewContext(nil, WakerFunc(func() {})))
			if !ok || !errors.Is(rerr, errDriverClosed) {
				t.Fatalf("BlockOn after shutdown: %v (op %v %v)", err, ok, rerr)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("BlockOn of a ring read did not return after the runtime closed")
	}
	if _, rerr, ok := op.poll(NewContext(nil, WakerFunc(func() {}))); !ok || !errors.Is(rerr, errDriverClosed) {
		t.Fatalf("ring read after shutdown: done %v, %v; want errDriverClosed", ok, rerr)
	}
}

// TestFileRingHostileWakers completes ring reads whose waker panics or calls
// runtime.Goexit (hand-made Contexts): the driver's worker survives both (the panic is
// reported, the goroutine replaced), the future still completes with the right bytes
// when polled again, and the runtime goes on serving ring reads.
func TestFileRingHostileWakers(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt, _ := ringRT(t)
	name := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(name, bytes.Repeat([]byte("A"), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	for _, hostile := range []func(){
		func() { panic("waker panic") },
		func() { runtime.Goexit() },
	} {
		for range 20 {
			var fired atomic.Bool
			cx := NewContext(rt, WakerFunc(func() {
				if fired.CompareAndSwap(false, true) {
					hostile()
				}
			}))
			p := make([]byte, 4096)
			fut := f.ReadAt(p, 100)
			if r, ok := fut.Poll(cx); ok {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				continue
			}
			waitFor(t, "the hostile waker to be called", fired.Load)
			r, ok := fut.Poll(cx)
			if !ok || r.Err != nil || r.Value != len(p) || !bytes.Equal(p, bytes.Repeat([]byte("A"), 4096)) {
				t.Fatalf("after the hostile wake: ok %v, %v", ok, r)
			}
		}
		got := make([]byte, 10)
		if r := must(t, rt, f.ReadAt(got, 0)); r != 10 || string(got) != "AAAAAAAAAA" {
			t.Fatalf("runtime after hostile wakers: %d %q", r, got)
		}
	}
	must(t, rt, f.Close())
}

// TestFileRingTwoRuntimes reads and writes one File from tasks of two io_uring
// runtimes at once: each operation belongs to the ring of the runtime that polls it,
// and Close waits for both rings' operations.
func TestFileRingTwoRuntimes(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt1, _ := ringRT(t)
	rt2, _ := ringRT(t)
	name := filepath.Join(t.TempDir(), "a")
	f := must(t, rt1, Create(name))
	const blocks = 64
	var hs []JoinHandle[error]
	for i := range blocks {
		rt := rt1
		if i%2 == 1 {
			rt = rt2
		}
		hs = append(hs, Spawn(rt, Async(func(co *Co) error {
			want := bytes.Repeat([]byte{byte(i)}, 1000)
			if r := Await(co, f.WriteAt(want, int64(i)*1000)); r.Err != nil {
				return r.Err
			}
			got := make([]byte, 1000)
			if r := Await(co, f.ReadAt(got, int64(i)*1000)); r.Err != nil {
				return r.Err
			}
			if !bytes.Equal(got, want) {
				return errors.New("read back other bytes")
			}
			return nil
		})))
	}
	for i, h := range hs {
		if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
			t.Fatalf("block %d: %v %v", i, err, jerr)
		}
	}
	must(t, rt2, f.Close())
}

// TestFileRingStreamPosition mixes stream writes on the ring (which carry the position
// themselves) with stream reads on the worker and the pool, seeks and os calls: every
// one must see the position the previous ones left.
func TestFileRingStreamPosition(t *testing.T) {
	for _, mode := range []string{"auto", "ring", "nowait", "pool"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			name := filepath.Join(t.TempDir(), "f")
			f := must(t, rt, OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644))
			must(t, rt, writeAll(f, []byte("hello")))
			must(t, rt, f.Flush())
			// At the end: the next read finds nothing.
			if got := must(t, rt, readAll(f)); len(got) != 0 {
				t.Fatalf("read after writing %q: %q, want nothing (the position is at the end)", "hello", got)
			}
			must(t, rt, writeAll(f, []byte(" world")))
			must(t, rt, f.Flush())
			if pos, _ := f.OSFile().Seek(0, io.SeekCurrent); pos != 11 {
				t.Fatalf("os position after 11 bytes written: %d", pos)
			}
			must(t, rt, f.SeekTo(6, io.SeekStart))
			if got := must(t, rt, readAll(f)); string(got) != "world" {
				t.Fatalf("read after SeekTo(6): %q", got)
			}
			must(t, rt, f.SeekTo(0, io.SeekStart))
			must(t, rt, writeAll(f, []byte("J")))
			must(t, rt, f.Flush())
			p := make([]byte, 4)
			if n := must(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) })); string(p[:n]) != "ello" {
				t.Fatalf("read after overwriting the first byte: %q", p[:n])
			}
			must(t, rt, f.Close())
			if b, _ := os.ReadFile(name); string(b) != "Jello world" {
				t.Fatalf("file: %q", b)
			}
		})
	}
}

// TestAwaitReadAtRingNoCopyAlloc is the regression test for AwaitReadAt's read on the
// ring allocating a buffer the size of the read for every read (the record's bytes were
// copied into a new slice, then into p): 64 KiB reads on the ring must allocate only
// the future and its bookkeeping, not the bytes. It also checks the bytes.
func TestAwaitReadAtRingNoCopyAlloc(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt, _ := ringRT(t)
	name := filepath.Join(t.TempDir(), "a")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	const reads, size = 200, 64 << 10
	allocated := run(t, rt, Async(func(co *Co) uint64 {
		p := make([]byte, size)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i := range reads {
			off := int64(i*4099) % int64(len(data)-size)
			if n, err := f.AwaitReadAt(co, p, off); err != nil || n != size {
				t.Errorf("read %d: (%d, %v)", i, n, err)
				return 0
			}
			if !bytes.Equal(p, data[off:off+size]) {
				t.Errorf("read %d at %d: wrong bytes", i, off)
				return 0
			}
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}))
	if perRead := allocated / reads; perRead >= size/4 {
		t.Errorf("AwaitReadAt on the ring allocated %d bytes per %d-byte read", perRead, size)
	}
}
