//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// h11fPendingRead starts a ring read of up to n bytes on an empty pipe in blocking mode:
// it stays pending until something is written.
func h11fPendingRead(t *testing.T, rt *Runtime, rf *ringFiles, refs *fileRefs, n int) (*ringOp, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	fd := int(pr.Fd()) // Fd puts the descriptor in blocking mode: the ring waits on it
	op, err := rf.start(rt.io, refs, fd, false, false, nil, n, -1)
	if err != nil {
		t.Fatal(err)
	}
	return op, pw
}

// TestHostile11FileprocRingSeveralWaiters: one ring operation awaited by several tasks
// (a File's stream read that a Flush, a Stat and a Close settle, each from its own
// task): every distinct waiter is woken once when it completes, a waiter that polls
// twice is kept once, and each sees the same outcome.
func TestHostile11FileprocRingSeveralWaiters(t *testing.T) {
	rt, rf := ringRT(t)
	var refs fileRefs
	op, pw := h11fPendingRead(t, rt, rf, &refs, 8)
	var wakes [4]atomic.Int32
	cxs := make([]*Context, len(wakes))
	for i := range cxs {
		cxs[i] = NewContext(rt, WakerFunc(func() { wakes[i].Add(1) }))
	}
	for _, i := range []int{0, 1, 2, 1, 3, 0, 3, 2} {
		if _, _, done := op.poll(cxs[i]); done {
			t.Fatal("a read of an empty pipe completed")
		}
	}
	if refs.total() != 1 {
		t.Fatalf("references while the read is in flight: %d, want 1", refs.total())
	}
	pw.Write([]byte("hi"))
	waitFor(t, "every waiter to be woken", func() bool {
		for i := range wakes {
			if wakes[i].Load() == 0 {
				return false
			}
		}
		return true
	})
	for i := range wakes {
		if n := wakes[i].Load(); n != 1 {
			t.Errorf("waiter %d woken %d times, want once", i, n)
		}
		n, err, done := op.poll(cxs[i])
		if !done || err != nil || n != 2 || string(op.bytes()) != "hi" {
			t.Errorf("waiter %d: (%d, %v, %v) %q", i, n, err, done, op.bytes())
		}
	}
	if refs.total() != 0 {
		t.Fatalf("references after the completion: %d", refs.total())
	}
	op.release()
	op.mu.Lock()
	others := len(op.others)
	op.mu.Unlock()
	if others != 0 {
		t.Fatalf("a released record keeps %d waiters", others)
	}
}

// TestHostile11FileprocRingRecordReuse: a record's generation wraps past zero (a token
// of generation 0 would look like no record's), a read's huge buffer is not kept by a
// record going back to the table, and the reused record still completes its reads.
func TestHostile11FileprocRingRecordReuse(t *testing.T) {
	rt, rf := ringRT(t)
	var refs fileRefs
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	fd := int(pr.Fd())
	read := func(n int, payload string) *ringOp {
		t.Helper()
		pw.Write([]byte(payload))
		op, err := rf.start(rt.io, &refs, fd, false, false, nil, n, -1)
		if err != nil {
			t.Fatal(err)
		}
		woken := make(chan struct{}, 1)
		cx := NewContext(rt, WakerFunc(func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		}))
		deadline := time.After(20 * time.Second)
		for {
			got, err, done := op.poll(cx)
			if done {
				if err != nil || string(op.bytes()) != payload {
					t.Fatalf("read (%d, %v) %q, want %q", got, err, op.bytes(), payload)
				}
				return op
			}
			select {
			case <-woken:
			case <-deadline:
				t.Fatal("a ring read of a pipe with data did not complete")
			}
		}
	}
	op := read(ringMaxKeep+1, "big")
	rf.mu.Lock()
	op.gen = ^uint32(0) // the next put wraps it
	rf.mu.Unlock()
	op.release()
	rf.mu.Lock()
	gen, mem := op.gen, op.mem
	rf.mu.Unlock()
	if gen == 0 {
		t.Fatal("a record's generation wrapped to 0")
	}
	if mem != nil {
		t.Fatalf("a record back in the table keeps a %d-byte buffer (the cap is %d)", cap(mem), ringMaxKeep)
	}
	again := read(16, "small")
	if again != op {
		t.Log("the freed record was not the one reused") // the table is free to pick
	}
	again.release()
	if refs.total() != 0 {
		t.Fatalf("references left: %d", refs.total())
	}
	// Stale and foreign events are ignored.
	if buf := rt.io.completeOp(poller.Event{Op: poller.OpReady, Token: again.token()}, nil); len(buf) != 0 {
		t.Fatalf("a readiness event woke %d waiters", len(buf))
	}
	if buf := rt.io.completeOp(poller.Event{Op: poller.OpRead, Token: uint64(gen+7)<<32 | uint64(again.idx), Res: 1}, nil); len(buf) != 0 {
		t.Fatalf("an event of a stale generation woke %d waiters", len(buf))
	}
	if fileRing(nil) != nil || fileRing(NewContext(nil, Waker{})) != nil {
		t.Fatal("fileRing without a runtime")
	}
	if fd, _, _, _, _ := ringTarget(nil); fd != -1 {
		t.Fatalf("ringTarget(nil) fd = %d", fd)
	}
	if pathErr("read", "x", nil) != nil {
		t.Fatal("pathErr of no error")
	}
}

