//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// h9Pattern is n bytes where the byte at offset i is a function of i (a reader can check
// any range it got).
func h9Pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i/251)
	}
	return p
}

// h9Modes are the backend and BLITZIO_FILEIO pairs the concurrency tests run in.
var h9Modes = []struct {
	be   Backend
	mode string
}{
	{BackendIOUring, "auto"}, {BackendIOUring, "ring"}, {BackendIOUring, "pool"},
	{BackendIOUring, "nowait"}, {BackendEpoll, "auto"}, {BackendEpoll, "pool"},
}

// h9DropRead polls one stream read of len(p) bytes once and abandons it, as a Select or
// Timeout that lost would; it returns the count delivered into p (0 if the read was
// still pending) and fails on an error.
func h9DropRead(t *testing.T, rt *Runtime, f *File, p []byte) int {
	t.Helper()
	r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
		r, ok := f.PollRead(cx, p)
		if !ok {
			return Result[int]{}, true
		}
		return r, true
	}))
	if r.Err != nil {
		t.Fatalf("dropped read: %v", r.Err)
	}
	return r.Value
}

// TestHostile9FileDroppedReadPosition: reads abandoned mid-flight leave the file position
// where the bytes actually delivered end, for every way of looking at it: SeekTo from the
// current position, a stream write, SetLen, and the *os.File that OSFile returns (whose
// offset its doc promises is "where f's reads and writes have reached"); reads through
// that *os.File and then through f again continue where the other stopped.
func TestHostile9FileDroppedReadPosition(t *testing.T) {
	data := h9Pattern(64 << 10)
	for _, m := range h9Modes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			name := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f := must(t, rt, OpenFile(name, os.O_RDWR, 0))
			defer run(t, rt, f.Close())
			var got []byte // the bytes delivered, in order
			p := make([]byte, 1000)
			drop := func() {
				n := h9DropRead(t, rt, f, p)
				got = append(got, p[:n]...)
				must(t, rt, f.Stat()) // waits for the abandoned read, keeps its bytes
			}
			drop()
			if pos := must(t, rt, f.SeekTo(0, io.SeekCurrent)); pos != int64(len(got)) {
				t.Fatalf("SeekTo(0, SeekCurrent) after a dropped read = %d, %d bytes delivered", pos, len(got))
			}
			drop()
			// os.File's own view of the offset, and reads through it.
			of := f.OSFile()
			if pos, err := of.Seek(0, io.SeekCurrent); err != nil || pos != int64(len(got)) {
				t.Errorf("OSFile().Seek(0, SeekCurrent) after a dropped read = %d, %v; %d bytes delivered", pos, err, len(got))
				if err == nil {
					of.Seek(int64(len(got)), io.SeekStart)
				}
			}
			q := make([]byte, 300)
			if n, err := io.ReadFull(of, q); err != nil {
				t.Fatal(n, err)
			}
			got = append(got, q...)
			// f reads on from where the *os.File stopped.
			r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p[:200]) }))
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			got = append(got, p[:r.Value]...)
			if !bytes.Equal(got, data[:len(got)]) {
				t.Fatalf("the reads, through f and its OSFile, gave bytes out of order (%d bytes)", len(got))
			}
			// A write after a dropped read lands where the reader is.
			drop()
			must(t, rt, writeAll(f, []byte("WXYZ")))
			must(t, rt, f.Flush())
			at := len(got)
			copy(data[at:], "WXYZ")
			got = append(got, "WXYZ"...)
			// SetLen after a dropped read: the next read starts where the reader is.
			drop()
			must(t, rt, f.SetLen(int64(len(data))))
			rest := must(t, rt, readAll(f))
			got = append(got, rest...)
			if !bytes.Equal(got, data) {
				t.Fatalf("%d bytes read in all, want the file's %d (first difference at %d)", len(got), len(data), h9FirstDiff(got, data))
			}
			if disk, _ := os.ReadFile(name); !bytes.Equal(disk, data) {
				t.Fatalf("the write after a dropped read landed elsewhere (first difference at %d)", h9FirstDiff(disk, data))
			}
		})
	}
}

