package blitz

import (
	"fmt"
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
// within watchdogTimeout, the test binary panics with name, "hang" and the stacks of all
// goroutines: a hung pool would otherwise also hang the test's cleanups (Close) until the
// global test timeout, with a less clear message.
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
		panic(fmt.Sprintf("%s: %s: did not return within %v (hang)\n\n%s", t.Name(), name, watchdogTimeout, buf))
	}
}
