//go:build unix

package blitzio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Output and Status are lazy, like Tokio's Command::output and Command::status (async
// fns): the command starts at the future's first poll, not when the future is made. The
// working directory here does not exist when Output and Status are called and is made
// before their first poll: a command started at the call fails to chdir.
func TestHostile7OutputAndStatusStartAtFirstPoll(t *testing.T) {
	rt := fileRT(t)
	dir := filepath.Join(t.TempDir(), "made-later")
	out := Command("sh", "-c", "echo here").Dir(dir).Output()
	st := Command("true").Dir(dir).Stdout(Null).Status()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := run(t, rt, out)
	if o.Err != nil {
		t.Fatalf("Output whose directory was made after the call, before the first poll: %v "+
			"(the command started when Output was called, not at the first poll)", o.Err)
	}
	if string(o.Value.Stdout) != "here\n" || !o.Value.Status.Success() {
		t.Fatalf("Output = %q, %v", o.Value.Stdout, o.Value.Status)
	}
	s := run(t, rt, st)
	if s.Err != nil {
		t.Fatalf("Status whose directory was made after the call, before the first poll: %v "+
			"(the command started when Status was called, not at the first poll)", s.Err)
	}
	if !s.Value.Success() {
		t.Fatalf("Status = %v", s.Value)
	}

	// A start error is still the future's result, found at the first poll: the
	// directory is gone again.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if r := run(t, rt, Command("true").Dir(dir).Output()); r.Err == nil || !errors.Is(r.Err, fs.ErrNotExist) {
		t.Fatalf("Output in a missing directory = %v, want an fs.ErrNotExist error", r.Err)
	}
	if r := run(t, rt, Command("true").Dir(dir).Status()); r.Err == nil || !errors.Is(r.Err, fs.ErrNotExist) {
		t.Fatalf("Status in a missing directory = %v, want an fs.ErrNotExist error", r.Err)
	}
}

// The future takes the command as it is when Output or Status is called: changing the
// Cmd afterwards (reusing it for another run) does not change what the future runs,
// though it starts later.
func TestHostile7OutputSnapshotsTheCommand(t *testing.T) {
	rt := fileRT(t)
	c := Command("sh", "-c", `printf "%s|%s" "$0" "$BLITZIO_H7_V"`, "first").Env("BLITZIO_H7_V", "one")
	first := c.Output()
	c.Arg("second").Env("BLITZIO_H7_V", "two")
	second := c.Output()
	if o := must(t, rt, first); string(o.Stdout) != "first|one" {
		t.Fatalf("first Output = %q, want %q (the Cmd changed after Output was called)", o.Stdout, "first|one")
	}
	if o := must(t, rt, second); string(o.Stdout) != "first|two" {
		t.Fatalf("second Output = %q, want %q", o.Stdout, "first|two")
	}
}

// Env adds to the environment the child inherits, and the child inherits the parent's
// environment as it is at the spawn (as with exec.Cmd, whose nil Env means "the
// environment at Start", and with Tokio's Command): a variable the parent sets after
// Env was called, or between two spawns of one Cmd, reaches the child.
func TestHostile7EnvInheritedAtSpawn(t *testing.T) {
	rt := fileRT(t)
	c := Command("sh", "-c", `printf "%s|%s" "$BLITZIO_H7_A" "$BLITZIO_H7_B"`).Env("BLITZIO_H7_A", "1")
	t.Setenv("BLITZIO_H7_B", "2")
	if o := must(t, rt, c.Output()); string(o.Stdout) != "1|2" {
		t.Fatalf("child's environment = %q, want %q: a variable set in the parent after Env "+
			"was called did not reach the child", o.Stdout, "1|2")
	}
	t.Setenv("BLITZIO_H7_B", "3")
	if o := must(t, rt, c.Output()); string(o.Stdout) != "1|3" {
		t.Fatalf("second run of the same Cmd: environment = %q, want %q", o.Stdout, "1|3")
	}
	// EnvClear still clears, and a variable given twice takes the last value.
	c = Command("sh", "-c", `printf "%s|%s" "$BLITZIO_H7_A" "$BLITZIO_H7_B"`).EnvClear().Env("BLITZIO_H7_A", "x").Env("BLITZIO_H7_A", "y")
	if o := must(t, rt, c.Output()); string(o.Stdout) != "y|" {
		t.Fatalf("EnvClear then Env twice: %q, want %q", o.Stdout, "y|")
	}
	if o := must(t, rt, Command("sh", "-c", `printf "%s" "$BLITZIO_H7_B"`).EnvClear().Output()); string(o.Stdout) != "" {
		t.Fatalf("EnvClear alone: %q, want an empty environment", o.Stdout)
	}
}

// A Stdio value that is none of Inherit, Null and Piped is an error at the spawn, not
// silently Inherit.
func TestHostile7UnknownStdioIsAnError(t *testing.T) {
	rt := fileRT(t)
	if _, err := Command("true").Stdout(Stdio(9)).Spawn(); err == nil || !strings.Contains(err.Error(), "Stdio") {
		t.Fatalf("Spawn with Stdout(Stdio(9)) = %v, want an error naming the Stdio value", err)
	}
	if r := run(t, rt, Command("true").Stdin(Stdio(200)).Status()); r.Err == nil {
		t.Fatal("Status with Stdin(Stdio(200)) succeeded, want an error")
	}
}

