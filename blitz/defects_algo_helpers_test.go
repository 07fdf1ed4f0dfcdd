package blitz

import "time"

// watchdogTimeout is how long the regression tests wait for an operation that must
// return before they declare it hung. It is generous: the machine is shared and -race
// slows everything down; a real hang never returns at all.
const watchdogTimeout = 90 * time.Second

// watchdogAfter returns a channel that fires after watchdogTimeout.
func watchdogAfter() <-chan time.Time { return time.After(watchdogTimeout) }
