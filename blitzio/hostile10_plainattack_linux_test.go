//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeWorkerCx returns a worker's Context on rt for calling readNoWait directly from the
// test goroutine as a worker would (its plainReads count the plain reads it made). The
// worker is not one of rt's: nothing else uses it.
func fakeWorkerCx(rt *Runtime) *Context {
	return &newWorker(rt, 0).cx
}

// earnTrust makes cached reads of f through readNoWait (with cx) until f is trusted.
func earnTrust(t *testing.T, cx *Context, f *File, size int) {
	t.Helper()
	p := make([]byte, 4096)
	for i := 0; !f.b.nw.trusted(); i++ {
		if i > 4*plainTrustHits<<f.b.nw.demotions.Load() {
			t.Fatalf("not trusted after %d cached reads (credit %d, demotions %d)", i, f.b.nw.credit.Load(), f.b.nw.demotions.Load())
		}
		off := int64(i*4096) % int64(size-len(p))
		if n, ok := readNoWait(cx, f.b, p, off); !ok || n != len(p) {
			t.Fatalf("cached read %d at %d: n=%d ok=%v", i, off, n, ok)
		}
	}
}

// fadviseRange drops [off, off+n) of f's pages from the page cache.
func fadviseRange(t *testing.T, f *os.File, off, n int64) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		if err := unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED); err != nil {
			t.Skipf("fadvise: %v", err)
		}
	})
}

// randomReader opens name for reading with POSIX_FADV_RANDOM: its reads bring only the
// pages they ask for into the page cache (no read-ahead), in folios of one page.
func randomReader(t *testing.T, name string) *os.File {
	t.Helper()
	g, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	rc, err := g.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		if err := unix.Fadvise(int(fd), 0, 0, unix.FADV_RANDOM); err != nil {
			t.Skipf("fadvise: %v", err)
		}
	})
	return g
}

// cacheOnlyFirstPage leaves only the first page of rnd's file in the page cache.
func cacheOnlyFirstPage(t *testing.T, rnd *os.File) {
	t.Helper()
	fadviseRange(t, rnd, 0, 0)
	if _, err := rnd.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
}

// pageCached reports whether the page at off of rnd's file is in the page cache: a
// one-byte RWF_NOWAIT read, which fails with EAGAIN instead of reading a missing page
// (and, rnd having POSIX_FADV_RANDOM, starts no read-ahead).
func pageCached(t *testing.T, rnd *os.File, off int64) bool {
	t.Helper()
	var cached bool
	rc, err := rnd.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		n, err := unix.Preadv2(int(fd), [][]byte{make([]byte, 1)}, off, unix.RWF_NOWAIT)
		cached = err == nil && n == 1
	})
	return cached
}

// sameOutcome reports whether two ReadAt outcomes are the same: count, bytes, and error
// (same type and text, so a *fs.PathError with the same Op, Path and errno).
func sameOutcome(n1 int, err1 error, p1 []byte, n2 int, err2 error, p2 []byte) bool {
	if n1 != n2 || !bytes.Equal(p1[:n1], p2[:n2]) {
		return false
	}
	if (err1 == nil) != (err2 == nil) {
		return false
	}
	return err1 == nil || fmt.Sprintf("%T %v", err1, err1) == fmt.Sprintf("%T %v", err2, err2)
}