// Misuse panics at the call with a message naming it: a nil *Cmd.
func TestHostile7NilCmdPanicsClearly(t *testing.T) {
	var c *Cmd
	for name, f := range map[string]func(){
		"Spawn":  func() { c.Spawn() },
		"Output": func() { c.Output() },
		"Status": func() { c.Status() },
	} {
		p := hostile7Recover(f)
		if s, _ := p.(string); !strings.Contains(s, "nil *Cmd") {
			t.Errorf("%s on a nil *Cmd: recovered %v, want a panic naming the nil *Cmd", name, p)
		}
	}
}

// Pipes closed early by the parent: a child reading a piped stdin the parent closed at
// once reads end of file, Output of a child that closes its own stdout early still
// collects stderr and the status.
func TestHostile7PipesClosedEarly(t *testing.T) {
	rt := fileRT(t)
	child, err := Command("sh", "-c", "cat; echo done").Stdin(Piped).Stdout(Piped).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	must(t, rt, child.Stdin.Close())
	if r := run(t, rt, child.Stdin.Close()); r.Err == nil {
		t.Log("a second Close of Stdin succeeded") // allowed, but must not hang
	}
	if out := must(t, rt, readAll(child.Stdout)); string(out) != "done\n" {
		t.Fatalf("stdout = %q", out)
	}
	if st := must(t, rt, child.Wait()); !st.Success() {
		t.Fatalf("status %v", st)
	}
	o := must(t, rt, Command("sh", "-c", "exec 1>&-; echo err >&2; exit 4").Output())
	if len(o.Stdout) != 0 || string(o.Stderr) != "err\n" || o.Status.ExitCode() != 4 {
		t.Fatalf("Output of a child that closed its stdout: %q %q %v", o.Stdout, o.Stderr, o.Status)
	}
}

// An Output future dropped by a Timeout (or the losing arm of a select) kills its
// child; the Status future of a child that has since exited returns its status, and
// polling either again after it finished returns the same result.
func TestHostile7OutputDroppedByTimeout(t *testing.T) {
	rt := fileRT(t)
	r := run(t, rt, Timeout(10*time.Millisecond, Command("sleep", "30").Output()))
	if !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("Timeout around Output of sleep 30 = %v, want ErrTimeout", r.Err)
	}
	st := Command("sh", "-c", "exit 5").Status()
	first := run(t, rt, st)
	again := run(t, rt, st)
	if first.Err != nil || first.Value.ExitCode() != 5 || again.Value != first.Value {
		t.Fatalf("Status = %v %v, polled again %v", first.Value, first.Err, again.Value)
	}
}

// One Output future started on a runtime and finished on another, and one child waited
// for by tasks of two runtimes at once and by a plain goroutine's BlockOn: all see the
// same exit.
func TestHostile7ProcessAcrossRuntimes(t *testing.T) {
	rt1, rt2 := fileRT(t), fileRT(t)
	out := Command("sh", "-c", "read x; echo got $x").Output()
	// Output's stdin is the null device: read fails at once, the echo still runs.
	run(t, rt1, PollFn(func(cx *Context) (struct{}, bool) { out.Poll(cx); return struct{}{}, true }))
	if o := must(t, rt2, out); string(o.Stdout) != "got\n" || o.Status.ExitCode() != 0 {
		t.Fatalf("Output finished on a second runtime: %q %v", o.Stdout, o.Status)
	}

	child, err := Command("sh", "-c", "read x; exit 3").Stdin(Piped).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := Spawn(rt1, child.Wait()), Spawn(rt2, child.Wait())
	must(t, rt2, child.Stdin.Close())
	for i, h := range []JoinHandle[Result[*os.ProcessState]]{h1, h2} {
		r, err := waitHandle(t, h)
		if err != nil || r.Err != nil || r.Value.ExitCode() != 3 {
			t.Fatalf("waiter on runtime %d: %v %v %v", i+1, r.Value, r.Err, err)
		}
	}
	if st := must(t, rt1, child.Wait()); st.ExitCode() != 3 {
		t.Fatalf("Wait after the exit: %v", st)
	}
}

// A Child that Spawn did not return (the zero value, or a nil *Child) is misuse: its
// methods panic with a message naming the method, not a nil dereference deep inside,
// and TryWait does not claim that a process runs.
func TestHostile7ZeroChildPanicsClearly(t *testing.T) {
	var zero Child
	var nilChild *Child
	for _, ch := range []*Child{&zero, nilChild} {
		for name, f := range map[string]func(){
			"ID":      func() { ch.ID() },
			"Wait":    func() { ch.Wait() },
			"TryWait": func() { ch.TryWait() },
			"Kill":    func() { ch.Kill() },
			"Signal":  func() { ch.Signal(SignalTerminate) },
		} {
			p := hostile7Recover(f)
			if s, _ := p.(string); !strings.Contains(s, "Child."+name) || !strings.Contains(s, "Spawn") {
				t.Errorf("%s on a Child Spawn did not return: recovered %v, want a panic naming Child.%s and Spawn", name, p, name)
			}
		}
	}
}
