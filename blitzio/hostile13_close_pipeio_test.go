//go:build linux || darwin || freebsd

package blitzio

// Runtime.Close and Shutdown with a File's read or write in flight on the blocking pool:
// on a descriptor in Go's poller (a pipe) the call is interrupted and the shutdown
// returns, losing nothing the File promises; on a descriptor outside the poller (a pipe
// in blocking mode), and for a SpawnBlocking job the user blocks, the shutdown waits
// (Shutdown with a deadline returns the context's error), as documented. Also: a job
// that reaches its call after the shutdown began, and a File closed during the
// shutdown.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// h13cRegistered reports whether a pool job of rt is in a read or write of f's file
// that the shutdown would interrupt (registered in the pool's ioOps).
func h13cRegistered(rt *Runtime, f *File) bool {
	p := &rt.blocking
	p.ioMu.Lock()
	defer p.ioMu.Unlock()
	for op := range p.ioOps {
		if op.f == f.b.f {
			return true
		}
	}
	return false
}

// h13cStop stops rt with Close, or with Shutdown and a context whose deadline is far
// off, and fails the test if it does not return, or returns an error.
func h13cStop(t *testing.T, rt *Runtime, how string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		if how == "Close" {
			done <- rt.Close()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- rt.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return in 20s with a File's pipe I/O in flight (it waits for the pool job)", how)
	}
}

func h13cRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// h13cReadFrom reads f to its end on rt in a task, with the write end w fed by feed
// once the read waits on the pool (so the pool call is the one that reads), and
// returns what it read.
func h13cReadFrom(t *testing.T, rt *Runtime, f *File, feed func()) []byte {
	t.Helper()
	h := Spawn(rt, readAll(f))
	waitFor(t, "the read on the pool", func() bool { return h13cRegistered(rt, f) || h.IsFinished() })
	feed()
	r, err := waitHandleFor(t, h, "the read of the pipe")
	if err != nil || r.Err != nil {
		t.Fatalf("reading the pipe after the shutdown of another runtime: %v %v", err, r.Err)
	}
	return r.Value
}

// TestHostile13CloseInterruptsPipeRead: a task reads an empty pipe (the read waits on
// the pool, in os.File.Read) and the runtime is closed, with Close or with Shutdown and
// a distant deadline: the shutdown returns without error while the writer stays open,
// the task reports ErrCancelled, and nothing is lost: the same File read from another
// runtime gets exactly the bytes written afterwards and then EOF (no spurious error or
// end of file from the interrupted read, no read deadline left on the file).
func TestHostile13CloseInterruptsPipeRead(t *testing.T) {
	for _, how := range []string{"Close", "Shutdown(ctx)"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		f := NewFile(r)
		rt1 := h13cRuntime(t)
		h := Spawn(rt1, readAll(f))
		waitFor(t, "the read registered on the pool", func() bool { return h13cRegistered(rt1, f) })
		h13cStop(t, rt1, how)
		if _, err := waitHandleFor(t, h, "the dropped reader"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("%s: the reading task: %v, want ErrCancelled", how, err)
		}
		rt2 := fileRT(t)
		got := h13cReadFrom(t, rt2, f, func() {
			if _, err := w.Write([]byte("after the shutdown")); err != nil {
				t.Error(err)
			}
			w.Close()
		})
		if string(got) != "after the shutdown" {
			t.Fatalf("%s: read %q after the shutdown, want %q", how, got, "after the shutdown")
		}
		must(t, rt2, f.Close())
	}
}