// TestHostile11FileprocRingRuntimeCloses: the runtime closes while a ring read is
// awaited by several waiters: every waiter is woken, each sees the operation failed
// (not a hang, not bytes), the file's reference count goes back to zero (a File's
// Close would wait for it for ever otherwise), and an operation started afterwards is
// refused without holding a reference.
func TestHostile11FileprocRingRuntimeCloses(t *testing.T) {
	rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	rf := fileRing(&Context{rt: rt})
	if rf == nil {
		rt.Close()
		t.Skip("no ring file operations here")
	}
	var refs fileRefs
	op, _ := h11fPendingRead(t, rt, rf, &refs, 8)
	var wakes [3]atomic.Int32
	for i := range wakes {
		op.poll(NewContext(rt, WakerFunc(func() { wakes[i].Add(1) })))
	}
	hostile3Watch(t, 20*time.Second, "the runtime's Close with a ring read pending", func() { rt.Close() })
	waitFor(t, "the waiters of an operation the closed ring dropped", func() bool {
		return wakes[0].Load() > 0 && wakes[1].Load() > 0 && wakes[2].Load() > 0
	})
	if _, err, done := op.poll(NewContext(nil, Waker{})); !done || !errors.Is(err, errDriverClosed) {
		t.Fatalf("the read after the ring closed: done %v, %v", done, err)
	}
	if refs.total() != 0 {
		t.Fatalf("references after the ring closed: %d", refs.total())
	}
	if _, err := rf.start(rt.io, &refs, 0, false, false, nil, 8, -1); !errors.Is(err, errDriverClosed) {
		t.Fatalf("start on a closed ring: %v", err)
	}
	if refs.total() != 0 {
		t.Fatalf("references after a refused start: %d", refs.total())
	}
}

// h11fRandom is n random bytes (fixed seed): any 16 of them in a row occur once.
func h11fRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// h11fLocate finds each chunk in data and checks that together they cover data exactly
// once (chunks under 16 bytes are counted, not placed). It returns what is wrong.
func h11fLocate(data []byte, chunks [][]byte, wholeFile bool) string {
	covered := make([]bool, len(data))
	total := 0
	for _, c := range chunks {
		total += len(c)
		if len(c) < 16 {
			continue
		}
		i := bytes.Index(data, c)
		if i < 0 {
			return "a read returned bytes that are not the file's"
		}
		for j := i; j < i+len(c); j++ {
			if covered[j] {
				return "two reads returned the same bytes of the file"
			}
			covered[j] = true
		}
	}
	if wholeFile && total != len(data) {
		return "the reads together returned " + itoa(total) + " bytes of a " + itoa(len(data)) + "-byte file"
	}
	if total > len(data) {
		return "the reads returned more bytes than the file has"
	}
	return ""
}

