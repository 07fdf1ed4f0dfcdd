package blitzio

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// scheduledIO is the driver's state for one registered file descriptor (Tokio's
// ScheduledIo): a readiness word that the driver sets and the operations clear, and one
// waiter list per direction.
//
// The readiness word packs three things so that they change together in one CAS:
//
//	bits  0-15  poller.Ready bits seen and not yet cleared
//	bits 16-47  tick: incremented by every readiness the driver delivers
//	bit  63     shutdown: the socket is closed (or the runtime shut down)
//
// The tick closes this race: a read gets EAGAIN, and before it clears Readable the
// driver delivers a new edge (data arrived after the EAGAIN). Clearing unconditionally
// would erase that edge, and with edge-triggered polling no other edge comes: the reader
// would sleep on data. clearReadiness therefore clears only if the tick is still the one
// the operation observed before its system call.
//
// Stale events for a closed and reused fd never reach the new owner: the driver's token
// for a registration carries a slot generation (see ioDriver), and an event whose token
// does not match the slot's current owner is dropped.
//
// Size: there is one per open socket, so it is kept small (88 bytes, the 96-byte size
// class, on 64-bit platforms): the descriptor is an int32, and each direction keeps its
// first waiter inline; only a second task waiting in the same direction at once (rare:
// one task reads a socket, one writes it) allocates the overflow lists.
type scheduledIO struct {
	drv   *ioDriver
	token uint64

	readiness atomic.Uint64

	// refs counts operations inside a system call on fd, plus closingBit once Close has
	// begun. The fd is closed by whoever brings the count to exactly closingBit (Close
	// itself when no operation is in flight, or the last operation to finish): an
	// operation never runs on an fd number that was closed and reused under it.
	refs     atomic.Int64
	fd       int32
	released atomic.Bool
	fdClosed atomic.Bool // set when release has closed the fd

	mu sync.Mutex
	// reader and writer are the first waiter of each direction (zero: none); more holds
	// the others, nil until a direction has two at once. Guarded by mu.
	reader, writer Waker
	more           *moreWaiters
}

// moreWaiters are the waiters beyond the first of each direction.
type moreWaiters struct {
	readers, writers []Waker
}

const (
	readyMask    = 0xFFFF
	tickShift    = 16
	tickMask     = 0xFFFF_FFFF << tickShift
	shutdownBit  = 1 << 63
	closingBit   = 1 << 62
	readInterest = poller.Readable | poller.ReadClosed | poller.Error
	writeInterst = poller.Writable | poller.WriteClosed | poller.Error
)

// direction selects a waiter list and the readiness bits that satisfy it.
type direction uint8

const (
	dirRead direction = iota
	dirWrite
)

func (d direction) interest() poller.Ready {
	if d == dirRead {
		return readInterest
	}
	return writeInterst
}

