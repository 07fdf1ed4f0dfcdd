package blitzio

import (
	"testing"
	"time"
)

// TestFastClockNeverEarly checks the fast clock against the monotonic clock read just
// before and just after it, across calibration and re-anchoring: a reading must never be
// below the earlier true time (a sleep's deadline would be early), and must not run more
// than the margin plus a small slack ahead of the later one.
func TestFastClockNeverEarly(t *testing.T) {
	run := 300 * time.Millisecond // past tscCalMin and many re-anchors (tscMaxExtrap)
	if testing.Short() {
		run = 120 * time.Millisecond
	}
	const slack = 2 * time.Millisecond // scheduling noise between the three reads
	end := time.Now().Add(run)
	n := 0
	for time.Now().Before(end) {
		for range 1000 {
			before := time.Since(procStart)
			got := sinceProcStart()
			after := time.Since(procStart)
			if got < before {
				t.Fatalf("fast clock early: %v < true time %v (by %v)", got, before, before-got)
			}
			if got > after+tscMargin+slack {
				t.Fatalf("fast clock %v runs ahead of true time %v by %v", got, after, got-after)
			}
			n++
		}
		time.Sleep(time.Millisecond) // let anchors age and calibration baselines grow
	}
	t.Logf("%d readings checked", n)
}

// TestSleepNeverEarly checks the property the fast clock exists for, end to end with the
// real clock: a sleep completes no earlier than its duration after its first poll.
func TestSleepNeverEarly(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for _, d := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 3 * time.Millisecond} {
		for range 20 {
			var start time.Time
			s := Sleep(d)
			took, err := BlockOn(rt, PollFn(func(cx *Context) (time.Duration, bool) {
				if start.IsZero() {
					start = time.Now()
				}
				if _, ok := s.Poll(cx); !ok {
					return 0, false
				}
				return time.Since(start), true
			}))
			if err != nil {
				t.Fatal(err)
			}
			if took < d {
				t.Fatalf("Sleep(%v) completed after %v", d, took)
			}
		}
	}
}
