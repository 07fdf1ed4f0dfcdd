//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package poller

// NewEpoll is not available on this platform.
func NewEpoll() (Poller, error) { return nil, unsupported("epoll") }
