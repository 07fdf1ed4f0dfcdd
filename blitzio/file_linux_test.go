//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFileDiskFull writes past the end of a 64 KiB tmpfs: the write-behind error must
// reach the caller (from a later write, Flush or Close), as ENOSPC.
func TestFileDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("disk full: skipped, cannot mount a small tmpfs here (%v)", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	rt := fileRT(t)
	f := must(t, rt, Create(dir+"/big"))
	w := run(t, rt, writeAll(f, bytes.Repeat([]byte("x"), 1<<20)))
	fl := run(t, rt, f.Flush())
	cl := run(t, rt, f.Close())
	err := errors.Join(w.Err, fl.Err, cl.Err)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("1 MiB into a 64 KiB tmpfs: write %v, flush %v, close %v; want ENOSPC", w.Err, fl.Err, cl.Err)
	}
}

// TestFilePermissionDenied checks that a read refused by file permissions fails with an
// error matching fs.ErrPermission. Root bypasses permissions, so as root the check runs
// in a child process (this test binary again) with the credentials of nobody.
func TestFilePermissionDenied(t *testing.T) {
	if path := os.Getenv("BLITZIO_PERM_CHILD"); path != "" {
		rt := fileRT(t)
		r := run(t, rt, ReadFile(path))
		if !errors.Is(r.Err, fs.ErrPermission) {
			t.Fatalf("ReadFile of a 0o000 file as uid %d: %v, want fs.ErrPermission", os.Geteuid(), r.Err)
		}
		return
	}
	dir, err := os.MkdirTemp("", "blitzio-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	locked := filepath.Join(dir, "locked")
	if err := os.WriteFile(locked, []byte("secret"), 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Setenv("BLITZIO_PERM_CHILD", locked)
		TestFilePermissionDenied(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary sits in a directory only root may enter: run a copy from ours.
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "child.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestFilePermissionDenied$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BLITZIO_PERM_CHILD="+locked)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("cannot start a child as nobody here (%v)", err)
		}
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("child as nobody did not pass:\n%s", out)
	}
}
