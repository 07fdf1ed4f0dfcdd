package blitzio

// Lifecycle and pipes of a child against os/exec: Wait, Kill, Signal and TryWait
// before and after the exit, waits from tasks and plain goroutines, cancelled waits and
// aborted tasks (the child keeps running or is killed, as documented, and is reaped),
// large outputs on both pipes, and a parent writing to a child that does not read.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHostile13ProcLifecycleMatchesExec: one child under blitzio and its twin under
// exec, each `sleep`, go through TryWait (blitzio only), Kill, Wait, a second Wait,
// Kill and Signal after the exit; each step's outcome agrees with exec's (Process.Kill,
// Cmd.Wait's ExitError text, os.ErrProcessDone), except the second Wait, which
// blitzio documents as allowed (the same status again; exec refuses it).
func TestHostile13ProcLifecycleMatchesExec(t *testing.T) {
	rt := fileRT(t)
	ecmd := exec.Command("sleep", hostile7Marker())
	if err := ecmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, err := Command("sleep", hostile7Marker()).Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		ecmd.Process.Kill()
		ecmd.Wait()
		t.Fatal(err)
	}
	if st, ok, err := child.TryWait(); st != nil || ok || err != nil {
		t.Errorf("TryWait while the child sleeps: %v %v %v", st, ok, err)
	}
	ekill, bkill := ecmd.Process.Kill(), child.Kill()
	if h13SameErr(bkill, ekill) != "" {
		t.Errorf("Kill of a running child: %s", h13SameErr(bkill, ekill))
	}
	ewait := ecmd.Wait()
	r := h13Block(t, rt, "Wait after Kill", child.Wait())
	if r.Err != nil || r.Value == nil || ewait == nil || r.Value.String() != ewait.Error() {
		t.Fatalf("Wait after Kill: %v %v; exec's Wait: %v", r.Value, r.Err, ewait)
	}
	again := run(t, rt, child.Wait())
	if again.Err != nil || again.Value != r.Value {
		t.Errorf("second Wait: %v %v, want the same status %v", again.Value, again.Err, r.Value)
	}
	if st, ok, err := child.TryWait(); st != r.Value || !ok || err != nil {
		t.Errorf("TryWait after the exit: %v %v %v", st, ok, err)
	}
	for name, pair := range map[string][2]error{
		"Kill":              {child.Kill(), ecmd.Process.Kill()},
		"Signal(terminate)": {child.Signal(SignalTerminate), ecmd.Process.Signal(syscall.SIGTERM)},
		"Signal(hangup)":    {child.Signal(SignalHangup), ecmd.Process.Signal(syscall.SIGHUP)},
	} {
		if d := h13SameErr(pair[0], pair[1]); d != "" || !errors.Is(pair[0], os.ErrProcessDone) {
			t.Errorf("%s after the exit: %v (exec: %v), want os.ErrProcessDone", name, pair[0], pair[1])
		}
	}
	if !hostile7Gone(child.ID()) {
		t.Errorf("the child %d is still in /proc after Wait", child.ID())
	}
}

