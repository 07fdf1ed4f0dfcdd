package blitzio

import "time"

// procStart is the origin of sinceProcStart, the process-wide clock behind the real-clock
// runtimes' fast time reads.
var procStart = time.Now()

// tscMargin is added to every extrapolated reading of the fast clock (see
// fastclock_linux_amd64.go), so that a reading is never below the true time: a sleep's
// deadline computed from it can then only be later than asked for, never earlier. 50 us
// is far below the wheel's 1 ms resolution and far above the clock's error bound.
const tscMargin = 50 * time.Microsecond

// elapsedAtLeast is rt.elapsed() for computing a deadline "d from now": it may read up to
// tscMargin (plus a few microseconds) late but never early, and on linux/amd64 it costs
// about half a clock read (see fastclock_linux_amd64.go).
func (rt *Runtime) elapsedAtLeast() time.Duration {
	if rt.testClock != nil {
		return rt.testClock.Now().Sub(rt.testStart)
	}
	return sinceProcStart() - rt.startOffset
}
