//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h11fReadFileModes are the BLITZIO_FILEIO modes that decide whether ReadFile and
// OpenFile try the worker first.
var h11fReadFileModes = []string{"auto", "nowait", "pool"}

// TestHostile11FileprocReadFileProcSys: files of /proc and /sys report a size of 0 (or a
// page) but have content; ReadFile must return what os.ReadFile does, on every path,
// and so must a File opened on them and read to the end.
func TestHostile11FileprocReadFileProcSys(t *testing.T) {
	names := []string{"/proc/sys/kernel/ostype", "/proc/self/cmdline", "/proc/version",
		"/sys/devices/system/cpu/online", "/sys/kernel/mm/transparent_hugepage/enabled"}
	for _, mode := range h11fReadFileModes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			tried := 0
			for _, name := range names {
				want, err := os.ReadFile(name)
				if err != nil || len(want) == 0 {
					continue // not on this machine
				}
				tried++
				got := must(t, rt, ReadFile(name))
				if !bytes.Equal(got, want) {
					t.Errorf("ReadFile(%s) = %q, os.ReadFile gives %q", name, got, want)
				}
				f := must(t, rt, Open(name))
				got = must(t, rt, readAll(f))
				must(t, rt, f.Close())
				if !bytes.Equal(got, want) {
					t.Errorf("Open(%s) then read to the end: %q, os.ReadFile gives %q", name, got, want)
				}
			}
			if tried == 0 {
				t.Skip("none of the /proc and /sys files here")
			}
		})
	}
}

// TestHostile11FileprocReadFileErrorsLikeOS: for names that do not resolve to a readable
// regular file (missing, under a file, a link loop, a dangling link, a component too
// long, a NUL byte, a directory, a symbolic link with O_NOFOLLOW), ReadFile and
// OpenFile fail with the error package os gives, the same text and the same errors.Is,
// whether the worker's path or the pool's made the call.
func TestHostile11FileprocReadFileErrorsLikeOS(t *testing.T) {
	dir := h11fTree(t)
	names := []string{
		filepath.Join(dir, "missing"),
		filepath.Join(dir, "file", "x"),
		filepath.Join(dir, "file") + "/",
		filepath.Join(dir, "loop1"),
		filepath.Join(dir, "dangling"),
		filepath.Join(dir, strings.Repeat("n", 256)),
		filepath.Join(dir, "nul\x00byte"),
		filepath.Join(dir, "other"),
		"",
	}
	for _, mode := range h11fReadFileModes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			for _, name := range names {
				_, want := os.ReadFile(name)
				h11fSameErr(t, "ReadFile("+filepath.Base(name)+")", run(t, rt, ReadFile(name)).Err, want)
				_, want = os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
				r := run(t, rt, OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0))
				if r.Value != nil {
					run(t, rt, r.Value.Close())
				}
				h11fSameErr(t, "OpenFile(O_NOFOLLOW, "+filepath.Base(name)+")", r.Err, want)
			}
			// O_NOFOLLOW on a link to a regular file: os fails with ELOOP; so must the
			// worker's attempt, which looks at the name before it opens.
			link := filepath.Join(dir, "soft-"+mode)
			os.Symlink(filepath.Join(dir, "file"), link)
			_, want := os.OpenFile(link, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
			r := run(t, rt, OpenFile(link, os.O_RDONLY|syscall.O_NOFOLLOW, 0))
			if r.Value != nil {
				run(t, rt, r.Value.Close())
			}
			h11fSameErr(t, "OpenFile(O_NOFOLLOW, a link)", r.Err, want)
			// A directory opens as with os, and its reads fail as os's.
			d := must(t, rt, Open(filepath.Join(dir, "other")))
			g, _ := os.Open(filepath.Join(dir, "other"))
			_, want = g.Read(make([]byte, 8))
			g.Close()
			h11fSameErr(t, "read of a directory", h11fRead(t, rt, d, make([]byte, 8)).Err, want)
			if st := must(t, rt, d.Stat()); !st.IsDir() {
				t.Errorf("Stat of an opened directory: %v", st.Mode())
			}
			must(t, rt, d.Close())
		})
	}
}

