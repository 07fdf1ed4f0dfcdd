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
	"sort"
	"syscall"
	"testing"
	"time"
)

// fileRT is a runtime for the file tests, closed at the end of the test.
func fileRT(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// must runs f on rt (with a watchdog) and fails the test on an error.
func must[T any](t *testing.T, rt *Runtime, f Future[Result[T]]) T {
	t.Helper()
	r := run(t, rt, f)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r.Value
}

func run[T any](t *testing.T, rt *Runtime, f Future[T]) T {
	t.Helper()
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	// Through a wrapper, so that BlockOn does not run a file-system future on this
	// goroutine (callerBlocks): the tests exercise the ways a runtime runs them.
	// TestBlockOnFileOpsOnCaller covers the direct way.
	go func() { v, err := BlockOn[T](rt, nested[T]{f}); ch <- out{v, err} }()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.v
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("watchdog: not done in 30s\n%s", buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// nested hides f from BlockOn's look at the future it is given, as a combinator does.
type nested[T any] struct{ f Future[T] }

func (n nested[T]) Poll(cx *Context) (T, bool) { return n.f.Poll(cx) }
func (n nested[T]) Drop()                      { Drop(n.f) }

// writeAll and readAll are the loops package stream provides; the core package's tests
// cannot import it.
func writeAll(w AsyncWriter, p []byte) Future[Result[int]] {
	n := 0
	return PollFn(func(cx *Context) (Result[int], bool) {
		for n < len(p) {
			r, ok := w.PollWrite(cx, p[n:])
			if !ok {
				return Result[int]{}, false
			}
			if r.Err != nil {
				return Result[int]{Value: n, Err: r.Err}, true
			}
			n += r.Value
		}
		return Result[int]{Value: n}, true
	})
}

func readAll(r AsyncReader) Future[Result[[]byte]] {
	var out []byte
	buf := make([]byte, 1000)
	return PollFn(func(cx *Context) (Result[[]byte], bool) {
		for {
			res, ok := r.PollRead(cx, buf)
			if !ok {
				return Result[[]byte]{}, false
			}
			if res.Err == io.EOF {
				return Result[[]byte]{Value: out}, true
			}
			if res.Err != nil {
				return Result[[]byte]{Value: out, Err: res.Err}, true
			}
			out = append(out, buf[:res.Value]...)
		}
	})
}

func TestFileWriteThenRead(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB: several chunks
	f := must(t, rt, Create(name))
	if n := must(t, rt, writeAll(f, data)); n != len(data) {
		t.Fatalf("wrote %d of %d", n, len(data))
	}
	must(t, rt, f.Flush())
	must(t, rt, f.Close())
	got, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file holds %d bytes (%v), want the %d written", len(got), err, len(data))
	}
	g := must(t, rt, Open(name))
	back := must(t, rt, readAll(g))
	must(t, rt, g.Close())
	if !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes that differ", len(back))
	}
	if whole := must(t, rt, ReadFile(name)); !bytes.Equal(whole, data) {
		t.Fatal("ReadFile differs")
	}
}

// TestFileDroppedReadLosesNothing abandons a read after its first poll (a timeout or a
// select would) and checks that the next read starts at the first byte.
func TestFileDroppedReadLosesNothing(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("hello, world"), 0o644)
	f := must(t, rt, Open(name))
	p := make([]byte, 5)
	first := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) {
		r, ok := f.PollRead(cx, p)
		if !ok {
			r.Value = -1 // pending: abandoned with the read in flight
		}
		return r, true
	}))
	rest := must(t, rt, readAll(f))
	got := string(rest)
	if first.Value > 0 { // the read finished within its first poll: it delivered p[:n]
		got = string(p[:first.Value]) + got
	}
	if got != "hello, world" {
		t.Fatalf("after an abandoned read (first poll %+v) the reads gave %q", first, got)
	}
}

