//go:build unix

package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// hostile3Watch runs f on a goroutine of its own and fails the test with msg if it has
// not returned within d.
func hostile3Watch(t *testing.T, d time.Duration, msg string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("watchdog (%v): %s", d, msg)
	}
}

// Child.Wait promises "Several futures may wait for the same child". Task A waits with
// a Timeout that expires (dropping its Wait future); task B keeps waiting. When the
// child exits, B must be woken.
func TestHostile3ChildWaitDroppedByOneWaiterStrandsOther(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("sh", "-c", "sleep 0.3").Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	hB := Spawn(rt, Async(func(co *Co) Result[*os.ProcessState] {
		close(started)
		return Await(co, child.Wait())
	}))
	<-started
	hA := Spawn(rt, Async(func(co *Co) error {
		time.Sleep(20 * time.Millisecond) // let B register first
		return Await(co, Timeout(10*time.Millisecond, child.Wait())).Err
	}))
	hostile3Watch(t, 10*time.Second, "task A (Timeout around Wait) did not finish", func() { hA.Wait() })
	var r Result[*os.ProcessState]
	hostile3Watch(t, 10*time.Second, "task B's Wait was never woken after another Wait future of the same child was dropped", func() {
		r, _ = hB.Wait()
	})
	if r.Err != nil || r.Value == nil || !r.Value.Success() {
		t.Fatalf("B's Wait = %v, %v", r.Value, r.Err)
	}
}

// Wait from two tasks at once, then again after the exit, TryWait, and Kill/Signal after
// the exit (os.ErrProcessDone).
func TestHostile3ChildWaitManyAndKillAfterExit(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("sh", "-c", "read x; exit 7").Stdin(Piped).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	if st, ok, err := child.TryWait(); st != nil || ok || err != nil {
		t.Fatalf("TryWait while running = %v %v %v", st, ok, err)
	}
	const n = 8
	hs := make([]JoinHandle[Result[*os.ProcessState]], n)
	for i := range hs {
		hs[i] = Spawn(rt, child.Wait())
	}
	must(t, rt, child.Stdin.Close())
	for i, h := range hs {
		var r Result[*os.ProcessState]
		hostile3Watch(t, 10*time.Second, "waiter "+itoa(i)+" not woken", func() { r, _ = h.Wait() })
		if r.Err != nil || r.Value.ExitCode() != 7 {
			t.Fatalf("waiter %d: %v %v", i, r.Value, r.Err)
		}
	}
	if st := must(t, rt, child.Wait()); st.ExitCode() != 7 {
		t.Fatalf("Wait after exit = %v", st)
	}
	if st, ok, err := child.TryWait(); !ok || err != nil || st.ExitCode() != 7 {
		t.Fatalf("TryWait after exit = %v %v %v", st, ok, err)
	}
	if err := child.Kill(); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Kill after exit = %v, want os.ErrProcessDone", err)
	}
	if err := child.Signal(SignalTerminate); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal after exit = %v, want os.ErrProcessDone", err)
	}
}

// A child that reads a few bytes of its stdin and exits while the parent writes a lot:
// the parent's writes must fail (EPIPE), not hang, and not kill the test with SIGPIPE.
// Meanwhile a child that writes much more than a pipe buffer to stdout and stderr
// while the parent writes its stdin must not deadlock.
func TestHostile3ChildPipesNoDeadlock(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("head", "-c", "10").Stdin(Piped).Stdout(Piped).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("a"), 4<<20)
	res := run(t, rt, Async(func(co *Co) error {
		out := Spawn(co, readAll(child.Stdout))
		w := Await(co, writeAll(child.Stdin, big))
		var werr error
		if w.Err == nil {
			werr = Await(co, child.Stdin.Flush()).Err
		} else {
			werr = w.Err
		}
		o := Await(co, out)
		if o.Err != nil || o.Value.Err != nil || len(o.Value.Value) != 10 {
			return fmt.Errorf("stdout = %d bytes, %v %v", len(o.Value.Value), o.Err, o.Value.Err)
		}
		if !errors.Is(werr, syscall.EPIPE) {
			return fmt.Errorf("writing 4 MiB to a child that exited after 10 bytes: %v, want EPIPE", werr)
		}
		Await(co, child.Stdin.Close())
		return nil
	}))
	if res != nil {
		t.Fatal(res)
	}
	if st := must(t, rt, child.Wait()); !st.Success() {
		t.Fatalf("head exited %v", st)
	}

	// Both directions busy at once: cat echoes 4 MiB while we write it, and a shell
	// writes 1 MiB to stderr and stdout each through Output.
	cat, err := Command("cat").Stdin(Piped).Stdout(Piped).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, rt, Async(func(co *Co) Result[[]byte] {
		w := Spawn(co, Async(func(co *Co) error {
			if r := Await(co, writeAll(cat.Stdin, big)); r.Err != nil {
				return r.Err
			}
			return Await(co, cat.Stdin.Close()).Err
		}))
		data := Await(co, readAll(cat.Stdout))
		if r := Await(co, w); r.Err != nil || r.Value != nil {
			return Result[[]byte]{Err: fmt.Errorf("stdin: %v %v", r.Err, r.Value)}
		}
		return data
	}))
	if got.Err != nil || !bytes.Equal(got.Value, big) {
		t.Fatalf("cat echoed %d bytes, %v", len(got.Value), got.Err)
	}
	must(t, rt, cat.Wait())
	out := must(t, rt, Command("sh", "-c", "head -c 1048576 /dev/zero >&2; head -c 1048576 /dev/zero; head -c 1000 /dev/zero >&2").Output())
	if len(out.Stdout) != 1<<20 || len(out.Stderr) != 1<<20+1000 || !out.Status.Success() {
		t.Fatalf("Output: %d/%d bytes, %v", len(out.Stdout), len(out.Stderr), out.Status)
	}
}