// TestHostile10PlainPartialReadIsNotAHit: preadv2(RWF_NOWAIT) returns a short count when
// only the front of the range is in the page cache. That read did not find its data in
// memory (the rest was not there), so it must not count toward trust: a file whose
// reads keep finding only their first page cached must never be trusted with plain
// preads, which would wait for the disk on the worker.
func TestHostile10PlainPartialReadIsNotAHit(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 1 << 20
	f, data, name := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	if err := f.OSFile().Sync(); err != nil {
		t.Fatal(err)
	}
	rnd := randomReader(t, name)
	p := make([]byte, 8192)
	partial := 0
	for i := 0; i < 8*plainTrustHits && partial < 2*plainTrustHits; i++ {
		if f.b.nw.trusted() {
			t.Fatalf("trusted after %d reads that each found only their first page cached (credit %d)", partial, f.b.nw.credit.Load())
		}
		cacheOnlyFirstPage(t, rnd)
		if pageCached(t, rnd, 4096) {
			// FADV_DONTNEED is best effort: a page it could not drop (busy on a
			// loaded machine) would make this read a full hit, rightly counted. CI
			// once saw 16 of those in a row, and the trust they earned.
			continue
		}
		n, ok := readNoWait(nil, f.b, p, 0)
		if !ok {
			continue
		}
		if !bytes.Equal(p[:n], data[:n]) {
			t.Fatalf("read %d: wrong bytes", i)
		}
		if n < len(p) {
			partial++
		}
	}
	if f.b.nw.trusted() {
		t.Fatalf("trusted after %d reads that each found only their first page cached (credit %d)", partial, f.b.nw.credit.Load())
	}
	if partial < 2*plainTrustHits {
		t.Skipf("only %d partly cached reads: the pages came back too soon here", partial)
	}
}

// TestHostile10PlainEOFReadsAreNotHits: reads at or past the end of the file find no
// data, cached or not: a file polled at its end (a log being followed) must not earn
// trust from them.
func TestHostile10PlainEOFReadsAreNotHits(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 64 << 10
	f, _, _ := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	p := make([]byte, 4096)
	for i := 0; i < 4*plainTrustHits; i++ {
		if n, ok := readNoWait(nil, f.b, p, size+int64(i)*4096); !ok || n != 0 {
			t.Fatalf("read past the end: n=%d ok=%v", n, ok)
		}
	}
	if f.b.nw.trusted() {
		t.Fatalf("trusted after %d reads past the end of the file (credit %d)", 4*plainTrustHits, f.b.nw.credit.Load())
	}
}

// tscPerNs estimates the cycle counter's rate.
func tscPerNs() float64 {
	c0, t0 := cycles(), time.Now()
	time.Sleep(20 * time.Millisecond)
	return float64(cycles()-c0) / float64(time.Since(t0).Nanoseconds())
}

// TestHostile10PlainTimingSeesEveryRead: the plain reads timed on a worker are one in
// plainTimeEvery of the worker's plain reads, counted across all its reads. A task
// whose requests read three cold data pages and then a hot header page (a fixed
// pattern, as real request handlers have) has only its header reads timed: the data
// reads wait for the disk on the worker, every one, and the file is never demoted.
// Skipped where the disk serves a page too fast to tell.
func TestHostile10PlainTimingSeesEveryRead(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 8 << 20
	f, data, name := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	if err := f.OSFile().Sync(); err != nil {
		t.Fatal(err)
	}
	rnd := randomReader(t, name)
	cx := fakeWorkerCx(rt)
	earnTrust(t, cx, f, size)
	slowNs := time.Duration(1.5 * plainSlowCycles / tscPerNs())
	hdr := make([]byte, 512)
	p := make([]byte, 4096)
	slow := 0
	for r := 0; r < 200 && f.b.nw.trusted(); r++ {
		for k := 0; k < 3; k++ {
			off := 4096 + int64(((r*3+k)*7919)%(size/4096-2))*4096
			cacheOnlyFirstPage(t, rnd)
			start := time.Now()
			n, ok := readNoWait(cx, f.b, p, off)
			took := time.Since(start)
			if !ok {
				break // back on RWF_NOWAIT, which missed
			}
			if n != len(p) || !bytes.Equal(p, data[off:off+4096]) {
				t.Fatalf("read at %d: n=%d, wrong bytes", off, n)
			}
			if took >= slowNs {
				slow++
			}
		}
		if n, ok := readNoWait(cx, f.b, hdr, 0); !ok || n != len(hdr) || !bytes.Equal(hdr, data[:len(hdr)]) {
			t.Fatalf("header read: n=%d ok=%v", n, ok)
		}
	}
	if f.b.nw.trusted() {
		if slow < 40 {
			t.Skipf("only %d data reads took %v or more: too fast to tell a miss here", slow, slowNs)
		}
		t.Fatalf("%d plain reads took %v or more (over plainSlowCycles) and the file is still trusted: none of them was timed", slow, slowNs)
	}
}

