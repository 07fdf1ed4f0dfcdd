//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package poller

// NewEpoll is not available on this platform.
func NewEpoll() (Poller, error) { return nil, unsupported("epoll") }

// NewKqueue is not available on this platform.
func NewKqueue() (Poller, error) { return nil, unsupported("kqueue") }