func h9FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// h9CheckClosedRead checks that err is what os.File gives a read of a closed file.
func h9CheckClosedRead(err error, name string) error {
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrClosed) || !errors.As(err, &pe) || pe.Op != "read" || pe.Path != name {
		return fmt.Errorf("read of a closed file: %#v (%v), want *fs.PathError{Op: \"read\", Path: %q} wrapping fs.ErrClosed", err, err, name)
	}
	return nil
}

// TestHostile9FileCloseWithReadsInFlight closes a File while tasks read it with ReadAt
// (on the worker, the ring or the pool) and stream reads: every read either delivers the
// right bytes or fails as os.File's reads of a closed file do, nothing hangs, and Close
// itself succeeds.
func TestHostile9FileCloseWithReadsInFlight(t *testing.T) {
	data := h9Pattern(1 << 20)
	for _, m := range h9Modes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			name := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f := must(t, rt, Open(name))
			var reads atomic.Int64
			started := make(chan struct{})
			var once sync.Once
			var hs []JoinHandle[error]
			for i := range 6 {
				hs = append(hs, Spawn(rt, Async(func(co *Co) error {
					p := make([]byte, 16<<10)
					for k := 0; ; k++ {
						off := int64((i*7919 + k*104729) % (len(data) - len(p)))
						r := Await(co, f.ReadAt(p, off))
						if r.Err != nil {
							return h9CheckClosedRead(r.Err, name)
						}
						if r.Value != len(p) || !bytes.Equal(p, data[off:off+int64(len(p))]) {
							return fmt.Errorf("ReadAt at %d: %d bytes, not the file's", off, r.Value)
						}
						if reads.Add(1) == 20 {
							once.Do(func() { close(started) })
						}
						Await(co, YieldNow())
					}
				})))
			}
			hs = append(hs, Spawn(rt, Async(func(co *Co) error {
				p := make([]byte, 4096)
				var pos int
				for {
					r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
					if r.Err == io.EOF {
						Await(co, YieldNow())
						continue
					}
					if r.Err != nil {
						return h9CheckClosedRead(r.Err, name)
					}
					if !bytes.Equal(p[:r.Value], data[pos:pos+r.Value]) {
						return fmt.Errorf("stream read at %d: not the file's bytes", pos)
					}
					pos += r.Value
				}
			})))
			select {
			case <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("the readers made no progress")
			}
			if r := run(t, rt, f.Close()); r.Err != nil {
				t.Fatalf("Close with reads in flight: %v", r.Err)
			}
			for i, h := range hs {
				if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
					t.Errorf("reader %d: %v %v", i, err, jerr)
				}
			}
		})
	}
}