// TestHostile11FileprocStreamSharedByTasks: several tasks read one File through the
// stream at once while others keep calling Stat and Flush, which settle the read in
// flight on their behalf: the reads run one at a time and together deliver the file
// exactly once (no byte lost or given twice), whatever path serves them. Then the same
// with Close coming in the middle: every read returns the file's own bytes or fails as
// a read of a closed file, even once another file has taken the descriptor number.
func TestHostile11FileprocStreamSharedByTasks(t *testing.T) {
	data := h11fRandom(256<<10, 11)
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		name := filepath.Join(t.TempDir(), "f")
		os.WriteFile(name, data, 0o644)
		for _, closeMidway := range []bool{false, true} {
			f := must(t, rt, Open(name))
			var mu sync.Mutex
			var chunks [][]byte
			var readErrs []error
			var readers []JoinHandle[struct{}]
			for range 6 {
				readers = append(readers, Spawn(rt, Async(func(co *Co) struct{} {
					p := make([]byte, 3000)
					for {
						r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
						mu.Lock()
						if r.Value > 0 {
							chunks = append(chunks, append([]byte(nil), p[:r.Value]...))
						}
						if r.Err != nil {
							if r.Err != io.EOF {
								readErrs = append(readErrs, r.Err)
							}
							mu.Unlock()
							return struct{}{}
						}
						mu.Unlock()
					}
				})))
			}
			var stop atomic.Bool
			var others []JoinHandle[error]
			for i := range 3 {
				others = append(others, Spawn(rt, Async(func(co *Co) error {
					for !stop.Load() {
						var err error
						if i%2 == 0 {
							err = Await(co, f.Stat()).Err
						} else {
							err = Await(co, f.Flush()).Err
						}
						if err != nil && !(closeMidway && errors.Is(err, fs.ErrClosed)) {
							return err
						}
						Await(co, YieldNow())
					}
					return nil
				})))
			}
			var g *os.File
			if closeMidway {
				cr := run(t, rt, Async(func(co *Co) Result[struct{}] {
					Await(co, YieldNow())
					return Await(co, f.Close())
				}))
				if cr.Err != nil {
					t.Fatalf("Close among the readers: %v", cr.Err)
				}
				// The descriptor number is free: another file may take it now.
				other := filepath.Join(t.TempDir(), "other")
				os.WriteFile(other, bytes.Repeat([]byte{0xEE}, 64<<10), 0o644)
				g, _ = os.Open(other)
			}
			for _, h := range readers {
				waitHandleFor(t, h, "a reader sharing the File")
			}
			stop.Store(true)
			for _, h := range others {
				if err, jerr := waitHandleFor(t, h, "a task calling Stat or Flush"); err != nil || jerr != nil {
					t.Errorf("Stat/Flush beside the readers: %v %v", err, jerr)
				}
			}
			if msg := h11fLocate(data, chunks, !closeMidway); msg != "" {
				t.Fatalf("close midway %v: %s", closeMidway, msg)
			}
			for _, err := range readErrs {
				if !closeMidway {
					t.Errorf("a read failed: %v", err)
				} else if e := h9CheckClosedRead(err, name); e != nil {
					t.Error(e)
				}
			}
			if closeMidway {
				g.Close()
			} else {
				must(t, rt, f.Close())
			}
		}
	})
}

