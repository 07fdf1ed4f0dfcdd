//go:build !linux

package blitzio

// setTimerSlack does nothing: only Linux has a per-thread timer slack to set.
func setTimerSlack() {}
