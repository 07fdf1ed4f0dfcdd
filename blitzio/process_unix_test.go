//go:build unix

package blitzio

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommandOutputAndStatus(t *testing.T) {
	rt := fileRT(t)
	out := must(t, rt, Command("sh", "-c", "echo out; echo err >&2; exit 3").Output())
	if string(out.Stdout) != "out\n" || string(out.Stderr) != "err\n" || out.Status.ExitCode() != 3 {
		t.Fatalf("Output = %q, %q, status %v", out.Stdout, out.Stderr, out.Status)
	}
	st := must(t, rt, Command("true").Stdout(Null).Status())
	if !st.Success() {
		t.Fatalf("true: %v", st)
	}
	dir := t.TempDir()
	env := must(t, rt, Command("sh", "-c", `printf "%s|%s|%s" "$FOO" "$HOME" "$(pwd)"`).EnvClear().Env("FOO", "bar").Dir(dir).Output())
	wantDir, _ := filepath.EvalSymlinks(dir)
	if string(env.Stdout) != "bar||"+wantDir {
		t.Fatalf("EnvClear/Env/Dir: %q, want %q", env.Stdout, "bar||"+wantDir)
	}
}

func TestCommandPipedStdinStdout(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("tr", "a-z", "A-Z").Stdin(Piped).Stdout(Piped).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	if child.ID() <= 0 {
		t.Fatalf("ID = %d", child.ID())
	}
	payload := strings.Repeat("hello pipes\n", 20000) // more than a pipe buffer each way
	got := run(t, rt, Async(func(co *Co) string {
		w := Spawn(co, Async(func(co *Co) error {
			if r := Await(co, writeAll(child.Stdin, []byte(payload))); r.Err != nil {
				return r.Err
			}
			return Await(co, child.Stdin.Close()).Err
		}))
		data := Await(co, readAll(child.Stdout))
		if r := Await(co, w); r.Err != nil || r.Value != nil {
			t.Errorf("writing stdin: %v %v", r.Err, r.Value)
		}
		if data.Err != nil {
			t.Errorf("reading stdout: %v", data.Err)
		}
		return string(data.Value)
	}))
	if got != strings.ToUpper(payload) {
		t.Fatalf("tr returned %d bytes, want %d upper-cased", len(got), len(payload))
	}
	if st := must(t, rt, child.Wait()); !st.Success() {
		t.Fatalf("tr exited %v", st)
	}
	if st, ok, err := child.TryWait(); !ok || err != nil || !st.Success() {
		t.Fatalf("TryWait after exit = %v %v %v", st, ok, err)
	}
}

func TestChildKilledBySignal(t *testing.T) {
	rt := fileRT(t)
	for _, tc := range []struct {
		name string
		stop func(*Child) error
		want syscall.Signal
	}{
		{"Kill", (*Child).Kill, syscall.SIGKILL},
		{"Signal(Terminate)", func(c *Child) error { return c.Signal(SignalTerminate) }, syscall.SIGTERM},
	} {
		child, err := Command("sleep", "60").Spawn()
		if err != nil {
			t.Fatal(err)
		}
		if _, done, _ := child.TryWait(); done {
			t.Fatalf("%s: TryWait says a sleeping child exited", tc.name)
		}
		if err := tc.stop(child); err != nil {
			t.Fatal(err)
		}
		st := must(t, rt, child.Wait())
		ws := st.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != tc.want {
			t.Fatalf("%s: status %v, want killed by %v", tc.name, st, tc.want)
		}
		if err := child.Kill(); !errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("%s: Kill after exit = %v, want os.ErrProcessDone", tc.name, err)
		}
	}
}

// TestChildStdoutClosedEarly closes the parent's end of a child's stdout while it still
// writes: the child dies of SIGPIPE and Wait reports it; nothing hangs.
func TestChildStdoutClosedEarly(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("yes").Stdout(Piped).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	if r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return child.Stdout.PollRead(cx, p) })); r.Err != nil || r.Value == 0 {
		t.Fatalf("first read: %v", r)
	}
	must(t, rt, child.Stdout.Close())
	st := must(t, rt, child.Wait())
	if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("yes after its stdout closed: %v, want killed by SIGPIPE", st)
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := Command("blitzio-no-such-program").Spawn()
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Spawn of a missing program: %v, want exec.ErrNotFound", err)
	}
	rt := fileRT(t)
	if r := run(t, rt, Command("blitzio-no-such-program").Output()); !errors.Is(r.Err, exec.ErrNotFound) {
		t.Fatalf("Output of a missing program: %v", r.Err)
	}
	if _, err := Command("true").Dir("/no/such/dir").Spawn(); err == nil {
		t.Fatal("Spawn in a missing directory succeeded")
	}
}

// TestDroppedChildIsReaped spawns children nobody waits for and checks that none stays
// a zombie.
func TestDroppedChildIsReaped(t *testing.T) {
	var pids []int
	for range 20 {
		child, err := Command("true").Spawn()
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, child.ID())
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil { // gone: reaped
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("child %d not reaped after 30s: %s", pid, stat)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestManyChildrenAtOnce(t *testing.T) {
	rt := fileRT(t)
	const n = 50
	hs := make([]JoinHandle[Result[*os.ProcessState]], n)
	for i := range hs {
		hs[i] = Spawn(rt, Command("sh", "-c", fmt.Sprintf("exit %d", i%7)).Status())
	}
	for i, h := range hs {
		r, err := h.Wait()
		if err != nil || r.Err != nil || r.Value.ExitCode() != i%7 {
			t.Fatalf("child %d: %v %v", i, err, r)
		}
	}
}