// TestHostile11FileprocFileOutlivesRuntime: a File's runtime closes while its tasks
// have stream writes (write-behind) and ReadAts in flight, on the ring or queued on a
// one-goroutine blocking pool; a second runtime then takes the File over. A write the
// first runtime did not finish is redone there or reported (Flush fails), never lost in
// silence; the ReadAts in flight, cancelled with their tasks, leave no reference
// behind (Close would wait for ever), and the bytes are right.
func TestHostile11FileprocFileOutlivesRuntime(t *testing.T) {
	const size, chunk = 128 << 10, 16 << 10
	old, fresh := h11fRandom(size, 1), h11fRandom(size, 2)
	for _, m := range []struct {
		be   Backend
		mode string
	}{{BackendIOUring, "ring"}, {BackendIOUring, "auto"}, {BackendEpoll, "pool"}} {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt2, err := New(Config{Workers: 1, Backend: BackendEpoll})
			if err != nil {
				t.Fatal(err)
			}
			defer rt2.Close()
			name := filepath.Join(t.TempDir(), "f")
			for round := range 25 {
				os.WriteFile(name, old, 0o644)
				rt1, err := New(Config{Workers: 2, Backend: m.be, MaxBlockingThreads: 1})
				if err != nil {
					t.Skipf("%v: %v", m.be, err)
				}
				f := must(t, rt1, OpenFile(name, os.O_RDWR, 0))
				var accepted atomic.Int64
				writer := Spawn(rt1, Async(func(co *Co) error {
					for off := 0; off < size; off += chunk {
						r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollWrite(cx, fresh[off:off+chunk]) }))
						if r.Err != nil {
							return r.Err
						}
						if r.Value != chunk {
							return errors.New("a short write accepted")
						}
						accepted.Add(1)
					}
					return Await(co, f.Flush()).Err
				}))
				var bad atomic.Value
				for i := range 8 {
					Spawn(rt1, Async(func(co *Co) struct{} {
						p := make([]byte, 4096)
						for j := 0; ; j++ {
							off := (i*7 + j*13) % (size / 4096) * 4096
							r := Await(co, f.ReadAt(p, int64(off)))
							if r.Err != nil {
								return struct{}{}
							}
							for k := range p {
								if p[k] != old[off+k] && p[k] != fresh[off+k] {
									bad.Store("a ReadAt returned bytes that were never in the file")
								}
							}
						}
					})).Detach()
				}
				time.Sleep(time.Duration(round%5) * 200 * time.Microsecond)
				hostile3Watch(t, 20*time.Second, "the first runtime's Close", func() { rt1.Close() })
				if s, ok := bad.Load().(string); ok {
					t.Fatal(s)
				}
				werr, jerr := writer.Wait()
				flushErr := run(t, rt2, f.Flush()).Err
				n := int(accepted.Load())
				got := make([]byte, size)
				if r := run(t, rt2, f.ReadAt(got, 0)); r.Err != nil || r.Value != size {
					t.Fatalf("round %d: ReadAt on the second runtime: %v", round, r)
				}
				// Every chunk before the last one accepted was written: the write after it
				// was only accepted once it had succeeded.
				for c := 0; c < n-1; c++ {
					if !bytes.Equal(got[c*chunk:(c+1)*chunk], fresh[c*chunk:(c+1)*chunk]) {
						t.Fatalf("round %d: chunk %d of %d accepted is not in the file", round, c, n)
					}
				}
				if n > 0 {
					last := got[(n-1)*chunk : n*chunk]
					switch {
					case bytes.Equal(last, fresh[(n-1)*chunk:n*chunk]):
					case flushErr != nil || werr != nil:
						// Reported: not lost in silence.
					default:
						t.Fatalf("round %d: the last write accepted (chunk %d) is not in the file, and Flush on the second runtime reported nothing (writer: %v %v)", round, n-1, werr, jerr)
					}
				}
				for c := n; c < size/chunk; c++ {
					if !bytes.Equal(got[c*chunk:(c+1)*chunk], old[c*chunk:(c+1)*chunk]) {
						t.Fatalf("round %d: chunk %d, never accepted, was written", round, c)
					}
				}
				hostile3Watch(t, 20*time.Second, "Close of the File on the second runtime", func() {
					if r := run(t, rt2, f.Close()); r.Err != nil {
						t.Errorf("round %d: Close on the second runtime: %v", round, r.Err)
					}
				})
			}
		})
	}
}

