//go:build unix

package blitzio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// poolThreads is the number of blocking-pool goroutines rt has started so far (they
// start on demand, so a runtime that never used its pool has none).
func poolThreads(rt *Runtime) int {
	rt.blocking.mu.Lock()
	defer rt.blocking.mu.Unlock()
	return rt.blocking.threads
}

// TestBlockOnFileOpsOnCaller: a file-system future given to BlockOn itself runs on the
// calling goroutine (callerBlocks), with the results and errors package os gives, and
// the blocking pool is never started; the same futures under a wrapper (as inside a
// combinator) still go to the pool, whose first job starts a goroutine.
func TestBlockOnFileOpsOnCaller(t *testing.T) {
	t.Setenv(fileIOEnv, "pool") // no worker-side attempt either: only the pool or the caller
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	rt := fileRT(t)

	if r, err := BlockOn(rt, WriteFile(name, []byte("hello, world"), 0o644)); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if r, err := BlockOn(rt, ReadFile(name)); err != nil || r.Err != nil || string(r.Value) != "hello, world" {
		t.Fatalf("ReadFile: %q, %v, %v", r.Value, err, r.Err)
	}
	if r, err := BlockOn(rt, Stat(name)); err != nil || r.Err != nil || r.Value.Size() != 12 {
		t.Fatalf("Stat: %v, %v, %v", r.Value, err, r.Err)
	}
	r, err := BlockOn(rt, Open(name))
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	f := r.Value
	buf := make([]byte, 5)
	if n, err := BlockOn(rt, f.ReadAt(buf, 7)); err != nil || n.Err != nil || string(buf[:n.Value]) != "world" {
		t.Fatalf("ReadAt: %q, %v, %v", buf[:n.Value], err, n.Err)
	}
	if m, err := BlockOn(rt, f.Stat()); err != nil || m.Err != nil || m.Value.Size() != 12 {
		t.Fatalf("File.Stat: %v, %v", err, m.Err)
	}
	if c, err := BlockOn(rt, f.Close()); err != nil || c.Err != nil {
		t.Fatal(err, c.Err)
	}
	if c, _ := BlockOn(rt, f.Close()); !errors.Is(c.Err, os.ErrClosed) {
		t.Fatalf("second Close: %v, want os.ErrClosed", c.Err)
	}
	// Errors in os's form, from the direct calls too.
	var pe *fs.PathError
	if r, _ := BlockOn(rt, Open(filepath.Join(dir, "missing"))); !errors.Is(r.Err, fs.ErrNotExist) || !errors.As(r.Err, &pe) {
		t.Fatalf("Open of a missing file: %v, want a *fs.PathError for fs.ErrNotExist", r.Err)
	}
	if r, _ := BlockOn(rt, ReadFile(filepath.Join(dir, "missing"))); !errors.Is(r.Err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", r.Err)
	}
	if n := poolThreads(rt); n != 0 {
		t.Fatalf("%d blocking-pool goroutines started by futures given to BlockOn, want 0", n)
	}

	// Nested, the same kind of future goes to the pool.
	if r := run(t, rt, Stat(name)); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := poolThreads(rt); n == 0 {
		t.Fatal("a nested Stat did not use the blocking pool")
	}
}

// TestBlockOnNestedFileOpKeepsTimers: an Open under Timeout, given to BlockOn, is not run
// on the calling goroutine (it would block there and the timeout could not fire): the
// Open of a FIFO that no writer opens times out, and its pool job ends once one does.
func TestBlockOnNestedFileOpKeepsTimers(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	rt := fileRT(t)
	done := make(chan Result[Result[*File]], 1)
	go func() {
		r, _ := BlockOn(rt, Timeout(10*time.Millisecond, Open(fifo)))
		done <- r
	}()
	select {
	case r := <-done:
		if !errors.Is(r.Err, ErrTimeout) {
			t.Fatalf("Timeout(Open(fifo)): %v, want ErrTimeout", r.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Timeout(Open(fifo)) given to BlockOn did not time out: the open ran on the caller")
	}
	// Let the pool's open of the FIFO finish, so that Close does not wait on it forever.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}