// TestHostile13ProcDroppedWaitsAndAbortedTasks: a Wait future dropped by a Timeout, a
// task awaiting Wait aborted, and a Status future in an aborted task all leave the child
// running (Tokio's kill_on_drop(false), as documented); an Output future in an aborted
// task kills its child (documented). Every child is reaped in the end: nothing of them
// is left in /proc, and the runtime's goroutines and the reapers end.
func TestHostile13ProcDroppedWaitsAndAbortedTasks(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			rt.Close()
		}
	}()
	sleeper := func() (*Child, string) {
		m := hostile7Marker()
		ch, err := Command("sleep", m).Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
		if err != nil {
			t.Fatal(err)
		}
		return ch, m
	}
	var kill []int
	defer func() {
		for _, pid := range kill {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()

	// A Wait dropped by a Timeout, one from a plain goroutine's BlockOn, and an aborted
	// task's: the child runs on.
	a, _ := sleeper()
	kill = append(kill, a.ID())
	if r := h13Block(t, rt, "Timeout(Wait)", Timeout(5*time.Millisecond, a.Wait())); !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("Timeout around the Wait of a sleeping child: %v", r.Err)
	}
	h := Spawn(rt, a.Wait())
	waitFor(t, "the task's Wait registered", func() bool { return registrations(a) == 1 })
	h.Abort()
	if _, err := waitHandleFor(t, h, "an aborted task awaiting Wait"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted task: %v, want ErrCancelled", err)
	}
	if n := registrations(a); n != 0 {
		t.Errorf("%d waker registrations left by dropped Waits", n)
	}
	if _, ok, _ := a.TryWait(); ok || hostile7Gone(a.ID()) {
		t.Fatal("the child ended when its Wait futures were dropped; it must run on")
	}

	// Status in an aborted task: the child runs on. Output in an aborted task: killed.
	sm, om := hostile7Marker(), hostile7Marker()
	hs := Spawn(rt, Command("sleep", sm).Stdin(Null).Stdout(Null).Stderr(Null).Status())
	ho := Spawn(rt, Command("sleep", om).Output())
	waitFor(t, "both commands started", func() bool {
		return len(hostile7Procs(sm)) == 1 && len(hostile7Procs(om)) == 1
	})
	spid, opid := hostile7Procs(sm)[0], hostile7Procs(om)[0]
	kill = append(kill, spid, opid)
	hs.Abort()
	ho.Abort()
	for _, h := range []JoinHandle[Result[*os.ProcessState]]{hs} {
		if _, err := waitHandleFor(t, h, "aborted Status task"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("aborted Status task: %v", err)
		}
	}
	if _, err := waitHandleFor(t, ho, "aborted Output task"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted Output task: %v", err)
	}
	waitFor(t, "the aborted Output's child killed and reaped", func() bool { return hostile7Gone(opid) })
	if hostile7Gone(spid) {
		t.Fatal("the aborted Status's child ended; it must run on (kill_on_drop(false))")
	}

	// Now end them: each is reaped though nobody waits for the Status one.
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(spid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := h13Block(t, rt, "Wait after Kill", a.Wait()); st.Err != nil || st.Value.ExitCode() != -1 {
		t.Fatalf("Wait after Kill: %v %v", st.Value, st.Err)
	}
	for _, pid := range []int{a.ID(), spid} {
		waitFor(t, "a killed child reaped", func() bool { return hostile7Gone(pid) })
	}
	kill = nil
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	checkNoLeak(t, base)
}

// TestHostile13ProcOutputLargeBothPipes: a child writing several MB to stdout and to
// stderr at once (neither pipe drained in order) gives Output the same bytes exec
// collects, from a task and from a plain goroutine's BlockOn, with no deadlock.
func TestHostile13ProcOutputLargeBothPipes(t *testing.T) {
	rt := fileRT(t)
	const script = `seq 1 400000 >&2 & seq 400000 -1 1; wait`
	var eout, eerr bytes.Buffer
	ecmd := exec.Command("sh", "-c", script)
	ecmd.Stdout, ecmd.Stderr = &eout, &eerr
	if err := ecmd.Run(); err != nil {
		t.Fatal(err)
	}
	if eout.Len() < 2<<20 || eerr.Len() < 2<<20 {
		t.Fatalf("exec collected %d and %d bytes, want several MB each", eout.Len(), eerr.Len())
	}
	h := Spawn(rt, Command("sh", "-c", script).Output())
	fromTask, err := waitHandleFor(t, h, "Output in a task")
	if err != nil {
		t.Fatal(err)
	}
	fromBlockOn := h13Block(t, rt, "Output", Command("sh", "-c", script).Output())
	for how, r := range map[string]Result[Output]{"task": fromTask, "BlockOn": fromBlockOn} {
		if r.Err != nil || !r.Value.Status.Success() {
			t.Fatalf("%s: %v %v", how, r.Value.Status, r.Err)
		}
		if !bytes.Equal(r.Value.Stdout, eout.Bytes()) || !bytes.Equal(r.Value.Stderr, eerr.Bytes()) {
			t.Errorf("%s: Output has %d and %d bytes, exec %d and %d, or they differ", how,
				len(r.Value.Stdout), len(r.Value.Stderr), eout.Len(), eerr.Len())
		}
	}
}

// TestHostile13ProcWriteToChildThatDoesNotRead: the parent writes 4 MB to a piped stdin
// that the child never reads. As with exec's pipe, the bytes cannot all go in (a Flush
// stays pending); once the child is killed, the write fails with EPIPE, as exec's
// Write does, and the test process is not killed by SIGPIPE. Close of the stdin waits
// for the write in flight (File's write-behind, documented on Child): bounded by a
// Timeout it does not return while the child lives, and completes once it is dead.
func TestHostile13ProcWriteToChildThatDoesNotRead(t *testing.T) {
	rt := fileRT(t)
	big := bytes.Repeat([]byte("z"), 4<<20)

	// exec: a Write blocked on the full pipe fails with EPIPE once the reader is gone.
	ecmd := exec.Command("sleep", hostile7Marker())
	ein, err := ecmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ecmd.Start(); err != nil {
		t.Fatal(err)
	}
	ewrote := make(chan error, 1)
	go func() { _, err := ein.Write(big); ewrote <- err }()
	ecmd.Process.Kill()
	var eerr error
	select {
	case eerr = <-ewrote:
	case <-time.After(20 * time.Second):
		t.Fatal("exec's Write to a killed child's stdin did not return")
	}
	ecmd.Wait()
	if !errors.Is(eerr, syscall.EPIPE) {
		t.Fatalf("exec's Write after the child died: %v, want EPIPE", eerr)
	}

	child, err := Command("sleep", hostile7Marker()).Stdin(Piped).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Kill()
	w := h13Block(t, rt, "writeAll", Timeout(50*time.Millisecond, Async(func(co *Co) Result[struct{}] {
		if r := Await(co, writeAll(child.Stdin, big)); r.Err != nil {
			return Result[struct{}]{Err: r.Err}
		}
		return Await(co, child.Stdin.Flush())
	})))
	if !errors.Is(w.Err, ErrTimeout) {
		t.Fatalf("4 MB into the stdin of a child that never reads: %v %v, want it still pending (ErrTimeout)", w.Value, w.Err)
	}
	if r := h13Block(t, rt, "Close", Timeout(20*time.Millisecond, child.Stdin.Close())); !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("Close of the stdin with a write stuck in the pipe: %v %v, want it pending while the child lives", r.Value, r.Err)
	}
	if err := child.Kill(); err != nil {
		t.Fatal(err)
	}
	if st := h13Block(t, rt, "Wait", child.Wait()); st.Err != nil || st.Value.Success() {
		t.Fatalf("Wait after Kill: %v %v", st.Value, st.Err)
	}
	var werr error
	for werr == nil {
		// The rest of the bytes, if any: the write in flight (or a later one) fails.
		r := h13Block(t, rt, "writeAll after Kill", Async(func(co *Co) error {
			if r := Await(co, writeAll(child.Stdin, big[:1])); r.Err != nil {
				return r.Err
			}
			return Await(co, child.Stdin.Flush()).Err
		}))
		werr = r
	}
	if !errors.Is(werr, syscall.EPIPE) {
		t.Fatalf("writing to a killed child's stdin: %v, want EPIPE like exec's %v", werr, eerr)
	}
	if r := h13Block(t, rt, "Close after Kill", child.Stdin.Close()); r.Err != nil {
		t.Errorf("Close after the write's error was reported: %v", r.Err)
	}
}

