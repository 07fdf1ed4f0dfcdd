//go:build unix

package blitzio

import (
	"os"
	"syscall"
)

// platformSignals maps each SignalKind to this platform's number (syscall's constants are
// per operating system: SIGUSR1 is 10 on Linux and 30 on macOS and the BSDs).
var platformSignals = [numSignalKinds]os.Signal{
	Interrupt:    syscall.SIGINT,
	Terminate:    syscall.SIGTERM,
	Hangup:       syscall.SIGHUP,
	Quit:         syscall.SIGQUIT,
	User1:        syscall.SIGUSR1,
	User2:        syscall.SIGUSR2,
	Child:        syscall.SIGCHLD,
	WindowChange: syscall.SIGWINCH,
	Pipe:         syscall.SIGPIPE,
	Alarm:        syscall.SIGALRM,
}
