//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestFileReadAheadMatchesOS checks the bytes a dropped stream read brought in against
// package os: a File whose read was polled once and abandoned, then given one more
// call, must read, seek and report sizes as an *os.File that never made that read and
// got the same call. Stat, Sync and SetPermissions keep the bytes read ahead; SetLen
// (to any size, below the bytes read ahead included), SeekTo and a write discard them
// and put the position back where the reader was.
func TestFileReadAheadMatchesOS(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	type call struct {
		file func(rt *Runtime, f *File) error
		os   func(f *os.File) error
	}
	setLen := func(size int64) call {
		return call{
			func(rt *Runtime, f *File) error { return run(t, rt, f.SetLen(size)).Err },
			func(f *os.File) error { return f.Truncate(size) },
		}
	}
	seek := func(off int64, whence int) call {
		return call{
			func(rt *Runtime, f *File) error { return run(t, rt, f.SeekTo(off, whence)).Err },
			func(f *os.File) error { _, err := f.Seek(off, whence); return err },
		}
	}
	calls := map[string]call{
		"Stat": {
			func(rt *Runtime, f *File) error { return run(t, rt, f.Stat()).Err },
			func(f *os.File) error { _, err := f.Stat(); return err },
		},
		"Sync": {
			func(rt *Runtime, f *File) error { return run(t, rt, f.Sync()).Err },
			func(f *os.File) error { return f.Sync() },
		},
		"SetPermissions": {
			func(rt *Runtime, f *File) error { return run(t, rt, f.SetPermissions(0o600)).Err },
			func(f *os.File) error { return f.Chmod(0o600) },
		},
		"SetLen(grow)":              setLen(2000),
		"SetLen(inside read-ahead)": setLen(15),
		"SetLen(below read-ahead)":  setLen(5),
		"SetLen(0)":                 setLen(0),
		"SeekTo(3,current)":         seek(3, io.SeekCurrent),
		"SeekTo(7,start)":           seek(7, io.SeekStart),
		"Write": {
			func(rt *Runtime, f *File) error {
				if err := run(t, rt, writeAll(f, []byte("XY"))).Err; err != nil {
					return err
				}
				return run(t, rt, f.Flush()).Err
			},
			func(f *os.File) error { _, err := f.Write([]byte("XY")); return err },
		},
	}
	// transcript reads 10 bytes, seeks 2 back from the current position, reads 10 more
	// and stats: what both files must agree on.
	type step struct {
		read func(p []byte) (int, error)
		seek func(off int64, whence int) (int64, error)
		size func() (int64, error)
	}
	transcript := func(s step) string {
		out := ""
		for i := range 2 {
			p := make([]byte, 10)
			n, err := s.read(p)
			out += fmt.Sprintf("read %q %v; ", p[:n], err != nil)
			if i == 0 {
				off, err := s.seek(-2, io.SeekCurrent)
				out += fmt.Sprintf("seek %d %v; ", off, err != nil)
			}
		}
		size, err := s.size()
		return out + fmt.Sprintf("size %d %v", size, err != nil)
	}
	for _, mode := range []string{"pool", "ring", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			dir := t.TempDir()
			for name, c := range calls {
				t.Run(name, func(t *testing.T) {
					fname, oname := filepath.Join(dir, "f"), filepath.Join(dir, "o")
					for _, n := range []string{fname, oname} {
						if err := os.WriteFile(n, data, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					f := must(t, rt, OpenOptions{Read: true, Write: true}.Open(fname))
					defer run(t, rt, f.Close())
					o, err := os.OpenFile(oname, os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer o.Close()

					// One poll of a read, then abandon it (as a Select that lost would). If
					// it completed at once (the page cache, in auto), os reads too.
					p := make([]byte, 10)
					first := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
						r, ok := f.PollRead(cx, p)
						if !ok {
							return Result[int]{Value: -1}, true
						}
						return r, true
					}))
					if first.Value >= 0 {
						if _, err := io.ReadFull(o, make([]byte, first.Value)); err != nil {
							t.Fatal(err)
						}
					}
					ef, eo := c.file(rt, f), c.os(o)
					if (ef != nil) != (eo != nil) {
						t.Fatalf("%s: File %v, os %v", name, ef, eo)
					}
					got := transcript(step{
						read: func(p []byte) (int, error) {
							r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
							return r.Value, r.Err
						},
						seek: func(off int64, whence int) (int64, error) { return run(t, rt, f.SeekTo(off, whence)).Get() },
						size: func() (int64, error) {
							fi, err := run(t, rt, f.Stat()).Get()
							if err != nil {
								return 0, err
							}
							return fi.Size(), nil
						},
					})
					want := transcript(step{
						read: o.Read,
						seek: o.Seek,
						size: func() (int64, error) {
							fi, err := o.Stat()
							if err != nil {
								return 0, err
							}
							return fi.Size(), nil
						},
					})
					if got != want {
						t.Fatalf("after an abandoned read and %s:\nFile: %s\nos:   %s", name, got, want)
					}
				})
			}
		})
	}
}

