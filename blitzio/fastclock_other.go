//go:build !(linux && amd64)

package blitzio

import "time"

// sinceProcStart is the monotonic time since procStart. Without a usable TSC it is a
// plain monotonic clock read.
func sinceProcStart() time.Duration { return time.Since(procStart) }

// plainReadClock reports false: without the TSC there is no clock cheap enough to time
// every plain read with, so readNoWait keeps to preadv2(RWF_NOWAIT).
func plainReadClock() bool { return false }

// cycles is never called when plainReadClock is false.
func cycles() int64 { return 0 }
