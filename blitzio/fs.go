package blitzio

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// blockingFuture runs a call on the blocking pool at its first poll and returns its
// value and error. A dropped blockingFuture lets the call finish and discards the result.
type blockingFuture[T any] struct {
	call   func() (T, error)
	h      JoinHandle[Result[T]]
	start  bool
	done   bool
	direct bool // polled by BlockOn itself: the call runs on the polling goroutine
	res    Result[T]
}

// callerBlocks is implemented by the futures whose work is a blocking call of package
// os (the file-system operations). BlockOn tells the future it was given, before its
// first poll, that it is polled on the caller's own goroutine, which may block: the
// future then makes its calls right there, as package os would, instead of handing
// them to the blocking pool (a wake-up of a pool goroutine, then one of the caller's)
// or trying them first in the ways that cannot block a worker. Only the future given
// to BlockOn is told: one nested in a combinator (a Timeout, a Select) keeps using the
// pool, so that its timers and siblings still run while the call blocks.
type callerBlocks interface{ onCallerGoroutine() }

func (b *blockingFuture[T]) onCallerGoroutine() { b.direct = true }

func blockingCall[T any](call func() (T, error)) *blockingFuture[T] {
	return &blockingFuture[T]{call: call}
}

// Poll implements Future.
func (b *blockingFuture[T]) Poll(cx *Context) (Result[T], bool) {
	if b.done {
		return b.res, true
	}
	if !b.start {
		call := b.call
		b.call, b.start = nil, true
		if b.direct {
			v, err := call()
			b.done, b.res = true, Result[T]{Value: v, Err: err}
			return b.res, true
		}
		b.h = SpawnBlocking(cx, func() Result[T] {
			v, err := call()
			return Result[T]{Value: v, Err: err}
		})
	}
	r, ok := b.h.Poll(cx)
	if !ok {
		return Result[T]{}, false
	}
	b.done = true
	if r.Err != nil {
		b.res = Result[T]{Err: r.Err}
	} else {
		b.res = r.Value
	}
	return b.res, true
}

// The file-system operations below are futures over the functions of package os of the
// same name (Tokio's tokio::fs): they run on the blocking pool and return os's errors.
// Given directly to BlockOn (not inside a combinator), they run on the goroutine that
// called BlockOn, which waits for them either way, as package os runs them.

// ReadFile returns a future of the whole content of a file, like os.ReadFile.
//
// On Linux a regular file of a local file system whose path and pages are all in the
// kernel's caches is read by the worker itself, with system calls that fail rather than
// wait (openat2 RESOLVE_CACHED, preadv2 RWF_NOWAIT): no hop to the blocking pool.
// Anything else (a page-cache miss, a FIFO, a network or FUSE file system, whose open is
// a round trip to a server) runs on the blocking pool. The
// environment variable BLITZIO_FILEIO=pool or ring, read at each call, skips the
// worker's attempt.
func ReadFile(name string) Future[Result[[]byte]] {
	return &readFileFuture{name: name}
}

// readFileFuture is ReadFile's future: the worker's non-blocking attempt, then the pool.
type readFileFuture struct {
	name   string
	pool   *blockingFuture[[]byte]
	res    Result[[]byte]
	done   bool
	direct bool // see callerBlocks
}

func (r *readFileFuture) onCallerGoroutine() { r.direct = true }

func (r *readFileFuture) Poll(cx *Context) (Result[[]byte], bool) {
	if r.done {
		return r.res, true
	}
	if r.direct && r.pool == nil {
		data, err := os.ReadFile(r.name)
		r.done, r.res = true, Result[[]byte]{Value: data, Err: err}
		return r.res, true
	}
	if r.pool == nil {
		if !cx.ConsumeBudget() {
			return Result[[]byte]{}, false // may complete on the worker: yield first when due
		}
		if fileIOFromEnv()&fileNoWait != 0 {
			if data, ok, err := readFileNoWait(r.name); ok {
				r.done, r.res = true, Result[[]byte]{Value: data, Err: err}
				return r.res, true
			}
		}
		name := r.name
		r.pool = blockingCall(func() ([]byte, error) { return os.ReadFile(name) })
	}
	res, ok := r.pool.Poll(cx)
	if ok {
		r.done, r.res, r.pool = true, res, nil
	}
	return res, ok
}

// WriteFile returns a future that writes data to a file, creating it with perm or
// truncating it, like os.WriteFile. data is not copied: leave it untouched until the
// future completes (and after a drop, until the blocking call has ended).
func WriteFile(name string, data []byte, perm fs.FileMode) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.WriteFile(name, data, perm) })
}