// TestHostile11FileprocClosedRuntimeContext: a File polled with a hand-made Context of
// a runtime that has closed (its blocking pool refuses work): a read fails with
// ErrCancelled and consumes nothing, a write is accepted and then reported lost at the
// next Flush, and the File works normally on a live runtime afterwards, from the
// position it had.
func TestHostile11FileprocClosedRuntimeContext(t *testing.T) {
	for _, mode := range []string{"pool", "ring", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			live := fileRT(t)
			dead, err := New(Config{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			dead.Close()
			name := filepath.Join(t.TempDir(), "f")
			os.WriteFile(name, []byte("0123456789"), 0o644)
			g, _ := os.OpenFile(name, os.O_RDWR, 0)
			f := NewFile(g)
			cx := NewContext(dead, WakerFunc(func() {}))
			p := make([]byte, 4)
			var r Result[int]
			ok := false
			for range 1000 {
				if r, ok = f.PollRead(cx, p); ok {
					break
				}
			}
			switch {
			case !ok:
				t.Fatal("a read polled on a closed runtime's Context never completed")
			case r.Err == nil && string(p[:r.Value]) != "0123"[:r.Value]:
				t.Fatalf("read on a closed runtime's Context: %q", p[:r.Value])
			case r.Err != nil && !errors.Is(r.Err, ErrCancelled):
				t.Fatalf("read on a closed runtime's Context: %v, want ErrCancelled", r.Err)
			}
			consumed := 0
			if r.Err == nil {
				consumed = r.Value // served on the spot (the page cache): fine too
			}
			rest := must(t, live, readAll(f))
			if string(rest) != "0123456789"[consumed:] {
				t.Fatalf("after a read on a closed runtime (%d bytes taken), the next read got %q", consumed, rest)
			}
			must(t, live, f.SeekTo(0, io.SeekStart))
			w, ok := f.PollWrite(cx, []byte("zz"))
			if !ok || w.Err != nil || w.Value != 2 {
				t.Fatalf("write on a closed runtime's Context: %v %v", ok, w)
			}
			flushErr := run(t, live, f.Flush()).Err
			b, _ := os.ReadFile(name)
			switch {
			case flushErr == nil && string(b) != "zz23456789":
				t.Fatalf("Flush reported success, the file holds %q", b)
			case flushErr != nil && string(b) != "0123456789":
				t.Fatalf("Flush reported %v, the file holds %q", flushErr, b)
			}
			if err := h11fWriteFlush(t, live, f, []byte("Q")); err != nil {
				t.Fatalf("write on the live runtime after: %v", err)
			}
			must(t, live, f.Close())
			want := "Q123456789" // the lost write left the position at 0
			if flushErr == nil {
				want = "zzQ3456789"
			}
			if b, _ := os.ReadFile(name); string(b) != want {
				t.Fatalf("file at the end: %q, want %q (Flush reported %v)", b, want, flushErr)
			}
		})
	}
}

// TestHostile11FileprocStreamReadAcrossRuntimeClose: a task reads a File through the
// stream on one runtime, which closes in the middle (the read in flight on its ring, or
// queued on its pool and cancelled); a second runtime reads on. The bytes read on the
// two runtimes together are the file, in order, each once: a read the first runtime
// did not finish is redone, or reported once (ErrCancelled: it never ran) and the next
// read goes on from where the reader was.
func TestHostile11FileprocStreamReadAcrossRuntimeClose(t *testing.T) {
	data := h11fRandom(512<<10, 5)
	for _, m := range []struct {
		be   Backend
		mode string
	}{{BackendIOUring, "ring"}, {BackendIOUring, "auto"}, {BackendEpoll, "pool"}} {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt2 := fileRT(t)
			name := filepath.Join(t.TempDir(), "f")
			os.WriteFile(name, data, 0o644)
			for round := range 20 {
				rt1, err := New(Config{Workers: 1, Backend: m.be, MaxBlockingThreads: 1})
				if err != nil {
					t.Skipf("%v: %v", m.be, err)
				}
				f := must(t, rt1, Open(name))
				var mu sync.Mutex
				var first []byte
				Spawn(rt1, Async(func(co *Co) struct{} {
					p := make([]byte, 1000+round*37)
					for {
						r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
						mu.Lock()
						first = append(first, p[:r.Value]...)
						mu.Unlock()
						if r.Err != nil {
							return struct{}{}
						}
					}
				})).Detach()
				time.Sleep(time.Duration(round%4) * 100 * time.Microsecond)
				hostile3Watch(t, 20*time.Second, "the first runtime's Close", func() { rt1.Close() })
				mu.Lock()
				got := append([]byte(nil), first...)
				mu.Unlock()
				cancelled := 0
				p := make([]byte, 4096)
				for {
					r := h11fRead(t, rt2, f, p)
					got = append(got, p[:r.Value]...)
					if r.Err == io.EOF {
						break
					}
					if errors.Is(r.Err, ErrCancelled) && cancelled == 0 {
						cancelled++
						continue
					}
					if r.Err != nil {
						t.Fatalf("round %d: read on the second runtime: %v", round, r.Err)
					}
				}
				if !bytes.Equal(got, data) {
					i := 0
					for i < len(got) && i < len(data) && got[i] == data[i] {
						i++
					}
					t.Fatalf("round %d: read %d bytes across the two runtimes, want the %d of the file (first difference at %d)", round, len(got), len(data), i)
				}
				must(t, rt2, f.Close())
			}
		})
	}
}
