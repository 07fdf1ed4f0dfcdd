package tsync

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// watchdog fails the whole test binary, with every goroutine's stack, if the test has
// not called the returned stop function within d: a hang becomes a clear failure instead
// of waiting for go test's global timeout.
func watchdog(t testing.TB, d time.Duration) (stop func()) {
	t.Helper()
	return watchdogState(t, d, nil)
}

// watchdogState is watchdog that also prints state() (the primitive's state word, its
// queue, the test's progress) in the last lines, next to the test's name.
func watchdogState(t testing.TB, d time.Duration, state func() string) (stop func()) {
	t.Helper()
	name := t.Name()
	tm := time.AfterFunc(d, func() { watchdogFire(fmt.Sprintf("%s did not finish within %v", name, d), state) })
	return func() { tm.Stop() }
}

// watchdogFire writes every goroutine's stack, then panics with what (the test and how
// it failed) and state() if given: the dump first and the name last, because a CI log
// keeps only the tail of the output.
func watchdogFire(what string, state func() string) {
	buf := make([]byte, 8<<20)
	n := runtime.Stack(buf, true)
	fmt.Fprintf(os.Stderr, "watchdog: %s; goroutines:\n%s\n", what, buf[:n])
	st := ""
	if state != nil {
		st = "; state: " + state()
	}
	panic(fmt.Sprintf("watchdog: %s (lost wake-up or deadlock)%s", what, st))
}

// watchdogProgress is watchdogState for a long stress test: it fires only when progress()
// (a count that grows while the test gets anywhere) has not moved for idle, however long
// the test runs in all. A loaded machine (go test running several packages under -race
// on two cores) may slow a stress test far past a fixed deadline without anything being
// wrong; a lost wake-up or a deadlock stops the count for good.
func watchdogProgress(t testing.TB, idle time.Duration, progress func() int64, state func() string) (stop func()) {
	t.Helper()
	name := t.Name()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(idle / 10)
		defer tick.Stop()
		last, since := progress(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if p := progress(); p != last {
				last, since = p, time.Now()
				continue
			}
			if time.Since(since) < idle {
				continue
			}
			watchdogFire(fmt.Sprintf("%s made no progress for %v", name, idle), state)
		}
	}()
	return func() { close(done) }
}

// debugState describes m for a watchdog: the state word's flags and generation, and
// how many waiters are queued. Racy by nature (it takes mu only for the queue).
func (m *Mutex) debugState() string {
	s := m.state.Load()
	m.mu.Lock()
	q := 0
	for w := m.waiters.head; w != nil; w = w.next {
		q++
	}
	m.mu.Unlock()
	return fmt.Sprintf("locked=%v waiters=%v woken=%v handoff=%v gen=%d queued=%d",
		s&mLocked != 0, s&mWaiters != 0, s&mWoken != 0, s&mHandOff != 0, s>>mGenShift, q)
}

// testCx is a hand-made Context whose waker counts its wakes.
type testCx struct {
	cx    *blitzio.Context
	wakes atomic.Int64
}

func newTestCx() *testCx {
	c := &testCx{}
	c.cx = blitzio.NewContext(nil, blitzio.WakerFunc(func() { c.wakes.Add(1) }))
	return c
}

func newRT(t testing.TB, workers int) *blitzio.Runtime {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// expectPanic runs f and fails unless it panics with a message containing want.
func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if s := fmt.Sprint(r); !strings.Contains(s, want) {
			t.Fatalf("panic %q, want one containing %q", s, want)
		}
	}()
	f()
}

// stressScale shrinks iteration counts under the race detector, which slows every
// synchronised operation about tenfold.
func stressScale(n int) int {
	if raceEnabled {
		return max(n/10, 1)
	}
	return n
}

// waitAll waits for every handle and fails on an error.
func waitAll[T any](t testing.TB, hs []blitzio.JoinHandle[T]) {
	t.Helper()
	for i, h := range hs {
		if _, err := h.Wait(); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
}
