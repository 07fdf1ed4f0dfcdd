package lockfree

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// mustPanic runs f and fails the test unless it panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic; want one mentioning %q", want)
		}
		msg, ok := r.(string)
		if !ok {
			if e, isErr := r.(error); isErr {
				msg = e.Error()
			}
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("panic %v; want it to mention %q", r, want)
		}
	}()
	f()
}

// stressTimeout bounds every wait in the stress tests: a lost wake or a lost item shows
// up as a test failure with a message after this long, never as a hung CI job.
const stressTimeout = 60 * time.Second

// afterStress returns a channel that fires after stressTimeout.
func afterStress() <-chan time.Time { return time.After(stressTimeout) }

// waitOrFail waits for done and fails the test with what if it takes longer than
// stressTimeout.
func waitOrFail(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(stressTimeout):
		t.Fatalf("timed out after %v waiting for %s (lost wake-up or hang)", stressTimeout, what)
	}
}

// scale returns n, reduced for -short and for the race detector so the whole package
// stays within the CI budget; the plain `go test` run keeps the full size.
func scale(n int) int {
	if raceEnabled {
		n /= 2
	}
	if testing.Short() {
		n /= 10
	}
	return max(n, 1)
}

// eventually polls cond until it holds, failing the test with what after stressTimeout
// instead of spinning forever when a bug keeps cond false.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(stressTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", stressTimeout, what)
		}
		runtime.Gosched()
	}
}
