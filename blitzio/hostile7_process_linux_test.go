//go:build linux

package blitzio

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// hostile7Seq makes hostile7Marker's values unique within the test binary.
var hostile7Seq atomic.Int64

// hostile7Marker returns a sleep duration of about a minute that no other process's
// command line contains: "60.<pid><sequence>".
func hostile7Marker() string {
	return fmt.Sprintf("60.%d%06d", os.Getpid(), hostile7Seq.Add(1))
}

// hostile7Procs returns the pids of the live processes whose command line contains
// marker (a zombie's command line is empty).
func hostile7Procs(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostile7Gone reports whether pid is reaped (not even a zombie any more).
func hostile7Gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err != nil
}

// An Output or Status future that is made and dropped without being polled starts
// nothing, as a Tokio future of Command::output or Command::status never polled. Had the
// call started the command, its exec would be done when the call returned (exec.Cmd's
// Start returns after the exec), so the sleep would be in /proc at once.
func TestHostile7UnpolledOutputAndStatusStartNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(*Cmd) any
	}{
		{"Output", func(c *Cmd) any { return c.Output() }},
		{"Status", func(c *Cmd) any { return c.Status() }},
	} {
		marker := hostile7Marker()
		f := tc.make(Command("sleep", marker).Stdin(Null).Stdout(Null).Stderr(Null))
		pids := hostile7Procs(marker)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(pids) != 0 {
			t.Errorf("%s started the command when it was called, before any poll (pids %v)", tc.name, pids)
		}
		Drop(f)
		if pids := hostile7Procs(marker); len(pids) != 0 {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("%s dropped before its first poll started the command (pids %v)", tc.name, pids)
		}
	}
}

// Dropped after its first poll: Output's child is killed and reaped (no zombie), as
// before; Status's keeps running (Tokio's default, kill_on_drop(false)) and is reaped
// when it exits.
func TestHostile7DroppedAfterStartIsReaped(t *testing.T) {
	rt := fileRT(t)
	for _, tc := range []struct {
		name  string
		make  func(*Cmd) any
		kills bool
	}{
		{"Output", func(c *Cmd) any { return c.Output() }, true},
		{"Status", func(c *Cmd) any { return c.Status() }, false},
	} {
		marker := hostile7Marker()
		f := tc.make(Command("sleep", marker).Stdin(Null).Stdout(Null).Stderr(Null))
		pollOnce(t, rt, f)
		pids := hostile7Procs(marker)
		if len(pids) != 1 {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%s after its first poll: %d processes running the command, want 1", tc.name, len(pids))
		}
		Drop(f)
		if !tc.kills {
			if hostile7Gone(pids[0]) {
				t.Fatalf("%s dropped after the start: the child is gone, want it still running", tc.name)
			}
			syscall.Kill(pids[0], syscall.SIGKILL)
		}
		waitFor(t, tc.name+" dropped after the start: its child killed and reaped", func() bool { return hostile7Gone(pids[0]) })
	}
}

// pollOnce polls f once inside rt (the poll may start a read on rt's blocking pool)
// and leaves it pending.
func pollOnce(t *testing.T, rt *Runtime, f any) {
	t.Helper()
	run(t, rt, PollFn(func(cx *Context) (struct{}, bool) {
		switch f := f.(type) {
		case Future[Result[Output]]:
			if _, ok := f.Poll(cx); ok {
				t.Error("the future finished at its first poll")
			}
		case Future[Result[*os.ProcessState]]:
			if _, ok := f.Poll(cx); ok {
				t.Error("the future finished at its first poll")
			}
		default:
			t.Fatalf("pollOnce: %T", f)
		}
		return struct{}{}, true
	}))
}
