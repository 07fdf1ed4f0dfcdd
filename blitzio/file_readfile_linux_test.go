package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReadFileNoWait checks the worker's whole-file read against os.ReadFile: empty,
// small, larger than the first buffer, a missing file (fs.ErrNotExist in an
// *fs.PathError, reported by the worker), and files it must leave to the pool (a FIFO,
// whose open waits for a writer; a /proc file, whose size says 0) with the same bytes
// through ReadFile as through os.ReadFile.
func TestReadFileNoWait(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 100_000} {
		name := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte{byte(size)}, size)
		if err := os.WriteFile(name, want, 0o644); err != nil {
			t.Fatal(err)
		}
		os.ReadFile(name) // in the page cache
		got, ok, err := readFileNoWait(name)
		if readFileNoWaitOff.Load() {
			t.Skip("openat2 RESOLVE_CACHED or statx unavailable here: the pool does every ReadFile")
		}
		if !ok {
			t.Logf("size %d: the worker's read declined (not all cached?)", size)
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: %d bytes, %v", size, len(got), err)
		}
	}
	// A missing name is reported by the worker when the kernel has it cached as
	// missing (a negative dentry), else by the pool: the same error either way.
	missing := filepath.Join(dir, "missing")
	os.Stat(missing)
	_, ok, err := readFileNoWait(missing)
	var pe *fs.PathError
	if ok && (!errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || pe.Op != "open") {
		t.Fatalf("missing file: %v; want an *fs.PathError open with fs.ErrNotExist", err)
	}
	rt := fileRT(t)
	if _, err := run(t, rt, ReadFile(missing)).Get(); !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := readFileNoWait(fifo); ok {
		t.Fatal("the worker read a FIFO (os.ReadFile would wait for a writer)")
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.Write([]byte("through the pipe"))
			w.Close()
		}
	}()
	if got := must(t, rt, ReadFile(fifo)); string(got) != "through the pipe" {
		t.Fatalf("ReadFile of a FIFO: %q", got)
	}
	want, err := os.ReadFile("/proc/self/cmdline")
	if err == nil {
		if got := must(t, rt, ReadFile("/proc/self/cmdline")); !bytes.Equal(got, want) {
			t.Fatalf("ReadFile(/proc/self/cmdline): %q, want %q", got, want)
		}
	}
}

// TestReadNoWaitSkipsAfterMisses reads a file whose pages are not cached (evicted with
// POSIX_FADV_DONTNEED): after noWaitMissLimit misses in a row the worker stops trying,
// except for a probe every noWaitProbe reads; once the pages are cached, the next probe
// hit makes it try every read again. The reads return the right bytes throughout.
func TestReadNoWaitSkipsAfterMisses(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := newBlockingIO(f)
	if !b.nw.on {
		t.Skip("BLITZIO_FILEIO disables the worker's reads")
	}
	f.Sync()
	evict := func() { fadviseDontNeed(t, f) }
	evict()
	p := make([]byte, 4096)
	for i := range noWaitMissLimit {
		if _, ok := readNoWait(nil, b, p, int64(i)*1<<14); ok {
			t.Skipf("read %d was served from memory after DONTNEED: cannot evict here", i)
		}
	}
	if got := b.nw.misses.Load(); got != noWaitMissLimit {
		t.Fatalf("misses after %d misses: %d", noWaitMissLimit, got)
	}
	// Cache everything: the attempts are still skipped until a probe hits.
	os.ReadFile(name)
	hits := 0
	for i := range 2 * noWaitProbe {
		n, ok := readNoWait(nil, b, p, 4096)
		if ok {
			hits++
			if n != len(p) || !bytes.Equal(p, data[4096:8192]) {
				t.Fatalf("read %d: %d bytes, wrong content", i, n)
			}
		}
	}
	if hits == 0 {
		t.Fatal("no probe in 2*noWaitProbe reads")
	}
	if b.nw.misses.Load() != 0 {
		t.Fatalf("misses after a hit: %d", b.nw.misses.Load())
	}
	start := time.Now()
	for range 10 {
		if _, ok := readNoWait(nil, b, p, 4096); !ok && time.Since(start) < time.Minute {
			t.Fatal("a cached read was skipped after the probe hit")
		}
	}
}

