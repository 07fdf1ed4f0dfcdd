//go:build darwin

package blitzio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// tcpKeepIdle is the option for the keep-alive idle time (TCP_KEEPALIVE on macOS).
const tcpKeepIdle = unix.TCP_KEEPALIVE

var unixForkLock = &syscall.ForkLock
