//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The differential harness: every scenario below is a sequence of file operations
// written once against h9API/h9File, run through package os and through blitzio (on
// io_uring and on epoll, in the BLITZIO_FILEIO modes, each future driven by BlockOn
// itself, by BlockOn under a wrapper, and by a spawned task). Every operation appends
// one line to a log (counts, bytes, the error's form); the logs of blitzio must equal
// os's line for line.
//
// Deliberate, documented differences the adapters account for (and say so where they
// do): stream writes are write-behind (File's doc: the count is reported at once and an
// error at the next operation, Flush here), and ReadDir streams entries in directory
// order (ReadDir's doc), which the adapter sorts.

type h9API interface {
	openFile(name string, flag int, perm fs.FileMode) (h9File, error)
	readFile(name string) ([]byte, error)
	writeFile(name string, data []byte, perm fs.FileMode) error
	stat(name string) (fs.FileInfo, error)
	lstat(name string) (fs.FileInfo, error)
	remove(name string) error
	removeAll(name string) error
	rename(oldpath, newpath string) error
	mkdir(name string, perm fs.FileMode) error
	mkdirAll(name string, perm fs.FileMode) error
	chmod(name string, mode fs.FileMode) error
	link(oldname, newname string) error
	symlink(oldname, newname string) error
	readlink(name string) (string, error)
	readDir(name string) ([]string, error)
}

type h9File interface {
	read(p []byte) (int, error)
	write(p []byte) (int, error)
	readAt(p []byte, off int64) (int, error)
	writeAt(p []byte, off int64) (int, error)
	seek(off int64, whence int) (int64, error)
	sync() error
	truncate(size int64) error
	stat() (fs.FileInfo, error)
	chmod(mode fs.FileMode) error
	close() error
}

// ---- package os ----

type h9OS struct{}

type h9OSFile struct{ f *os.File }

func (h9OS) openFile(name string, flag int, perm fs.FileMode) (h9File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return h9OSFile{f}, nil
}
func (h9OS) readFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (h9OS) writeFile(name string, data []byte, perm fs.FileMode) error {
	return os.WriteFile(name, data, perm)
}
func (h9OS) stat(name string) (fs.FileInfo, error)          { return os.Stat(name) }
func (h9OS) lstat(name string) (fs.FileInfo, error)         { return os.Lstat(name) }
func (h9OS) remove(name string) error                       { return os.Remove(name) }
func (h9OS) removeAll(name string) error                    { return os.RemoveAll(name) }
func (h9OS) rename(o, n string) error                       { return os.Rename(o, n) }
func (h9OS) mkdir(name string, perm fs.FileMode) error      { return os.Mkdir(name, perm) }
func (h9OS) mkdirAll(name string, perm fs.FileMode) error   { return os.MkdirAll(name, perm) }
func (h9OS) chmod(name string, mode fs.FileMode) error      { return os.Chmod(name, mode) }
func (h9OS) link(o, n string) error                         { return os.Link(o, n) }
func (h9OS) symlink(o, n string) error                      { return os.Symlink(o, n) }
func (h9OS) readlink(name string) (string, error)           { return os.Readlink(name) }
func (f h9OSFile) read(p []byte) (int, error)               { return f.f.Read(p) }
func (f h9OSFile) write(p []byte) (int, error)              { return f.f.Write(p) }
func (f h9OSFile) readAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f h9OSFile) writeAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f h9OSFile) seek(off int64, whence int) (int64, error) {
	return f.f.Seek(off, whence)
}
func (f h9OSFile) sync() error                     { return f.f.Sync() }
func (f h9OSFile) truncate(size int64) error       { return f.f.Truncate(size) }
func (f h9OSFile) stat() (fs.FileInfo, error)      { return f.f.Stat() }
func (f h9OSFile) chmod(mode fs.FileMode) error    { return f.f.Chmod(mode) }
func (f h9OSFile) close() error                    { return f.f.Close() }
func (h9OS) readDir(name string) ([]string, error) { return h9Names(os.ReadDir(name)) }

