package stress

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// The harness every newer suite of this package runs on:
//
//   - a seed per run: each test derives its random choices (which operations, where a
//     panic goes, when a shutdown strikes) from the run's seed and its own name, and a
//     failing test prints the line that replays it (STRESS_SEED=N or -stress.seed N).
//     Replaying fixes the choices, not the goroutine interleavings, which stay the
//     scheduler's: a replay reproduces the same load and fault plan, and a failure that
//     depends on a rare interleaving may need a few runs;
//   - a profile: the default short one runs in CI in well under two minutes for the
//     whole package, with and without -race (counts shrink under -race, which is about
//     ten times slower); -soak DURATION runs the soak test for that long;
//   - watchdogs: every wait is bounded, and a test that would hang fails instead with
//     every goroutine's stack;
//   - leak checks: after each scenario the goroutine count and the open file
//     descriptors (/proc/self/fd) must be back to what they were before it.

var (
	seedFlag = flag.Uint64("stress.seed", 0, "replay the run with this `seed` (also STRESS_SEED); 0 picks one from the clock")
	soakFlag = flag.Duration("soak", 0, "run the soak test for this `duration` (default: the short CI profile, a few seconds)")
	soakDir  = flag.String("soak.dir", "", "write the soak test's CSV and SVG into `dir` (default: a temporary directory)")
)

// runSeed is the seed of this run, chosen once: from -stress.seed, from STRESS_SEED, or
// from the clock.
var runSeed = sync.OnceValue(func() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("STRESS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil || v == 0 {
			panic(fmt.Sprintf("stress: STRESS_SEED=%q is not a positive integer", s))
		}
		return v
	}
	return uint64(time.Now().UnixNano()) | 1
})

// seeded returns a random source for t, derived from the run's seed and t's name, and
// logs the seed, which go test prints if t fails.
func seeded(t testing.TB) *rand.Rand {
	t.Helper()
	seed := runSeed()
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	// Logged now rather than in a cleanup: go test prints a test's log only when it
	// fails (or with -v), and a cleanup would run before later cleanups (the leak
	// checks) have failed the test.
	t.Logf("seed %d; replay: STRESS_SEED=%d go test -run '^%s$' ./testing/stress",
		seed, seed, strings.SplitN(t.Name(), "/", 2)[0])
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// scaled returns n for the full profile, divided by div under -race (and at least 1),
// and divided again by 2 with -short.
func scaled(n, div int) int {
	if raceEnabled {
		n /= div
	}
	if testing.Short() {
		n /= 2
	}
	return max(n, 1)
}

// stacks returns every goroutine's stack.
func stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// watchdog runs f on a goroutine of its own and fails t with every goroutine's stack if
// f has not returned within d. It must be called from the test goroutine.
func watchdog(t testing.TB, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		// A panic in f would kill the test binary without naming the test; carry it
		// back so the test fails with it instead.
		defer func() { done <- recover() }()
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-timer.C:
		t.Fatalf("%s: not finished after %v (deadlock or lost wake-up); goroutines:\n%s", what, d, stacks())
	}
}

// waitHandle waits for h with a bound: a handle that never resolves is a lost task.
func waitHandle[T any](h blitzio.JoinHandle[T], d time.Duration) (T, error, bool) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := h.Wait(); ch <- res{v, err} }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.v, r.err, true
	case <-timer.C:
		var zero T
		return zero, nil, false
	}
}

// openFDs returns the open file descriptors of the process, each with what it points
// to, or nil where /proc/self/fd does not exist.
func openFDs() map[string]string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	fds := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself used, closed by now
		}
		fds[e.Name()] = target
	}
	return fds
}

// leakCheck records the goroutines and file descriptors open now and registers a
// cleanup that fails t unless both are back to that within a few seconds after the
// test (goroutines may take a moment to exit after the Close that stopped them). The
// goroutine failure prints every stack; the fd failure lists each extra descriptor.
func leakCheck(t testing.TB) {
	t.Helper()
	baseG := runtime.NumGoroutine()
	baseFD := openFDs()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > baseG && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > baseG {
			t.Errorf("goroutine leak: %d goroutines, %d before the scenario; goroutines:\n%s", n, baseG, stacks())
		}
		if baseFD == nil {
			return
		}
		var extra []string
		for time.Now().Before(deadline.Add(2 * time.Second)) {
			extra = extra[:0]
			for fd, target := range openFDs() {
				if old, ok := baseFD[fd]; !ok || old != target {
					extra = append(extra, fd+" -> "+target)
				}
			}
			if len(extra) == 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		slices.Sort(extra)
		t.Errorf("fd leak: %d descriptors open that were not before the scenario: %s", len(extra), strings.Join(extra, ", "))
	})
}

// TestMain warms up what the Go runtime and the standard library create once per
// process and keep (the netpoller's epoll and wake-up descriptors, os/signal's loop
// goroutine), so that the first scenario's leak check does not count them.
func TestMain(m *testing.M) {
	flag.Parse()
	warmUp()
	os.Exit(m.Run())
}

func warmUp() {
	if r, w, err := os.Pipe(); err == nil { // first pollable file: creates the netpoller
		r.Close()
		w.Close()
	}
	if l, err := blitzio.ListenSignals(blitzio.SignalUser1); err == nil { // os/signal's goroutine
		l.Close()
	}
	rt, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		return
	}
	blitzio.BlockOn(rt, blitzio.Sleep(time.Millisecond))
	if p, err := blitzio.BlockOn(rt, blitzio.Command("true").Status()); err == nil && p.Err == nil {
		_ = p.Value
	}
	rt.Close()
}

// waitUntil polls cond until it holds, failing t with every goroutine's stack after d.
// It must be called from the test goroutine.
func waitUntil(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %v; goroutines:\n%s", what, d, stacks())
		}
		time.Sleep(time.Millisecond)
	}
}
