//go:build !unix

package blitzio

import (
	"os"
	"syscall"
)

// platformSignals: outside Unix, os/signal delivers only an interrupt (ctrl-c, ctrl-break)
// and, on Windows, SIGTERM for console close, logoff and shutdown events.
var platformSignals = [numSignalKinds]os.Signal{
	SignalInterrupt: os.Interrupt,
	SignalTerminate: syscall.SIGTERM,
}
