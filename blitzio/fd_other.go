//go:build !unix

package blitzio

// closeFD is never reached on platforms without sockets support (the portable poller
// refuses every registration).
func closeFD(int) {}