// TestHostile13CloseInterruptsPipeWrite: a task writes 4 MB into a pipe nobody reads
// (the write waits on the pool with the pipe full) and the runtime is closed: Close
// returns, and the bytes PollWrite accepted but the interrupted write did not put in
// are reported, as a failed write-behind write is: the File's next operation (a Flush
// from another runtime) fails with an *fs.PathError "write" wrapping ErrRuntimeClosed.
// The File works on: a later write goes through (no write deadline left), and the
// reader sees a run of the first bytes, then the later ones.
func TestHostile13CloseInterruptsPipeWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := NewFile(w)
	rt1 := h13cRuntime(t)
	big := bytes.Repeat([]byte("z"), 4<<20)
	h := Spawn(rt1, Async(func(co *Co) Result[struct{}] {
		if r := Await(co, writeAll(f, big)); r.Err != nil {
			return Result[struct{}]{Err: r.Err}
		}
		return Await(co, f.Flush())
	}))
	waitFor(t, "the write registered on the pool", func() bool { return h13cRegistered(rt1, f) })
	h13cStop(t, rt1, "Close")
	if _, err := waitHandleFor(t, h, "the dropped writer"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("the writing task: %v, want ErrCancelled", err)
	}
	drained := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		drained <- b
	}()
	rt2 := fileRT(t)
	fl := run(t, rt2, f.Flush())
	var pe *fs.PathError
	if !errors.Is(fl.Err, ErrRuntimeClosed) || !errors.As(fl.Err, &pe) || pe.Op != "write" {
		t.Fatalf("Flush after the shutdown interrupted the write: %v, want an *fs.PathError write wrapping ErrRuntimeClosed", fl.Err)
	}
	if fl := run(t, rt2, f.Flush()); fl.Err != nil {
		t.Fatalf("a second Flush: %v, want the error reported once", fl.Err)
	}
	must(t, rt2, writeAll(f, []byte("tail")))
	must(t, rt2, f.Flush())
	must(t, rt2, f.Close())
	var got []byte
	select {
	case got = <-drained:
	case <-time.After(20 * time.Second):
		t.Fatal("the reader did not see the end of the pipe after the File was closed")
	}
	k := len(got) - len("tail")
	if k < 0 || k >= len(big) || !bytes.Equal(got[:k], big[:k]) || string(got[k:]) != "tail" {
		t.Fatalf("the reader got %d bytes (ending %q), want some of the first write's bytes, then %q",
			len(got), got[max(0, len(got)-8):], "tail")
	}
}

// TestHostile13CloseWaitsForBlockedJobs: with three blocking calls in flight at the
// shutdown, a SpawnBlocking job the user blocks (on a channel), a File's read of a
// pipe in blocking mode (outside Go's poller: nothing interrupts its read(2)) and a
// File's read of a pipe in the poller, Shutdown with a deadline returns the context's
// error, as documented, while only the last read has been interrupted; Close waits
// until the job is released. The blocking pipe's read, ended by a byte, keeps that
// byte for the File's next read.
func TestHostile13CloseWaitsForBlockedJobs(t *testing.T) {
	rt1 := h13cRuntime(t)
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
			rt1.Close()
		}
	}()
	job := SpawnBlocking(rt1, func() int { <-release; return 7 })

	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil { // blocking mode
		t.Fatal(err)
	}
	br, bw := os.NewFile(uintptr(fds[0]), "blocking-r"), os.NewFile(uintptr(fds[1]), "blocking-w")
	defer bw.Close()
	if err := br.SetReadDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a pipe in blocking mode accepts a deadline (%v): the test needs one outside the poller", err)
	}
	bf := NewFile(br)
	hb := Spawn(rt1, readAll(bf))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pf := NewFile(pr)
	hp := Spawn(rt1, readAll(pf))
	waitFor(t, "both reads in flight on the pool", func() bool {
		return h13cRegistered(rt1, bf) && h13cRegistered(rt1, pf)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := rt1.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a deadline and a blocked SpawnBlocking job: %v, want context.DeadlineExceeded", err)
	}
	for _, h := range []JoinHandle[Result[[]byte]]{hb, hp} {
		if _, err := waitHandleFor(t, h, "a dropped reader"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("a reading task: %v, want ErrCancelled", err)
		}
	}
	waitFor(t, "the poller pipe's read interrupted", func() bool {
		pf.b.mu.Lock()
		defer pf.b.mu.Unlock()
		return !h13cRegistered(rt1, pf) && pf.b.op != nil && pf.b.op.h.IsFinished()
	})
	if !h13cRegistered(rt1, bf) {
		t.Fatal("the blocking pipe's read ended though no byte came")
	}

	closed := make(chan error, 1)
	go func() { closed <- rt1.Close() }()
	if _, err := bw.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blocking pipe's read ended by its byte", func() bool { return !h13cRegistered(rt1, bf) })
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a SpawnBlocking job was blocked", err)
	default:
	}
	released = true
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return once the blocked job was released")
	}
	if v, err := waitHandleFor(t, job, "the released job"); v != 7 || err != nil {
		t.Fatalf("the released job: %v %v, want 7", v, err)
	}

	rt2 := fileRT(t)
	bw.Close()
	if got := must(t, rt2, readAll(bf)); string(got) != "x" {
		t.Fatalf("the blocking pipe after the shutdown: %q, want the byte its read got", got)
	}
	if got := h13cReadFrom(t, rt2, pf, func() { pw.Write([]byte("y")); pw.Close() }); string(got) != "y" {
		t.Fatalf("the poller pipe after the shutdown: %q, want %q", got, "y")
	}
	must(t, rt2, bf.Close())
	must(t, rt2, pf.Close())
}