// TestHostile11FileprocReadFileFIFO: ReadFile and Open of a FIFO wait for a writer, as
// os's do, but on the blocking pool: the worker (the only one) goes on running tasks
// meanwhile; the writer's bytes then come back whole.
func TestHostile11FileprocReadFileFIFO(t *testing.T) {
	for _, mode := range h11fReadFileModes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := newRT(t, Config{Workers: 1})
			for _, how := range []string{"ReadFile", "Open"} {
				fifo := filepath.Join(t.TempDir(), "fifo")
				if err := syscall.Mkfifo(fifo, 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				var h JoinHandle[Result[[]byte]]
				if how == "ReadFile" {
					h = Spawn(rt, ReadFile(fifo))
				} else {
					h = Spawn(rt, Async(func(co *Co) Result[[]byte] {
						r := Await(co, Open(fifo))
						if r.Err != nil {
							return Result[[]byte]{Err: r.Err}
						}
						data := Await(co, readAll(r.Value))
						Await(co, r.Value.Close())
						return data
					}))
				}
				// The worker is free: tasks run while the FIFO waits for a writer.
				for i := range 3 {
					if v, err := waitHandleFor(t, Spawn(rt, Ready(i)), "a task while a FIFO's open waits"); err != nil || v != i {
						t.Fatalf("task beside the FIFO: %v %v", v, err)
					}
				}
				if h.IsFinished() {
					r, _ := h.Wait()
					t.Fatalf("%s of a FIFO with no writer finished: %q %v", how, r.Value, r.Err)
				}
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // pairs with the reader's open
				if err != nil {
					t.Fatal(err)
				}
				payload := bytes.Repeat([]byte("fifo!"), 30000) // more than a pipe holds
				go func() { w.Write(payload); w.Close() }()
				r, err := waitHandleFor(t, h, how+" of a FIFO after the writer came")
				if err != nil || r.Err != nil || !bytes.Equal(r.Value, payload) {
					t.Fatalf("%s of a FIFO: %d bytes, %v %v; want the %d written", how, len(r.Value), err, r.Err, len(payload))
				}
			}
		})
	}
}

// TestHostile11FileprocReadFileChurn reads files that grow, shrink and grow again while
// ReadFile, and a File's stream reads, run (on a local disk and on tmpfs): the file is
// always a prefix of one pattern, so every byte of a result must be the pattern's at its
// offset (or a zero of a page being truncated under the read, which os.ReadFile sees
// too): never bytes from another offset or read twice.
func TestHostile11FileprocReadFileChurn(t *testing.T) {
	dirs := []string{t.TempDir()}
	if shm, err := os.MkdirTemp("/dev/shm", "h11f"); err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		var st unix.Statfs_t
		if unix.Statfs(shm, &st) == nil && st.Type == unix.TMPFS_MAGIC {
			dirs = append(dirs, shm)
		}
	}
	pattern := h9Pattern(1 << 20)
	for _, mode := range h11fReadFileModes {
		for _, dir := range dirs {
			t.Run(mode+dir, func(t *testing.T) {
				t.Setenv(fileIOEnv, mode)
				rt := fileRT(t)
				name := filepath.Join(dir, "churn-"+mode)
				if err := os.WriteFile(name, pattern[:100<<10], 0o644); err != nil {
					t.Fatal(err)
				}
				w, err := os.OpenFile(name, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(1, 2))
					size := int64(100 << 10)
					for {
						select {
						case <-stop:
							return
						default:
						}
						if rng.IntN(4) == 0 {
							size = rng.Int64N(size + 1)
							w.Truncate(size)
						} else {
							n := min(int64(rng.IntN(64<<10)), int64(len(pattern))-size)
							w.WriteAt(pattern[size:size+n], size)
							size += n
						}
					}
				}()
				// A read racing a truncation may see the zeros of a page being cut (os.ReadFile
				// does too, on ext4 and tmpfs): a byte is the pattern's or zero, nothing else.
				check := func(what string, got []byte) {
					t.Helper()
					if len(got) > len(pattern) {
						t.Fatalf("%s of a churning file: %d bytes, more than it ever held", what, len(got))
					}
					for i, c := range got {
						if c != pattern[i] && c != 0 {
							t.Fatalf("%s of a churning file: byte %d is %#x, never there (%#x is)", what, i, c, pattern[i])
						}
					}
				}
				for range 60 {
					check("ReadFile", must(t, rt, ReadFile(name)))
					f := must(t, rt, Open(name))
					check("stream read", must(t, rt, readAll(f)))
					must(t, rt, f.Close())
				}
				close(stop)
				wg.Wait()
			})
		}
	}
}

