//go:build freebsd

package blitzio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// tcpKeepIdle is the option for the keep-alive idle time.
const tcpKeepIdle = unix.TCP_KEEPIDLE

var unixForkLock = &syscall.ForkLock