func h9Names(es []fs.DirEntry, err error) ([]string, error) {
	var names []string
	for _, e := range es {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	return names, err
}

// ---- blitzio ----

// h9Drive says how a blitzio future is driven.
type h9Drive int

const (
	h9Direct h9Drive = iota // BlockOn(rt, f): file futures run on the caller (callerBlocks)
	h9Nested                // BlockOn(rt, wrapper{f}): the runtime's ways, polled by BlockOn
	h9Task                  // Spawn(rt, f).Wait(): polled by a worker
)

func (d h9Drive) String() string { return [...]string{"direct", "nested", "task"}[d] }

type h9Blitz struct {
	t     testing.TB
	rt    *Runtime
	drive h9Drive
}

type h9BlitzFile struct {
	b *h9Blitz
	f *File
}

// h9Run drives f as b says, failing the test if it does not finish in 30 s.
func h9Run[T any](b *h9Blitz, f Future[T]) T {
	b.t.Helper()
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	go func() {
		var o out
		switch b.drive {
		case h9Direct:
			o.v, o.err = BlockOn(b.rt, f)
		case h9Nested:
			o.v, o.err = BlockOn[T](b.rt, nested[T]{f})
		case h9Task:
			o.v, o.err = Spawn(b.rt, f).Wait()
		}
		ch <- o
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			b.t.Fatalf("driving the future (%v): %v", b.drive, o.err)
		}
		return o.v
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		b.t.Fatalf("watchdog: a future not done in 30s\n%s", buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

func (b *h9Blitz) openFile(name string, flag int, perm fs.FileMode) (h9File, error) {
	r := h9Run(b, OpenFile(name, flag, perm))
	if r.Err != nil {
		return nil, r.Err
	}
	return h9BlitzFile{b, r.Value}, nil
}
func (b *h9Blitz) readFile(name string) ([]byte, error) { return h9Run(b, ReadFile(name)).Get() }
func (b *h9Blitz) writeFile(name string, data []byte, perm fs.FileMode) error {
	return h9Run(b, WriteFile(name, data, perm)).Err
}
func (b *h9Blitz) stat(name string) (fs.FileInfo, error)  { return h9Run(b, Stat(name)).Get() }
func (b *h9Blitz) lstat(name string) (fs.FileInfo, error) { return h9Run(b, Lstat(name)).Get() }
func (b *h9Blitz) remove(name string) error               { return h9Run(b, Remove(name)).Err }
func (b *h9Blitz) removeAll(name string) error            { return h9Run(b, RemoveAll(name)).Err }
func (b *h9Blitz) rename(o, n string) error               { return h9Run(b, Rename(o, n)).Err }
func (b *h9Blitz) mkdir(name string, perm fs.FileMode) error {
	return h9Run(b, Mkdir(name, perm)).Err
}
func (b *h9Blitz) mkdirAll(name string, perm fs.FileMode) error {
	return h9Run(b, MkdirAll(name, perm)).Err
}
func (b *h9Blitz) chmod(name string, mode fs.FileMode) error {
	return h9Run(b, Chmod(name, mode)).Err
}
func (b *h9Blitz) link(o, n string) error               { return h9Run(b, Link(o, n)).Err }
func (b *h9Blitz) symlink(o, n string) error            { return h9Run(b, Symlink(o, n)).Err }
func (b *h9Blitz) readlink(name string) (string, error) { return h9Run(b, Readlink(name)).Get() }

// readDir collects the DirReader's entries. They come in directory order, which
// ReadDir documents as a difference from os.ReadDir: sorted here to compare the rest.
func (b *h9Blitz) readDir(name string) ([]string, error) {
	d := ReadDir(name)
	defer d.Close()
	var es []fs.DirEntry
	for {
		r := h9Run(b, d.Next())
		if r.Err == io.EOF {
			break
		}
		if r.Err != nil {
			return h9Names(es, r.Err)
		}
		es = append(es, r.Value)
	}
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return h9Names(es, nil)
}

func (f h9BlitzFile) read(p []byte) (int, error) {
	return h9Run(f.b, PollFn(func(cx *Context) (Result[int], bool) { return f.f.PollRead(cx, p) })).Get()
}

// write is os.File.Write's loop over PollWrite, then Flush: stream writes are
// write-behind (File's doc), so a failed write's count is the bytes accepted and its
// error comes from Flush. h9Env.write logs no count with an error for that reason.
func (f h9BlitzFile) write(p []byte) (int, error) {
	n := 0
	r := h9Run(f.b, PollFn(func(cx *Context) (Result[int], bool) {
		for { // at least one PollWrite, so that an empty Write is one too
			r, ok := f.f.PollWrite(cx, p[n:])
			if !ok {
				return Result[int]{}, false
			}
			if r.Err != nil {
				return Result[int]{Value: n, Err: r.Err}, true
			}
			if n += r.Value; n >= len(p) {
				return Result[int]{Value: n}, true
			}
		}
	}))
	if r.Err != nil {
		return r.Value, r.Err
	}
	if fr := h9Run(f.b, f.f.Flush()); fr.Err != nil {
		return r.Value, fr.Err
	}
	return r.Value, nil
}
func (f h9BlitzFile) readAt(p []byte, off int64) (int, error) {
	return h9Run(f.b, f.f.ReadAt(p, off)).Get()
}
func (f h9BlitzFile) writeAt(p []byte, off int64) (int, error) {
	return h9Run(f.b, f.f.WriteAt(p, off)).Get()
}
func (f h9BlitzFile) seek(off int64, whence int) (int64, error) {
	return h9Run(f.b, f.f.SeekTo(off, whence)).Get()
}
func (f h9BlitzFile) sync() error                { return h9Run(f.b, f.f.Sync()).Err }
func (f h9BlitzFile) truncate(size int64) error  { return h9Run(f.b, f.f.SetLen(size)).Err }
func (f h9BlitzFile) stat() (fs.FileInfo, error) { return h9Run(f.b, f.f.Stat()).Get() }
func (f h9BlitzFile) chmod(mode fs.FileMode) error {
	return h9Run(f.b, f.f.SetPermissions(mode)).Err
}
func (f h9BlitzFile) close() error { return h9Run(f.b, f.f.Close()).Err }

// ---- the log ----

// h9Env runs one scenario against one API, in a directory of its own, and logs every
// outcome with the directory written as "$D".
type h9Env struct {
	t     testing.TB
	api   h9API
	dir   string
	files map[string]h9File
	log   []string
}

func (e *h9Env) p(name string) string {
	if name == "" || strings.HasPrefix(name, "/") {
		return name
	}
	return filepath.Join(e.dir, name)
}

func (e *h9Env) logf(format string, args ...any) {
	e.log = append(e.log, strings.ReplaceAll(fmt.Sprintf(format, args...), e.dir, "$D"))
}

// errSig is the form of err a caller can observe: the error types of package os with
// their fields, the errno, the sentinels errors.Is finds, and the message.
func (e *h9Env) errSig(err error) string {
	if err == nil {
		return "nil"
	}
	var parts []string
	if err == io.EOF {
		parts = append(parts, "==io.EOF")
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		parts = append(parts, fmt.Sprintf("PathError{Op:%s Path:%q}", pe.Op, pe.Path))
	case errors.As(err, &le):
		parts = append(parts, fmt.Sprintf("LinkError{Op:%s Old:%q New:%q}", le.Op, le.Old, le.New))
	case errors.As(err, &se):
		parts = append(parts, fmt.Sprintf("SyscallError{%s}", se.Syscall))
	default:
		parts = append(parts, fmt.Sprintf("%T", err))
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		parts = append(parts, fmt.Sprintf("errno=%d", int(errno)))
	}
	for _, s := range []struct {
		name string
		err  error
	}{{"NotExist", fs.ErrNotExist}, {"Exist", fs.ErrExist}, {"Permission", fs.ErrPermission},
		{"Closed", fs.ErrClosed}, {"Invalid", fs.ErrInvalid}, {"EOF", io.EOF},
		{"UnexpectedEOF", io.ErrUnexpectedEOF}, {"ShortWrite", io.ErrShortWrite}} {
		if errors.Is(err, s.err) {
			parts = append(parts, "is:"+s.name)
		}
	}
	parts = append(parts, fmt.Sprintf("%q", err.Error()))
	return strings.Join(parts, " ")
}

func (e *h9Env) file(h string) h9File {
	f := e.files[h]
	if f == nil {
		e.t.Fatalf("scenario bug: no file %q open", h)
	}
	return f
}

func (e *h9Env) open(h, name string, flag int, perm fs.FileMode) bool {
	f, err := e.api.openFile(e.p(name), flag, perm)
	e.logf("open %s %q flag=%#x perm=%v -> %s", h, name, flag, perm, e.errSig(err))
	if err == nil {
		e.files[h] = f
	}
	return err == nil
}

func (e *h9Env) read(h string, n int) {
	p := make([]byte, n)
	got, err := e.file(h).read(p)
	if got < 0 || got > n {
		e.t.Errorf("Read returned %d for a buffer of %d", got, n)
		got = 0
	}
	e.logf("read %s %d -> n=%d %q %s", h, n, got, p[:got], e.errSig(err))
}

func (e *h9Env) readAt(h string, n int, off int64) {
	p := make([]byte, n)
	got, err := e.file(h).readAt(p, off)
	if got < 0 || got > n {
		e.t.Errorf("ReadAt returned %d for a buffer of %d", got, n)
		got = 0
	}
	if got < n && err == nil {
		// io.ReaderAt: "When ReadAt returns n < len(p), it returns a non-nil error."
		e.t.Errorf("%T: ReadAt(%d bytes, %d) = %d, nil: a short ReadAt without an error", e.api, n, off, got)
	}
	e.logf("readAt %s %d@%d -> n=%d %q %s", h, n, off, got, p[:got], e.errSig(err))
}

func (e *h9Env) write(h, data string) {
	got, err := e.file(h).write([]byte(data))
	if err != nil {
		// Stream writes are write-behind (see h9BlitzFile.write): the count that goes
		// with an error differs by design, the error must not.
		e.logf("write %s %q -> %s", h, data, e.errSig(err))
		return
	}
	e.logf("write %s %q -> n=%d nil", h, data, got)
}

func (e *h9Env) writeAt(h, data string, off int64) {
	got, err := e.file(h).writeAt([]byte(data), off)
	if got < len(data) && err == nil {
		e.t.Errorf("%T: WriteAt(%d bytes, %d) = %d, nil", e.api, len(data), off, got)
	}
	e.logf("writeAt %s %q@%d -> n=%d %s", h, data, off, got, e.errSig(err))
}

func (e *h9Env) seek(h string, off int64, whence int) {
	got, err := e.file(h).seek(off, whence)
	e.logf("seek %s %d,%d -> %d %s", h, off, whence, got, e.errSig(err))
}

func (e *h9Env) fsync(h string) { e.logf("sync %s -> %s", h, e.errSig(e.file(h).sync())) }

func (e *h9Env) truncate(h string, size int64) {
	e.logf("truncate %s %d -> %s", h, size, e.errSig(e.file(h).truncate(size)))
}

func (e *h9Env) fchmod(h string, mode fs.FileMode) {
	e.logf("fchmod %s %v -> %s", h, mode, e.errSig(e.file(h).chmod(mode)))
}

func (e *h9Env) fstat(h string) {
	fi, err := e.file(h).stat()
	e.logf("fstat %s -> %s %s", h, h9Info(fi), e.errSig(err))
}

func (e *h9Env) close(h string) { e.logf("close %s -> %s", h, e.errSig(e.file(h).close())) }

func h9Info(fi fs.FileInfo) string {
	if fi == nil {
		return "<nil>"
	}
	size := fi.Size()
	if fi.IsDir() {
		size = -1 // a directory's size depends on its file system's history
	}
	return fmt.Sprintf("{%s size=%d mode=%v dir=%v}", fi.Name(), size, fi.Mode(), fi.IsDir())
}

func (e *h9Env) content(name string) {
	// Read with package os for both APIs: what the operations left on disk.
	b, err := os.ReadFile(e.p(name))
	e.logf("content %q -> %q %s", name, b, e.errSig(err))
}

func (e *h9Env) appendOS(name, data string) {
	f, err := os.OpenFile(e.p(name), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.WriteString(data)
		f.Close()
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *h9Env) mustWrite(name, data string) {
	if err := os.WriteFile(e.p(name), []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// closeAll closes the files a scenario left open (not logged: some were closed already).
func (e *h9Env) closeAll() {
	for _, f := range e.files {
		f.close()
	}
}

// ---- the scenarios ----

type h9Scenario struct {
	name string
	run  func(e *h9Env)
}

const h9Data = "0123456789abcdefghij" // 20 bytes

var h9Scenarios = []h9Scenario{
	{"read-contracts", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDONLY, 0)
		e.read("f", 0)
		e.read("f", 4)
		e.read("f", 0)
		e.read("f", 100) // the rest, short
		e.read("f", 5)   // at the end: 0, io.EOF
		e.read("f", 5)   // again
		e.read("f", 0)   // empty at the end: 0, nil
		e.appendOS("f", "KLM")
		e.read("f", 5) // the file grew: an end of file is not sticky
		e.read("f", 5)
		e.readAt("f", 20, 0)
		e.readAt("f", 10, 15) // short: n=5, io.EOF
		e.readAt("f", 10, 20) // at the end: 0, io.EOF
		e.readAt("f", 1, 19)
		e.readAt("f", 0, 20)
		e.readAt("f", 0, 1000) // past the end, empty: 0, nil
		e.readAt("f", 0, -1)   // negative offset
		e.readAt("f", 3, -5)
		e.readAt("f", 5, 1000)
		e.seek("f", 0, io.SeekCurrent)
		e.seek("f", 0, io.SeekStart)
		e.read("f", 7)
		e.seek("f", 0, io.SeekCurrent)
		e.close("f")
		e.close("f") // twice
	}},
	{"write-readonly", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDONLY, 0)
		e.write("f", "xyz")
		e.writeAt("f", "xyz", 0)
		e.writeAt("f", "", 0)
		e.truncate("f", 3)
		e.read("f", 3) // the failed write moved nothing
		e.fsync("f")
		e.close("f")
		e.content("f")
	}},
	{"read-writeonly", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_WRONLY, 0)
		e.read("f", 3)
		e.read("f", 0)
		e.readAt("f", 3, 0)
		e.readAt("f", 0, 0)
		e.write("f", "AB")
		e.seek("f", 0, io.SeekCurrent)
		e.close("f")
		e.content("f")
	}},
	{"append", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("a", "f", os.O_WRONLY|os.O_APPEND, 0)
		e.writeAt("a", "XY", 0) // os refuses WriteAt on O_APPEND
		e.writeAt("a", "", 0)
		e.write("a", "tail")
		e.seek("a", 0, io.SeekCurrent)
		e.seek("a", 0, io.SeekStart)
		e.write("a", "more") // still at the end
		e.fstat("a")
		e.close("a")
		e.content("f")
		e.open("b", "f", os.O_RDWR|os.O_APPEND, 0)
		e.read("b", 5)
		e.write("b", "!")
		e.read("b", 5) // after the end: a write moved the offset there
		e.seek("b", 0, io.SeekStart)
		e.readAt("b", 4, 20)
		e.read("b", 4)
		e.writeAt("b", "Q", 1)
		e.close("b")
		e.content("f")
	}},
	{"after-close", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDWR, 0)
		e.read("f", 3)
		e.close("f")
		e.read("f", 3)
		e.read("f", 0)
		e.write("f", "x")
		e.readAt("f", 3, 0)
		e.readAt("f", 0, 0)
		e.writeAt("f", "x", 0)
		e.seek("f", 0, io.SeekStart)
		e.fstat("f")
		e.fsync("f")
		e.truncate("f", 0)
		e.fchmod("f", 0o600)
		e.close("f")
		e.content("f")
		// A fresh file, closed without any operation first.
		e.open("g", "f", os.O_RDONLY, 0)
		e.close("g")
		e.read("g", 3)
		e.readAt("g", 3, 0)
		e.seek("g", 0, io.SeekCurrent)
		e.close("g")
		// One written (write-behind) and closed: Close reports nothing lost.
		e.open("h", "f", os.O_WRONLY, 0)
		e.write("h", "WRITE")
		e.close("h")
		e.write("h", "late")
		e.write("h", "")
		e.content("f")
	}},
	{"seek", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDWR, 0)
		e.seek("f", 5, io.SeekStart)
		e.read("f", 3)
		e.seek("f", -2, io.SeekCurrent)
		e.read("f", 3)
		e.seek("f", -3, io.SeekEnd)
		e.read("f", 10)
		e.seek("f", -1, io.SeekStart) // negative: an error, the offset stays
		e.seek("f", 0, io.SeekCurrent)
		e.seek("f", -100, io.SeekCurrent)
		e.seek("f", -100, io.SeekEnd)
		e.seek("f", 0, 3) // no such whence
		e.seek("f", 0, -1)
		e.seek("f", 30, io.SeekStart) // past the end
		e.read("f", 4)
		e.write("f", "Z") // leaves a hole
		e.fstat("f")
		e.seek("f", math.MaxInt64, io.SeekStart)
		e.read("f", 4)
		e.write("f", "Z")
		e.seek("f", 1, io.SeekCurrent)
		e.seek("f", math.MaxInt64-1, io.SeekStart)
		e.write("f", "ZZ")
		e.readAt("f", 4, math.MaxInt64-2)
		e.writeAt("f", "ZZ", math.MaxInt64-1)
		e.writeAt("f", "Z", math.MaxInt64)
		e.readAt("f", 1, math.MaxInt64)
		e.seek("f", 0, io.SeekEnd)
		e.close("f")
		e.content("f")
	}},
	{"stream-mixed", func(e *h9Env) {
		// Reads, writes and metadata calls interleaved on one offset.
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDWR, 0)
		e.read("f", 3)
		e.write("f", "")
		e.write("f", "AB") // at 3
		e.read("f", 3)     // from 5
		e.fstat("f")
		e.read("f", 2)
		e.truncate("f", 9)
		e.read("f", 5) // from 10, past the new end
		e.seek("f", 0, io.SeekCurrent)
		e.truncate("f", 40)
		e.read("f", 3) // a hole of zeros
		e.fsync("f")
		e.read("f", 2)
		e.fchmod("f", 0o640)
		e.read("f", 2)
		e.write("f", "end")
		e.seek("f", 0, io.SeekCurrent)
		e.readAt("f", 40, 0)
		e.writeAt("f", "W", 2)
		e.read("f", 100)
		e.read("f", 100)
		e.truncate("f", -1)
		e.seek("f", 2, io.SeekStart)
		e.read("f", 1)
		e.close("f")
		e.content("f")
	}},
	{"directory-as-file", func(e *h9Env) {
		os.Mkdir(e.p("d"), 0o755)
		e.open("d", "d", os.O_RDONLY, 0)
		e.read("d", 4)
		e.read("d", 0)
		e.readAt("d", 4, 0)
		e.write("d", "x")
		e.writeAt("d", "x", 0)
		e.seek("d", 0, io.SeekCurrent)
		e.fstat("d")
		e.fsync("d")
		e.truncate("d", 0)
		e.close("d")
		e.open("w", "d", os.O_WRONLY, 0)
		e.open("rw", "d", os.O_RDWR, 0)
		e.open("c", "d", os.O_RDONLY|os.O_CREATE, 0o644)
		e.open("t", "d", os.O_RDONLY|os.O_TRUNC, 0)
	}},
	{"open-errors", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("x", "missing", os.O_RDONLY, 0)
		e.open("x", "missing", os.O_WRONLY, 0)
		e.open("x", "f/", os.O_RDONLY, 0)
		e.open("x", "f/x", os.O_RDONLY, 0)
		e.open("x", "nodir/x", os.O_RDWR|os.O_CREATE, 0o644)
		e.open("x", "f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		e.open("x", "", os.O_RDONLY, 0)
		e.open("x", "a\x00b", os.O_RDONLY, 0)
		e.open("x", "a\x00b", os.O_RDWR|os.O_CREATE, 0o644)
		e.open("x", strings.Repeat("n", 300), os.O_RDONLY, 0)
		os.Symlink("loop1", e.p("loop2"))
		os.Symlink("loop2", e.p("loop1"))
		e.open("x", "loop1", os.O_RDONLY, 0)
		os.Symlink("missing", e.p("dangling"))
		e.open("x", "dangling", os.O_RDONLY, 0)
		os.Symlink("f", e.p("link"))
		e.open("x", "link", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if e.open("l", "link", os.O_RDONLY, 0) {
			e.read("l", 4)
			e.close("l")
		}
		e.open("x", "dangling", os.O_RDWR|os.O_CREATE, 0o600) // creates the target
		e.content("missing")
		e.open("x", "f", os.O_RDONLY|syscall.O_DIRECTORY, 0)
		e.open("x", "f", 3, 0) // O_ACCMODE 3: Linux's "no access" mode
	}},
	{"open-modes", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		if e.open("t", "f", os.O_RDONLY|os.O_TRUNC, 0) {
			e.read("t", 3)
			e.close("t")
		}
		e.content("f")
		e.mustWrite("f", h9Data)
		if e.open("w", "f", os.O_WRONLY, 0) {
			e.write("w", "AB")
			e.writeAt("w", "Z", 19)
			e.close("w")
		}
		e.content("f")
		if e.open("c", "new", os.O_RDWR|os.O_CREATE, 0o640) {
			e.fstat("c")
			e.write("c", "hi")
			e.seek("c", 0, io.SeekStart)
			e.read("c", 10)
			e.close("c")
		}
		if e.open("e", "excl", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o777) {
			e.fstat("e")
			e.close("e")
		}
		if e.open("s", "setuid", os.O_WRONLY|os.O_CREATE, 0o755|fs.ModeSetuid|fs.ModeSticky) {
			e.fstat("s")
			e.close("s")
		}
		if e.open("sy", "f", os.O_RDWR|os.O_SYNC, 0) {
			e.write("sy", "S")
			e.close("sy")
		}
		e.content("f")
	}},
	{"umask", func(e *h9Env) {
		// The process's umask applies to what both create (no test runs in parallel
		// with this one: the suite uses t.Setenv).
		defer syscall.Umask(syscall.Umask(0o027))
		if e.open("c", "c", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666) {
			e.fstat("c")
			e.fchmod("c", 0o777) // chmod is not masked
			e.fstat("c")
			e.close("c")
		}
		if e.open("x", "x", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o751) {
			e.fstat("x")
			e.close("x")
		}
		api := e.api
		e.logf("mkdir d 0777 -> %s", e.errSig(api.mkdir(e.p("d"), 0o777)))
		e.logf("mkdirAll a/b 0775 -> %s", e.errSig(api.mkdirAll(e.p("a/b"), 0o775)))
		e.logf("writeFile w 0666 -> %s", e.errSig(api.writeFile(e.p("w"), []byte("w"), 0o666)))
		for _, n := range []string{"d", "a", "a/b", "w"} {
			fi, err := api.stat(e.p(n))
			e.logf("stat %s -> %s %s", n, h9Info(fi), e.errSig(err))
		}
	}},
	{"truncate", func(e *h9Env) {
		e.mustWrite("f", h9Data)
		e.open("f", "f", os.O_RDWR, 0)
		e.truncate("f", 5)
		e.fstat("f")
		e.readAt("f", 10, 0)
		e.truncate("f", 1<<20)
		e.readAt("f", 3, 1<<20-2)
		e.truncate("f", math.MaxInt64)
		e.truncate("f", 0)
		e.read("f", 4)
		e.close("f")
		e.content("f")
	}},
	{"paths", func(e *h9Env) {
		api := e.api
		e.mustWrite("f", h9Data)
		os.Mkdir(e.p("d"), 0o755)
		e.mustWrite("d/g", "g")
		e.logf("stat missing -> %s", e.errSig(h9Second(api.stat(e.p("missing")))))
		fi, err := api.stat(e.p("f"))
		e.logf("stat f -> %s %s", h9Info(fi), e.errSig(err))
		fi, err = api.stat(e.p("f/"))
		e.logf("stat f/ -> %s %s", h9Info(fi), e.errSig(err))
		os.Symlink("f", e.p("link"))
		fi, err = api.lstat(e.p("link"))
		e.logf("lstat link -> %s %s", h9Info(fi), e.errSig(err))
		fi, err = api.stat(e.p("link"))
		e.logf("stat link -> %s %s", h9Info(fi), e.errSig(err))
		s, err := api.readlink(e.p("link"))
		e.logf("readlink link -> %q %s", s, e.errSig(err))
		s, err = api.readlink(e.p("f"))
		e.logf("readlink f -> %q %s", s, e.errSig(err))
		e.logf("remove missing -> %s", e.errSig(api.remove(e.p("missing"))))
		e.logf("remove d -> %s", e.errSig(api.remove(e.p("d"))))
		e.logf("removeAll missing -> %s", e.errSig(api.removeAll(e.p("missing"))))
		e.logf("removeAll '' -> %s", e.errSig(api.removeAll("")))
		e.logf("removeAll d/. -> %s", e.errSig(api.removeAll(e.p("d")+"/.")))
		e.logf("rename missing -> %s", e.errSig(api.rename(e.p("missing"), e.p("x"))))
		e.logf("rename f d -> %s", e.errSig(api.rename(e.p("f"), e.p("d"))))
		e.logf("mkdir d -> %s", e.errSig(api.mkdir(e.p("d"), 0o755)))
		e.logf("mkdir f -> %s", e.errSig(api.mkdir(e.p("f"), 0o755)))
		e.logf("mkdir new 0777 -> %s", e.errSig(api.mkdir(e.p("new"), 0o777)))
		fi, err = api.stat(e.p("new"))
		e.logf("stat new -> %s %s", h9Info(fi), e.errSig(err))
		e.logf("mkdirAll f/x -> %s", e.errSig(api.mkdirAll(e.p("f/x"), 0o755)))
		e.logf("mkdirAll a/b/c -> %s", e.errSig(api.mkdirAll(e.p("a/b/c"), 0o700)))
		e.logf("chmod missing -> %s", e.errSig(api.chmod(e.p("missing"), 0o644)))
		e.logf("chmod f -> %s", e.errSig(api.chmod(e.p("f"), 0o600|fs.ModeSetgid)))
		fi, err = api.stat(e.p("f"))
		e.logf("stat f -> %s %s", h9Info(fi), e.errSig(err))
		e.logf("link f f -> %s", e.errSig(api.link(e.p("f"), e.p("f"))))
		e.logf("link missing -> %s", e.errSig(api.link(e.p("missing"), e.p("y"))))
		e.logf("link f y -> %s", e.errSig(api.link(e.p("f"), e.p("y"))))
		e.logf("symlink f link -> %s", e.errSig(api.symlink("f", e.p("link"))))
		b, err := api.readFile(e.p("missing"))
		e.logf("readFile missing -> %q %s", b, e.errSig(err))
		b, err = api.readFile(e.p("d"))
		e.logf("readFile d -> %q %s", b, e.errSig(err))
		b, err = api.readFile(e.p("f/"))
		e.logf("readFile f/ -> %q %s", b, e.errSig(err))
		b, err = api.readFile("")
		e.logf("readFile '' -> %q %s", b, e.errSig(err))
		b, err = api.readFile(e.p("a\x00b"))
		e.logf("readFile NUL -> %q %s", b, e.errSig(err))
		b, err = api.readFile(e.p("link"))
		e.logf("readFile link -> %q %s", b, e.errSig(err))
		e.mustWrite("empty", "")
		b, err = api.readFile(e.p("empty"))
		e.logf("readFile empty -> %q nil=%v %s", b, b == nil, e.errSig(err))
		e.logf("writeFile nodir/x -> %s", e.errSig(api.writeFile(e.p("nodir/x"), []byte("x"), 0o644)))
		e.logf("writeFile d -> %s", e.errSig(api.writeFile(e.p("d"), []byte("x"), 0o644)))
		e.logf("writeFile w 0751 -> %s", e.errSig(api.writeFile(e.p("w"), []byte("xyz"), 0o751)))
		fi, err = api.stat(e.p("w"))
		e.logf("stat w -> %s %s", h9Info(fi), e.errSig(err))
		e.logf("rename w d/g -> %s", e.errSig(api.rename(e.p("w"), e.p("d/g"))))
		e.content("d/g")
	}},
	{"special-files", func(e *h9Env) {
		// A FIFO (opened read-write, which does not wait on Linux), /dev/zero and
		// /dev/null, and procfs files (whose size is 0).
		if syscall.Mkfifo(e.p("fifo"), 0o644) == nil && e.open("p", "fifo", os.O_RDWR, 0) {
			e.write("p", "through the pipe")
			e.read("p", 7)
			e.read("p", 100)
			e.readAt("p", 4, 0)
			e.writeAt("p", "x", 0)
			e.seek("p", 0, io.SeekCurrent)
			e.fstat("p")
			e.truncate("p", 0)
			e.close("p")
			e.read("p", 1)
		}
		if e.open("z", "/dev/zero", os.O_RDONLY, 0) {
			e.read("z", 5)
			e.readAt("z", 5, 1<<40)
			e.seek("z", 100, io.SeekStart)
			e.close("z")
		}
		if e.open("n", "/dev/null", os.O_RDWR, 0) {
			e.write("n", "gone")
			e.writeAt("n", "gone", 10)
			e.read("n", 5)
			e.readAt("n", 5, 0)
			e.close("n")
		}
		for _, name := range []string{"/proc/self/cmdline", "/proc/sys/kernel/ostype"} {
			if e.open("proc", name, os.O_RDONLY, 0) {
				e.read("proc", 3)
				e.read("proc", 1<<16)
				e.read("proc", 10)
				e.readAt("proc", 1<<16, 0)
				e.close("proc")
			}
			b, err := e.api.readFile(name)
			e.logf("readFile %s -> %q %s", name, b, e.errSig(err))
		}
	}},
	{"readdir", func(e *h9Env) {
		os.Mkdir(e.p("d"), 0o755)
		for _, n := range []string{"zeta", "alpha", "Mid", "beta", "_x", "0"} {
			e.mustWrite("d/"+n, n)
		}
		os.Mkdir(e.p("d/sub"), 0o755)
		os.Symlink("alpha", e.p("d/sym"))
		names, err := e.api.readDir(e.p("d"))
		e.logf("readDir d -> %v %s", names, e.errSig(err))
		os.Mkdir(e.p("empty"), 0o755)
		names, err = e.api.readDir(e.p("empty"))
		e.logf("readDir empty -> %v nil=%v %s", names, names == nil, e.errSig(err))
		names, err = e.api.readDir(e.p("missing"))
		e.logf("readDir missing -> %v %s", names, e.errSig(err))
		names, err = e.api.readDir(e.p("d/alpha"))
		e.logf("readDir file -> %v %s", names, e.errSig(err))
	}},
}