func TestFileSeekAccountsForReadAhead(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("abcdefghij"), 0o644)
	f := must(t, rt, OpenOptions{Read: true, Write: true}.Open(name))
	p := make([]byte, 3)
	// Read 3 bytes through a read that collected more (the buffer is len(p) here, so
	// read 3, then seek relative).
	if r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) })); r.Err != nil || string(p[:r.Value]) != "abc" {
		t.Fatalf("read %q %v", p[:r.Value], r.Err)
	}
	if off := must(t, rt, f.SeekTo(2, io.SeekCurrent)); off != 5 {
		t.Fatalf("SeekTo(+2) from 3 = %d, want 5", off)
	}
	must(t, rt, writeAll(f, []byte("XY")))
	must(t, rt, f.Flush())
	if n := must(t, rt, f.WriteAt([]byte("Z"), 0)); n != 1 {
		t.Fatal(n)
	}
	q := make([]byte, 4)
	if r := run(t, rt, f.ReadAt(q, 4)); r.Err != nil || string(q) != "eXYh" {
		t.Fatalf("ReadAt = %q, %v", q, r.Err)
	}
	if r := run(t, rt, f.ReadAt(make([]byte, 5), 8)); r.Err != io.EOF || r.Value != 2 {
		t.Fatalf("ReadAt past the end = %d, %v; want 2, io.EOF", r.Value, r.Err)
	}
	must(t, rt, f.SetLen(3))
	st := must(t, rt, f.Stat())
	must(t, rt, f.Sync())
	must(t, rt, f.Close())
	if st.Size() != 3 {
		t.Fatalf("size after SetLen(3) = %d", st.Size())
	}
	if got, _ := os.ReadFile(name); string(got) != "Zbc" {
		t.Fatalf("file = %q, want \"Zbc\"", got)
	}
}

func TestFileErrorsAreOSErrors(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	r := run(t, rt, Open(filepath.Join(dir, "missing")))
	var pe *fs.PathError
	if !errors.Is(r.Err, fs.ErrNotExist) || !errors.As(r.Err, &pe) || pe.Op != "open" {
		t.Fatalf("Open of a missing file: %#v", r.Err)
	}
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if r := run(t, rt, Remove(dir)); !errors.Is(r.Err, syscall.ENOTEMPTY) && !errors.Is(r.Err, syscall.EEXIST) {
		t.Fatalf("Remove of a non-empty directory: %v", r.Err)
	}
	if r := run(t, rt, OpenOptions{}.Open(filepath.Join(dir, "x"))); !errors.Is(r.Err, fs.ErrInvalid) {
		t.Fatalf("OpenOptions{} = %v, want fs.ErrInvalid", r.Err)
	}
	if r := run(t, rt, OpenOptions{Read: true, Truncate: true}.Open(filepath.Join(dir, "x"))); !errors.Is(r.Err, fs.ErrInvalid) {
		t.Fatalf("Truncate without Write = %v, want fs.ErrInvalid", r.Err)
	}
	if r := run(t, rt, OpenOptions{Write: true, Exclusive: true}.Open(filepath.Join(dir, "x"))); !errors.Is(r.Err, fs.ErrExist) {
		t.Fatalf("Exclusive on an existing file = %v, want fs.ErrExist", r.Err)
	}
}

func TestFileAppendAndOptions(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "log")
	for i := range 3 {
		f := must(t, rt, OpenOptions{Append: true, Create: true, Mode: 0o600}.Open(name))
		must(t, rt, writeAll(f, []byte(fmt.Sprintf("line %d\n", i))))
		must(t, rt, f.Close())
	}
	got, _ := os.ReadFile(name)
	if string(got) != "line 0\nline 1\nline 2\n" {
		t.Fatalf("appended %q", got)
	}
	if st, _ := os.Stat(name); st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("Mode 0o600 created %v", st.Mode())
	}
	f := must(t, rt, OpenOptions{Write: true, Truncate: true}.Open(name))
	must(t, rt, f.Close())
	if st, _ := os.Stat(name); st.Size() != 0 {
		t.Fatalf("Truncate left %d bytes", st.Size())
	}
}