// TestHostile9FileTwoRuntimes uses one File from tasks of an io_uring runtime and an
// epoll runtime: a stream read dropped on one runtime is picked up by the other, the
// position stays consistent across them, the File keeps working on the second runtime
// after the first shut down (even with a stream read in flight on its ring), and its
// errors stay os's.
func TestHostile9FileTwoRuntimes(t *testing.T) {
	for _, mode := range []string{"auto", "ring", "pool"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt1, err := New(Config{Workers: 2, Backend: BackendIOUring})
			if err != nil {
				t.Skip(err)
			}
			defer rt1.Close()
			rt2, err := New(Config{Workers: 2, Backend: BackendEpoll})
			if err != nil {
				t.Skip(err)
			}
			defer rt2.Close()
			data := h9Pattern(200 << 10)
			name := filepath.Join(t.TempDir(), "f")
			os.WriteFile(name, data, 0o644)
			f := must(t, rt1, OpenFile(name, os.O_RDWR, 0))

			var got []byte
			p := make([]byte, 3000)
			for i := range 10 {
				rt := rt1
				if i%2 == 1 {
					rt = rt2
				}
				n := h9DropRead(t, rt, f, p)
				got = append(got, p[:n]...)
				r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p[:1234]) }))
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				got = append(got, p[:r.Value]...)
			}
			if !bytes.Equal(got, data[:len(got)]) {
				t.Fatalf("reads alternating between runtimes: bytes out of order at %d", h9FirstDiff(got, data))
			}
			// A stream read left in flight on rt1, which then shuts down.
			n := h9DropRead(t, rt1, f, p)
			got = append(got, p[:n]...)
			rt1.Close()
			rest := must(t, rt2, readAll(f))
			got = append(got, rest...)
			if !bytes.Equal(got, data) {
				t.Fatalf("after rt1 closed, the reads on rt2 gave %d bytes in all, want %d (first difference at %d)", len(got), len(data), h9FirstDiff(got, data))
			}
			q := make([]byte, 100)
			if r := run(t, rt2, f.ReadAt(q, 1000)); r.Err != nil || !bytes.Equal(q, data[1000:1100]) {
				t.Fatalf("ReadAt on rt2 after rt1 closed: %d, %v", r.Value, r.Err)
			}
			must(t, rt2, f.Close())
			if r := run(t, rt2, f.ReadAt(q, 0)); h9CheckClosedRead(r.Err, name) != nil {
				t.Fatal(h9CheckClosedRead(r.Err, name))
			}
		})
	}
}

// TestHostile9FileNilReceiver: package os's methods on a nil *os.File return
// os.ErrInvalid; File's futures do the same (and do not panic).
func TestHostile9FileNilReceiver(t *testing.T) {
	rt := fileRT(t)
	var of *os.File
	if _, err := of.ReadAt(make([]byte, 1), 0); err != os.ErrInvalid {
		t.Fatalf("os: %v", err) // what the File's futures are held to
	}
	var f *File
	check := func(what string, call func() error) {
		t.Helper()
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			err = call()
		}()
		if !errors.Is(err, os.ErrInvalid) {
			t.Errorf("%s on a nil *File: %v, want os.ErrInvalid as os.File's", what, err)
		}
	}
	p := make([]byte, 4)
	check("ReadAt", func() error { return run(t, rt, f.ReadAt(p, 0)).Err })
	check("WriteAt", func() error { return run(t, rt, f.WriteAt(p, 0)).Err })
	check("SeekTo", func() error { return run(t, rt, f.SeekTo(0, io.SeekStart)).Err })
	check("Sync", func() error { return run(t, rt, f.Sync()).Err })
	check("SetLen", func() error { return run(t, rt, f.SetLen(0)).Err })
	check("Stat", func() error { return run(t, rt, f.Stat()).Err })
	check("SetPermissions", func() error { return run(t, rt, f.SetPermissions(0o644)).Err })
	check("Close", func() error { return run(t, rt, f.Close()).Err })
	check("Flush", func() error { return run(t, rt, f.Flush()).Err })
	check("PollRead", func() error {
		return run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) })).Err
	})
	check("PollWrite", func() error {
		return run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollWrite(cx, p) })).Err
	})
	check("BlockOn(ReadAt)", func() error {
		r, err := BlockOn(rt, f.ReadAt(p, 0))
		if err != nil {
			return err
		}
		return r.Err
	})
	check("AwaitReadAt", func() error {
		r, err := BlockOn(rt, Async(func(co *Co) error {
			_, err := f.AwaitReadAt(co, p, 0)
			return err
		}))
		if err != nil {
			return err
		}
		return r
	})
	if of := f.OSFile(); of != nil {
		t.Errorf("OSFile of a nil *File = %v, want nil", of)
	}
	var d *DirReader
	check("DirReader.Next", func() error { return run(t, rt, d.Next()).Err })
	check("DirReader.Close", func() error { return d.Close() })
}