// TestHostile10PlainFailedReadDemotesOnce: a plain read that fails is one demotion, even
// when it was also slow (a read that waited for the disk, then could not copy the bytes
// out: EFAULT): demoting twice for one read doubles the run of hits the file needs for
// nothing. Can fail only where the disk read is slow enough to be seen.
func TestHostile10PlainFailedReadDemotesOnce(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 4 << 20
	f, _, name := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	if err := f.OSFile().Sync(); err != nil {
		t.Fatal(err)
	}
	rnd := randomReader(t, name)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(buf)
	nw := &f.b.nw
	for i := range 20 {
		cacheOnlyFirstPage(t, rnd)
		nw.demotions.Store(0)
		nw.credit.Store(plainTrustHits)
		off := int64(1+i) * 65536
		if _, e := nw.preadPlain(nil, f.b.fd, buf, off); e == 0 {
			t.Fatal("a read into an inaccessible buffer did not fail")
		}
		if d := nw.demotions.Load(); d != 1 {
			t.Fatalf("one failed plain read (at %d): %d demotions, want 1", off, d)
		}
	}
}

// TestHostile10PlainDemotionsCapUnderConcurrency: demote, called by several workers at
// once (their timed reads of the same evicted file), must never push demotions past
// plainMaxDemotions: beyond it, the trust threshold exceeds the highest credit readNoWait
// counts to, and the file could never be trusted again; far beyond, the shift wraps and
// every file is trusted with no credit at all.
func TestHostile10PlainDemotionsCapUnderConcurrency(t *testing.T) {
	var nw noWait
	nw.plain = true
	const g = 4
	var (
		start, done sync.WaitGroup
		gate        atomic.Int32
	)
	for r := 0; r < 1000; r++ {
		nw.demotions.Store(plainMaxDemotions - 1)
		gate.Store(0)
		start.Add(g)
		done.Add(g)
		for range g {
			go func() {
				defer done.Done()
				start.Done()
				for gate.Load() == 0 {
					runtime.Gosched()
				}
				nw.demote()
			}()
		}
		start.Wait()
		gate.Store(1)
		done.Wait()
		if d := nw.demotions.Load(); d > plainMaxDemotions {
			t.Fatalf("round %d: demotions = %d after concurrent demotes, want at most %d", r, d, plainMaxDemotions)
		}
	}
	// At the cap, the credit readNoWait counts to still reaches the threshold.
	nw.demotions.Store(plainMaxDemotions)
	nw.credit.Store(plainTrustHits << plainMaxDemotions)
	if !nw.trusted() {
		t.Fatal("at the demotion cap, the highest credit counted is not trust")
	}
	// And whatever demotions holds, no credit is never trust (the shift must not wrap).
	nw.credit.Store(0)
	for d := uint32(0); d < 70; d++ {
		nw.demotions.Store(d)
		if nw.trusted() {
			t.Fatalf("demotions %d: trusted with no credit", d)
		}
	}
}

