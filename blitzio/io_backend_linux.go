package blitzio

import "github.com/blitzgo/blitz/blitzio/internal/poller"

// uringEntries is the submission ring size. Registrations are multishot polls, armed
// once per socket, so the ring bounds submissions in flight between two Polls, not
// sockets; a burst beyond it waits in the poller's backlog.
const uringEntries = 1024

func init() {
	openIOUring = func() (poller.Poller, error) {
		p, err := poller.NewIOUring(uringEntries)
		if err != nil {
			return nil, err
		}
		return uringReadiness{Poller: p, c: p.(poller.Completer)}, nil
	}
}

// uringReadiness is the io_uring poller as the driver uses it: readiness through
// multishot polls. io_uring queues a registration's submission until the next Poll,
// and a worker may be blocked in Poll for a long time, so Register submits at once (a
// poll armed late would miss nothing, but its socket's tasks would wait for the next
// unrelated wake-up). Deregister submits at once too: until its cancellation reaches the
// kernel, the ring holds a reference to the socket's file, and the close that follows
// would not shut the connection down (no FIN for the peer).
type uringReadiness struct {
	poller.Poller
	c poller.Completer
}

func (u uringReadiness) Register(fd int, token uint64, interest poller.Interest) error {
	if err := u.Poller.Register(fd, token, interest); err != nil {
		return err
	}
	return u.c.Flush()
}

func (u uringReadiness) Deregister(fd int, token uint64) error {
	if err := u.Poller.Deregister(fd, token); err != nil {
		return err
	}
	return u.c.Flush()
}
