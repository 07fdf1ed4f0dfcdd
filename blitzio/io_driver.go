package blitzio

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// ioDriver is the runtime's I/O driver: it owns the platform Poller, maps the tokens of
// its events to scheduledIO entries, and wakes the tasks waiting on them.
//
// Who polls: a worker that runs out of tasks, and every few scheduler ticks a busy one,
// polls without waiting (turn with timeout 0, under a try-lock: if another worker is
// polling, skip). A worker that parks and wins the try-lock waits in the Poller instead
// of on its channel, with the next timer deadline as timeout; producers that unpark it
// call Poller.Wake (see Runtime.unparkOne). The epoll Poller waits as a parked goroutine
// on Go's own netpoller (its epoll descriptor is registered there), not in a blocking
// epoll_wait: see poller.NewEpoll. The ready tasks a worker finds go to its own queue
// (wakeIO).
//
// Tokens: slot index in the low 32 bits, slot generation (>= 1) in the high 32 bits. A
// slot's generation moves on every time it is freed, so an event still queued for a
// closed fd whose number (and slot) was reused does not match the new owner's token and
// is dropped.
type ioDriver struct {
	p       poller.Poller
	backend Backend
	reason  string // why BackendAuto fell back, "" otherwise

	// pollMu is held by the goroutine inside p.Poll (TryLock only, never waited for).
	pollMu sync.Mutex
	events []poller.Event // guarded by pollMu
	// polling is the id of the worker blocked in p.Poll as part of parking, or -1.
	polling atomic.Int32
	// parkedTurns counts the blocking polls of parked workers that returned (tests use
	// it to check that an idle runtime does not wake up).
	parkedTurns atomic.Uint64

	mu     sync.RWMutex
	slots  []*scheduledIO
	gens   []uint32
	free   []uint32
	closed bool
	// closing holds the sockets shutdown has still to close.
	closing []*scheduledIO
	// live counts registered descriptors and io_uring operations in flight. While it is
	// zero no worker parks inside the poller: each parks on its channel, which a new task
	// wakes with a channel send instead of a system call. The registration or operation
	// that makes it non-zero calls activate, which wakes a parked worker so that it parks
	// again inside the poller.
	live     atomic.Int64
	activate func()
	// armer is set when the poller reports readiness only for directions armed (io_uring
	// with one-shot polls): pollReady arms a direction before its task waits (see arm).
	armer readinessArmer
}

// readinessArmer is a poller whose readiness must be armed before a wait (see
// poller.Armer), and which queues the arming until Flush or its next Poll.
type readinessArmer interface {
	Arm(fd int, token uint64, interest poller.Interest) error
	Flush() error
	// ArmsOnDemand is false when the poller keeps every registration armed (io_uring
	// with multishot polls): then the driver never calls Arm.
	ArmsOnDemand() bool
}

const ioEventBatch = 256

// errNoNetwork is wrapped by Register errors of the portable backend.
var errDriverClosed = errors.New("blitzio: I/O driver closed")

func newIODriver(p poller.Poller, b Backend, reason string) *ioDriver {
	d := &ioDriver{p: p, backend: b, reason: reason, events: make([]poller.Event, ioEventBatch)}
	if a, ok := p.(readinessArmer); ok && a.ArmsOnDemand() {
		d.armer = a
	}
	d.polling.Store(-1)
	return d
}