// TestHostile10PlainReadAtBoundaries: reads of rawReadMax bytes use a plain pread and
// rawReadMax+1 do not; reads through the end of the file, past it, and at offsets near
// math.MaxInt64 give os.File.ReadAt's outcome exactly, and none of them switches the
// file's non-blocking reads off.
func TestHostile10PlainReadAtBoundaries(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 256<<10 + 123
	f, data, name := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	cx := fakeWorkerCx(rt)
	earnTrust(t, cx, f, size)
	before := cx.w.plainReads
	p := make([]byte, rawReadMax+1)
	if n, ok := readNoWait(cx, f.b, p[:rawReadMax], 4096); !ok || n != rawReadMax || !bytes.Equal(p[:n], data[4096:4096+rawReadMax]) {
		t.Fatalf("rawReadMax read: n=%d ok=%v", n, ok)
	}
	if cx.w.plainReads != before+1 {
		t.Fatalf("a read of rawReadMax bytes by a trusted file was not a plain read")
	}
	if n, ok := readNoWait(cx, f.b, p, 4096); !ok || n != len(p) || !bytes.Equal(p[:n], data[4096:4096+len(p)]) {
		t.Fatalf("rawReadMax+1 read: n=%d ok=%v", n, ok)
	}
	if cx.w.plainReads != before+1 {
		t.Fatalf("a read of rawReadMax+1 bytes was a plain read")
	}
	// Short at the end: the plain pread reports what there is.
	if n, ok := readNoWait(cx, f.b, p[:4096], size-100); !ok || n != 100 || !bytes.Equal(p[:100], data[size-100:]) {
		t.Fatalf("read through the end: n=%d ok=%v", n, ok)
	}

	osf, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	offs := []int64{0, size - 1, size - rawReadMax, size, size + 1, 1 << 40,
		math.MaxInt64 - rawReadMax - 1, math.MaxInt64 - rawReadMax, math.MaxInt64 - rawReadMax + 1,
		math.MaxInt64 - 4096, math.MaxInt64 - 1, math.MaxInt64, -1, math.MinInt64}
	for _, off := range offs {
		for _, l := range []int{1, 4096, rawReadMax, rawReadMax + 1} {
			got, want := make([]byte, l), make([]byte, l)
			n, err := readAtTask(t, rt, f, got, off)
			wn, werr := osf.ReadAt(want, off)
			if !sameOutcome(n, err, got, wn, werr, want) {
				t.Errorf("ReadAt(%d bytes, %d) = %d, %v; os.File.ReadAt: %d, %v", l, off, n, err, wn, werr)
			}
		}
	}
	if f.b.nw.off.Load() {
		t.Error("reads at the edges switched the file's non-blocking reads off")
	}
}

// readAtTask runs f.ReadAt(p, off) as a task on rt (so on a worker, never on the test's
// goroutine).
func readAtTask(t *testing.T, rt *Runtime, f *File, p []byte, off int64) (int, error) {
	t.Helper()
	r, err := waitHandle(t, Spawn(rt, f.ReadAt(p, off)))
	if err != nil {
		t.Fatal(err)
	}
	return r.Value, r.Err
}

// TestHostile10PlainDifferential: tasks on several workers read a trusted file at random
// offsets and sizes (plain, RWF_NOWAIT and ring reads mixed), and every outcome is the
// one os.File.ReadAt gives; then the file shrinks and grows behind blitzio's back
// (another handle) and every read still matches os.File.ReadAt.
func TestHostile10PlainDifferential(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const size = 1<<20 + 777
	f, _, name := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	osf, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	phase := func(label string, fileSize int) {
		hs := make([]JoinHandle[error], 8)
		for i := range hs {
			hs[i] = Spawn(rt, Async(func(co *Co) error {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(fileSize)))
				for j := 0; j < 200; j++ {
					l := 1 + rng.IntN(rawReadMax+4096)
					if j%3 == 0 {
						l = []int{rawReadMax, rawReadMax + 1, 4096, 1}[j%4]
					}
					off := rng.Int64N(int64(fileSize) + 8192)
					got, want := make([]byte, l), make([]byte, l)
					var n int
					var err error
					if j%2 == 0 {
						n, err = f.AwaitReadAt(co, got, off)
					} else {
						r := Await(co, f.ReadAt(got, off))
						n, err = r.Value, r.Err
					}
					wn, werr := osf.ReadAt(want, off)
					if !sameOutcome(n, err, got, wn, werr, want) {
						return fmt.Errorf("%s: task %d read %d: ReadAt(%d, %d) = %d, %v; os: %d, %v", label, i, j, l, off, n, err, wn, werr)
					}
				}
				return nil
			}))
		}
		for _, h := range hs {
			if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
				t.Fatalf("%v %v", err, jerr)
			}
		}
	}
	phase("cached", size)
	if !f.b.nw.trusted() {
		t.Logf("not trusted after the first phase (credit %d, demotions %d)", f.b.nw.credit.Load(), f.b.nw.demotions.Load())
	}
	if err := osf.Truncate(size / 3); err != nil {
		t.Fatal(err)
	}
	phase("shrunk", size/3)
	more := bytes.Repeat([]byte("grown!"), size/6)
	if _, err := osf.WriteAt(more, size/3+5000); err != nil {
		t.Fatal(err)
	}
	phase("grown", size/3+5000+len(more))
}

