package blitzio

import (
	"fmt"
	"runtime"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// openIOUring opens the io_uring backend. It is a variable so that the io_uring Poller
// plugs in here, and so that tests can make io_uring fail to check the fallback.
var openIOUring = func() (poller.Poller, error) {
	return nil, fmt.Errorf("%w: io_uring backend not built into this version", poller.ErrUnsupported)
}

// openDriver sets up the backend b names. BackendAuto tries the best the platform has
// and records why it fell back; an explicit choice that fails makes New fail with the
// reason.
func openDriver(b Backend) (*ioDriver, error) {
	switch b {
	case BackendAuto:
		switch runtime.GOOS {
		case "linux", "android":
			p, err := openIOUring()
			if err == nil {
				return newIODriver(p, BackendIOUring, ""), nil
			}
			reason := "io_uring unavailable: " + err.Error()
			p, err = poller.NewEpoll()
			if err != nil {
				return nil, fmt.Errorf("blitzio: I/O driver: %s; epoll: %w", reason, err)
			}
			return newIODriver(p, BackendEpoll, reason), nil
		case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
			p, err := poller.NewKqueue()
			if err != nil {
				return nil, fmt.Errorf("blitzio: I/O driver: %w", err)
			}
			return newIODriver(p, BackendKqueue, ""), nil
		}
		return newIODriver(poller.NewPortable(), BackendPortable,
			"no epoll, io_uring or kqueue on "+runtime.GOOS+": sockets are not supported"), nil
	case BackendIOUring:
		p, err := openIOUring()
		if err != nil {
			return nil, backendUnavailable(b, err)
		}
		return newIODriver(p, b, ""), nil
	case BackendEpoll:
		p, err := poller.NewEpoll()
		if err != nil {
			return nil, backendUnavailable(b, err)
		}
		return newIODriver(p, b, ""), nil
	case BackendKqueue:
		p, err := poller.NewKqueue()
		if err != nil {
			return nil, backendUnavailable(b, err)
		}
		return newIODriver(p, b, ""), nil
	}
	return newIODriver(poller.NewPortable(), BackendPortable, ""), nil
}

// Backend returns the I/O backend the runtime uses, and, when Config.Backend was
// BackendAuto and the best backend could not be set up (io_uring refused by the kernel,
// a seccomp filter or a memlock limit), the reason it fell back; "" otherwise.
func (rt *Runtime) Backend() (b Backend, fallbackReason string) {
	return rt.io.backend, rt.io.reason
}