// h11fOverlay mounts an overlay file system (lower and upper layers in dir) at a new
// directory and returns the three, or skips where mounting is not allowed.
func h11fOverlay(t *testing.T) (lower, upper, merged string) {
	t.Helper()
	dir := t.TempDir()
	lower, upper = filepath.Join(dir, "lower"), filepath.Join(dir, "upper")
	work, merged := filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "low"), []byte("from the lower layer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower, "changed"), []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("cannot mount an overlay here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", merged, err)
		}
	})
	return lower, upper, merged
}

// TestHostile11FileprocOverlay: on an overlay file system (taken as local: the worker's
// path is allowed), ReadFile, OpenFile, positioned and stream reads and writes see what
// os sees: a lower file, a file copied up by a write through the overlay (and the lower
// layer left as it was), a new file.
func TestHostile11FileprocOverlay(t *testing.T) {
	lower, upper, merged := h11fOverlay(t)
	var st unix.Statfs_t
	if unix.Statfs(merged, &st) != nil || st.Type != unix.OVERLAYFS_SUPER_MAGIC {
		t.Skip("the mount is not an overlay")
	}
	fd, err := unix.Open(filepath.Join(merged, "low"), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !fsTypeLocal(fd) {
		t.Errorf("fsTypeLocal of an overlay file = false; its doc counts overlayfs as local")
	}
	unix.Close(fd)
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		low := filepath.Join(merged, "low")
		if got := must(t, rt, ReadFile(low)); string(got) != "from the lower layer" {
			t.Fatalf("ReadFile of a lower file through the overlay: %q", got)
		}
		changed := filepath.Join(merged, "changed")
		f := must(t, rt, OpenFile(changed, os.O_RDWR, 0))
		if n := must(t, rt, f.WriteAt([]byte("NEW"), 0)); n != 3 {
			t.Fatalf("WriteAt through the overlay: %d", n)
		}
		p := make([]byte, 11)
		if n := must(t, rt, f.ReadAt(p, 0)); n != 11 || string(p) != "NEW content" {
			t.Fatalf("ReadAt after the copy-up: %q", p[:n])
		}
		if got := must(t, rt, readAll(f)); string(got) != "NEW content" {
			t.Fatalf("stream read after the copy-up: %q", got)
		}
		must(t, rt, f.Close())
		if got := must(t, rt, ReadFile(changed)); string(got) != "NEW content" {
			t.Fatalf("ReadFile of a copied-up file: %q", got)
		}
		if b, _ := os.ReadFile(filepath.Join(lower, "changed")); string(b) != "old content" {
			t.Fatalf("the lower layer changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(upper, "changed")); string(b) != "NEW content" {
			t.Fatalf("the upper layer holds %q", b)
		}
		fresh := filepath.Join(merged, "fresh")
		must(t, rt, WriteFile(fresh, []byte("made in the overlay"), 0o644))
		if got := must(t, rt, ReadFile(fresh)); string(got) != "made in the overlay" {
			t.Fatalf("ReadFile of a new overlay file: %q", got)
		}
		if n := must(t, rt, CopyFile(low, filepath.Join(merged, "copy"))); n != 20 {
			t.Fatalf("CopyFile within the overlay: %d", n)
		}
		// Put the layers back for the next mode.
		os.WriteFile(changed, []byte("old content"), 0o644)
		os.Remove(fresh)
		os.Remove(filepath.Join(merged, "copy"))
	})
}