// register adds fd to the driver (both directions, edge-triggered) and returns its
// state. The state starts out not ready: registering an fd that is already readable or
// writable queues an event for it at once (epoll and kqueue both report the current
// state on registration), so no edge is lost, and Readable/Writable never report a
// readiness nobody saw. With a poller that arms on demand (io_uring's one-shot polls)
// it starts out writable instead (see below).
func (d *ioDriver) register(fd int) (*scheduledIO, error) {
	s := &scheduledIO{drv: d, fd: int32(fd)}
	if d.armer != nil {
		// A poller that arms on demand reports nothing until a task waits: start out
		// writable, so that the first write tries its system call (a new socket's send
		// buffer is empty) and arms only after EAGAIN, where waiting for the arming's
		// report would cost a round trip through the driver per connection. Readiness
		// is a hint every operation checks with its system call, as in Tokio (a connect
		// confirms with getpeername). Not readable: a Readable future must not report a
		// socket with nothing to read.
		s.readiness.Store(uint64(poller.Writable))
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errDriverClosed
	}
	var idx uint32
	if n := len(d.free); n > 0 {
		idx = d.free[n-1]
		d.free = d.free[:n-1]
	} else {
		idx = uint32(len(d.slots))
		d.slots = append(d.slots, nil)
		d.gens = append(d.gens, 1)
	}
	s.token = uint64(d.gens[idx])<<32 | uint64(idx)
	// Register under the lock: shutdown sets closed and takes its snapshot of the slots
	// under it, so a registration either is in that snapshot (and gets closed) or sees
	// closed; and the poller is never used after shutdown closed it (its fd number could
	// belong to someone else by then).
	if err := d.p.Register(fd, s.token, poller.Read|poller.Write); err != nil {
		d.free = append(d.free, idx)
		d.mu.Unlock()
		return nil, err
	}
	d.slots[idx] = s
	d.mu.Unlock()
	d.addLive()
	return s, nil
}

func (d *ioDriver) freeSlot(s *scheduledIO) {
	idx := uint32(s.token)
	d.mu.Lock()
	if int(idx) < len(d.slots) && d.slots[idx] == s {
		d.slots[idx] = nil
		g := d.gens[idx] + 1
		if g == 0 || g == 0xFFFF_FFFF {
			g = 1
		}
		d.gens[idx] = g
		d.free = append(d.free, idx)
	}
	d.mu.Unlock()
}

// deregister removes s from the poller and frees its slot (from scheduledIO.release).
func (d *ioDriver) deregister(s *scheduledIO) {
	d.mu.RLock()
	if !d.closed {
		// After the poller closed its fd number may be reused: never touch it then.
		d.p.Deregister(int(s.fd), s.token)
	}
	d.mu.RUnlock()
	d.freeSlot(s)
	d.live.Add(-1)
}

// turn polls once with timeout (the caller holds pollMu), marks the sockets that became
// ready, and appends their waiters to buf. The caller wakes them (wakeIO) after it has
// released pollMu and anything else it holds: a waker is user code that may panic or
// call runtime.Goexit, and must not leave the driver locked.
func (d *ioDriver) turn(timeout time.Duration, parkedWorker int, buf []Waker) []Waker {
	n, err := d.p.Poll(d.events, timeout)
	if parkedWorker >= 0 {
		d.polling.Store(-1)
		d.parkedTurns.Add(1)
	}
	if err != nil || n == 0 {
		return buf
	}
	d.mu.RLock()
	for _, ev := range d.events[:n] {
		if ev.Op != poller.OpReady {
			buf = d.completeOp(ev, buf) // a file operation's completion (file_uring_linux.go)
			continue
		}
		idx := uint32(ev.Token)
		if int(idx) >= len(d.slots) {
			continue
		}
		s := d.slots[idx]
		if s == nil || s.token != ev.Token {
			continue // stale: the fd was closed (and maybe reused) after the event
		}
		if s.setReadiness(ev.Ready) {
			buf = s.takeWaiters(ev.Ready, buf)
		}
	}
	d.mu.RUnlock()
	return buf
}