// CopyFile returns a future that copies the content of src to dst, like Rust's fs::copy;
// it returns the byte count. A new dst is created with src's permission bits (less the
// umask); an existing one is truncated and keeps its own. As fs::copy does, CopyFile
// refuses a src that is not a regular file (a directory, a device, a FIFO once it has
// opened), before dst is touched, with an *fs.PathError matching fs.ErrInvalid; so it
// does for a dst that is src itself (the same name, a hard or symbolic link to it),
// which the truncation would otherwise empty before a byte was read.
func CopyFile(src, dst string) Future[Result[int64]] {
	return blockingCall(func() (int64, error) {
		in, err := os.Open(src)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		st, err := in.Stat()
		if err != nil {
			return 0, err
		}
		if !st.Mode().IsRegular() {
			// Checked before dst is opened: a failed copy must not have truncated it.
			return 0, &fs.PathError{Op: "copy", Path: src, Err: errCopy("the source is not a regular file")}
		}
		// Not O_TRUNC: whether dst is src must be known before anything is cut.
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE, st.Mode().Perm())
		if err != nil {
			return 0, err
		}
		ost, err := out.Stat()
		switch {
		case err != nil:
		case os.SameFile(st, ost):
			err = &fs.PathError{Op: "copy", Path: dst, Err: errCopy("the destination is the source")}
		case ost.Mode().IsRegular() && ost.Size() > 0:
			// What O_TRUNC would have done (it does nothing to a device or a FIFO,
			// where Truncate would fail).
			err = out.Truncate(0)
		}
		if err != nil {
			out.Close()
			return 0, err
		}
		n, err := io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return n, err
	})
}

// errCopy is why CopyFile refused a copy; it matches fs.ErrInvalid, as Rust's InvalidInput.
type errCopy string

func (e errCopy) Error() string { return "blitzio: CopyFile: " + string(e) }

// Is makes errors.Is(err, fs.ErrInvalid) true.
func (e errCopy) Is(target error) bool { return target == fs.ErrInvalid }

// Rename returns a future that renames (moves) a file, like os.Rename.
func Rename(oldpath, newpath string) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Rename(oldpath, newpath) })
}

// Remove returns a future that removes a file or an empty directory, like os.Remove.
func Remove(name string) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Remove(name) })
}

// RemoveAll returns a future that removes a path and everything it contains, like
// os.RemoveAll.
func RemoveAll(path string) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.RemoveAll(path) })
}

// Mkdir returns a future that creates a directory, like os.Mkdir.
func Mkdir(name string, perm fs.FileMode) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Mkdir(name, perm) })
}

// MkdirAll returns a future that creates a directory and its missing parents, like
// os.MkdirAll.
func MkdirAll(path string, perm fs.FileMode) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.MkdirAll(path, perm) })
}

// Stat returns a future of a file's metadata, following symbolic links, like os.Stat.
func Stat(name string) Future[Result[fs.FileInfo]] {
	return blockingCall(func() (fs.FileInfo, error) { return os.Stat(name) })
}

// Lstat returns a future of a file's metadata without following a final symbolic link,
// like os.Lstat.
func Lstat(name string) Future[Result[fs.FileInfo]] {
	return blockingCall(func() (fs.FileInfo, error) { return os.Lstat(name) })
}

// Chmod returns a future that changes a file's permissions, like os.Chmod.
func Chmod(name string, mode fs.FileMode) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Chmod(name, mode) })
}

// Link returns a future that creates newname as a hard link to oldname, like os.Link.
func Link(oldname, newname string) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Link(oldname, newname) })
}

// Symlink returns a future that creates newname as a symbolic link to oldname, like
// os.Symlink.
func Symlink(oldname, newname string) Future[Result[struct{}]] {
	return blockingCall(func() (struct{}, error) { return struct{}{}, os.Symlink(oldname, newname) })
}

// Readlink returns a future of a symbolic link's target, like os.Readlink.
func Readlink(name string) Future[Result[string]] {
	return blockingCall(func() (string, error) { return os.Readlink(name) })
}

// Canonicalize returns a future of the absolute path of name with every symbolic link
// resolved, like Rust's fs::canonicalize (realpath(3)): the path names the file the OS
// opens for name. The path must exist. A ".." after a symbolic link climbs from the
// link's target, as the OS does (a relative name is taken from the working directory
// without cleaning it first: filepath.Abs would remove "link/.." lexically), and a
// trailing slash or "." after a file fails with ENOTDIR. Errors are *fs.PathError
// (the empty name: fs.ErrNotExist, as os.Stat reports it).
func Canonicalize(name string) Future[Result[string]] {
	return blockingCall(func() (string, error) {
		if name == "" {
			return "", &fs.PathError{Op: "canonicalize", Path: name, Err: syscall.ENOENT}
		}
		abs := name
		switch {
		case filepath.IsAbs(name):
		case filepath.VolumeName(name) != "" || os.IsPathSeparator(name[0]):
			// Windows' drive-relative and rooted names: Abs knows them.
			var err error
			if abs, err = filepath.Abs(name); err != nil {
				return "", err
			}
		default:
			wd, err := os.Getwd()
			if err != nil {
				return "", err
			}
			abs = wd + string(filepath.Separator) + name // not Join: it cleans
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				// EvalSymlinks' own errors (ENOTDIR, too many links) are bare.
				err = &fs.PathError{Op: "canonicalize", Path: name, Err: err}
			}
			return "", err
		}
		return real, nil
	})
}

