//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h11fModes are the backend and BLITZIO_FILEIO pairs the File tests run in: every way a
// read or a write can go (the worker, the ring, the pool).
var h11fModes = []struct {
	be   Backend
	mode string
}{
	{BackendIOUring, "auto"}, {BackendIOUring, "ring"}, {BackendIOUring, "pool"},
	{BackendEpoll, "auto"}, {BackendEpoll, "nowait"},
}

// h11fEachMode runs body as a subtest per mode, with BLITZIO_FILEIO set and a runtime
// of that backend (skipped where the backend is missing).
func h11fEachMode(t *testing.T, body func(t *testing.T, rt *Runtime)) {
	for _, m := range h11fModes {
		t.Run(m.be.String()+"/"+m.mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, m.mode)
			rt, err := New(Config{Workers: 2, Backend: m.be})
			if err != nil {
				t.Skipf("%v: %v", m.be, err)
			}
			t.Cleanup(func() { rt.Close() })
			body(t, rt)
		})
	}
}

// h11fRead makes one stream read of up to len(p) bytes.
func h11fRead(t *testing.T, rt *Runtime, f *File, p []byte) Result[int] {
	t.Helper()
	return run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
}

// h11fWriteFlush writes p through the stream and flushes; it returns the first error.
func h11fWriteFlush(t *testing.T, rt *Runtime, f *File, p []byte) error {
	t.Helper()
	if r := run(t, rt, writeAll(f, p)); r.Err != nil {
		return r.Err
	}
	return run(t, rt, PollFn(f.PollFlush)).Err
}

// h11fPty opens a pseudo-terminal pair, or skips. The master stays in Go's poller (its
// ioctls go through SyscallConn: Fd would put it in blocking mode).
func h11fPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	rc, err := m.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if ierr != nil {
		m.Close()
		t.Skipf("unlockpt/ptsname: %v", ierr)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestHostile11FileprocNewFileBasics: NewFile(nil) panics naming NewFile; Name is the
// *os.File's name (OpenFile's: the name given); a nil *File's PollFlush fails with
// os.ErrInvalid as its other methods do; invalid OpenOptions say why.
func TestHostile11FileprocNewFileBasics(t *testing.T) {
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "NewFile") {
				t.Errorf("NewFile(nil) recovered %v, want a panic naming NewFile", r)
			}
		}()
		NewFile(nil)
	}()
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFile(g)
	if f.Name() != name {
		t.Errorf("Name = %q, want %q", f.Name(), name)
	}
	if r := run(t, rt, PollFn(f.PollFlush)); r.Err != nil {
		t.Errorf("PollFlush with nothing written: %v", r.Err)
	}
	must(t, rt, f.Close())
	rel := must(t, rt, Open(filepath.Join(filepath.Dir(name), ".", "f")))
	if rel.Name() != filepath.Join(filepath.Dir(name), ".", "f") && rel.Name() != filepath.Dir(name)+"/./f" {
		t.Errorf("Name of an opened file = %q, want the name given", rel.Name())
	}
	must(t, rt, rel.Close())
	var nf *File
	if r := run(t, rt, PollFn(nf.PollFlush)); !errors.Is(r.Err, os.ErrInvalid) {
		t.Errorf("nil File PollFlush: %v", r.Err)
	}
	for _, o := range []OpenOptions{{}, {Read: true, Create: true}, {Read: true, Truncate: true}} {
		r := run(t, rt, o.Open(name))
		var pe *fs.PathError
		if !errors.Is(r.Err, fs.ErrInvalid) || !errors.As(r.Err, &pe) || !strings.Contains(r.Err.Error(), "invalid OpenOptions") {
			t.Errorf("%+v.Open: %v, want an *fs.PathError matching fs.ErrInvalid that says the options are invalid", o, r.Err)
		}
	}
}

