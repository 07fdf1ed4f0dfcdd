//go:build !race

package poller

// epollRaceEnabled reports a -race build, whose instrumentation allocates.
const epollRaceEnabled = false