// Exists returns a future that reports whether name exists (following symbolic links).
// Errors other than "does not exist" (permission denied on a parent, say) are returned.
func Exists(name string) Future[Result[bool]] {
	return blockingCall(func() (bool, error) {
		_, err := os.Stat(name)
		switch {
		case err == nil:
			return true, nil
		case os.IsNotExist(err):
			return false, nil
		}
		return false, err
	})
}

// DirReader streams the entries of a directory, a batch at a time from the blocking
// pool: a directory of a million entries is never held in memory at once. Create it with
// ReadDir and Close it when done. A DirReader is for one task at a time.
type DirReader struct {
	name   string
	f      *os.File
	batch  []fs.DirEntry
	err    error
	next   *blockingFuture[[]fs.DirEntry]
	open   *blockingFuture[*os.File]
	closed bool
}

// dirBatch is how many entries one blocking call reads.
const dirBatch = 256

// ReadDir returns a reader of the entries of the directory name (in directory order,
// not sorted, unlike os.ReadDir). Errors, opening included, come from Next, in
// os.ReadDir's form: a name that is not a directory fails the open with ENOTDIR (without
// opening it: a FIFO's open would wait for a writer).
func ReadDir(name string) *DirReader {
	return &DirReader{name: name}
}

// PollNext returns the next entry, or io.EOF after the last one. On a nil *DirReader it
// fails with os.ErrInvalid, as os.File's ReadDir does on a nil *os.File.
func (d *DirReader) PollNext(cx *Context) (Result[fs.DirEntry], bool) {
	if d == nil {
		return Result[fs.DirEntry]{Err: os.ErrInvalid}, true
	}
	for {
		if len(d.batch) > 0 {
			if !cx.ConsumeBudget() {
				return Result[fs.DirEntry]{}, false
			}
			e := d.batch[0]
			d.batch = d.batch[1:]
			return Result[fs.DirEntry]{Value: e}, true
		}
		if d.err != nil {
			return Result[fs.DirEntry]{Err: d.err}, true
		}
		if d.f == nil {
			if d.open == nil {
				name := d.name
				d.open = blockingCall(func() (*os.File, error) { return openDir(name) })
			}
			r, ok := d.open.Poll(cx)
			if !ok {
				return Result[fs.DirEntry]{}, false
			}
			if r.Err != nil {
				d.err = r.Err
				continue
			}
			d.f = r.Value
		}
		if d.next == nil {
			f := d.f
			d.next = blockingCall(func() ([]fs.DirEntry, error) { return f.ReadDir(dirBatch) })
		}
		r, ok := d.next.Poll(cx)
		if !ok {
			return Result[fs.DirEntry]{}, false
		}
		d.next = nil
		d.batch = r.Value
		if r.Err != nil {
			d.err = r.Err // io.EOF at the end
		}
	}
}

// Next returns a future of the next entry (io.EOF after the last one).
func (d *DirReader) Next() Future[Result[fs.DirEntry]] { return PollFn(d.PollNext) }

// Close releases the directory. A Next in flight finishes on the blocking pool first.
// As with os.File, Next after Close fails with an *fs.PathError wrapping fs.ErrClosed
// (the entries read and not yet returned are dropped), and so does a second Close.
func (d *DirReader) Close() error {
	if d == nil {
		return os.ErrInvalid
	}
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.name, Err: os.ErrClosed}
	}
	d.closed = true
	d.batch = nil
	d.err = &fs.PathError{Op: "readdirent", Path: d.name, Err: os.ErrClosed}
	f := d.f
	d.f = nil
	if f == nil {
		if d.open != nil && d.open.start && !d.open.done {
			// The open is running: close what it opens, once it has.
			h := d.open.h
			go func() {
				if r, err := h.Wait(); err == nil && r.Err == nil {
					r.Value.Close()
				}
			}()
		}
		return nil
	}
	if d.next != nil && d.next.start && !d.next.done {
		// A batch read is running on f: close after it, from the pool.
		h := d.next.h
		go func() { h.Wait(); f.Close() }()
		return nil
	}
	return f.Close()
}