// TestHostile10PlainSetLenUnderReaders: File.SetLen shrinks a trusted file, and the cut
// bytes are written back, while tasks read it: every read gives the file's bytes (never
// others) and a count that fits the file's size at some point.
func TestHostile10PlainSetLenUnderReaders(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const size = 512 << 10
	const small = 100_000
	f, data, name := plainFile(t, rt, size)
	cx := fakeWorkerCx(rt)
	earnTrust(t, cx, f, size)
	g, err := Spawn(rt, OpenOptions{Read: true, Write: true}.Open(name)).Wait()
	if err != nil || g.Err != nil {
		t.Fatal(err, g.Err)
	}
	w := g.Value
	var stop atomic.Bool
	hs := make([]JoinHandle[error], 6)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) error {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for !stop.Load() {
				l := 1 + rng.IntN(rawReadMax)
				off := rng.Int64N(size)
				p := make([]byte, l)
				n, err := f.AwaitReadAt(co, p, off)
				// Past small the file is being cut and written back while we read, and
				// Linux gives no atomicity between a read and a write of a regular file:
				// even os.File.ReadAt (the blocking-pool mode) sees zeros there at times,
				// in a full-length read. Anything else (other bytes, or a wrong byte
				// before small, which no writer touches) is a defect.
				for j, c := range p[:n] {
					if at := off + int64(j); c != data[at] && (at < small || c != 0) {
						return fmt.Errorf("ReadAt(%d, %d): %d bytes, byte %d (file offset %d) is %d, want %d", l, off, n, j, at, c, data[at])
					}
				}
				// The file is never shorter than small nor longer than size (the bytes
				// put back may be seen in part: the file grows page by page).
				full := min(int64(l), size-off)
				cut := max(0, min(int64(l), small-off))
				if int64(n) < cut || int64(n) > full || n == l && err != nil || n < l && err != io.EOF {
					return fmt.Errorf("ReadAt(%d, %d) = %d, %v: want %d to %d bytes, io.EOF if short", l, off, n, err, cut, full)
				}
				if rng.IntN(8) == 0 {
					Await(co, YieldNow())
				}
			}
			return nil
		}))
	}
	for range 20 {
		must(t, rt, w.SetLen(small))
		// Restore the bytes cut off (the file's own content).
		if _, err := w.OSFile().WriteAt(data[small:], small); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	for _, h := range hs {
		if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
			t.Fatalf("%v %v", err, jerr)
		}
	}
	must(t, rt, w.Close())
	must(t, rt, f.Close())
}

// TestHostile10PlainCloseRace: tasks on every worker read a trusted file in a loop
// (plain reads) while Close runs and other files are opened at once, taking the freed
// descriptor numbers: Close completes, and no read returns anything but the file's bytes
// or the error for a closed file.
func TestHostile10PlainCloseRace(t *testing.T) {
	for round := range 6 {
		rt := newRT(t, Config{Workers: 2})
		const size = 256 << 10
		f, data, _ := plainFile(t, rt, size)
		earnTrust(t, nil, f, size)
		other := filepath.Join(t.TempDir(), "other")
		if err := os.WriteFile(other, bytes.Repeat([]byte{0xEE}, size), 0o644); err != nil {
			t.Fatal(err)
		}
		var reads atomic.Int64
		hs := make([]JoinHandle[error], 8)
		for i := range hs {
			hs[i] = Spawn(rt, Async(func(co *Co) error {
				p := make([]byte, 4096)
				for j := 0; ; j++ {
					off := int64((i*977+j*4099)%(size-4096)) &^ 7
					n, err := f.AwaitReadAt(co, p, off)
					if err != nil {
						if errors.Is(err, fs.ErrClosed) {
							return nil
						}
						return fmt.Errorf("read %d: %w", j, err)
					}
					if n != len(p) || !bytes.Equal(p, data[off:off+4096]) {
						return fmt.Errorf("read %d at %d: %d bytes, not the file's", j, off, n)
					}
					reads.Add(1)
					if j%4 == 3 {
						Await(co, YieldNow())
					}
				}
			}))
		}
		waitFor(t, "reads under way", func() bool { return reads.Load() > 200 })
		var opened []*os.File
		closed := make(chan error, 1)
		go func() {
			r, err := Spawn(rt, f.Close()).Wait()
			if err == nil {
				err = r.Err
			}
			closed <- err
		}()
		for range 32 {
			g, err := os.Open(other)
			if err != nil {
				t.Fatal(err)
			}
			opened = append(opened, g)
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Close did not complete", round)
		}
		for _, h := range hs {
			if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
				t.Fatalf("round %d: %v %v", round, err, jerr)
			}
		}
		for _, g := range opened {
			g.Close()
		}
	}
}