// TestHostile11FileprocNewFilePty: a terminal behind NewFile (the master side of a
// pseudo-terminal): reads and writes go through (its reads cannot use positions nor the
// ring), ReadAt fails as os.File's does (ESPIPE), and Close ends a read waiting for
// input that never comes, with os's error for a read of a closed file, without waiting
// for it. A descriptor in blocking mode (an *os.File whose Fd was called): Close still
// returns at once, and the read ends when input comes, as os.File's would (see NewFile).
func TestHostile11FileprocNewFilePty(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		for _, blocking := range []bool{false, true} {
			m, s := h11fPty(t)
			if blocking {
				m.Fd() // os puts the descriptor in blocking mode: no poller any more
			}
			f := NewFile(m)
			if f.Name() != m.Name() {
				t.Errorf("Name = %q, want %q", f.Name(), m.Name())
			}
			if _, err := s.Write([]byte("hello\n")); err != nil {
				t.Fatal(err)
			}
			var got []byte
			p := make([]byte, 64)
			for !bytes.Contains(got, []byte("hello")) {
				r := h11fRead(t, rt, f, p)
				if r.Err != nil {
					t.Fatalf("read from the pty: %v (so far %q)", r.Err, got)
				}
				got = append(got, p[:r.Value]...)
			}
			if err := h11fWriteFlush(t, rt, f, []byte("typed\n")); err != nil {
				t.Fatalf("write to the pty: %v", err)
			}
			s.SetReadDeadline(time.Now().Add(20 * time.Second))
			line := make([]byte, 64)
			n, err := s.Read(line)
			if err != nil || !strings.HasPrefix(string(line[:n]), "typed") {
				t.Fatalf("the terminal read %q, %v; want the line written to the master", line[:n], err)
			}
			// The master echoes what it was sent: take it all, so that the read below
			// waits.
			echo := []byte{}
			for !bytes.Contains(echo, []byte("typed\r\n")) {
				r := h11fRead(t, rt, f, p)
				if r.Err != nil {
					t.Fatalf("read of the echo: %v", r.Err)
				}
				echo = append(echo, p[:r.Value]...)
			}
			_, osErr := m.ReadAt(p, 0)
			h11fSameErr(t, "ReadAt on a terminal", run(t, rt, f.ReadAt(p, 0)).Err, osErr)
			reading := make(chan struct{})
			hR := Spawn(rt, PollFn(func(cx *Context) (Result[int], bool) {
				select {
				case <-reading:
				default:
					close(reading)
				}
				return f.PollRead(cx, p)
			}))
			<-reading
			if r := run(t, rt, f.Close()); r.Err != nil {
				t.Fatalf("Close with a read waiting: %v", r.Err)
			}
			if blocking {
				// read(2) on a blocking descriptor is not interrupted by a close: give it
				// input, as a user pressing enter would.
				s.Write([]byte("late\n"))
			}
			r, err := waitHandleFor(t, hR, "the read waiting on the terminal after Close")
			if err != nil {
				t.Fatal(err)
			}
			if r.Err == nil {
				if !blocking || !strings.HasPrefix("late\r\n", string(p[:r.Value])) {
					t.Fatalf("a read of the closed terminal returned %q and no error", p[:r.Value])
				}
			} else if err := h9CheckClosedRead(r.Err, m.Name()); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestHostile11FileprocNewFileSocket: a socket given as an *os.File (one end of a
// socketpair, blocking or non-blocking): stream reads and writes reach the peer, ReadAt
// and WriteAt fail as os.File's do, Stat works, and writes after the peer went away
// report EPIPE at Flush.
func TestHostile11FileprocNewFileSocket(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		for _, nonblock := range []bool{false, true} {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if nonblock {
				syscall.SetNonblock(fds[0], true)
			}
			mine, peer := os.NewFile(uintptr(fds[0]), "sock0"), os.NewFile(uintptr(fds[1]), "sock1")
			f := NewFile(mine)
			if err := h11fWriteFlush(t, rt, f, []byte("ping")); err != nil {
				t.Fatalf("write to a socket: %v", err)
			}
			b := make([]byte, 4)
			if _, err := io.ReadFull(peer, b); err != nil || string(b) != "ping" {
				t.Fatalf("peer read %q, %v", b, err)
			}
			peer.Write([]byte("pong"))
			got := make([]byte, 0, 4)
			p := make([]byte, 4)
			for len(got) < 4 {
				r := h11fRead(t, rt, f, p[:4-len(got)])
				if r.Err != nil {
					t.Fatalf("read from a socket: %v", r.Err)
				}
				got = append(got, p[:r.Value]...)
			}
			if string(got) != "pong" {
				t.Fatalf("read %q from the socket", got)
			}
			_, osErr := peer.ReadAt(p, 0)
			h11fSameErr(t, "ReadAt on a socket", run(t, rt, f.ReadAt(p, 0)).Err, renamed(osErr, "sock1", "sock0"))
			_, osErr = peer.WriteAt(p, 0)
			h11fSameErr(t, "WriteAt on a socket", run(t, rt, f.WriteAt(p, 0)).Err, renamed(osErr, "sock1", "sock0"))
			if st := must(t, rt, f.Stat()); st.Mode()&fs.ModeSocket == 0 {
				t.Errorf("Stat of a socket: mode %v", st.Mode())
			}
			peer.Close()
			var werr error
			for range 3 { // the first write after the peer closed may still be taken
				if werr = h11fWriteFlush(t, rt, f, []byte("lost")); werr != nil {
					break
				}
			}
			if !errors.Is(werr, syscall.EPIPE) {
				t.Errorf("write to a socket whose peer closed: %v, want EPIPE", werr)
			}
			if r := h11fRead(t, rt, f, p); r.Err != io.EOF {
				t.Errorf("read of a socket whose peer closed: %d, %v; want io.EOF", r.Value, r.Err)
			}
			must(t, rt, f.Close())
		}
	})
}

// renamed returns err with old replaced by new in its *fs.PathError's path (os names a
// file by what it was given).
func renamed(err error, old, new string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == old {
		return &fs.PathError{Op: pe.Op, Path: new, Err: pe.Err}
	}
	return err
}

// TestHostile11FileprocNewFilePipeWriteEnd: the write end of a pipe behind NewFile:
// writes reach the reader; once the reader is gone, Flush reports EPIPE (not a signal
// that kills the process) and so does a later write; reading the write end fails as
// os.File's read does.
func TestHostile11FileprocNewFilePipeWriteEnd(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		f := NewFile(w)
		if err := h11fWriteFlush(t, rt, f, []byte("data")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil || string(b) != "data" {
			t.Fatalf("pipe reader got %q, %v", b, err)
		}
		_, osErr := w.Read(b)
		h11fSameErr(t, "read of a pipe's write end", h11fRead(t, rt, f, b).Err, osErr)
		r.Close()
		if err := h11fWriteFlush(t, rt, f, []byte("x")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("write with the reader gone: %v, want EPIPE", err)
		}
		must(t, rt, f.Close())
	})
}