// TestHostile11FileprocLocalFSProbes: fsTypeLocal and localFS answer for what they are
// given: a descriptor that is not open is not local (no panic); procfs and sysfs are not
// on the list; tmpfs and the test's own directory are (ext4, XFS, ... here); and
// readFileNoWait leaves a non-local file to the pool (ok false) rather than failing.
func TestHostile11FileprocLocalFSProbes(t *testing.T) {
	if fsTypeLocal(-1) {
		t.Error("fsTypeLocal(-1) = true")
	}
	for _, name := range []string{"/proc/version", "/sys/kernel"} {
		fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if fsTypeLocal(fd) {
			t.Errorf("fsTypeLocal(%s) = true", name)
		}
		var stx unix.Statx_t
		if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|statxMount, &stx) == nil && localFS(fd, &stx) {
			t.Errorf("localFS(%s) = true", name)
		}
		// With the reusable mount id only (kernels before 6.8), and without a mount id
		// (before 5.8, where localFS asks the file system every time).
		stx.Mask &^= unix.STATX_MNT_ID_UNIQUE
		if localFS(fd, &stx) {
			t.Errorf("localFS(%s) by its reusable mount id = true", name)
		}
		stx.Mask &^= unix.STATX_MNT_ID
		if localFS(fd, &stx) {
			t.Errorf("localFS(%s) without a mount id = true", name)
		}
		unix.Close(fd)
		if data, ok, err := readFileNoWait(name); ok {
			t.Errorf("readFileNoWait(%s) = (%d bytes, ok, %v); want it left to the pool", name, len(data), err)
		}
	}
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("x"), 0o644)
	fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	unix.Fstatfs(fd, &st)
	if known := map[int64]bool{unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true, unix.TMPFS_MAGIC: true}; known[st.Type] && !fsTypeLocal(fd) {
		t.Errorf("fsTypeLocal of a file on a file system of type %#x = false", st.Type)
	}
	if !noWaitOpenUsable() {
		t.Skip("no openat2 RESOLVE_CACHED here")
	}
	// openNoWait leaves flags it does not handle to the pool, with no error.
	for _, flag := range []int{os.O_RDONLY | os.O_CREATE, os.O_RDWR | os.O_TRUNC, os.O_RDONLY | syscall.O_NONBLOCK, os.O_RDONLY | unix.O_PATH} {
		if f, _, ok, err := openNoWait(name, flag); ok || f != nil || err != nil {
			t.Errorf("openNoWait(%#x) = (%v, %v, %v), want it left to the pool", flag, f, ok, err)
		}
	}
	// A FIFO is never opened on the worker.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if syscall.Mkfifo(fifo, 0o644) == nil {
		done := make(chan struct{})
		var ok bool
		go func() { _, _, ok, _ = openNoWait(fifo, os.O_RDONLY); close(done) }()
		select {
		case <-done:
			if ok {
				t.Error("openNoWait opened a FIFO")
			}
		case <-time.After(20 * time.Second):
			os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			t.Fatal("openNoWait of a FIFO waits for a writer")
		}
		if _, ok, _ := readFileNoWait(fifo); ok {
			t.Error("readFileNoWait read a FIFO")
		}
	}
}

