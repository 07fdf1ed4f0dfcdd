package blitz

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// watchdogTimeout is how long the regression tests wait for an operation that must
// return before they declare it hung. It is generous: the machine is shared and -race
// slows everything down; a real hang never returns at all.
const watchdogTimeout = 90 * time.Second

// watchdogAfter returns a channel that fires after watchdogTimeout.
func watchdogAfter() <-chan time.Time { return time.After(watchdogTimeout) }

// runWithWatchdog runs f on a new goroutine and waits for it. If f has not returned
// within watchdogTimeout, it prints name, "hang" and the stacks of all goroutines and ends
// the test binary with exit status 2. It does not panic or call t.Fatal: the test's
// cleanups would then run first, and closing a hung pool hangs too, until the global test
// timeout, with no word of which call hung.
func runWithWatchdog(t *testing.T, name string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-watchdogAfter():
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s: did not return within %v (hang)\n\n%s\n", t.Name(), name, watchdogTimeout, buf)
		os.Exit(2)
	}
}
