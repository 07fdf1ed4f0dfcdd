package blitzio

import (
	"testing"
)

// parkMany makes rt's workers park n times or more: each round spawns a task from
// outside, waits for it, and waits for every worker to be parked again.
func parkMany(t *testing.T, rt *Runtime, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		h := Spawn(rt, Ready(i))
		if v, err := waitHandle(t, h); err != nil || v != i {
			t.Fatalf("round %d: got %v, %v", i, v, err)
		}
		waitFor(t, "every worker parked", func() bool {
			return rt.idle.parked.Load() == 1<<len(rt.workers)-1
		})
	}
}

// TestHostile10TimerSlackLoweredOnPark: by default a parking worker lowers its thread's
// timer slack (a system call on Linux), and with KeepTimerSlack it never does.
func TestHostile10TimerSlackLoweredOnPark(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	parkMany(t, rt, 20)
	// A worker's parked bit is set before it blocks (and before the call): wait for the
	// call rather than assume it came with the bit.
	waitFor(t, "a parked worker's timer slack call", func() bool { return rt.timerSlackSets.Load() > 0 })
	keep := newRT(t, Config{Workers: 1, KeepTimerSlack: true})
	parkMany(t, keep, 20)
	if got := keep.timerSlackSets.Load(); got != 0 {
		t.Fatalf("KeepTimerSlack: %d timer slack calls, want 0", got)
	}
}