// TestHostile11FileprocAccessModes: a file open for writing only, reading only, or
// O_APPEND, opened by the caller (NewFile) or by OpenFile: the operations it was not
// opened for fail with the error os.File gives for the same call (EBADF, Op "read" or
// "write"), on the ring as on the pool; O_APPEND writes go to the end whatever the
// offset, and WriteAt fails as os.File's does on such a file.
func TestHostile11FileprocAccessModes(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		name := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(name, []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		opens := map[string]func(flag int) *File{
			"NewFile": func(flag int) *File {
				g, err := os.OpenFile(name, flag, 0)
				if err != nil {
					t.Fatal(err)
				}
				return NewFile(g)
			},
			"OpenFile": func(flag int) *File { return must(t, rt, OpenFile(name, flag, 0)) },
		}
		for how, open := range opens {
			osf, _ := os.OpenFile(name, os.O_WRONLY, 0)
			p := make([]byte, 3)
			_, wantRead := osf.Read(p)
			_, wantReadAt := osf.ReadAt(p, 0)
			osf.Close()
			f := open(os.O_WRONLY)
			h11fSameErr(t, how+": stream read of a write-only file", h11fRead(t, rt, f, p).Err, wantRead)
			h11fSameErr(t, how+": ReadAt of a write-only file", run(t, rt, f.ReadAt(p, 0)).Err, wantReadAt)
			must(t, rt, f.Close())

			osf, _ = os.Open(name)
			_, wantWrite := osf.Write(p)
			_, wantWriteAt := osf.WriteAt(p, 0)
			osf.Close()
			f = open(os.O_RDONLY)
			h11fSameErr(t, how+": write of a read-only file", h11fWriteFlush(t, rt, f, []byte("xyz")), wantWrite)
			h11fSameErr(t, how+": WriteAt of a read-only file", run(t, rt, f.WriteAt(p, 0)).Err, wantWriteAt)
			if r := h11fRead(t, rt, f, p); r.Err != nil || string(p[:r.Value]) != "hel" {
				t.Errorf("%s: read after the failed write: %q %v", how, p[:r.Value], r.Err)
			}
			must(t, rt, f.Close())
			if b, _ := os.ReadFile(name); string(b) != "hello" {
				t.Fatalf("%s: a read-only file was written: %q", how, b)
			}

			osf, _ = os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
			_, wantAppendWriteAt := osf.WriteAt(p, 0)
			osf.Close()
			f = open(os.O_RDWR | os.O_APPEND)
			// Read a little first (the position moves), then seek back: the write still
			// goes to the end.
			if r := h11fRead(t, rt, f, p[:2]); r.Err != nil || r.Value != 2 {
				t.Fatalf("%s: read of an O_APPEND file: %v", how, r)
			}
			must(t, rt, f.SeekTo(0, io.SeekStart))
			if err := h11fWriteFlush(t, rt, f, []byte("!")); err != nil {
				t.Fatalf("%s: O_APPEND write: %v", how, err)
			}
			h11fSameErr(t, how+": WriteAt of an O_APPEND file", run(t, rt, f.WriteAt(p, 0)).Err, wantAppendWriteAt)
			h11fSameErr(t, how+": empty WriteAt of an O_APPEND file", run(t, rt, f.WriteAt(nil, 0)).Err, wantAppendWriteAt)
			// After an append the position is at the end, as with os.File.
			if r := h11fRead(t, rt, f, p); r.Err != io.EOF {
				t.Errorf("%s: read after an O_APPEND write: %q %v, want io.EOF", how, p[:r.Value], r.Err)
			}
			must(t, rt, f.Close())
			if b, _ := os.ReadFile(name); string(b) != "hello!" {
				t.Fatalf("%s: O_APPEND file holds %q, want %q", how, b, "hello!")
			}
			os.WriteFile(name, []byte("hello"), 0o644)
		}
	})
}