// TestHostile13ProcChildClosesStdoutEarly: a child that closes its stdout and goes on
// (writing to stderr, exiting later): the parent's read of stdout ends with EOF before
// the exit, as exec's StdoutPipe read does, and stderr and the status still come.
func TestHostile13ProcChildClosesStdoutEarly(t *testing.T) {
	rt := fileRT(t)
	const script = `echo out; exec 1>&-; read x; echo err >&2; exit 6`
	ecmd := exec.Command("sh", "-c", script)
	ein, _ := ecmd.StdinPipe()
	eout, _ := ecmd.StdoutPipe()
	var eerrb bytes.Buffer
	ecmd.Stderr = &eerrb
	if err := ecmd.Start(); err != nil {
		t.Fatal(err)
	}
	ebytes := new(bytes.Buffer)
	if _, err := ebytes.ReadFrom(eout); err != nil { // EOF while the child waits on read
		t.Fatal(err)
	}
	ein.Close()
	eexit := ecmd.Wait()

	child, err := Command("sh", "-c", script).Stdin(Piped).Stdout(Piped).Stderr(Piped).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	out := must(t, rt, readAll(child.Stdout)) // EOF comes while the child still runs
	if _, ok, _ := child.TryWait(); ok {
		t.Fatal("the child exited before its stdin was closed")
	}
	must(t, rt, child.Stdin.Close())
	errOut := must(t, rt, readAll(child.Stderr))
	st := must(t, rt, child.Wait())
	if !bytes.Equal(out, ebytes.Bytes()) || !bytes.Equal(errOut, eerrb.Bytes()) || eexit == nil || st.String() != eexit.Error() {
		t.Fatalf("blitzio: %q %q %v; exec: %q %q %v", out, errOut, st, ebytes.Bytes(), eerrb.Bytes(), eexit)
	}
	must(t, rt, child.Stdout.Close())
	must(t, rt, child.Stderr.Close())
}

