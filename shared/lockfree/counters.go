package lockfree

import (
	"fmt"
	"sync/atomic"
)

// Layout of AtomicCounters (Rayon's sleep counters, packed in one word):
//
//	bits  0-15  sleeping workers: blocked on their condition variable
//	bits 16-31  inactive workers: not running a job (idle, sleepy or sleeping)
//	bits 32-63  JEC, the jobs event counter: even = sleepy mode, odd = active mode
const (
	counterBits   = 16
	counterMask   = 1<<counterBits - 1
	inactiveShift = counterBits
	jecShift      = 2 * counterBits

	oneSleeping = uint64(1)
	oneInactive = uint64(1) << inactiveShift
	oneJEC      = uint64(1) << jecShift
)

// MaxCountedWorkers is the largest worker count the packed counters can represent.
const MaxCountedWorkers = counterMask

// AtomicCounters packs the sleep manager's state into one uint64 so that one atomic
// load sees all of it consistently and one CAS changes several fields at once:
// the number of sleeping workers, the number of inactive workers, and the jobs event
// counter (JEC), as in Rayon's sleep protocol (rayon-core's sleep module); every operation is a
// sequentially consistent atomic, which the protocol requires.
//
// Any goroutine may call every method. The zero value is all counts zero, JEC 0
// (sleepy mode).
type AtomicCounters struct {
	value atomic.Uint64
}

// Load returns the packed value; take it apart with ExtractSleeping, ExtractInactive and
// ExtractJEC.
func (c *AtomicCounters) Load() uint64 { return c.value.Load() }

// ExtractSleeping returns the sleeping-worker count of a packed value.
func ExtractSleeping(v uint64) uint32 { return uint32(v & counterMask) }

// ExtractInactive returns the inactive-worker count of a packed value.
func ExtractInactive(v uint64) uint32 { return uint32(v>>inactiveShift) & counterMask }

// ExtractJEC returns the jobs event counter of a packed value.
func ExtractJEC(v uint64) uint32 { return uint32(v >> jecShift) }

// IncrementJECIfSleepy moves the JEC from even (sleepy) to odd (active) and returns the
// packed value from before the call. If the JEC is already odd it changes nothing.
//
// Posters call it after publishing work, so a worker that saved the JEC when it got
// sleepy sees a different value before it sleeps. Workers call it when they announce
// sleepiness, and then save the value after the call (not the returned one), so their
// own toggle is not mistaken for new work.
func (c *AtomicCounters) IncrementJECIfSleepy() uint64 {
	for {
		old := c.value.Load()
		if ExtractJEC(old)&1 != 0 {
			return old
		}
		// The JEC occupies the top 32 bits: adding oneJEC to 0xFFFFFFFF wraps it to 0
		// (even) without touching the counts below.
		if c.value.CompareAndSwap(old, old+oneJEC) {
			return old
		}
	}
}

// IncrementJECIfActive moves the JEC from odd (active) to even (sleepy) and returns the
// packed value from before the call. If the JEC is already even it changes nothing.
//
// This is the other half of Rayon's protocol (IncrementJECIfSleepy is the first): a worker announcing sleepiness flips an odd JEC to even, so the
// next poster's IncrementJECIfSleepy changes it again and the worker's saved value no
// longer matches. Adding oneJEC to 0xFFFFFFFF wraps the JEC to 0 (even) without carrying
// into anything: the JEC is the top field of the word.
func (c *AtomicCounters) IncrementJECIfActive() uint64 {
	for {
		old := c.value.Load()
		if ExtractJEC(old)&1 == 0 {
			return old
		}
		if c.value.CompareAndSwap(old, old+oneJEC) {
			return old
		}
	}
}

// TryAddSleeping adds one sleeping worker if the packed value still equals expected, and
// reports whether it did. A worker uses it so that registering as asleep fails when any
// field changed since it decided to sleep (above all the JEC, meaning new work).
// It panics when the sleeping count of expected is already MaxCountedWorkers.
func (c *AtomicCounters) TryAddSleeping(expected uint64) bool {
	if ExtractSleeping(expected) == counterMask {
		panic("lockfree: AtomicCounters.TryAddSleeping: sleeping count would overflow 16 bits (MaxCountedWorkers)")
	}
	return c.value.CompareAndSwap(expected, expected+oneSleeping)
}

// SubSleeping removes one sleeping worker. The waker calls it, not the sleeper (as in
// Rayon: otherwise a poster could count a worker that is already awake and skip a wake).
// It panics if the sleeping count is zero, after undoing its change, so the other
// fields stay intact.
func (c *AtomicCounters) SubSleeping() {
	// One XADD instead of a CAS loop keeps the common path cheap under contention; an
	// underflow borrows from the inactive field, so it is added back before panicking.
	if now := c.value.Add(^(oneSleeping - 1)); ExtractSleeping(now+oneSleeping) == 0 {
		c.value.Add(oneSleeping)
		panic("lockfree: AtomicCounters.SubSleeping: sleeping count is already zero")
	}
}

// AddInactive adds one inactive worker (a worker that ran out of work). It panics when
// the count is already MaxCountedWorkers, after undoing its change.
func (c *AtomicCounters) AddInactive() {
	if old := c.value.Add(oneInactive) - oneInactive; ExtractInactive(old) == counterMask {
		c.value.Add(^(oneInactive - 1))
		panic("lockfree: AtomicCounters.AddInactive: inactive count would overflow 16 bits (MaxCountedWorkers)")
	}
}

// SubInactive removes one inactive worker (a worker that found work) and returns how
// many sleeping workers it should wake to help: min(sleeping, 2), as in Rayon. A worker
// that found work after being idle suggests there is more; waking up to two others lets
// a burst of work spread without waking everybody. It panics if the inactive count is
// zero, after undoing its change.
func (c *AtomicCounters) SubInactive() uint32 {
	old := c.value.Add(^(oneInactive - 1)) + oneInactive
	if ExtractInactive(old) == 0 {
		c.value.Add(oneInactive)
		panic("lockfree: AtomicCounters.SubInactive: inactive count is already zero")
	}
	return min(ExtractSleeping(old), 2)
}

// String formats the current value as "sleeping=S inactive=I jec=J".
func (c *AtomicCounters) String() string {
	v := c.Load()
	return fmt.Sprintf("sleeping=%d inactive=%d jec=%d", ExtractSleeping(v), ExtractInactive(v), ExtractJEC(v))
}