func fadviseDontNeed(t *testing.T, f *os.File) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		if err := unixFadviseDontNeed(int(fd)); err != nil {
			t.Skipf("fadvise: %v", err)
		}
	})
}

// TestCachedReadsYield loops over ReadAt of a cached file on a one-worker runtime: the
// reads complete on the worker without ever being pending, so only the cooperative
// budget lets the other task run before the loop ends.
func TestCachedReadsYield(t *testing.T) {
	t.Setenv(fileIOEnv, "nowait")
	rt := newRT(t, Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(name, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	os.ReadFile(name)
	f := must(t, rt, Open(name))
	var other atomic.Bool
	h := Spawn(rt, Async(func(co *Co) bool {
		Spawn(co, PollFn(func(*Context) (struct{}, bool) { other.Store(true); return struct{}{}, true }))
		p := make([]byte, 4096)
		for range 2000 {
			if r := Await(co, f.ReadAt(p, 0)); r.Err != nil {
				t.Error(r.Err)
			}
			if other.Load() {
				return true
			}
		}
		return false
	}))
	if ran, err := waitHandle(t, h); err != nil || !ran {
		t.Fatalf("the other task did not run during 2000 cached reads (%v)", err)
	}
}

// Regression: ReadFile's worker probe opened a FIFO for reading (non-blocking) before it
// saw the type, which paired with a writer already waiting in its open and hung up on it
// at once: the writer got EPIPE, and the pool's os.ReadFile then waited for a writer that
// never came. A writer waiting first must get its bytes to ReadFile, many times over.
func TestReadFileFIFOWriterWaitingFirst(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	for i := range 20 {
		fifo := filepath.Join(dir, "fifo"+strconv.Itoa(i))
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		wrote := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for a reader
			if err == nil {
				_, err = w.Write([]byte("through the pipe"))
				w.Close()
			}
			wrote <- err
		}()
		time.Sleep(time.Millisecond) // most rounds: the writer is in its open by now
		got := make(chan Result[[]byte], 1)
		go func() {
			r, err := BlockOn(rt, ReadFile(fifo))
			if err != nil {
				r.Err = err
			}
			got <- r
		}()
		select {
		case r := <-got:
			if r.Err != nil || string(r.Value) != "through the pipe" {
				t.Fatalf("round %d: ReadFile of a FIFO: %q, %v", i, r.Value, r.Err)
			}
		case <-time.After(10 * time.Second):
			writer := "still waiting"
			select {
			case err := <-wrote:
				writer = fmt.Sprint(err)
			default:
			}
			// Unblock the pool's open before failing, so the test binary can exit.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("round %d: ReadFile of a FIFO whose writer waited first did not return in 10s (the writer: %s)", i, writer)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("round %d: the writer: %v", i, err)
		}
	}
}

// TestReadFileNoWaitPartlyCached: a file whose first page is cached and the rest not.
// The worker's first read comes back short (RWF_NOWAIT stops where the cache does)
// before the size statx reported: that is not the end of the file, so the worker must
// go on and decline at the miss (the pool then reads it all), never return the short
// prefix as the whole file. ReadFile returns every byte either way.
func TestReadFileNoWaitPartlyCached(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	fadviseDontNeed(t, f)
	f.ReadAt(make([]byte, 4096), 0) // only the first page back in the cache
	got, ok, err := readFileNoWait(name)
	if readFileNoWaitOff.Load() {
		t.Skip("openat2 RESOLVE_CACHED or statx unavailable here")
	}
	switch {
	case err != nil:
		t.Fatalf("readFileNoWait: %v", err)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("the worker returned %d bytes of a %d-byte file", len(got), len(want))
	case ok:
		t.Log("the whole file was cached after all (readahead): nothing declined")
	}
	rt := fileRT(t)
	if got := must(t, rt, ReadFile(name)); !bytes.Equal(got, want) {
		t.Fatalf("ReadFile: %d bytes, want %d", len(got), len(want))
	}
}