// h13Unwind polls w once (registering its waker), asks for another poll, and then
// panics or calls runtime.Goexit: the task unwinds with w pending.
type h13Unwind struct {
	w      Future[Result[*os.ProcessState]]
	goexit bool
	polled bool
}

func (u *h13Unwind) Poll(cx *Context) (struct{}, bool) {
	if !u.polled {
		u.polled = true
		if _, ok := u.w.Poll(cx); ok {
			panic("the sleeping child's Wait was ready")
		}
		cx.Waker().Wake()
		return struct{}{}, false
	}
	if u.goexit {
		runtime.Goexit()
	}
	panic("h13 unwind")
}

func (u *h13Unwind) Drop() { Drop(u.w) }

// TestHostile13ProcWaitUnwoundByPanicOrGoexit: a task whose code panics, or calls
// runtime.Goexit, while it awaits a child's Wait: the handle reports a *PanicError or
// ErrGoexit, the Wait's registration is gone (the future was dropped on the way out),
// the child runs on, and a later Wait still gets its status.
func TestHostile13ProcWaitUnwoundByPanicOrGoexit(t *testing.T) {
	rt := fileRT(t)
	for _, goexit := range []bool{false, true} {
		child, err := Command("sleep", hostile7Marker()).Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
		if err != nil {
			t.Fatal(err)
		}
		h := Spawn(rt, Async(func(co *Co) struct{} {
			return Await(co, Future[struct{}](&h13Unwind{w: child.Wait(), goexit: goexit}))
		}))
		_, err = waitHandleFor(t, h, "a task unwinding with a Wait pending")
		var pe *PanicError
		if goexit && !errors.Is(err, ErrGoexit) || !goexit && !errors.As(err, &pe) {
			child.Kill()
			t.Fatalf("goexit=%v: the task's handle reports %v", goexit, err)
		}
		if n := registrations(child); n != 0 {
			t.Errorf("goexit=%v: %d registrations left by the unwound Wait", goexit, n)
		}
		if _, ok, _ := child.TryWait(); ok || hostile7Gone(child.ID()) {
			t.Fatalf("goexit=%v: the child ended with the task", goexit)
		}
		child.Kill()
		if r := h13Block(t, rt, "Wait after the unwind", child.Wait()); r.Err != nil || r.Value.ExitCode() != -1 {
			t.Fatalf("goexit=%v: Wait after Kill: %v %v", goexit, r.Value, r.Err)
		}
	}
}

// h13FDs counts the test process's open descriptors.
func h13FDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestHostile13ProcNoDescriptorLeak: runs through every way the package makes and
// closes pipes (Output to the end, Output dropped mid-run, Status with piped streams,
// Spawn that fails after its pipes were made, Spawn whose pipes the user closes) leave
// no descriptor open in the parent once the children are reaped, as exec leaves none
// after Wait.
func TestHostile13ProcNoDescriptorLeak(t *testing.T) {
	rt := fileRT(t)
	must(t, rt, Command("true").Output()) // the runtime's lazily made descriptors, if any
	base := h13FDs(t)
	for i := range 10 {
		o := must(t, rt, Command("sh", "-c", "echo out; echo err >&2").Output())
		if string(o.Stdout) != "out\n" || string(o.Stderr) != "err\n" {
			t.Fatalf("Output: %q %q", o.Stdout, o.Stderr)
		}
		if r := run(t, rt, Timeout(time.Millisecond, Command("sleep", hostile7Marker()).Output())); !errors.Is(r.Err, ErrTimeout) {
			t.Fatalf("Timeout around Output of sleep: %v", r.Err)
		}
		must(t, rt, Command("sh", "-c", "echo x").Stdin(Piped).Stdout(Piped).Stderr(Piped).Status())
		_, err := Command("true").Dir(fmt.Sprintf("/h13/no/such/dir/%d", i)).Stdin(Piped).Stdout(Piped).Stderr(Piped).Spawn()
		if err == nil {
			t.Fatal("Spawn in a missing directory succeeded")
		}
		if r := run(t, rt, Command("blitzio-h13-no-such-program").Output()); !errors.Is(r.Err, exec.ErrNotFound) {
			t.Fatalf("Output of a missing program: %v", r.Err)
		}
		ch, err := Command("cat").Stdin(Piped).Stdout(Piped).Stderr(Piped).Spawn()
		if err != nil {
			t.Fatal(err)
		}
		must(t, rt, ch.Stdin.Close())
		must(t, rt, readAll(ch.Stdout))
		must(t, rt, ch.Stdout.Close())
		must(t, rt, ch.Stderr.Close())
		must(t, rt, ch.Wait())
	}
	var n int
	waitFor(t, "the parent's descriptors back to their count before the runs", func() bool {
		n = h13FDs(t)
		return n <= base
	})
}

