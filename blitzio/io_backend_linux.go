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
		u := uringReadiness{Poller: p, c: p.(poller.Completer)}
		if fc, ok := p.(poller.FileCompleter); ok && fc.Features()&poller.FileReadWrite != 0 {
			u.files = newRingFiles(fc)
		}
		return u, nil
	}
}

// uringReadiness is the io_uring poller as the driver uses it: readiness through
// multishot polls, and completion-based file reads and writes (files, nil when the
// kernel lacks IORING_OP_READ/WRITE). io_uring queues a registration's submission until
// the next Poll, and a worker may be blocked in Poll for a long time, so Register
// submits at once (a poll armed late would miss nothing, but its socket's tasks would
// wait for the next unrelated wake-up). Deregister submits at once too: until its
// cancellation reaches the kernel, the ring holds a reference to the socket's file, and
// the close that follows would not shut the connection down (no FIN for the peer).
// File operations are batched instead: see ringFiles.
type uringReadiness struct {
	poller.Poller
	c     poller.Completer
	files *ringFiles
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

// Close closes the ring (which cancels and reaps every operation in flight, or leaks
// the memory of the ones the kernel does not give up), then fails the file operations
// whose completions it swallowed, so that nothing waits for them for ever.
func (u uringReadiness) Close() error {
	err := u.Poller.Close()
	if u.files != nil {
		u.files.abandonAll()
	}
	return err
}
