package blitzio

import (
	"os"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// uringEntries is the submission ring size. Registrations are multishot polls, armed
// once per socket, so the ring bounds submissions in flight between two Polls, not
// sockets; a burst beyond it waits in the poller's backlog.
const uringEntries = 1024

func init() {
	openIOUring = func() (poller.Poller, error) {
		multishot := os.Getenv(uringMultishotEnv) == "1"
		p, err := poller.NewIOUringConfig(poller.IOUringConfig{Entries: uringEntries, OneShotReadiness: !multishot})
		if err != nil {
			return nil, err
		}
		u := uringReadiness{Poller: p, c: p.(poller.Completer)}
		if !multishot {
			u.a = p.(poller.Armer)
		}
		if fc, ok := p.(poller.FileCompleter); ok && fc.Features()&poller.FileReadWrite != 0 {
			u.files = newRingFiles(fc)
		}
		return u, nil
	}
}

// uringReadiness is the io_uring poller as the driver uses it: readiness through
// one-shot polls armed when a task waits (a, see ioDriver.arm; with
// BLITZIO_IOURING_MULTISHOT=1, a is nil and one multishot poll per socket is armed at
// registration), and completion-based file reads and writes (files, nil when the
// kernel lacks IORING_OP_READ/WRITE). io_uring queues a registration's submission until
// the next Poll, and a worker may be blocked in Poll for a long time, so Register
// submits at once (a multishot poll armed late would miss nothing, but its socket's
// tasks would wait for the next unrelated wake-up; a one-shot registration submits
// nothing). Deregister submits at once too: until its
// cancellation reaches the kernel, the ring holds a reference to the socket's file, and
// the close that follows would not shut the connection down (no FIN for the peer).
// File operations are batched instead: see ringFiles.
type uringReadiness struct {
	poller.Poller
	c     poller.Completer
	a     poller.Armer // nil with multishot polls
	files *ringFiles
}

// uringMultishotEnv names the environment variable that, set to 1 when a runtime is
// created, makes its io_uring driver keep one multishot readiness poll armed for each
// socket's life instead of arming one-shot polls when a task waits (see
// poller.IOUringConfig.OneShotReadiness for why one-shot is the default). Tests and the
// benchmarks use it to run and compare both.
const uringMultishotEnv = "BLITZIO_IOURING_MULTISHOT"

// Arm arms fd's readiness poll for interest (the driver calls it when a task is about to
// wait: see ioDriver.arm). It queues the arming; Flush hands it to the kernel.
func (u uringReadiness) Arm(fd int, token uint64, interest poller.Interest) error {
	return u.a.Arm(fd, token, interest)
}

// Flush hands the queued submissions to the kernel.
func (u uringReadiness) Flush() error { return u.c.Flush() }

// ArmsOnDemand reports whether readiness must be armed before a wait (one-shot polls).
func (u uringReadiness) ArmsOnDemand() bool { return u.a != nil }

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
