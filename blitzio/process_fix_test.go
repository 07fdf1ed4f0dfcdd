//go:build unix

package blitzio

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// Output's stdin is the null device (as with exec.Cmd.Output): cat reads end of file at
// once, writes nothing and exits 0.
func TestCommandOutputCatNullStdin(t *testing.T) {
	rt := fileRT(t)
	out := must(t, rt, Command("cat").Output())
	if !out.Status.Success() || len(out.Stdout) != 0 || len(out.Stderr) != 0 {
		t.Fatalf("cat through Output: status %v, stdout %q, stderr %q; want exit 0 and no output", out.Status, out.Stdout, out.Stderr)
	}
	// Every stream Null: each of the child's descriptors 0, 1 and 2 is open on the null
	// device (a closed one would make the shell's redirection fail).
	st := must(t, rt, Command("sh", "-c", "cat && echo x && echo y >&2").Stdin(Null).Stdout(Null).Stderr(Null).Status())
	if !st.Success() {
		t.Fatalf("sh with three Null streams: %v", st)
	}
}

// Many Wait futures of one child, most of them dropped before the exit (by hand, by a
// Timeout, by a select that another arm wins): the dropped ones leave no registration
// behind, and the rest are all woken by the exit.
func TestChildWaitDropsLeaveOthersWaiting(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("sh", "-c", "read x; exit 0").Stdin(Piped).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	cx := NewContext(nil, WakerFunc(func() {}))
	for range 10 {
		w := child.Wait()
		if _, ok := w.Poll(cx); ok {
			t.Fatal("Wait ready before the exit")
		}
		Drop(w)
	}
	if n := registrations(child); n != 0 {
		t.Fatalf("%d registrations left by dropped Wait futures, want 0", n)
	}
	live := make([]JoinHandle[Result[*os.ProcessState]], 4)
	for i := range live {
		live[i] = Spawn(rt, child.Wait())
	}
	timedOut := Spawn(rt, Timeout(time.Millisecond, child.Wait()))
	lost := Spawn(rt, Select2[Result[*os.ProcessState], struct{}](child.Wait(), Sleep(time.Millisecond)))
	if r, err := waitHandle(t, timedOut); err != nil || r.Err == nil {
		t.Fatalf("Timeout around Wait: %v %v, want a timeout", r, err)
	}
	if r, err := waitHandle(t, lost); err != nil || r.Index != 1 {
		t.Fatalf("select: %+v %v, want the Sleep arm", r, err)
	}
	waitFor(t, "the live waiters registered and the dropped ones gone", func() bool { return registrations(child) == len(live) })
	must(t, rt, child.Stdin.Close())
	for i, h := range live {
		r, err := waitHandle(t, h)
		if err != nil || r.Err != nil || r.Value == nil || !r.Value.Success() {
			t.Fatalf("waiter %d: %v %v %v", i, r.Value, r.Err, err)
		}
	}
}

// registrations counts the wakers registered for the child's exit.
func registrations(ch *Child) int {
	s := ch.done.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hs) + len(s.ws)
}

// Status closes the parent's ends of Piped streams right after the spawn (Tokio's
// Command::status): a child reading its piped stdin reads end of file, one writing to a
// piped stdout or stderr gets EPIPE or SIGPIPE, and none of them waits forever.
func TestCommandStatusPipedStreamsClosed(t *testing.T) {
	rt := fileRT(t)
	// stdin: read reaches end of file, so the shell's `read` fails (status 1).
	st := must(t, rt, TryTimeout(10*time.Second, Command("sh", "-c", "read x").Stdin(Piped).Stdout(Null).Stderr(Null).Status()))
	if st.ExitCode() != 1 {
		t.Fatalf("read from a piped stdin under Status: %v, want exit 1 (end of file)", st)
	}
	// stdout and stderr: the write fails with EPIPE (SIGPIPE ignored by the shell's
	// trap, so the shell sees the error) or the child is killed by SIGPIPE.
	for _, stream := range []string{"stdout", "stderr"} {
		c := Command("sh", "-c", "head -c 1000000 /dev/zero >&"+map[string]string{"stdout": "1", "stderr": "2"}[stream]).Stdin(Null)
		if stream == "stdout" {
			c.Stdout(Piped).Stderr(Null)
		} else {
			c.Stdout(Null).Stderr(Piped)
		}
		st := must(t, rt, TryTimeout(10*time.Second, c.Status()))
		if st.Success() {
			t.Fatalf("1 MB to a piped %s under Status succeeded; want EPIPE/SIGPIPE", stream)
		}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() != syscall.SIGPIPE {
			t.Fatalf("piped %s under Status: killed by %v, want SIGPIPE or an exit status", stream, ws.Signal())
		}
	}
}
