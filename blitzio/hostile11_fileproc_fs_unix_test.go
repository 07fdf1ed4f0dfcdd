//go:build unix

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// h11fSameErr checks that got is the error package os gave (want): the same text, and
// errors.Is agrees with it on the usual targets.
func h11fSameErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: error %v, os gives %v", what, got, want)
	}
	if got == nil {
		return
	}
	if got.Error() != want.Error() {
		t.Errorf("%s: error %q, os gives %q", what, got, want)
	}
	for _, target := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrInvalid, fs.ErrClosed,
		syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.EINVAL} {
		if errors.Is(got, target) != errors.Is(want, target) {
			t.Errorf("%s: errors.Is(%v, %v) = %v, os's error says %v", what, got, target, errors.Is(got, target), errors.Is(want, target))
		}
	}
	var pe *fs.PathError
	if errors.As(want, &pe) && !errors.As(got, &pe) {
		t.Errorf("%s: %T is not an *fs.PathError as os's is", what, got)
	}
}

// h11fTree makes a directory with a file, a directory, a symbolic link to a directory
// elsewhere, a dangling link and a link loop.
func h11fTree(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	must0 := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must0(os.WriteFile(filepath.Join(dir, "file"), []byte("payload"), 0o640))
	must0(os.MkdirAll(filepath.Join(dir, "other", "sub"), 0o755))
	must0(os.WriteFile(filepath.Join(dir, "other", "marker"), []byte("m"), 0o644))
	must0(os.Mkdir(filepath.Join(dir, "a"), 0o755))
	must0(os.Symlink(filepath.Join(dir, "other", "sub"), filepath.Join(dir, "a", "link")))
	must0(os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling")))
	must0(os.Symlink("loop2", filepath.Join(dir, "loop1")))
	must0(os.Symlink("loop1", filepath.Join(dir, "loop2")))
	return dir
}

// TestHostile11FileprocCopyFileNotRegular: Rust's fs::copy, which CopyFile says it is
// like, refuses a source that is not a regular file before it touches the destination.
// CopyFile from a directory must fail and leave an existing destination alone (it
// used to truncate it, then fail reading the directory), and create none.
func TestHostile11FileprocCopyFileNotRegular(t *testing.T) {
	rt := fileRT(t)
	dir := h11fTree(t)
	dst := filepath.Join(dir, "dst")
	if err := os.WriteFile(dst, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, rt, CopyFile(filepath.Join(dir, "other"), dst))
	if r.Err == nil {
		t.Fatalf("CopyFile of a directory copied %d bytes and reported no error", r.Value)
	}
	var pe *fs.PathError
	if !errors.As(r.Err, &pe) {
		t.Errorf("CopyFile of a directory: %T %v, want an *fs.PathError", r.Err, r.Err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "precious" {
		t.Fatalf("CopyFile of a directory onto an existing file left it as %q (%v), want it untouched", b, err)
	}
	fresh := filepath.Join(dir, "fresh")
	if r := run(t, rt, CopyFile(filepath.Join(dir, "other"), fresh)); r.Err == nil {
		t.Fatal("CopyFile of a directory to a new name succeeded")
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyFile of a directory created its destination: %v", err)
	}
}

// TestHostile11FileprocCopyFileOntoItself: copying a file onto itself (the same name,
// a hard link, or a symbolic link to it) must not destroy it. With the destination
// opened O_TRUNC first, the source was emptied before a byte was read, and CopyFile
// reported success with 0 bytes. cp(1) refuses; so must CopyFile, with the file intact.
func TestHostile11FileprocCopyFileOntoItself(t *testing.T) {
	rt := fileRT(t)
	dir := h11fTree(t)
	src := filepath.Join(dir, "file")
	if err := os.Link(src, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, filepath.Join(dir, "soft")); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{src, filepath.Join(dir, "hard"), filepath.Join(dir, "soft"), filepath.Join(dir, ".", "file")} {
		r := run(t, rt, CopyFile(src, dst))
		if b, err := os.ReadFile(src); err != nil || string(b) != "payload" {
			t.Fatalf("CopyFile(%s, %s) = (%d, %v) left the source as %q (%v)", src, dst, r.Value, r.Err, b, err)
		}
		if r.Err == nil {
			t.Fatalf("CopyFile(%s, %s) onto the same file reported success (%d bytes)", src, dst, r.Value)
		}
		if !errors.Is(r.Err, fs.ErrInvalid) {
			t.Errorf("CopyFile onto itself: %v, want an error matching fs.ErrInvalid", r.Err)
		}
	}
}

// TestHostile11FileprocCopyFileErrors: the errors of a copy are os's, for the source and
// the destination: errors.Is(err, fs.ErrNotExist) and friends work as with os.Open and
// os.OpenFile, and a failed copy from a missing source creates nothing.
func TestHostile11FileprocCopyFileErrors(t *testing.T) {
	rt := fileRT(t)
	dir := h11fTree(t)
	src := filepath.Join(dir, "file")
	cases := []struct {
		name, src, dst string
		osErr          func() error
	}{
		{"missing source", filepath.Join(dir, "nope"), filepath.Join(dir, "d1"),
			func() error { _, err := os.Open(filepath.Join(dir, "nope")); return err }},
		{"dangling source", filepath.Join(dir, "dangling"), filepath.Join(dir, "d2"),
			func() error { _, err := os.Open(filepath.Join(dir, "dangling")); return err }},
		{"source under a file", filepath.Join(dir, "file", "x"), filepath.Join(dir, "d3"),
			func() error { _, err := os.Open(filepath.Join(dir, "file", "x")); return err }},
		{"source loop", filepath.Join(dir, "loop1"), filepath.Join(dir, "d4"),
			func() error { _, err := os.Open(filepath.Join(dir, "loop1")); return err }},
		{"destination directory missing", src, filepath.Join(dir, "nodir", "d5"),
			func() error {
				_, err := os.OpenFile(filepath.Join(dir, "nodir", "d5"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
				return err
			}},
		{"destination is a directory", src, filepath.Join(dir, "other"),
			func() error {
				_, err := os.OpenFile(filepath.Join(dir, "other"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
				return err
			}},
	}
	for _, c := range cases {
		r := run(t, rt, CopyFile(c.src, c.dst))
		h11fSameErr(t, "CopyFile: "+c.name, r.Err, c.osErr())
		if r.Value != 0 {
			t.Errorf("CopyFile: %s: %d bytes", c.name, r.Value)
		}
	}
	for _, d := range []string{"d1", "d2", "d3", "d4"} {
		if _, err := os.Lstat(filepath.Join(dir, d)); err == nil {
			t.Errorf("a CopyFile from a bad source created %s", d)
		}
	}
	// A destination that is not a regular file is written as os would (no truncation).
	if r := run(t, rt, CopyFile(src, os.DevNull)); r.Err != nil || r.Value != 7 {
		t.Errorf("CopyFile to %s: %d, %v", os.DevNull, r.Value, r.Err)
	}
	// And the ordinary copy, through a link, to a new file and over an existing one.
	for _, dst := range []string{filepath.Join(dir, "new"), filepath.Join(dir, "new")} {
		if n := must(t, rt, CopyFile(filepath.Join(dir, "a", "..", "file"), dst)); n != 7 {
			t.Fatalf("CopyFile copied %d bytes", n)
		}
		if b, _ := os.ReadFile(dst); string(b) != "payload" {
			t.Fatalf("copy holds %q", b)
		}
	}
}

// TestHostile11FileprocCanonicalize: Canonicalize is Rust's fs::canonicalize, that is
// realpath(3): the absolute path naming the file the OS would open for name. A ".."
// after a symbolic link climbs from the link's target, not from the link's directory
// (filepath.Abs cleaned it away lexically first, naming another directory); a
// trailing slash on a file, and the empty name, fail as they do for the OS.
func TestHostile11FileprocCanonicalize(t *testing.T) {
	rt := fileRT(t)
	dir := h11fTree(t)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]string{
		filepath.Join(dir, "a", "link"):                         filepath.Join(real, "other", "sub"),
		dir + "/a/link/..":                                      filepath.Join(real, "other"),
		dir + "/a/link/../marker":                               filepath.Join(real, "other", "marker"),
		dir + "//a/./link/":                                     filepath.Join(real, "other", "sub"),
		dir + "/a/../file":                                      filepath.Join(real, "file"),
		dir + "/" + strings.Repeat("./", 10) + "other/sub/..":   filepath.Join(real, "other"),
		dir + "/a/link/../../file":                              filepath.Join(real, "file"),
		dir + "/a/link/../../../" + filepath.Base(dir) + "/a/.": filepath.Join(real, "a"),
	}
	for name, want := range good {
		got := must(t, rt, Canonicalize(name))
		if got != want {
			t.Errorf("Canonicalize(%q) = %q, want %q", name, got, want)
		}
		// It names the file the OS opens for name.
		st1, err1 := os.Stat(name)
		st2, err2 := os.Stat(got)
		if err1 != nil || err2 != nil || !os.SameFile(st1, st2) {
			t.Errorf("Canonicalize(%q) = %q, which is not the file the OS opens for it (%v %v)", name, got, err1, err2)
		}
	}
	// A relative name is taken from the working directory.
	t.Chdir(filepath.Join(dir, "a"))
	if got := must(t, rt, Canonicalize("link/..")); got != filepath.Join(real, "other") {
		t.Errorf("Canonicalize(\"link/..\") from %s = %q, want %q", filepath.Join(dir, "a"), got, filepath.Join(real, "other"))
	}
	if got := must(t, rt, Canonicalize(".")); got != filepath.Join(real, "a") {
		t.Errorf("Canonicalize(\".\") = %q", got)
	}
	bad := map[string]error{
		"":                                 fs.ErrNotExist,
		filepath.Join(dir, "missing"):      fs.ErrNotExist,
		filepath.Join(dir, "dangling"):     fs.ErrNotExist,
		dir + "/file/":                     syscall.ENOTDIR,
		dir + "/file/.":                    syscall.ENOTDIR,
		dir + "/file/..":                   syscall.ENOTDIR,
		filepath.Join(dir, "file", "x"):    syscall.ENOTDIR,
		filepath.Join(dir, "loop1"):        nil, // some error; which one is filepath's choice
		filepath.Join(dir, "loop1", "foo"): nil,
	}
	for name, want := range bad {
		r := run(t, rt, Canonicalize(name))
		if r.Err == nil {
			t.Errorf("Canonicalize(%q) = %q, want an error (the OS cannot open it: %v)", name, r.Value, func() error { _, err := os.Stat(name); return err }())
			continue
		}
		if want != nil && !errors.Is(r.Err, want) {
			t.Errorf("Canonicalize(%q): %v, want an error matching %v", name, r.Err, want)
		}
		var pe *fs.PathError
		if !errors.As(r.Err, &pe) {
			t.Errorf("Canonicalize(%q): %T %v, want an *fs.PathError as the package's errors are", name, r.Err, r.Err)
		}
	}
}

// TestHostile11FileprocExists: Exists agrees with os.Stat: true for a file, a directory
// and a link to one, false (no error) for a missing name or a dangling link, and os's
// own error for anything else (a component that is a file, a link loop), as Rust's
// fs::exists does.
func TestHostile11FileprocExists(t *testing.T) {
	rt := fileRT(t)
	dir := h11fTree(t)
	for name, want := range map[string]bool{
		filepath.Join(dir, "file"):      true,
		filepath.Join(dir, "other"):     true,
		filepath.Join(dir, "a", "link"): true,
		filepath.Join(dir, "missing"):   false,
		filepath.Join(dir, "dangling"):  false,
		"":                              false,
	} {
		r := run(t, rt, Exists(name))
		if r.Err != nil || r.Value != want {
			t.Errorf("Exists(%q) = (%v, %v), want (%v, nil)", name, r.Value, r.Err, want)
		}
	}
	for _, name := range []string{filepath.Join(dir, "file", "x"), filepath.Join(dir, "loop1"), dir + "/" + strings.Repeat("x", 300)} {
		r := run(t, rt, Exists(name))
		_, osErr := os.Stat(name)
		if r.Value {
			t.Errorf("Exists(%q) = true with os.Stat failing %v", name, osErr)
		}
		h11fSameErr(t, "Exists("+filepath.Base(name)+")", r.Err, osErr)
	}
}

// TestHostile11FileprocDirReaderCloseInFlight: Close while the directory's open, or a
// batch read, runs on the blocking pool: Close returns at once, Next fails with
// fs.ErrClosed, and the descriptor the running call opened or used is closed once it
// ends (none leaks).
func TestHostile11FileprocDirReaderCloseInFlight(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 1})
	dir := t.TempDir()
	for i := range 3*dirBatch + 1 {
		os.WriteFile(filepath.Join(dir, "f"+itoa(i)), nil, 0o644)
	}
	fdsOn := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		n := 0
		for _, e := range ents {
			if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == dir {
				n++
			}
		}
		return n
	}
	fdsOn()
	for round := range 40 {
		// Hold the only pool goroutine, so that the reader's call is queued or running
		// when Close comes.
		gate := make(chan struct{})
		blocker := SpawnBlocking(rt, func() int { <-gate; return 0 })
		d := ReadDir(dir)
		pollFirst := func() {
			hostile3Watch(t, 20*time.Second, "a DirReader poll", func() {
				BlockOn(rt, PollFn(func(cx *Context) (struct{}, bool) {
					d.PollNext(cx)
					return struct{}{}, true
				}))
			})
		}
		if round%2 == 1 {
			// Past the open: the first entry, then drain the batch so the next poll
			// starts a batch read.
			close(gate)
			waitHandleFor(t, blocker, "the blocker")
			for range dirBatch {
				r := run(t, rt, d.Next())
				if r.Err != nil {
					t.Fatalf("Next: %v", r.Err)
				}
			}
			gate = make(chan struct{})
			blocker = SpawnBlocking(rt, func() int { <-gate; return 0 })
		}
		pollFirst() // starts the open (or the next batch) on the pool, behind the blocker
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: Close with a call in flight: %v", round, err)
		}
		if r := run(t, rt, d.Next()); !errors.Is(r.Err, fs.ErrClosed) {
			t.Fatalf("round %d: Next after Close: %v", round, r.Err)
		}
		if err := d.Close(); !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("round %d: second Close: %v", round, err)
		}
		close(gate)
		waitHandleFor(t, blocker, "the blocker")
		waitFor(t, "the directory descriptor to be closed after Close", func() bool { return fdsOn() == 0 })
	}
	var nilDir *DirReader
	if err := nilDir.Close(); !errors.Is(err, os.ErrInvalid) {
		t.Fatalf("Close of a nil DirReader: %v", err)
	}
	if r := run(t, rt, nilDir.Next()); !errors.Is(r.Err, os.ErrInvalid) {
		t.Fatalf("Next of a nil DirReader: %v", r.Err)
	}
}

// TestHostile11FileprocCopyFileLarge copies a file larger than one read and checks the
// bytes and the count, and that the source's permission bits (less the umask) are the
// new file's.
func TestHostile11FileprocCopyFileLarge(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := bytes.Repeat([]byte("0123456789abcdefghij"), 1<<16)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if n := must(t, rt, CopyFile(src, dst)); n != int64(len(data)) {
		t.Fatalf("CopyFile = %d, want %d", n, len(data))
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _ := io.ReadAll(f)
	if !bytes.Equal(got, data) {
		t.Fatal("the copy differs")
	}
	if st, _ := f.Stat(); st.Mode().Perm() != 0o600 {
		t.Fatalf("copy of a 0o600 file has mode %v", st.Mode())
	}
}
