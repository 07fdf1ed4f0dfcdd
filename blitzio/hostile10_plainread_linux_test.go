//go:build linux

package blitzio

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// plainFile writes size bytes of a pattern, reads them once so they are cached, and
// opens the file with blitzio on rt in the default mode.
func plainFile(t *testing.T, rt *Runtime, size int) (*File, []byte, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*13 + i>>11)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(name); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fileIOEnv, "auto")
	f := must(t, rt, Open(name))
	if !f.b.nw.plain {
		t.Skip("no plain reads here (no TSC clocksource, or not linux/amd64)")
	}
	return f, data, name
}

// TestHostile10PlainReadEarnsTrustAndReadsRight: a cached file's positioned reads
// become plain preads after plainTrustHits non-blocking hits, and every read, before
// and after, returns the file's bytes (differential against the data written).
func TestHostile10PlainReadEarnsTrustAndReadsRight(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const size = 1 << 20
	f, data, _ := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	p := make([]byte, 4096)
	for i := 0; i < 4*plainTrustHits; i++ {
		// The non-blocking reads that earn trust are not timed, so trust comes after
		// exactly plainTrustHits of them; later, timed plain reads may lose it again if
		// the machine pauses during one (a demotion costs speed only).
		if i == plainTrustHits-1 && f.b.nw.trusted() {
			t.Fatalf("trusted after %d reads, want %d", i, plainTrustHits)
		}
		if i == plainTrustHits && !f.b.nw.trusted() {
			t.Fatalf("not trusted after %d cached reads (credit %d)", i, f.b.nw.credit.Load())
		}
		off := int64((i * 7919 * 4096) % (size - 4096))
		off += int64(i % 5) // unaligned offsets too
		n, ok := readNoWait(nil, f.b, p, off)
		if !ok || n != len(p) || !bytes.Equal(p, data[off:off+4096]) {
			t.Fatalf("read %d at %d: n=%d ok=%v, content equal=%v", i, off, n, ok, bytes.Equal(p[:n], data[off:off+int64(n)]))
		}
	}
	// A read through the end of the file: plain pread gives the short count as preadv2.
	n, ok := readNoWait(nil, f.b, p, size-100)
	if !ok || n != 100 || !bytes.Equal(p[:n], data[size-100:]) {
		t.Fatalf("read at end: n=%d ok=%v", n, ok)
	}
	// And through the task API, from many tasks at once.
	hs := make([]JoinHandle[error], 16)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) error {
			buf := make([]byte, 4096)
			for j := 0; j < 64; j++ {
				off := int64(((i*64 + j) * 4099) % (size - 4096))
				if n, err := f.AwaitReadAt(co, buf, off); err != nil || n != 4096 || !bytes.Equal(buf, data[off:off+4096]) {
					t.Errorf("task %d read %d at %d: n=%d err=%v", i, j, off, n, err)
					return err
				}
			}
			return nil
		}))
	}
	for _, h := range hs {
		waitHandle(t, h)
	}
}

// TestHostile10PlainReadErrorDemotes: a plain read that fails withdraws the file's
// trust and doubles the run it needs to earn it back.
func TestHostile10PlainReadErrorDemotes(t *testing.T) {
	var nw noWait
	nw.plain = true
	nw.credit.Store(plainTrustHits)
	if !nw.trusted() {
		t.Fatal("credit plainTrustHits is not trusted")
	}
	if _, e := nw.preadPlain(nil, -1, make([]byte, 16), 0); e == 0 {
		t.Fatal("pread64 on fd -1 did not fail")
	}
	if nw.trusted() || nw.credit.Load() != 0 || nw.demotions.Load() != 1 {
		t.Fatalf("after a failed plain read: trusted=%v credit=%d demotions=%d, want false 0 1", nw.trusted(), nw.credit.Load(), nw.demotions.Load())
	}
	nw.credit.Store(plainTrustHits)
	if nw.trusted() {
		t.Fatal("trusted again after plainTrustHits hits, want twice that after a demotion")
	}
	for range plainMaxDemotions + 5 {
		nw.demote()
	}
	if d := nw.demotions.Load(); d != plainMaxDemotions {
		t.Fatalf("demotions = %d, want the cap %d", d, plainMaxDemotions)
	}
}

