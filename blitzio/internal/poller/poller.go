// Package poller is blitzio's platform layer: one Poller per operating-system event
// mechanism (io_uring and epoll on Linux, kqueue on macOS and the BSDs, a portable
// fallback elsewhere). It knows system calls, registrations and completions, and nothing
// of futures, tasks or wakers: the driver in package blitzio maps the tokens it gets back
// to per-socket state and wakes tasks.
//
// The contract is readiness first (mio's model, which every platform can give), plus an
// optional completion interface (Completer) that io_uring implements for the operations
// where it saves system calls (multishot accept, receive into kernel-selected provided
// buffers, send). The driver uses Completer when the Poller has it.
package poller

import (
	"errors"
	"time"
)

// Interest is what a registration wants to hear about.
type Interest uint8

// Interests.
const (
	Read Interest = 1 << iota
	Write
)

// Ready is the readiness an Event reports.
type Ready uint16

// Readiness bits. ReadClosed means the peer shut down its write side (EPOLLRDHUP, or
// EOF from kqueue); WriteClosed that writing can no longer succeed (EPOLLHUP); Error a
// pending socket error (EPOLLERR; read it with SO_ERROR).
const (
	Readable Ready = 1 << iota
	Writable
	ReadClosed
	WriteClosed
	Error
)

// Op names what produced an Event.
type Op uint8

// Event kinds. OpReady is a readiness report for a Register'ed fd; the others are
// completions of operations submitted through Completer.
const (
	OpReady Op = iota
	OpAccept
	OpRecv
	OpSend
	OpCancel
)

// Event is one readiness report or completion.
type Event struct {
	// Token is the value given at Register or in the submitted operation. The driver
	// packs a generation into it so that an event for an fd that has been closed and
	// reused is recognised as stale and ignored.
	Token uint64
	// Ready is the readiness (OpReady only).
	Ready Ready
	// Op says what produced the event.
	Op Op
	// More is true when a multishot operation stays armed after this completion.
	More bool
	// Res is a completion's result: the accepted fd (OpAccept), the byte count
	// (OpRecv, OpSend), or a negative errno.
	Res int32
	// Buf is the provided-buffer id that holds an OpRecv's bytes (see Completer.Buffer),
	// or -1.
	Buf int32
}

// Poller is one platform event mechanism. Register, Deregister, Wake and Close are safe
// from any goroutine; Poll is called by one goroutine at a time (the driver holds a lock
// or a try-lock around it).
type Poller interface {
	// Name is the backend's name as Backend.String spells it ("io_uring", "epoll", ...).
	Name() string
	// Register starts watching fd for the interests, edge-triggered: an event is
	// reported when the fd becomes ready, not again until it has been drained to
	// EAGAIN and becomes ready anew. One registration per fd, for its lifetime.
	Register(fd int, token uint64, interest Interest) error
	// Deregister stops watching fd. Events already queued for its token may still be
	// reported by later Polls; the caller discards them by token.
	Deregister(fd int, token uint64) error
	// Poll waits up to timeout for events and stores them in events, returning how
	// many. timeout < 0 waits without limit, 0 does not wait. It returns 0 events
	// (and no error) when woken by Wake or interrupted by a signal.
	Poll(events []Event, timeout time.Duration) (int, error)
	// Wake makes the Poll in progress (or the next one) return promptly.
	Wake() error
	// Close releases the mechanism. Poll must not be running or be called again (a
	// Poll waiting on Go's netpoller returns, one blocked in the kernel may not).
	// Register, Deregister and Wake racing Close, or called after it, return an error
	// wrapping os.ErrClosed: they never touch a descriptor number that may name another
	// file by then.
	Close() error
}

// Armer is implemented by a Poller whose registrations report readiness only when
// armed (io_uring with IOUringConfig.OneShotReadiness). A registration starts unarmed;
// Arm arms it for the interests (each direction on its own), and one event comes for
// an armed direction once the fd is ready in it (at once if it already is), after which
// that direction is unarmed again until the next Arm. A caller arms a direction when it
// is about to wait for it (after a system call failed with EAGAIN, with its waiter
// recorded first), so no readiness is lost: the arming itself looks at the fd's state.
// Arming an armed direction does nothing. Arm is queued like the other submissions of a
// Completer: it reaches the kernel at the next Poll or Flush. One exception to "one
// event per arming": once the peer has shut down its writing side, the write direction
// stays armed (io_uring reports the peer's shutdown to every poll, so a one-shot poll
// for send space would complete at once for ever) and reports each wake-up of the
// socket until the registration ends.
type Armer interface {
	Arm(fd int, token uint64, interest Interest) error
}

// Completer is implemented by completion-based Pollers (io_uring). Submissions are
// queued and handed to the kernel in one batch at the next Poll (or Flush): no system
// call per operation. Every submitted operation produces at least one Event with its
// token (a cancelled one too), after which the kernel no longer touches its memory.
type Completer interface {
	Poller
	// Features reports which optional operations the kernel supports (probed at
	// creation).
	Features() Features
	// Accept submits an accept on the listening fd (multishot when Features says so:
	// one Event per connection, More set while it stays armed). Accepted fds are
	// non-blocking and close-on-exec.
	Accept(fd int, token uint64) error
	// Recv submits a receive into a buffer the kernel picks from the provided-buffer
	// ring when the data arrives (so a waiting receive holds no buffer); the Event's Buf
	// names it. Read it with Buffer and give it back with Release.
	Recv(fd int, token uint64) error
	// Send submits a send of p, which must stay untouched (and is kept reachable by the
	// Completer) until its Event arrives. MSG_NOSIGNAL is implied.
	Send(fd int, token uint64, p []byte) error
	// Cancel asks the kernel to cancel every operation submitted with token; each ends
	// with an Event (Res = -ECANCELED when it was cancelled).
	Cancel(token uint64) error
	// Buffer returns the bytes of provided buffer id holding n bytes.
	Buffer(id int32, n int) []byte
	// Release hands provided buffer id back to the kernel.
	Release(id int32)
	// Flush submits the queued operations now.
	Flush() error
}

// Features are optional kernel capabilities found at creation.
type Features uint32

// Feature bits.
const (
	MultishotAccept Features = 1 << iota
	MultishotPoll
	ProvidedBuffers
	RingMessage // IORING_OP_MSG_RING, used by Wake
)

// ErrUnsupported is returned by New when the platform has no such mechanism, and wrapped
// by the io_uring constructor's error when the kernel refuses the ring (the wrapping
// error says why: ENOSYS, EPERM from seccomp or kernel.io_uring_disabled, ENOMEM from the
// memlock limit, a missing feature).
var ErrUnsupported = errors.New("poller: not supported")