func h9Second[T any](_ T, err error) error { return err }

// h9RunScenario runs sc against api in a fresh directory and returns its log.
func h9RunScenario(t *testing.T, api h9API, sc h9Scenario) []string {
	t.Helper()
	e := &h9Env{t: t, api: api, dir: t.TempDir(), files: map[string]h9File{}}
	defer e.closeAll()
	sc.run(e)
	return e.log
}

// h9Variants are the blitzio configurations every scenario runs in.
type h9Variant struct {
	backend Backend
	fileIO  string
	drive   h9Drive
}

func (v h9Variant) String() string {
	return fmt.Sprintf("%v/%s/%v", v.backend, v.fileIO, v.drive)
}

func h9AllVariants() []h9Variant {
	var vs []h9Variant
	for _, be := range []Backend{BackendIOUring, BackendEpoll} {
		for _, mode := range []string{"auto", "ring", "pool"} {
			if be == BackendEpoll && mode == "ring" {
				continue // no ring on epoll: the same as pool
			}
			for _, d := range []h9Drive{h9Direct, h9Nested, h9Task} {
				vs = append(vs, h9Variant{be, mode, d})
			}
		}
	}
	return vs
}

// h9Diff reports the first lines where got differs from want.
func h9Diff(t *testing.T, what string, want, got []string) {
	t.Helper()
	bad := 0
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("%s, step %d:\n  os:      %s\n  blitzio: %s", what, i, w, g)
			if bad++; bad >= 6 {
				t.Errorf("%s: more differences not shown", what)
				return
			}
		}
	}
}

// TestHostile9FileDiffOS runs every scenario through os and through blitzio in every
// variant and compares the logs.
func TestHostile9FileDiffOS(t *testing.T) {
	for _, sc := range h9Scenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := h9RunScenario(t, h9OS{}, sc)
			for _, v := range h9AllVariants() {
				t.Run(v.String(), func(t *testing.T) {
					t.Setenv(fileIOEnv, v.fileIO)
					rt, err := New(Config{Workers: 2, Backend: v.backend})
					if err != nil {
						t.Skipf("%v: %v", v.backend, err)
					}
					defer rt.Close()
					got := h9RunScenario(t, &h9Blitz{t: t, rt: rt, drive: v.drive}, sc)
					h9Diff(t, sc.name, want, got)
				})
			}
		})
	}
}
