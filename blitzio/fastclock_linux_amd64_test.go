//go:build linux && amd64

package blitzio

import (
	"testing"
	"time"
)

// TestFastClockCalibrates checks that, where the kernel's clocksource is the TSC, the
// fast clock really calibrates and extrapolates (else it would silently always take the
// slow path), with a rate that agrees with the monotonic clock.
func TestFastClockCalibrates(t *testing.T) {
	if !tscUsable() {
		t.Skip("clocksource is not tsc: the fast clock is the monotonic clock")
	}
	t1, m1 := rdtsc(), time.Since(procStart)
	end := time.Now().Add(2 * tscCalMin)
	for time.Now().Before(end) {
		sinceProcStart()
		time.Sleep(time.Millisecond)
	}
	t2, m2 := rdtsc(), time.Since(procStart)
	a := tscNow.Load()
	if a == nil {
		t.Fatalf("no anchor after %v of readings", 2*tscCalMin)
	}
	want := float64(m2-m1) / float64(t2-t1)
	if r := a.nsPerTick / want; r < 0.99 || r > 1.01 {
		t.Fatalf("calibrated %.6f ns/tick, measured %.6f", a.nsPerTick, want)
	}
}
