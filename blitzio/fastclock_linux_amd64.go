//go:build linux && amd64

package blitzio

import (
	"bytes"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The fast clock. A sleep must read the clock to compute its deadline, and Go's monotonic
// clock read (time.Since: a vDSO clock_gettime on the system stack) costs about 26 ns on
// the 2-core EPYC KVM guest we measure on, a quarter of starting and dropping a sleep.
// The CPU's time-stamp counter costs about 10 ns to read. When the kernel itself uses the
// TSC as its clocksource (so it is invariant and synchronized across CPUs), a reading is
// extrapolated from an anchor: a (TSC, monotonic time) pair taken at most tscMaxExtrap
// ago, times a rate calibrated against the monotonic clock over at least tscCalMin.
//
// Error bound: the rate is measured over >= 50 ms with pair jitter of < 1 us, so it is
// good to 1e-5 or better; NTP may change CLOCK_MONOTONIC's slew by at most 1000 ppm
// between calibrations; over 10 ms of extrapolation both give under 11 us, and tscMargin
// (50 us) is added to every extrapolated reading, so a reading is never below the true
// time. Anything unusual (no anchor yet, the TSC going backwards or jumping beyond the
// extrapolation window, a pair read across a preemption) takes the slow path: a real
// monotonic read, which also refreshes the anchor.
//
// Only deadline computations use this clock (SleepFuture's first poll); firing timers,
// parking and every other time read use the real monotonic clock.

func rdtsc() int64

const (
	tscMaxExtrap = 10 * time.Millisecond // re-anchor at least this often
	tscCalMin    = 50 * time.Millisecond // shortest calibration baseline
	tscCalMax    = 4 * time.Second       // longest one (tracks NTP slew changes)
	tscPairMax   = 20_000                // ticks: a slower (TSC, mono, TSC) read was preempted
)

type tscAnchor struct {
	tsc       int64
	mono      time.Duration // since procStart, at tsc
	nsPerTick float64
	maxTicks  int64 // tscMaxExtrap in ticks
}

var (
	// tscUsable reads the clocksource once, on the first slow read (not at import).
	tscUsable = sync.OnceValue(tscClocksource)
	tscNow    atomic.Pointer[tscAnchor]
	tscCal    struct {
		mu        sync.Mutex
		tsc0      int64
		mono0     time.Duration
		set       bool
		nsPerTick float64
	}
)

// tscClocksource reports whether the kernel's clocksource is the TSC: then the kernel has
// checked that it is invariant and synchronized between CPUs (it would have switched to
// another clocksource otherwise), and CLOCK_MONOTONIC is itself computed from it.
func tscClocksource() bool {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && bytes.Equal(bytes.TrimSpace(b), []byte("tsc"))
}

// sinceProcStart returns the time since procStart, at least the true value (see above).
func sinceProcStart() time.Duration {
	if a := tscNow.Load(); a != nil {
		if dt := rdtsc() - a.tsc; dt >= 0 && dt < a.maxTicks {
			return a.mono + time.Duration(float64(dt)*a.nsPerTick) + tscMargin
		}
	}
	return tscSlow()
}

// tscSlow reads the real monotonic clock and, when it can, re-anchors and recalibrates.
func tscSlow() time.Duration {
	if !tscUsable() {
		return time.Since(procStart)
	}
	t1 := rdtsc()
	m := time.Since(procStart)
	t2 := rdtsc()
	if t2 < t1 || t2-t1 > tscPairMax || !tscCal.mu.TryLock() {
		return m // preempted between the reads, or another goroutine is re-anchoring
	}
	defer tscCal.mu.Unlock()
	tc := t1 + (t2-t1)/2
	c := &tscCal
	if !c.set || tc <= c.tsc0 || m <= c.mono0 {
		c.tsc0, c.mono0, c.set = tc, m, true
		return m
	}
	if span := m - c.mono0; span >= tscCalMin {
		rate := float64(span) / float64(tc-c.tsc0)
		if rate > 0.01 && rate < 100 { // between 10 MHz and 100 GHz: a sane TSC
			c.nsPerTick = rate
		}
		if span >= tscCalMax {
			c.tsc0, c.mono0 = tc, m
		}
	}
	if c.nsPerTick > 0 {
		tscNow.Store(&tscAnchor{
			tsc:       tc,
			mono:      m,
			nsPerTick: c.nsPerTick,
			maxTicks:  int64(float64(tscMaxExtrap) / c.nsPerTick),
		})
	}
	return m
}

// plainReadClock reports whether cycles can time a system call: the TSC is the
// kernel's clocksource (invariant, and synchronized between CPUs).
func plainReadClock() bool { return tscUsable() }

// cycles reads the TSC.
func cycles() int64 { return rdtsc() }