// TestHostile9DirReaderClose: a DirReader behaves as the *os.File os.ReadDir reads
// through: Next after Close fails with fs.ErrClosed, also when Close came before the
// first Next (the directory is then never opened, so nothing leaks), and a second Close
// reports fs.ErrClosed as os.File.Close does.
func TestHostile9DirReaderClose(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	// os: Close then ReadDir, Close twice.
	of, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	of.Close()
	_, oerr := of.ReadDir(1)
	oerr2 := of.Close()

	d := ReadDir(dir)
	if err := d.Close(); err != nil {
		t.Fatalf("Close of an unopened DirReader: %v", err)
	}
	if r := run(t, rt, d.Next()); !errors.Is(r.Err, fs.ErrClosed) {
		t.Errorf("Next after Close (before any Next) = %v, %v; want fs.ErrClosed, as os gives %v", r.Value, r.Err, oerr)
	}

	d = ReadDir(dir)
	if r := run(t, rt, d.Next()); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r := run(t, rt, d.Next())
	if !errors.Is(r.Err, fs.ErrClosed) {
		t.Errorf("Next after Close = %v, %v; want fs.ErrClosed (os: %v)", r.Value, r.Err, oerr)
	}
	if err := d.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v; os.File's second Close gives %v", err, oerr2)
	}

	// Closed while its open runs on the pool: the directory opened is closed too.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	d = ReadDir(sub)
	run(t, rt, h9PollOnceAndDrop(d.Next()))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if r := run(t, rt, d.Next()); !errors.Is(r.Err, fs.ErrClosed) {
		t.Errorf("Next after a Close during the open = %v, %v; want fs.ErrClosed", r.Value, r.Err)
	}
	for deadline := time.Now().Add(20 * time.Second); h9OpenFDs(sub) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a DirReader closed while opening leaks the directory's descriptor")
		}
	}
	runtime.KeepAlive(d) // not the *os.File's cleanup on collection that closes it
}

// h9OpenFDs counts this process's descriptors open on path.
func h9OpenFDs(path string) int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == path {
			n++
		}
	}
	return n
}

// TestHostile9ReadDirFIFO: os.ReadDir of a FIFO fails at once with ENOTDIR (it opens
// with O_DIRECTORY); ReadDir's Next must too, not open the FIFO for reading and wait for
// a writer that never comes.
func TestHostile9ReadDirFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	_, oerr := os.ReadDir(fifo)
	rt := fileRT(t)
	d := ReadDir(fifo)
	done := make(chan error, 1)
	go func() {
		r, err := BlockOn(rt, d.Next())
		if err == nil {
			err = r.Err
		}
		done <- err
	}()
	select {
	case err := <-done:
		var pe *fs.PathError
		if !errors.Is(err, syscall.ENOTDIR) || !errors.As(err, &pe) || pe.Op != "open" {
			t.Fatalf("ReadDir(fifo).Next() = %v; os.ReadDir gives %v", err, oerr)
		}
	case <-time.After(20 * time.Second):
		// Unblock the open waiting for a writer, so that the test ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("ReadDir(fifo).Next() waited for a writer; os.ReadDir fails at once with %v", oerr)
	}
	d.Close()
}

