//go:build linux

package poller

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func needFileRW(t *testing.T, r *ioUring) {
	t.Helper()
	if r.Features()&FileReadWrite == 0 {
		t.Skip("kernel lacks IORING_OP_READ/WRITE with the file position")
	}
}

// TestUringFileReadWrite writes and reads a regular file at offsets and at the file
// position, and reads past the end (0 bytes, the end-of-file result).
func TestUringFileReadWrite(t *testing.T) {
	defer watchdog(t, 30e9)()
	r := newTestUring(t, IOUringConfig{})
	needFileRW(t, r)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	data := []byte("hello, ring")
	if err := r.WriteAt(fd, 1, data, 100); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "write", func(ev Event) bool {
		if ev.Token == 1 && ev.Op != OpWrite {
			t.Fatalf("op %v, want OpWrite", ev.Op)
		}
		if ev.Token == 1 && ev.Res != int32(len(data)) {
			t.Fatalf("write: res %d, want %d", ev.Res, len(data))
		}
		return ev.Token == 1
	})
	got := make([]byte, 64)
	if err := r.ReadAt(fd, 2, got, 100); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "read", func(ev Event) bool {
		if ev.Token == 2 && (ev.Op != OpRead || ev.Res != int32(len(data))) {
			t.Fatalf("read: op %v res %d, want OpRead %d (short: the file ends)", ev.Op, ev.Res, len(data))
		}
		return ev.Token == 2
	})
	if !bytes.Equal(got[:len(data)], data) {
		t.Fatalf("read %q, want %q", got[:len(data)], data)
	}
	if err := r.ReadAt(fd, 3, got, 1<<20); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "read past the end", func(ev Event) bool {
		if ev.Token == 3 && ev.Res != 0 {
			t.Fatalf("read past the end: res %d, want 0", ev.Res)
		}
		return ev.Token == 3
	})
	// Offset -1 reads at the file position (0 here) and moves it.
	if err := r.ReadAt(fd, 4, got[:5], -1); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "read at the position", func(ev Event) bool { return ev.Token == 4 })
	if pos, _ := f.Seek(0, 1); pos != 5 {
		t.Fatalf("position after a 5-byte read at -1: %d", pos)
	}
	// A write on a read-only descriptor fails with -EBADF.
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := r.WriteAt(int(ro.Fd()), 5, data, 0); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "write on a read-only fd", func(ev Event) bool {
		if ev.Token == 5 && ev.Res != -int32(unix.EBADF) {
			t.Fatalf("write on O_RDONLY: %s, want EBADF", errnoName(ev.Res))
		}
		return ev.Token == 5
	})
	if err := r.ReadAt(fd, 6, got, -2); err == nil {
		t.Fatal("ReadAt at offset -2 was accepted")
	}
}

// TestUringFileReadCancel cancels a read that waits (a pipe with no writer activity):
// it must end with -ECANCELED, and a byte written afterwards must still be in the pipe
// (the cancelled read consumed nothing).
func TestUringFileReadCancel(t *testing.T) {
	defer watchdog(t, 30e9)()
	r := newTestUring(t, IOUringConfig{})
	needFileRW(t, r)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil { // blocking: the ring waits
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := make([]byte, 16)
	if err := r.ReadAt(p[0], 9, buf, -1); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	if evs := drainEvents(t, r); len(evs) != 0 {
		t.Fatalf("a read of an empty pipe completed: %+v", evs)
	}
	if err := r.Cancel(9); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "cancelled read", func(ev Event) bool {
		if ev.Token == 9 && ev.Res != -int32(unix.ECANCELED) && ev.Res != -int32(unix.EINTR) {
			t.Fatalf("cancelled read: %s", errnoName(ev.Res))
		}
		return ev.Token == 9
	})
	unix.Write(p[1], []byte{42})
	var one [1]byte
	if n, err := unix.Read(p[0], one[:]); n != 1 || one[0] != 42 {
		t.Fatalf("byte after the cancelled read: %d %v %v", n, one, err)
	}
}