// TestHostile11FileprocReadFileConcurrent: many tasks ReadFile and ReadAt the same files
// while another rewrites them whole (a rename over the name, as editors save): every
// result is one version or the other, never a mix of the two.
func TestHostile11FileprocReadFileConcurrent(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	versions := [][]byte{bytes.Repeat([]byte("A"), 20000), bytes.Repeat([]byte("B"), 30000)}
	os.WriteFile(name, versions[0], 0o644)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			tmp := filepath.Join(dir, "tmp")
			os.WriteFile(tmp, versions[i%2], 0o644)
			os.Rename(tmp, name)
		}
	}()
	var hs []JoinHandle[string]
	for range 16 {
		hs = append(hs, Spawn(rt, Async(func(co *Co) string {
			for range 40 {
				r := Await(co, ReadFile(name))
				if r.Err != nil {
					return r.Err.Error()
				}
				if !bytes.Equal(r.Value, versions[0]) && !bytes.Equal(r.Value, versions[1]) {
					return "ReadFile returned a mix of two versions of the file"
				}
			}
			return ""
		})))
	}
	for _, h := range hs {
		if msg, err := waitHandle(t, h); err != nil || msg != "" {
			t.Error(msg, err)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestHostile11FileprocReadFileRenamedOver: the name is replaced (renamed over, as
// files are updated atomically) between the worker's look at its type and its open,
// by a larger file of which only the first page is in the page cache. ReadFile must
// return one file or the other whole. It returned the first page of the new file: the
// size it trusted was the old file's, and the short read that reached it was taken for
// the end of the file.
func TestHostile11FileprocReadFileRenamedOver(t *testing.T) {
	if !noWaitOpenUsable() {
		t.Skip("no openat2 RESOLVE_CACHED here")
	}
	t.Setenv(fileIOEnv, "auto")
	rt := fileRT(t)
	dir := t.TempDir()
	name, next := filepath.Join(dir, "config"), filepath.Join(dir, "config.new")
	old, fresh := bytes.Repeat([]byte("A"), 4096), h9Pattern(1<<20)
	for round := range 3 {
		if err := os.WriteFile(name, old, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(next, fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		// Only the first page of the new file in the page cache.
		rnd := randomReader(t, next)
		rnd.Sync()
		cacheOnlyFirstPage(t, rnd)
		rnd.Close()
		var swapped atomic.Bool
		hook := func(n string) {
			if n == name && swapped.CompareAndSwap(false, true) {
				if err := os.Rename(next, name); err != nil {
					t.Error(err)
				}
			}
		}
		openRegularHook.Store(&hook)
		var got []byte
		switch round {
		case 0:
			got = must(t, rt, ReadFile(name))
		case 1:
			data, ok, err := readFileNoWait(name)
			if !ok { // left to the pool: what it does
				data, err = os.ReadFile(name)
			}
			if err != nil {
				t.Fatal(err)
			}
			got = data
		case 2:
			f := must(t, rt, Open(name))
			got = must(t, rt, readAll(f))
			must(t, rt, f.Close())
		}
		openRegularHook.Store(nil)
		if !swapped.Load() {
			t.Skip("the worker's path did not run (the name's pages are not cached?)")
		}
		if !bytes.Equal(got, old) && !bytes.Equal(got, fresh) {
			t.Fatalf("round %d: read %d bytes of a file renamed over during the read; want the %d of the old one or the %d of the new one, whole",
				round, len(got), len(old), len(fresh))
		}
	}
}

// TestHostile11FileprocRenamedToFIFO: the name becomes a FIFO between the worker's look
// at its type and its open. The worker opens the file whose type it checked (through
// its O_PATH descriptor), never the FIFO: ReadFile and OpenFile read the regular file,
// as if they had run just before the rename. Opening the FIFO by name, even
// non-blocking, then closing it on seeing its type (as the worker once did) paired with
// a writer waiting in its open, and hung up on it: the writer got EPIPE and a later
// reader waited for ever (CI hit it on a loaded machine). inotify proves the FIFO was
// never opened; a non-blocking writer's open then finds no reader (ENXIO).
func TestHostile11FileprocRenamedToFIFO(t *testing.T) {
	if !noWaitOpenUsable() {
		t.Skip("no openat2 RESOLVE_CACHED here")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	t.Setenv(fileIOEnv, "auto")
	rt := fileRT(t)
	for _, how := range []string{"ReadFile", "OpenFile"} {
		dir := t.TempDir()
		name, fifo := filepath.Join(dir, "f"), filepath.Join(dir, "fifo")
		os.WriteFile(name, []byte("regular"), 0o644)
		os.ReadFile(name) // in the page cache
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			t.Skipf("inotify: %v", err)
		}
		defer unix.Close(in)
		if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN|unix.IN_CLOSE); err != nil {
			t.Fatal(err)
		}
		var swapped atomic.Bool
		hook := func(n string) {
			if n == name && swapped.CompareAndSwap(false, true) {
				os.Rename(fifo, name)
			}
		}
		openRegularHook.Store(&hook)
		var got []byte
		if how == "ReadFile" {
			got = must(t, rt, ReadFile(name))
		} else {
			f := must(t, rt, OpenFile(name, os.O_RDONLY, 0))
			got = must(t, rt, readAll(f))
			must(t, rt, f.Close())
		}
		openRegularHook.Store(nil)
		if !swapped.Load() {
			t.Fatalf("%s: the worker's path did not run", how)
		}
		if string(got) != "regular" {
			t.Fatalf("%s of a name that became a FIFO after its type was checked: %q; want the regular file checked", how, got)
		}
		buf := make([]byte, 4096)
		if n, err := unix.Read(in, buf); err != unix.EAGAIN {
			t.Fatalf("%s: the FIFO put over the name was opened (inotify read %d bytes, %v)", how, n, err)
		}
		if fd, err := unix.Open(name, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err != unix.ENXIO {
			if err == nil {
				unix.Close(fd)
			}
			t.Fatalf("%s: a writer's non-blocking open of the FIFO: %v; want ENXIO, no reader", how, err)
		}
	}
}

// TestHostile11FileprocDroppedOpenClosesFile: an OpenFile dropped (a Timeout that
// expired, an aborted task) while its open runs on the blocking pool: the open goes on,
// and nobody will ever get the File it makes, so its descriptor must be closed once the
// open is done, as DirReader.Close does for its open, not left for a garbage collection
// that may never come (a server timing out opens under load would run out of
// descriptors). The FIFO keeps the pool's open waiting until the test opens the writer.
func TestHostile11FileprocDroppedOpenClosesFile(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no finalizer closes it for us
	for _, mode := range h11fReadFileModes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			r := run(t, rt, Timeout(20*time.Millisecond, OpenFile(fifo, os.O_RDONLY, 0)))
			if !errors.Is(r.Err, ErrTimeout) {
				t.Fatalf("OpenFile of a FIFO with no writer finished: %v", r)
			}
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the pool's open finish
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			waitFor(t, "the descriptor a dropped OpenFile opened to be closed", func() bool { return h9OpenFDs(fifo) == 0 })
		})
	}
}