// TestFileClosePipeReaderGetsErrClosed: a task reading a pipe File that another task
// closes is woken with os's error for a read of a closed file, and Close returns
// without waiting for data.
func TestFileClosePipeReaderGetsErrClosed(t *testing.T) {
	for _, mode := range []string{"pool", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			f := NewFile(r)
			polled := make(chan struct{})
			var once sync.Once
			hR := Spawn(rt, PollFn(func(cx *Context) (Result[int], bool) {
				res, ok := f.PollRead(cx, make([]byte, 16))
				once.Do(func() { close(polled) })
				return res, ok
			}))
			<-polled
			time.Sleep(10 * time.Millisecond) // the read is waiting for data
			must(t, rt, f.Close())
			done := make(chan Result[int], 1)
			go func() { res, _ := hR.Wait(); done <- res }()
			select {
			case res := <-done:
				if !errors.Is(res.Err, fs.ErrClosed) {
					t.Fatalf("read of a pipe closed under it = %d, %v; want fs.ErrClosed", res.Value, res.Err)
				}
			case <-time.After(5 * time.Second):
				w.Write([]byte("x"))
				t.Fatal("the reader of a closed pipe File is never woken")
			}
			if r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, make([]byte, 1)) })); !errors.Is(r.Err, fs.ErrClosed) {
				t.Fatalf("read after Close = %v", r.Err)
			}
		})
	}
}

// TestFileCloseReportsWriteErrorAndCloses: a write-behind error reported by Close must
// not keep Close from closing the file (the descriptor would leak).
func TestFileCloseReportsWriteErrorAndCloses(t *testing.T) {
	for _, mode := range []string{"pool", "ring"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			name := filepath.Join(t.TempDir(), "ro")
			if err := os.WriteFile(name, []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := must(t, rt, Open(name)) // read only: a write fails with EBADF
			if r := run(t, rt, writeAll(f, []byte("x"))); r.Err != nil {
				t.Fatalf("write-behind reported at once: %v", r.Err)
			}
			osf := f.OSFile()
			if r := run(t, rt, f.Close()); r.Err == nil || errors.Is(r.Err, fs.ErrClosed) {
				t.Fatalf("Close after a failed write = %v, want the write's error", r.Err)
			}
			if _, err := osf.Stat(); !errors.Is(err, fs.ErrClosed) {
				t.Fatalf("the file is still open after Close reported the write's error: Stat = %v", err)
			}
		})
	}
}

// TestFileCloseDetachesRingRead: Close of a File whose stream read is on the io_uring
// (in flight or completed, not yet taken) cancels it rather than waiting for it; the
// reader fails as a read of a closed file does, and Close completes once the kernel has
// let go of the read's buffer.
func TestFileCloseDetachesRingRead(t *testing.T) {
	t.Setenv(fileIOEnv, "ring")
	rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
	if err != nil {
		t.Skip(err)
	}
	defer rt.Close()
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	onRing := 0
	for range 20 {
		f := must(t, rt, Open(name))
		p := make([]byte, 1<<20)
		var closeFut Future[Result[struct{}]]
		var closeRes *Result[struct{}]
		var readRes *Result[int]
		type out struct {
			read  Result[int]
			close Result[struct{}]
			ring  bool
		}
		o := run(t, rt, PollFn(func(cx *Context) (out, bool) {
			if closeFut == nil {
				r, ok := f.PollRead(cx, p)
				if ok {
					return out{read: r}, true // not on the ring: nothing to check
				}
				closeFut = f.Close()
			}
			if closeRes == nil {
				if r, ok := closeFut.Poll(cx); ok {
					closeRes = &r
				}
			}
			if readRes == nil {
				if r, ok := f.PollRead(cx, p); ok {
					readRes = &r
				}
			}
			if closeRes == nil || readRes == nil {
				return out{}, false
			}
			return out{read: *readRes, close: *closeRes, ring: true}, true
		}))
		if !o.ring {
			// The read completed at its first poll (the driver reaped it at once).
			must(t, rt, f.Close())
			continue
		}
		onRing++
		if o.close.Err != nil {
			t.Fatalf("Close = %v", o.close.Err)
		}
		if !errors.Is(o.read.Err, fs.ErrClosed) {
			t.Fatalf("read taken away by Close = %d, %v; want fs.ErrClosed", o.read.Value, o.read.Err)
		}
	}
	if onRing == 0 {
		t.Skip("no stream read waited on the ring")
	}
}
