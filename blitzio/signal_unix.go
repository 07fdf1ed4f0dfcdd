//go:build unix

package blitzio

import (
	"os"
	"syscall"
)

// platformSignals maps each SignalKind to this platform's number (syscall's constants are
// per operating system: SIGUSR1 is 10 on Linux and 30 on macOS and the BSDs).
var platformSignals = [numSignalKinds]os.Signal{
	SignalInterrupt:    syscall.SIGINT,
	SignalTerminate:    syscall.SIGTERM,
	SignalHangup:       syscall.SIGHUP,
	SignalQuit:         syscall.SIGQUIT,
	SignalUser1:        syscall.SIGUSR1,
	SignalUser2:        syscall.SIGUSR2,
	SignalChild:        syscall.SIGCHLD,
	SignalWindowChange: syscall.SIGWINCH,
	SignalPipe:         syscall.SIGPIPE,
	SignalAlarm:        syscall.SIGALRM,
}