// alignedBuf returns n bytes aligned to 4096 (for O_DIRECT).
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	a := int((4096 - uintptr(unsafe.Pointer(&b[0]))%4096) % 4096)
	return b[a : a+n]
}

// TestHostile10PlainNewFileFlags: Files made with NewFile from *os.Files the user opened
// with O_DIRECT, O_APPEND (read-write) and write-only: after the runs of reads that earn
// trust where they can, every ReadAt gives os.File.ReadAt's outcome: the same bytes, or
// the same error.
func TestHostile10PlainNewFileFlags(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	const size = 256 << 10
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*31 + i>>9)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fileIOEnv, "auto")
	for _, c := range []struct {
		label string
		flag  int
	}{
		{"direct", os.O_RDONLY | unix.O_DIRECT},
		{"append", os.O_RDWR | os.O_APPEND},
		{"writeonly", os.O_WRONLY},
		{"plain", os.O_RDONLY},
	} {
		t.Run(c.label, func(t *testing.T) {
			g, err := os.OpenFile(name, c.flag, 0)
			if err != nil {
				t.Skipf("open: %v", err)
			}
			ref, err := os.OpenFile(name, c.flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			f := NewFile(g)
			defer must(t, rt, f.Close())
			check := func(p, q []byte, off int64) {
				t.Helper()
				n, err := readAtTask(t, rt, f, p, off)
				wn, werr := ref.ReadAt(q, off)
				if !sameOutcome(n, err, p, wn, werr, q) {
					t.Fatalf("%s: ReadAt(%d bytes, %d) = %d, %v; os.File.ReadAt: %d, %v", c.label, len(p), off, n, err, wn, werr)
				}
			}
			// Aligned reads, the kind O_DIRECT serves, enough to earn trust twice over.
			for i := range 4 * plainTrustHits {
				check(alignedBuf(4096), alignedBuf(4096), int64(i%32)*4096)
			}
			// Unaligned offsets, lengths and buffers (O_DIRECT refuses them).
			for i := range 2 * plainTrustHits {
				p, q := alignedBuf(4097)[1:], alignedBuf(4097)[1:]
				check(p[:100+i], q[:100+i], int64(i*4096+i))
			}
			for i := range 4 * plainTrustHits {
				check(alignedBuf(4096), alignedBuf(4096), int64(i%32)*4096)
			}
			check(alignedBuf(rawReadMax), alignedBuf(rawReadMax), size-8192)
		})
	}
}

// TestHostile10PlainEvictedUnderReaders: tasks on two workers read a trusted file while
// its pages are dropped from the page cache again and again: every read gives the
// file's bytes.
func TestHostile10PlainEvictedUnderReaders(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const size = 4 << 20
	f, data, _ := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	osf := f.OSFile()
	if err := osf.Sync(); err != nil {
		t.Fatal(err)
	}
	earnTrust(t, nil, f, size)
	var stop atomic.Bool
	hs := make([]JoinHandle[error], 6)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) error {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for j := 0; !stop.Load() || j < 50; j++ {
				l := 1 + rng.IntN(rawReadMax+100)
				off := rng.Int64N(size - int64(l))
				p := make([]byte, l)
				n, err := f.AwaitReadAt(co, p, off)
				if err != nil || n != l || !bytes.Equal(p, data[off:off+int64(l)]) {
					return fmt.Errorf("ReadAt(%d, %d) = %d, %v (bytes right: %v)", l, off, n, err, bytes.Equal(p[:n], data[off:off+int64(n)]))
				}
			}
			return nil
		}))
	}
	for range 50 {
		fadviseRange(t, osf, 0, 0)
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	for _, h := range hs {
		if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
			t.Fatalf("%v %v", err, jerr)
		}
	}
	if d := f.b.nw.demotions.Load(); d > plainMaxDemotions {
		t.Fatalf("demotions %d past the cap %d", d, plainMaxDemotions)
	}
}