// TestHostile9FileWriteThenPositioned: with os.File, a ReadAt after a Write reads what
// the Write wrote, and a WriteAt after a Write over the same bytes wins. File's stream
// writes are write-behind, but its own ReadAt, AwaitReadAt and WriteAt come after them
// all the same (driven by a task, and by BlockOn itself).
func TestHostile9FileWriteThenPositioned(t *testing.T) {
	for _, m := range h9Modes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			name := filepath.Join(t.TempDir(), "f")
			os.WriteFile(name, make([]byte, 100), 0o644)
			f := must(t, rt, OpenFile(name, os.O_RDWR, 0))
			defer run(t, rt, f.Close())
			fill := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 50) }
			for i := 1; i < 60; i += 3 {
				must(t, rt, f.SeekTo(0, io.SeekStart))
				got := run(t, rt, Async(func(co *Co) [3][]byte {
					var out [3][]byte
					Await(co, writeAll(f, fill(i)))
					p := make([]byte, 50)
					Await(co, f.ReadAt(p, 0))
					out[0] = p
					Await(co, writeAll(f, fill(i+1)))
					q := make([]byte, 50)
					f.AwaitReadAt(co, q, 50)
					out[1] = q
					Await(co, writeAll(f, fill(i+2)))
					Await(co, f.WriteAt(fill(i+3), 0))
					Await(co, f.Flush())
					r := make([]byte, 50)
					Await(co, f.ReadAt(r, 0))
					out[2] = r
					return out
				}))
				for k, want := range [][]byte{fill(i), fill(i + 1), fill(i + 3)} {
					if !bytes.Equal(got[k], want) {
						t.Fatalf("round %d, check %d: read %d..., want %d...: the positioned operation overtook the Write before it", i, k, got[k][0], want[0])
					}
				}
				// On BlockOn's goroutine (ReadAt's direct path).
				must(t, rt, f.SeekTo(0, io.SeekStart))
				if _, err := BlockOn(rt, writeAll(f, fill(i+4))); err != nil {
					t.Fatal(err)
				}
				p := make([]byte, 50)
				if r, err := BlockOn(rt, f.ReadAt(p, 0)); err != nil || r.Err != nil || !bytes.Equal(p, fill(i+4)) {
					t.Fatalf("round %d: BlockOn(ReadAt) after a Write read %d... (%v %v), want %d...", i, p[0], err, r.Err, i+4)
				}
			}
		})
	}
}

// h9PollOnceAndDrop polls f once and drops it, as a Select or Timeout that lost would.
func h9PollOnceAndDrop[T any](f Future[T]) Future[struct{}] {
	return PollFn(func(cx *Context) (struct{}, bool) {
		f.Poll(cx)
		Drop(f)
		return struct{}{}, true
	})
}

// TestHostile9FileDroppedSeekAndSetLen: a SeekTo or SetLen dropped after its first poll
// either took effect before the next operation or not at all, as an os.File.Seek or
// Truncate either ran or did not: the stream reads after it never see it land between
// them, and a ReadAt after a dropped SetLen sees the length the next ones see.
func TestHostile9FileDroppedSeekAndSetLen(t *testing.T) {
	for _, m := range h9Modes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			name := filepath.Join(t.TempDir(), "f")
			os.WriteFile(name, []byte(h9Data), 0o644)
			f := must(t, rt, OpenFile(name, os.O_RDWR, 0))
			defer run(t, rt, f.Close())
			streamRead := func(co *Co, n int) string {
				p := make([]byte, n)
				r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
				if r.Err != nil {
					return r.Err.Error()
				}
				return string(p[:r.Value])
			}
			seen := map[string]int{}
			for range 100 {
				must(t, rt, f.SeekTo(0, io.SeekStart))
				got := run(t, rt, Async(func(co *Co) string {
					Await(co, h9PollOnceAndDrop(f.SeekTo(10, io.SeekStart)))
					return streamRead(co, 3) + "|" + streamRead(co, 3) + "|" + streamRead(co, 3)
				}))
				seen[got]++
				if got != "012|345|678" && got != "abc|def|ghi" {
					t.Fatalf("reads after a dropped SeekTo(10): %q; want the file from 0 (not applied) or from 10 (applied), all %v", got, seen)
				}
			}
			for range 100 {
				must(t, rt, f.SeekTo(0, io.SeekStart))
				must(t, rt, f.WriteAt([]byte(h9Data), 0))
				got := run(t, rt, Async(func(co *Co) string {
					Await(co, h9PollOnceAndDrop(f.SetLen(5)))
					p := make([]byte, 20)
					r1 := Await(co, f.ReadAt(p, 0))
					s := streamRead(co, 20)
					r2 := Await(co, f.ReadAt(p, 0))
					return fmt.Sprintf("%d %v|%s|%d %v", r1.Value, r1.Err, s, r2.Value, r2.Err)
				}))
				seen[got]++
				if got != "20 <nil>|"+h9Data+"|20 <nil>" && got != "5 EOF|01234|5 EOF" {
					t.Fatalf("reads after a dropped SetLen(5): %q; want the whole file or 5 bytes throughout, all %v", got, seen)
				}
			}
			t.Log(seen)
		})
	}
}