// TestHostile13ProcRuntimeCloseWithPipeIOInFlight: a task reads a child's piped stdout
// (or writes its piped stdin) while the child sleeps, and the runtime is closed. The
// task is dropped; with Tokio the pipe I/O goes with it and the runtime's shutdown
// returns at once (an Output future in the same spot is dropped and kills its child, so
// Close returns). Here Close waits until the child exits: the dropped read (write)
// stays in flight on the blocking pool, in os.File.Read (Write) of the pipe, and
// Close waits for the pool's goroutines.
func TestHostile13ProcRuntimeCloseWithPipeIOInFlight(t *testing.T) {
	for _, dir := range []string{"read stdout", "write stdin"} {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		m := hostile7Marker()
		c := Command("sleep", m).Stdin(Null).Stdout(Null).Stderr(Null)
		if dir == "read stdout" {
			c.Stdout(Piped)
		} else {
			c.Stdin(Piped)
		}
		child, err := c.Spawn()
		if err != nil {
			t.Fatal(err)
		}
		if dir == "read stdout" {
			Spawn(rt, readAll(child.Stdout))
		} else {
			Spawn(rt, writeAll(child.Stdin, bytes.Repeat([]byte("z"), 4<<20)))
		}
		f := child.Stdout
		if f == nil {
			f = child.Stdin
		}
		waitFor(t, "the task's pipe I/O in flight", func() bool {
			f.b.mu.Lock()
			defer f.b.mu.Unlock()
			return f.b.op != nil
		})
		done := make(chan error, 1)
		go func() { done <- rt.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Close: %v", dir, err)
			}
			child.Kill()
		case <-time.After(5 * time.Second):
			child.Kill()
			<-done
			t.Errorf("%s: Runtime.Close did not return while the child lived (it returned once the child was killed)", dir)
		}
	}
}

// TestHostile13ProcConcurrentSpawnsKeepTheirPipes: children spawned with piped streams
// from many goroutines at once each get only their own pipes: every cat sees the end
// of its stdin when its parent closes it (had a sibling inherited the write end, it
// would wait forever) and echoes exactly what it was given.
func TestHostile13ProcConcurrentSpawnsKeepTheirPipes(t *testing.T) {
	rt := fileRT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				msg := []byte(fmt.Sprintf("goroutine %d child %d\n", g, i))
				ch, err := Command("cat").Stdin(Piped).Stdout(Piped).Stderr(Null).Spawn()
				if err != nil {
					errs <- err
					return
				}
				out, err := BlockOn(rt, Timeout(15*time.Second, Async(func(co *Co) Result[[]byte] {
					if r := Await(co, writeAll(ch.Stdin, msg)); r.Err != nil {
						return Result[[]byte]{Err: r.Err}
					}
					if r := Await(co, ch.Stdin.Close()); r.Err != nil {
						return Result[[]byte]{Err: r.Err}
					}
					return Await(co, readAll(ch.Stdout))
				})))
				if err == nil {
					err = out.Err
				}
				if err == nil {
					err = out.Value.Err
				}
				if err != nil || !bytes.Equal(out.Value.Value, msg) {
					ch.Kill()
					errs <- fmt.Errorf("child %d/%d: %q, %v (a cat that never saw EOF times out)", g, i, out.Value.Value, err)
					return
				}
				BlockOn(rt, ch.Stdout.Close())
				if r, err := BlockOn(rt, Timeout(15*time.Second, ch.Wait())); err != nil || r.Err != nil || !r.Value.Value.Success() {
					errs <- fmt.Errorf("child %d/%d: Wait: %v %v", g, i, err, r.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
