package lockfree

import (
	"sync"
	"sync/atomic"
)

// The four states shared by OnceLatch and CoreLatch (Rayon's CoreLatch states).
const (
	latchUnset    uint32 = 0 // nobody waits, not set
	latchSleepy   uint32 = 1 // a waiter announced it is about to park; it checks once more
	latchSleeping uint32 = 2 // a waiter is parked (or committed to parking)
	latchSet      uint32 = 3 // set: waiters return, nobody may park any more
)

// OnceLatch is a one-shot completion flag with blocking wait: a forked job sets it when
// its result is written, the joiner probes it or waits on it.
//
// It has four states, UNSET, SLEEPY, SLEEPING and SET. A waiter moves UNSET to SLEEPY
// (announcing that it is about to park), then SLEEPY to SLEEPING, then parks. SetDone
// swaps in SET and wakes the waiter only if the previous state was SLEEPING. The race it
// prevents is the missed wake: a setter that checks "is anyone asleep?" just before the
// waiter falls asleep. Here the setter's swap and the waiter's CAS to SLEEPING are
// totally ordered on one word: either the CAS sees SET and the waiter does not park, or
// the swap sees SLEEPING and the setter wakes it. (Model: spin/oncelatch.pml.)
//
// Parking is Go-native and allocation-free: a sync.Mutex used as a semaphore (Go
// allows one goroutine to lock a mutex and another to unlock it). The waiter that moves
// SLEEPY to SLEEPING locks park first and keeps it locked, then blocks locking it a
// second time; SetDone, having swapped out SLEEPING, unlocks it, which hands the mutex
// to a blocked waiter. Each waiter unlocks once on its way out, so the mutex passes from
// waiter to waiter and ends unlocked. Holding park across the CAS is what makes the
// hand-off safe: the setter unlocks only a mutex that the SLEEPING waiter locked, never
// an unlocked one (a fatal error in Go), and a SetDone that comes first makes the CAS
// fail, so that waiter unlocks and returns instead of blocking.
//
// Who calls what: SetDone once, from any goroutine; Probe and Wait from any goroutine,
// any number of times; Reset only when no goroutine uses the latch. The zero value is an
// unset latch. A latch must not be copied after first use.
type OnceLatch struct {
	state atomic.Uint32
	park  sync.Mutex
}

// Probe reports whether the latch is set. It never blocks. A true result happens after
// everything the setter wrote before SetDone (the atomic load synchronises with the swap).
func (l *OnceLatch) Probe() bool { return l.state.Load() == latchSet }

// SetDone sets the latch and wakes every parked waiter. Calling it again is harmless.
func (l *OnceLatch) SetDone() {
	if l.state.Swap(latchSet) == latchSleeping {
		// The waiter that made the latch SLEEPING holds park and is blocked locking it
		// again: unlocking releases it, and it passes the mutex on to any other waiter.
		l.park.Unlock()
	}
}

// Wait blocks until the latch is set. It returns at once when it already is. It never
// allocates.
func (l *OnceLatch) Wait() {
	for {
		if testHookWaitStep != nil {
			testHookWaitStep()
		}
		switch l.state.Load() {
		case latchSet:
			return
		case latchUnset:
			l.state.CompareAndSwap(latchUnset, latchSleepy)
		case latchSleepy:
			// Lock before announcing SLEEPING (see the type comment). If another waiter
			// holds park, this blocks until the setter's unlock is passed along, and the
			// CAS below then fails because the latch is SET.
			l.park.Lock()
			if l.state.CompareAndSwap(latchSleepy, latchSleeping) {
				l.park.Lock() // park: SetDone unlocks
			}
			l.park.Unlock() // pass the mutex on to the next waiter, or leave it free
		case latchSleeping:
			// Another waiter parked; queue behind it on the same mutex.
			l.park.Lock()
			l.park.Unlock()
		}
	}
}

// testHookWaitStep, when set by a test before any waiter starts, runs before each step
// of OnceLatch.Wait, so a stress test can yield there and let a setter land between the
// waiter's transitions (on a busy machine they otherwise almost never interleave).
var testHookWaitStep func()

// Reset returns the latch to UNSET so it can be reused. Only call it when no goroutine is
// waiting on, probing or setting the latch (for example when a job frame is recycled
// after its join completed); the park mutex is then unlocked.
func (l *OnceLatch) Reset() { l.state.Store(latchUnset) }