// TestHostile9FileEmptyWrite pins the documented difference of an empty stream write:
// os.File.Write(nil) makes a write(2) of 0 bytes, which fails with EBADF on a file open
// for reading only; File.PollWrite does nothing and reports 0 and no error (Tokio's
// behaviour), and nothing fails later either. After Close it fails as os's does.
func TestHostile9FileEmptyWrite(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("data"), 0o644)
	of, _ := os.Open(name)
	if _, err := of.Write(nil); !errors.Is(err, syscall.EBADF) {
		t.Logf("os.File.Write(nil) on a read-only file: %v (EBADF expected on Linux)", err)
	}
	of.Close()
	_, oerr := of.Write(nil)

	f := must(t, rt, Open(name))
	write := func() Result[int] {
		return run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollWrite(cx, nil) }))
	}
	if r := write(); r.Value != 0 || r.Err != nil {
		t.Fatalf("empty PollWrite on a read-only file = %d, %v; want 0, nil", r.Value, r.Err)
	}
	if r := run(t, rt, f.Flush()); r.Err != nil {
		t.Fatalf("Flush after an empty write: %v", r.Err)
	}
	must(t, rt, f.Close())
	r := write()
	var pe *fs.PathError
	if !errors.Is(r.Err, fs.ErrClosed) || !errors.As(r.Err, &pe) || pe.Op != "write" || pe.Path != name {
		t.Fatalf("empty PollWrite after Close = %v; os.File.Write gives %v", r.Err, oerr)
	}
}

// TestHostile9FilePositionedOnPipe: os.File.ReadAt and WriteAt on a FIFO fail with ESPIPE
// (pread and pwrite need positions) and leave the pipe's bytes alone. File's must too,
// on the ring as well: an io_uring read or write at an offset on a pipe ignores the
// offset and would take the bytes (or wait for some).
func TestHostile9FilePositionedOnPipe(t *testing.T) {
	for _, m := range h9Modes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
			f := must(t, rt, OpenFile(fifo, os.O_RDWR, 0)) // does not wait on Linux
			defer run(t, rt, f.Close())
			must(t, rt, writeAll(f, []byte("in the pipe")))
			must(t, rt, f.Flush())
			p := make([]byte, 4)
			for _, what := range []string{"ReadAt", "AwaitReadAt", "WriteAt"} {
				var r Result[int]
				switch what {
				case "ReadAt":
					r = run(t, rt, f.ReadAt(p, 0))
				case "AwaitReadAt":
					r = run(t, rt, Async(func(co *Co) Result[int] {
						n, err := f.AwaitReadAt(co, p, 0)
						return Result[int]{Value: n, Err: err}
					}))
				case "WriteAt":
					r = run(t, rt, f.WriteAt([]byte("XX"), 0))
				}
				var pe *fs.PathError
				if r.Value != 0 || !errors.Is(r.Err, syscall.ESPIPE) || !errors.As(r.Err, &pe) {
					t.Errorf("%s on a FIFO = %d, %v; os.File's fails with ESPIPE", what, r.Value, r.Err)
				}
			}
			q := make([]byte, 100)
			r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, q) }))
			if got := string(q[:r.Value]); r.Err != nil || got != "in the pipe" {
				t.Fatalf("the pipe holds %q (%v) after the positioned calls, want %q untouched", got, r.Err, "in the pipe")
			}
		})
	}
}