// TestHostile10PlainReadMissDemotes: a trusted file whose pages were evicted is read
// with a plain pread that waits for the disk; the read is timed (off a worker every
// read is) and the file goes back to RWF_NOWAIT reads. Skipped when the disk served the
// page too fast to tell a miss from a hit.
func TestHostile10PlainReadMissDemotes(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 8 << 20
	f, data, _ := plainFile(t, rt, size)
	defer must(t, rt, f.Close())
	p := make([]byte, 4096)
	for i := 0; i < plainTrustHits; i++ {
		if _, ok := readNoWait(nil, f.b, p, int64(i)*4096); !ok {
			t.Fatalf("cached read %d missed", i)
		}
	}
	if !f.b.nw.trusted() {
		t.Fatal("not trusted after plainTrustHits cached reads")
	}
	if err := f.OSFile().Sync(); err != nil {
		t.Fatal(err)
	}
	fadviseDontNeed(t, f.OSFile())
	off := int64(size / 2)
	start := time.Now()
	n, ok := readNoWait(nil, f.b, p, off)
	took := time.Since(start)
	if !ok || n != 4096 || !bytes.Equal(p, data[off:off+4096]) {
		t.Fatalf("plain read of an evicted page: n=%d ok=%v", n, ok)
	}
	if f.b.nw.trusted() {
		if took < 200*time.Microsecond {
			t.Skipf("the evicted page came back in %v: too fast to tell a miss here", took)
		}
		t.Fatalf("a plain read that took %v (well over plainSlowCycles at any TSC rate) left the file trusted", took)
	}
}

// TestHostile10PlainReadOffInNoWaitMode: BLITZIO_FILEIO=nowait keeps every read on
// RWF_NOWAIT.
func TestHostile10PlainReadOffInNoWaitMode(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fileIOEnv, "nowait")
	f := must(t, rt, Open(name))
	defer must(t, rt, f.Close())
	if f.b.nw.plain {
		t.Fatal("BLITZIO_FILEIO=nowait: plain reads enabled")
	}
	g, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fileIOEnv, "auto")
	h := NewFile(g)
	defer must(t, rt, h.Close())
	if !plainReadClock() {
		t.Skip("no cycle counter here")
	}
	if !h.b.nw.plain {
		t.Fatal("NewFile of a regular file in the default mode: plain reads off")
	}
}

// TestHostile10DirectIONotReadOnWorker: an O_DIRECT read bypasses the page cache, and
// preadv2(RWF_NOWAIT) waits for the disk on it rather than failing, so a File opened
// O_DIRECT (by OpenFile, or an *os.File given to NewFile) never reads on the worker,
// and its reads still return the file's bytes.
func TestHostile10DirectIONotReadOnWorker(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(i * 5)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Skipf("O_DIRECT not supported here: %v", err)
	}
	t.Setenv(fileIOEnv, "auto")
	viaNewFile := NewFile(g)
	viaOpen := must(t, rt, OpenFile(name, os.O_RDONLY|syscall.O_DIRECT, 0))
	for _, f := range []*File{viaNewFile, viaOpen} {
		if f.b.nw.on || f.b.nw.plain {
			t.Fatalf("%s: O_DIRECT file reads on the worker (nw.on %v, plain %v)", f.Name(), f.b.nw.on, f.b.nw.plain)
		}
		// An aligned buffer, as O_DIRECT requires.
		raw := make([]byte, 3*4096)
		p := raw[4096-int(uintptr(unsafe.Pointer(&raw[0]))%4096):][:4096]
		n := must(t, rt, f.ReadAt(p, 8192))
		if n != 4096 || !bytes.Equal(p, data[8192:8192+4096]) {
			t.Fatalf("ReadAt of an O_DIRECT file: %d bytes, equal %v", n, bytes.Equal(p[:n], data[8192:8192+n]))
		}
		must(t, rt, f.Close())
	}
}