// TestHostile10PlainOtherModesNeverPlain: BLITZIO_FILEIO=nowait, ring and pool (in any
// case, with spaces) never make a plain read, through Open or NewFile, however many
// cached reads the file serves.
func TestHostile10PlainOtherModesNeverPlain(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	const size = 64 << 10
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"nowait", "NoWait", " nowait ", "ring", "pool", "POOL"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			g, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []*File{must(t, rt, Open(name)), NewFile(g)} {
				if f.b.nw.plain {
					t.Fatalf("BLITZIO_FILEIO=%q: plain reads on", mode)
				}
				cx := fakeWorkerCx(rt)
				p := make([]byte, 4096)
				for i := range 4 * plainTrustHits {
					readNoWait(cx, f.b, p, int64(i%16)*4096)
					if _, err := Spawn(rt, f.ReadAt(p, int64(i%16)*4096)).Wait(); err != nil {
						t.Fatal(err)
					}
				}
				if cx.w.plainReads != 0 {
					t.Fatalf("BLITZIO_FILEIO=%q: %d plain reads", mode, cx.w.plainReads)
				}
				must(t, rt, f.Close())
			}
		})
	}
}

// TestHostile10PlainTwoRuntimes: one File read by tasks of two runtimes at once (their
// workers share shard and worker ids), then closed from one of them while the other's
// tasks still read: every read gives the file's bytes or the closed-file error, and
// Close completes.
func TestHostile10PlainTwoRuntimes(t *testing.T) {
	rt1 := newRT(t, Config{Workers: 2})
	rt2 := newRT(t, Config{Workers: 2})
	const size = 512 << 10
	f, data, _ := plainFile(t, rt1, size)
	earnTrust(t, nil, f, size)
	var reads atomic.Int64
	var hs []JoinHandle[error]
	for _, rt := range []*Runtime{rt1, rt2} {
		for i := range 4 {
			hs = append(hs, Spawn(rt, Async(func(co *Co) error {
				p := make([]byte, 8192)
				for j := 0; ; j++ {
					off := int64((i*8191 + j*12289) % (size - 8192))
					n, err := f.AwaitReadAt(co, p, off)
					if err != nil {
						if errors.Is(err, fs.ErrClosed) {
							return nil
						}
						return err
					}
					if n != len(p) || !bytes.Equal(p, data[off:off+8192]) {
						return fmt.Errorf("read at %d: wrong bytes", off)
					}
					reads.Add(1)
					if j%8 == 7 {
						Await(co, YieldNow())
					}
				}
			})))
		}
	}
	waitFor(t, "reads under way", func() bool { return reads.Load() > 500 })
	must(t, rt2, f.Close())
	for _, h := range hs {
		if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
			t.Fatalf("%v %v", err, jerr)
		}
	}
}

// TestHostile10PlainTimerSlackGoexit: tasks that end their worker's goroutine with
// runtime.Goexit (the worker is replaced) on one-worker runtimes: the runtimes keep
// working, the replacement workers lower the timer slack as they park, and with
// KeepTimerSlack they never make the call.
func TestHostile10PlainTimerSlackGoexit(t *testing.T) {
	for _, keep := range []bool{false, true} {
		rt := newRT(t, Config{Workers: 1, KeepTimerSlack: keep})
		for i := range 10 {
			h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
				if i%2 == 0 {
					runtime.Goexit()
				}
				return i, true
			}))
			waitHandle(t, h) // a Goexit task ends, with some error or other
			parkMany(t, rt, 2)
		}
		if got := rt.timerSlackSets.Load(); keep && got != 0 {
			t.Fatalf("KeepTimerSlack: %d timer slack calls after worker replacements", got)
		}
		if !keep {
			waitFor(t, "timer slack calls by the replaced workers", func() bool { return rt.timerSlackSets.Load() > 10 })
		}
		h := Spawn(rt, Ready(42))
		if v, err := waitHandle(t, h); err != nil || v != 42 {
			t.Fatalf("after Goexits: %v, %v", v, err)
		}
	}
}