// TestHostile13CloseJobStartingDuringShutdown: the race of a pool job that reaches its
// read (write) of a pipe only after the shutdown has interrupted the calls in flight.
// A hook holds the job just before it registers its call until the shutdown has done
// so; the job must then not start the call, which nothing would interrupt: Close
// returns. Nothing is lost: the read took no byte (the File reads what is written
// later), and the write put none in, its bytes being reported as a failed write.
func TestHostile13CloseJobStartingDuringShutdown(t *testing.T) {
	for _, write := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		target, other := r, w
		if write {
			target, other = w, r
		}
		f := NewFile(target)
		rt1 := h13cRuntime(t)
		arrived := make(chan struct{})
		var once sync.Once
		var late atomic.Bool
		hook := func(of *os.File) {
			if of != target {
				return
			}
			once.Do(func() { close(arrived) })
			for deadline := time.Now().Add(20 * time.Second); !rt1.blocking.ioShutDown(); {
				if time.Now().After(deadline) {
					late.Store(true)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		testHookFileIO.Store(&hook)
		var h JoinHandle[Result[int]]
		if write {
			h = Spawn(rt1, Async(func(co *Co) Result[int] {
				if r := Await(co, writeAll(f, bytes.Repeat([]byte("z"), 1<<20))); r.Err != nil {
					return r
				}
				return Result[int]{Err: Await(co, f.Flush()).Err} // waits for the held write
			}))
		} else {
			h = Spawn(rt1, Map(readAll(f), func(r Result[[]byte]) Result[int] { return Result[int]{Value: len(r.Value), Err: r.Err} }))
		}
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			testHookFileIO.Store(nil)
			t.Fatal("the pool job did not reach its call")
		}
		h13cStop(t, rt1, "Close")
		testHookFileIO.Store(nil)
		if late.Load() {
			t.Fatal("the shutdown did not reach the interruption while the job was held")
		}
		if _, err := waitHandleFor(t, h, "the dropped task"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("write=%v: the task: %v, want ErrCancelled", write, err)
		}
		rt2 := h13cRuntime(t)
		if write {
			if fl := run(t, rt2, f.Flush()); !errors.Is(fl.Err, ErrRuntimeClosed) {
				t.Fatalf("Flush after a write that the shutdown kept from starting: %v, want ErrRuntimeClosed", fl.Err)
			}
			must(t, rt2, writeAll(f, []byte("tail")))
			must(t, rt2, f.Close())
			if got, err := io.ReadAll(other); err != nil || string(got) != "tail" {
				t.Fatalf("the reader got %q %v, want only the later bytes (the held write never ran)", got, err)
			}
			other.Close()
		} else {
			got := h13cReadFrom(t, rt2, f, func() { other.Write([]byte("later")); other.Close() })
			if string(got) != "later" {
				t.Fatalf("read %q after the shutdown, want %q", got, "later")
			}
			must(t, rt2, f.Close())
		}
		if err := rt2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostile13CloseRacesFileCloseAndNewIO: runtimes closed while their tasks start
// reads and writes of pipes, with no wait for the calls to be in flight (every
// interleaving of a call starting and the shutdown), and with the Files closed from
// another runtime at the same moment: every shutdown and every Close of a File
// returns, and no goroutine is left behind.
func TestHostile13CloseRacesFileCloseAndNewIO(t *testing.T) {
	base := runtime.NumGoroutine()
	rt2 := h13cRuntime(t)
	for i := range 40 {
		rt1 := h13cRuntime(t)
		r1, w1, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r2, w2, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		rf, wf := NewFile(r1), NewFile(w2)
		Spawn(rt1, readAll(rf))
		Spawn(rt1, writeAll(wf, bytes.Repeat([]byte("z"), 1<<20)))
		var closes sync.WaitGroup
		if i%2 == 1 {
			for _, f := range []*File{rf, wf} {
				closes.Add(1)
				go func() {
					defer closes.Done()
					BlockOn(rt2, f.Close())
				}()
			}
		}
		h13cStop(t, rt1, "Close")
		closes.Wait()
		if i%2 == 0 {
			// The write may fail (its bytes cut off): Close still closes the file.
			run(t, rt2, rf.Close())
			run(t, rt2, wf.Close())
		}
		w1.Close()
		r2.Close()
	}
	if err := rt2.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, base)
}
