package blitzio

import "golang.org/x/sys/unix"

// workerTimerSlack is the timer slack, in nanoseconds, lowerTimerSlack sets.
const workerTimerSlack = 1000

// setTimerSlack sets the calling thread's timer slack to workerTimerSlack. The call
// cannot block and its error (none is possible for a positive value) is of no use.
func setTimerSlack() {
	unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, workerTimerSlack, 0)
}