// Status with a stream configured Piped: nobody can reach the parent's end of the pipe
// (Status returns only the exit status), so the child must not wait on it forever. A
// child reading its piped stdin to the end (cat) never sees EOF, and one writing more
// than a pipe buffer to its piped stdout blocks forever. Tokio's Command::status closes
// the parent's ends right after the spawn for exactly this reason.
func TestHostile3StatusWithPipedStreamsDeadlocks(t *testing.T) {
	rt := fileRT(t)
	for _, tc := range []struct {
		name string
		cmd  *Cmd
	}{
		{"stdin", Command("sh", "-c", "cat >/dev/null").Stdin(Piped).Stdout(Null).Stderr(Null)},
		{"stdout", Command("head", "-c", "1000000", "/dev/zero").Stdin(Null).Stdout(Piped).Stderr(Null)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fut := tc.cmd.Status()
			var r Result[Result[*os.ProcessState]]
			hostile3Watch(t, 30*time.Second, "BlockOn did not return", func() {
				r, _ = BlockOn(rt, Timeout(3*time.Second, fut))
			})
			if r.Err != nil {
				t.Fatalf("Status with a Piped %s: %v (the child waits on a pipe nobody can close)", tc.name, r.Err)
			}
			// Status returned an exit status, so the child has exited and been reaped: the
			// test leaves no process behind. (Had it timed out, the child would only wait
			// on the pipe ends of this process, and end when the test binary exits.)
			if r.Value.Err != nil || r.Value.Value == nil {
				t.Fatalf("Status with a Piped %s: %v, %v", tc.name, r.Value.Value, r.Value.Err)
			}
		})
	}
}

// Null "connects the stream to the null device". Output's stdin is Null too, "like
// exec.Cmd.Output": a child reading stdin reads EOF, a child writing to a Null stdout
// succeeds. (A closed descriptor 0, 1 or 2 instead is worse than an error: the child's
// next open gets that number, and its prints go into whatever file it opened.)
func TestHostile3NullStreamIsNotTheNullDevice(t *testing.T) {
	rt := fileRT(t)
	out := must(t, rt, Command("cat").Output())
	if !out.Status.Success() || len(out.Stdout) != 0 || len(out.Stderr) != 0 {
		t.Errorf("cat with Output's Null stdin: status %v, stdout %q, stderr %q; want success and nothing (exec.Command(\"cat\").Output() succeeds)", out.Status, out.Stdout, out.Stderr)
	}
	child, err := Command("sh", "-c", "echo hi; echo status=$? >&2").Stdin(Null).Stdout(Null).Stderr(Piped).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	errOut := must(t, rt, readAll(child.Stderr))
	must(t, rt, child.Wait())
	if string(errOut) != "status=0\n" {
		t.Errorf("echo to a Null stdout: stderr %q, want \"status=0\\n\"", errOut)
	}
	// The descriptor must be open on /dev/null, not closed (the child's next open would take it).
	// readlink's own fd 1 is redirected to stderr (to report through the pipe), so it
	// reads fd 3, a copy made of the child's fd 1 before that redirection.
	child, err = Command("sh", "-c", "readlink /proc/self/fd/3 3>&1 >&2").Stdin(Null).Stdout(Null).Stderr(Piped).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	errOut = must(t, rt, readAll(child.Stderr))
	must(t, rt, child.Wait())
	if string(errOut) != "/dev/null\n" {
		t.Errorf("the child's fd 1 with Stdout(Null) is %q, want /dev/null", errOut)
	}
}
