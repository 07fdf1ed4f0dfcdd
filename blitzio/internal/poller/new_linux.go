//go:build linux

package poller

// NewKqueue is not available on Linux.
func NewKqueue() (Poller, error) { return nil, unsupported("kqueue") }