// TestHostile11FileprocNewFileClosed: NewFile of an *os.File that is already closed
// makes a File whose every operation fails as the *os.File's does (fs.ErrClosed, the
// same text), with no panic and no use of a descriptor number some other open may
// have been given since.
func TestHostile11FileprocNewFileClosed(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		name := filepath.Join(t.TempDir(), "f")
		os.WriteFile(name, []byte("secret-of-f"), 0o644)
		other := filepath.Join(t.TempDir(), "other")
		os.WriteFile(other, []byte("not-yours"), 0o644)
		g, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
		// The number g had is free: take it, so that a File that kept the number would
		// reach this file.
		h, err := os.Open(other)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		f := NewFile(g)
		p := make([]byte, 4)
		_, e := g.Read(p)
		h11fSameErr(t, "read", h11fRead(t, rt, f, p).Err, e)
		_, e = g.ReadAt(p, 0)
		h11fSameErr(t, "ReadAt", run(t, rt, f.ReadAt(p, 0)).Err, e)
		_, e = g.WriteAt(p, 0)
		h11fSameErr(t, "WriteAt", run(t, rt, f.WriteAt(p, 0)).Err, e)
		_, e = g.Write(p)
		h11fSameErr(t, "write", h11fWriteFlush(t, rt, f, p), e)
		_, e = g.Stat()
		h11fSameErr(t, "Stat", run(t, rt, f.Stat()).Err, e)
		_, e = g.Seek(0, io.SeekStart)
		h11fSameErr(t, "SeekTo", run(t, rt, f.SeekTo(0, io.SeekStart)).Err, e)
		e = g.Close()
		h11fSameErr(t, "Close", run(t, rt, f.Close()).Err, e)
		if b, _ := os.ReadFile(other); string(b) != "not-yours" {
			t.Fatalf("the file that took the closed number was written: %q", b)
		}
	})
}

// TestHostile11FileprocNewFileMidway: NewFile of an *os.File its owner has already read
// from: the File's reads continue from the *os.File's offset, on every path (the ring
// takes the position from the kernel once).
func TestHostile11FileprocNewFileMidway(t *testing.T) {
	h11fEachMode(t, func(t *testing.T, rt *Runtime) {
		name := filepath.Join(t.TempDir(), "f")
		data := h9Pattern(100 << 10)
		os.WriteFile(name, data, 0o644)
		g, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Read(make([]byte, 12345)); err != nil {
			t.Fatal(err)
		}
		f := NewFile(g)
		if got := must(t, rt, readAll(f)); !bytes.Equal(got, data[12345:]) {
			t.Fatalf("read %d bytes after NewFile of a file at 12345, want the %d after that offset (first differ: %v)",
				len(got), len(data)-12345, len(got) > 0 && got[0] != data[12345])
		}
		must(t, rt, f.Close())
	})
}