// setReadiness ORs r into the word with a new tick (the driver's side) and reports
// whether the socket is still open.
func (s *scheduledIO) setReadiness(r poller.Ready) bool {
	for {
		cur := s.readiness.Load()
		if cur&shutdownBit != 0 {
			return false
		}
		tick := (cur&tickMask + 1<<tickShift) & tickMask
		next := cur&^tickMask | tick | uint64(r)
		if s.readiness.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// clearReadiness clears the bits of mask observed in ev, unless the driver delivered a
// readiness since ev was read (the tick moved): then the new edge is kept.
func (s *scheduledIO) clearReadiness(ev uint64, mask poller.Ready) {
	for {
		cur := s.readiness.Load()
		if cur&tickMask != ev&tickMask || cur&shutdownBit != 0 {
			return
		}
		if s.readiness.CompareAndSwap(cur, cur&^uint64(mask)) {
			return
		}
	}
}

// pollReady reports the readiness word when the socket is ready in direction d (or shut
// down); otherwise it leaves cx's waker in d's list and reports false.
//
// Lost wake-up and what prevents it: the driver sets readiness (atomic) and then takes mu
// to collect the waiters; we read readiness, take mu, add the waker, release mu and read
// readiness again. If the driver's readiness store came after our first read, either its
// mu section follows ours (it sees our waker) or precedes it (our second read, after our
// mu section, sees its store). spin/scheduledio.pml checks this hand-off.
func (s *scheduledIO) pollReady(cx *Context, d direction) (uint64, bool) {
	want := uint64(d.interest()) | shutdownBit
	ev := s.readiness.Load()
	if ev&want != 0 {
		return ev, true
	}
	s.addWaiter(d, cx.Waker())
	if s.drv.armer != nil {
		s.drv.arm(s, d)
	}
	ev = s.readiness.Load()
	if ev&want != 0 {
		return ev, true // our waker stays listed: at worst a spurious wake later
	}
	return 0, false
}

// slots returns direction d's inline waiter and, if allocate or already there, its
// overflow list (caller holds mu).
func (s *scheduledIO) slots(d direction, allocate bool) (*Waker, *[]Waker) {
	if s.more == nil && allocate {
		s.more = new(moreWaiters)
	}
	if d == dirRead {
		if s.more == nil {
			return &s.reader, nil
		}
		return &s.reader, &s.more.readers
	}
	if s.more == nil {
		return &s.writer, nil
	}
	return &s.writer, &s.more.writers
}

func (s *scheduledIO) addWaiter(d direction, w Waker) {
	s.mu.Lock()
	first, more := s.slots(d, false)
	if first.WillWake(w) {
		s.mu.Unlock()
		return
	}
	if more != nil {
		for _, o := range *more {
			if o.WillWake(w) {
				s.mu.Unlock()
				return
			}
		}
	}
	if first.IsZero() {
		*first = w
	} else {
		_, more = s.slots(d, true)
		*more = append(*more, w)
	}
	s.mu.Unlock()
}

// removeWaiter forgets w in direction d: the Drop of a waiting future, so that an
// abandoned operation leaves nothing behind. It reports whether w was there.
func (s *scheduledIO) removeWaiter(d direction, w Waker) (removed bool) {
	if w.IsZero() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first, more := s.slots(d, false)
	if first.WillWake(w) {
		removed = true
		*first = Waker{}
		if more != nil && len(*more) > 0 { // move one up, so an empty first means none
			last := len(*more) - 1
			*first = (*more)[last]
			(*more)[last] = Waker{}
			*more = (*more)[:last]
		}
	} else if more != nil {
		for i, o := range *more {
			if o.WillWake(w) {
				removed = true
				last := len(*more) - 1
				(*more)[i] = (*more)[last]
				(*more)[last] = Waker{}
				*more = (*more)[:last]
				break
			}
		}
	}
	return removed
}

// waiters reports how many wakers direction d holds (tests use it to see an operation
// wait).
func (s *scheduledIO) waiters(d direction) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, more := s.slots(d, false)
	n := 0
	if !first.IsZero() {
		n++
	}
	if more != nil {
		n += len(*more)
	}
	return n
}

// takeWaiters appends to buf the waiters that readiness r satisfies and removes them.
func (s *scheduledIO) takeWaiters(r poller.Ready, buf []Waker) []Waker {
	s.mu.Lock()
	if r&readInterest != 0 {
		buf = s.takeLocked(dirRead, buf)
	}
	if r&writeInterst != 0 {
		buf = s.takeLocked(dirWrite, buf)
	}
	s.mu.Unlock()
	return buf
}

func (s *scheduledIO) takeLocked(d direction, buf []Waker) []Waker {
	first, more := s.slots(d, false)
	if first.IsZero() {
		return buf // the overflow list is empty whenever the first slot is
	}
	buf = append(buf, *first)
	*first = Waker{}
	if more != nil {
		buf = append(buf, *more...)
		clear(*more)
		*more = (*more)[:0]
	}
	return buf
}

// incref admits an operation to the fd; false once Close has begun.
func (s *scheduledIO) incref() bool {
	if s.refs.Add(1)&closingBit != 0 {
		s.decref()
		return false
	}
	return true
}

func (s *scheduledIO) decref() {
	if s.refs.Add(-1) == closingBit {
		s.release()
	}
}

// close shuts the socket down: waiters are woken (they see shutdown and fail with
// net.ErrClosed), and the fd is closed as soon as no operation is inside a system call
// on it. It reports false if the socket was already closing.
func (s *scheduledIO) close() bool {
	for {
		v := s.refs.Load()
		if v&closingBit != 0 {
			return false
		}
		if s.refs.CompareAndSwap(v, v|closingBit) {
			break
		}
	}
	for {
		cur := s.readiness.Load()
		if s.readiness.CompareAndSwap(cur, cur|shutdownBit) {
			break
		}
	}
	wakers := s.takeWaiters(readInterest|writeInterst, nil)
	if s.refs.Load() == closingBit {
		s.release()
	}
	// Wakers are user code: wakeAll wakes every one even if some panic (and reports
	// the panic), so a Close or the runtime's shutdown is not cut short by one.
	wakeAll(wakers)
	return true
}

// release deregisters and closes the fd, once.
func (s *scheduledIO) release() {
	if !s.released.CompareAndSwap(false, true) {
		return
	}
	s.drv.deregister(s)
	closeFD(int(s.fd))
	s.fdClosed.Store(true)
}

// waitReleased returns once release has closed the fd, after a close: an operation
// inside a system call on the socket holds it open until that call returns, and every
// such call is non-blocking (microseconds), so this waits that long at most. It is what
// package net's Close does (it waits for the descriptor's last reference), so that the
// address is free when Close returns.
func (s *scheduledIO) waitReleased() {
	for i := 0; !s.fdClosed.Load(); i++ {
		if i < 64 {
			runtime.Gosched() // the holder may be waiting for this P
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// The bits a system call's EAGAIN disproves. That includes the closed bits: a read side
// at end of file returns 0, not EAGAIN, so EAGAIN proves a ReadClosed stale (an
// unconnected socket reports a hang-up when registered, before its connect completes);
// keeping it would make every later poll retry the call, a busy loop.
const (
	readInterestClear  = readInterest
	writeInterestClear = writeInterst
)