func TestFilesystemOperations(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	nested := filepath.Join(dir, "a", "b", "c")
	must(t, rt, MkdirAll(nested, 0o755))
	src := filepath.Join(nested, "src")
	must(t, rt, WriteFile(src, []byte("payload"), 0o640))
	if n := must(t, rt, CopyFile(src, filepath.Join(dir, "copy"))); n != 7 {
		t.Fatalf("CopyFile copied %d bytes", n)
	}
	must(t, rt, Rename(filepath.Join(dir, "copy"), filepath.Join(dir, "moved")))
	if !must(t, rt, Exists(filepath.Join(dir, "moved"))) || must(t, rt, Exists(filepath.Join(dir, "copy"))) {
		t.Fatal("Rename: Exists disagrees")
	}
	must(t, rt, Link(src, filepath.Join(dir, "hard")))
	must(t, rt, Symlink(src, filepath.Join(dir, "soft")))
	if target := must(t, rt, Readlink(filepath.Join(dir, "soft"))); target != src {
		t.Fatalf("Readlink = %q", target)
	}
	canon := must(t, rt, Canonicalize(filepath.Join(dir, "soft")))
	want, _ := filepath.EvalSymlinks(src)
	if canon != want {
		t.Fatalf("Canonicalize = %q, want %q", canon, want)
	}
	if st := must(t, rt, Lstat(filepath.Join(dir, "soft"))); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("Lstat followed the link")
	}
	must(t, rt, Chmod(src, 0o600))
	if st := must(t, rt, Stat(filepath.Join(dir, "hard"))); st.Mode().Perm() != 0o600 || st.Size() != 7 {
		t.Fatalf("Stat through the hard link: %v %d", st.Mode(), st.Size())
	}
	must(t, rt, RemoveAll(filepath.Join(dir, "a")))
	if must(t, rt, Exists(src)) {
		t.Fatal("RemoveAll left the tree")
	}
	must(t, rt, Remove(filepath.Join(dir, "moved")))
	must(t, rt, Mkdir(filepath.Join(dir, "d"), 0o755))
	if r := run(t, rt, Mkdir(filepath.Join(dir, "d"), 0o755)); !errors.Is(r.Err, fs.ErrExist) {
		t.Fatalf("Mkdir twice: %v", r.Err)
	}
}

func TestReadDirStreamsEveryEntry(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	const n = 3*dirBatch + 7
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("f%04d", i)
		os.WriteFile(filepath.Join(dir, want[i]), nil, 0o644)
	}
	d := ReadDir(dir)
	var got []string
	for {
		r := run(t, rt, d.Next())
		if r.Err == io.EOF {
			break
		}
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		got = append(got, r.Value.Name())
	}
	d.Close()
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReadDir gave %d entries, want %d", len(got), n)
	}
	if r := run(t, rt, ReadDir(filepath.Join(dir, "nope")).Next()); !errors.Is(r.Err, fs.ErrNotExist) {
		t.Fatalf("ReadDir of a missing directory: %v", r.Err)
	}
}

// TestFileReadAtNegativeOffset: a negative offset fails as os.File.ReadAt does, and
// does not move the file position the stream reads from (preadv2 reads at the position
// for an offset of -1, so the fast path must not see one).
func TestFileReadAtNegativeOffset(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("abcdef"), 0o644)
	f := must(t, rt, Open(name))
	for _, off := range []int64{-1, -2} {
		if r := run(t, rt, f.ReadAt(make([]byte, 2), off)); r.Err == nil {
			t.Fatalf("ReadAt at %d succeeded", off)
		}
	}
	if got := must(t, rt, readAll(f)); string(got) != "abcdef" {
		t.Fatalf("after negative ReadAts the stream read %q, want \"abcdef\"", got)
	}
	// The fast path still works for this file afterwards.
	p := make([]byte, 3)
	if r := run(t, rt, f.ReadAt(p, 2)); r.Err != nil || string(p) != "cde" {
		t.Fatalf("ReadAt(2) = %q, %v", p, r.Err)
	}
}