// wakeIO wakes, on worker w, the waiters a turn collected, and clears buf for reuse.
//
// A task of w's runtime goes to the back of w's local queue, which the worker pops
// next: a readiness found by this worker is served by this worker, the way Go's
// netpoller hands the goroutines it readies to the P that polled. Through Waker.Wake
// instead, every task would go through the injection queue (a lock) and be found by
// whichever worker looks first. Anything else (a BlockOn, a WakerFunc, a task of another
// runtime) is woken with wakeAll: every one, even if some panic.
//
// A parked worker is woken once, after the batch, and only if w then has more than one
// task queued: Tokio's rule after a driver turn (notifications come in batches, and the
// task w runs next needs nobody's help). Before, each push called notifyParked, which
// woke a worker even for a turn that found a single socket; that worker found nothing
// to steal and parked again. In the 100-connection echo the difference was within the
// run-to-run noise of this machine (5 interleaved runs each).
func wakeIO(w *worker, buf []Waker) []Waker {
	if len(buf) == 0 {
		return buf
	}
	rest := buf[:0] // the wakers that are not our tasks, compacted in place
	queued := false
	for _, wk := range buf {
		if h, ok := wk.t.(*header); ok && h.rt == w.rt {
			if h.state.wake() {
				w.q.pushBack(h, &w.rt.inject)
				queued = true
			}
			continue
		}
		rest = append(rest, wk)
	}
	if queued && w.q.len() > 1 {
		w.rt.notifyParked()
	}
	if len(rest) > 0 {
		wakeAll(rest)
	}
	clear(buf)
	return buf[:0]
}

// addLive counts one more registration or operation in flight; the first one wakes a
// worker into the poller (see live).
func (d *ioDriver) addLive() {
	if d.live.Add(1) == 1 && d.activate != nil {
		d.activate()
	}
}

// pollNow is the between-tasks poll of worker w: zero timeout, skipped if another
// goroutine polls. It reports how many waiters it woke.
func (d *ioDriver) pollNow(w *worker) int {
	if d.live.Load() == 0 || !d.pollMu.TryLock() {
		return 0
	}
	w.ioWakers = d.turn(0, -1, w.ioWakers[:0])
	d.pollMu.Unlock()
	n := len(w.ioWakers)
	w.ioWakers = wakeIO(w, w.ioWakers)
	return n
}

// arm arms s's readiness poll for direction dir, for a task that is about to wait (its
// waker is recorded first, so the event that the arming produces finds it).
//
// The arming is queued and reaches the kernel with the next submission: the next
// between-tasks poll of a worker, or the blocking poll of the next worker to park, which
// come soon on a busy runtime (batching the armings of many sockets into one system
// call). Only a worker already parked in the driver would not submit it: then it is
// submitted now. polling is read after the arming is queued, and a worker publishes
// polling before its blocking poll takes the queued submissions, so one of the two
// submits it. The thread that submits is the one whose task work the kernel later runs
// to post the readiness (see poller.IOUringConfig.OneShotReadiness): a busy worker's.
func (d *ioDriver) arm(s *scheduledIO, dir direction) {
	in := poller.Read
	if dir == dirWrite {
		in = poller.Write
	}
	if d.armer.Arm(int(s.fd), s.token, in) != nil {
		return // deregistered or closed: the socket's close wakes its waiters
	}
	if d.polling.Load() >= 0 {
		d.armer.Flush()
	}
}

// wake makes a parked poller return.
func (d *ioDriver) wake() { d.p.Wake() }

// shutdown closes every registered socket and then the poller (Runtime shutdown, after
// the workers have exited, so nobody is inside Poll).
func (d *ioDriver) shutdown() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true // from here register fails and deregister leaves the poller alone
		for _, s := range d.slots {
			if s != nil {
				d.closing = append(d.closing, s)
			}
		}
		d.p.Close()
	}
	d.mu.Unlock()
	// Closing the fds also removes them from the (closed) poller's interest list. A
	// waker that calls runtime.Goexit ends this goroutine in the middle; the runtime's
	// shutdown goes on on a new one and calls shutdown again, which resumes here.
	for {
		d.mu.Lock()
		if len(d.closing) == 0 {
			d.closing = nil
			d.mu.Unlock()
			return
		}
		s := d.closing[0]
		d.closing[0] = nil
		d.closing = d.closing[1:]
		d.mu.Unlock()
		s.close()
	}
}

// BackendError is the error New returns (wrapping ErrBackendUnavailable) when the
// backend Config.Backend names cannot be set up; Reason says why.
func backendUnavailable(b Backend, reason error) error {
	return fmt.Errorf("%w: %w: Config.Backend = %v: %w", ErrInvalidConfig, ErrBackendUnavailable, b, reason)
}
