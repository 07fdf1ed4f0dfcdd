package blitzio

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A Close called by a task's code panics; it must not also stop the runtime behind the
// caller's back (the panic message tells the user to call Shutdown with a cancelled
// context "to only start the shutdown", i.e. Close did not). It used to start the
// shutdown, then panic: every later Spawn was cancelled.
func TestHostileCloseInTaskLeavesRuntimeRunning(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	h := Spawn(rt, PollFn(func(*Context) (int, bool) { _ = rt.Close(); return 0, true }))
	_, err := waitHandle(t, h)
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "cannot block from within a runtime") {
		t.Fatalf("Close in a task: %v", err)
	}
	v, err := waitHandle(t, Spawn(rt, Lazy(func() int { return 5 })))
	if err != nil || v != 5 {
		t.Fatalf("after a Close that panicked in a task, a new task got %v, %v: the runtime was shut down", v, err)
	}
	select {
	case <-rt.done:
		t.Fatal("the runtime's shutdown started")
	case <-time.After(time.Millisecond):
	}
}