// CoreLatch is the per-worker sleep handshake of the fork-join pool (Rayon's CoreLatch).
// It carries the same four states as OnceLatch, but the worker parks on its own mutex
// and condition variable, so CoreLatch only arbitrates who may sleep and who must wake.
//
// The worker (the latch's owner) calls GetSleepy, FallAsleep and WakeUp; anyone calls
// Set (to tell the worker it must not sleep, or must wake) and Probe.
//
//	UNSET --GetSleepy--> SLEEPY --FallAsleep--> SLEEPING --WakeUp--> UNSET
//	  any state --Set--> SET
//
// The race it prevents is a Set that lands between the worker's decision to sleep and
// its block: the worker calls FallAsleep while holding its mutex and blocks with
// cond.Wait, and a waker whose Set reports SLEEPING takes that mutex before signalling,
// so the signal cannot fall into the gap; a Set before FallAsleep makes FallAsleep fail.
// All transitions are CAS or swap on one word, so they are totally ordered. (Model:
// spin/corelatch.pml, with TestCoreLatchHandshake as the executable version.)
//
// The zero value is UNSET.
type CoreLatch struct {
	state atomic.Uint32
}

// GetSleepy moves UNSET to SLEEPY and reports whether it did. Owner only. It fails when
// the latch was set: the worker must go and look for work instead of sleeping.
func (l *CoreLatch) GetSleepy() bool { return l.state.CompareAndSwap(latchUnset, latchSleepy) }

// FallAsleep moves SLEEPY to SLEEPING and reports whether it did. Owner only. It fails
// when Set happened since GetSleepy; the worker must then not block.
func (l *CoreLatch) FallAsleep() bool {
	return l.state.CompareAndSwap(latchSleepy, latchSleeping)
}

// WakeUp moves SLEEPING (or SLEEPY) back to UNSET after the owner woke, spuriously or
// not, and leaves SET alone so a pending Set is not lost. Owner only.
func (l *CoreLatch) WakeUp() {
	if !l.state.CompareAndSwap(latchSleeping, latchUnset) {
		l.state.CompareAndSwap(latchSleepy, latchUnset)
	}
}

// Set moves the latch to SET from any state and reports whether the owner was SLEEPING,
// in which case the caller must wake it (signal its condition variable). Any goroutine.
func (l *CoreLatch) Set() bool { return l.state.Swap(latchSet) == latchSleeping }

// Probe reports whether the latch is SET. Any goroutine.
func (l *CoreLatch) Probe() bool { return l.state.Load() == latchSet }

// Reset returns the latch to UNSET. Owner only, once it has acted on a Set.
func (l *CoreLatch) Reset() { l.state.Store(latchUnset) }

// CountLatch counts outstanding work and releases its waiters when the count drops to
// zero, like sync.WaitGroup, but lock-free on the counting path and with a non-blocking
// Probe. It is one-shot: the first time the count returns to zero the latch is set for
// good, and Increment after that panics.
//
// Increment and Decrement may be called from any goroutine; the zero value has count 0.
// Everything a goroutine wrote before its Decrement happens before Wait returns (and
// before Probe reports true): the decrements are read-modify-writes on one atomic word,
// so the last one sees all earlier ones, and it publishes them through the OnceLatch.
// Misuse panics with a message naming the rule: Decrement below zero, Increment after
// the latch was released.
type CountLatch struct {
	count atomic.Int64
	done  OnceLatch
}

// NewCountLatch returns a latch with the given initial count. It panics if count is
// negative.
func NewCountLatch(count int) *CountLatch {
	if count < 0 {
		panic("lockfree: NewCountLatch: negative count")
	}
	l := &CountLatch{}
	l.count.Store(int64(count))
	return l
}

// Increment adds one to the count. It panics if the latch was already released.
func (l *CountLatch) Increment() { l.Add(1) }

// Add adds n to the count. It panics if n is not positive, or if the latch was already
// released (the count came back to zero before).
func (l *CountLatch) Add(n int) {
	if n <= 0 {
		panic("lockfree: CountLatch.Add: n must be positive")
	}
	// Check the release after every add, not only after one from zero: two misusing
	// Adds on a released latch may overlap, and the second then sees the first one's
	// count, which that one is about to undo. Each Add undoes only its own n, so a
	// released latch returns to zero however many panic at once. (An Add that overlaps
	// the last Decrement, between its add and its SetDone, is not caught: then the
	// latch is released with a positive count, the misuse that sync.WaitGroup also
	// forbids without detecting it.)
	l.count.Add(int64(n))
	if l.done.Probe() {
		l.count.Add(-int64(n)) // undo, so the released latch stays at zero
		panic("lockfree: CountLatch: Increment after the count reached zero and the latch was released")
	}
}

// Decrement subtracts one from the count, releasing the waiters when it reaches zero.
// It panics if the count goes below zero.
func (l *CountLatch) Decrement() {
	switch c := l.count.Add(-1); {
	case c == 0:
		l.done.SetDone()
	case c < 0:
		l.count.Add(1) // undo, so the count stays at zero
		panic("lockfree: CountLatch.Decrement: count went below zero")
	}
}

// Count returns the current count.
func (l *CountLatch) Count() int64 { return l.count.Load() }

// Probe reports whether the count is zero. It never blocks.
func (l *CountLatch) Probe() bool { return l.count.Load() == 0 }

// Wait blocks until the count is zero.
func (l *CountLatch) Wait() {
	if l.count.Load() == 0 {
		return
	}
	l.done.Wait()
}
