//go:build unix

package blitzio

import "golang.org/x/sys/unix"

// closeFD closes a descriptor the driver owned. EINTR is not retried: on Linux the
// descriptor is released even when close reports EINTR, and a retry could close a
// number another goroutine has just been given.
func closeFD(fd int) { unix.Close(fd) }
