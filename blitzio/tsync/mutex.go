package tsync

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// Mutex is a mutual-exclusion lock for tasks: Tokio's Mutex without the data (guard a
// value the way a sync.Mutex does, or use MutexOf). A task waiting for it returns pending
// instead of blocking its worker.
//
// Fairness follows sync.Mutex. Waiters queue in arrival order, but an Unlock does not
// hand the lock over: it frees the lock and wakes the oldest waiter, which then competes
// with tasks and goroutines that are running and want the lock. A running task usually
// wins (it is already on a CPU, and a woken task must first be scheduled), so a task can
// lock many times in a row while others wait, which is what makes a contended Mutex fast;
// the woken waiter that loses goes back to the front of the queue. A woken waiter that
// loses after waiting more than 1 ms switches the lock to hand-off mode: Unlock hands
// the lock directly to the oldest waiter, and newcomers (TryLock included) queue behind
// the waiters instead of taking it. The lock returns to normal mode once a waiter that gets
// it has waited less than 1 ms, or nobody is left waiting. So the lock is fair in the
// sense that no waiter starves (waits much beyond a millisecond while others keep
// taking the lock), but it is not strictly first-come, first-served.
//
// Locking yields a MutexGuard; unlocking goes through the guard, and unlocking a guard
// twice (or a copy of an unlocked guard) panics, even if the lock has been taken again
// meanwhile.
//
// The zero Mutex is unlocked and ready to use. A Mutex must not be copied after first
// use.
type Mutex struct {
	// state is mLocked | mWaiters | mWoken | mHandOff | generation<<mGenShift. The
	// generation counts releases: a guard remembers the generation it was issued in, so
	// a second Unlock of it (or of a copy) finds a newer generation and panics.
	state mutexState
	// mu guards waiters and every waiter node queued in it; mWaiters and mHandOff change
	// only under mu, and so does every setting of mWoken.
	mu      sync.Mutex
	waiters waitList
}

// mutexState is the Mutex's state word: an atomic.Uint64 whose hot callers can reach
// the word itself. Unlock and UnlockFrom call atomic.CompareAndSwapUint64 on v
// directly; through a method their inlining cost goes past the compiler's budget, and
// the uncontended Unlock would pay a call.
type mutexState struct {
	_ [0]atomic.Uint64 // 64-bit alignment of v on 32-bit platforms, as atomic.Uint64 has
	v uint64
}

func (s *mutexState) Load() uint64 { return atomic.LoadUint64(&s.v) }

func (s *mutexState) CompareAndSwap(old, new uint64) bool {
	return atomic.CompareAndSwapUint64(&s.v, old, new)
}

// The bits of Mutex.state below the generation. Invariants (each transition below keeps
// them, as seen under mu): mWaiters is set exactly when the queue is not empty (a
// waiter sets it just before it links itself); mHandOff implies mLocked and mWaiters
// (hand-off mode lasts while somebody waits and ends with a free lock); mWoken is set
// exactly while one woken waiter, unlinked from the queue, has not yet taken the lock,
// re-queued or been dropped, and never in hand-off mode.
const (
	mLocked   = 1 << iota // held
	mWaiters              // the queue is not empty
	mWoken                // a woken waiter is on its way: Unlock wakes nobody else
	mHandOff              // hand-off (starvation) mode
	mGenShift = iota
	mGenOne   = 1 << mGenShift
)

// starvationThreshold is how long a waiter may wait before it switches the lock to
// hand-off mode (sync.Mutex's value). Normal mode lets running tasks take the lock
// before a woken waiter; past this the waiter's latency, not throughput, comes first.
const starvationThreshold = int64(time.Millisecond)

// mutexEpoch and mutexClock time waiters. A clock is read only on slow paths (a waiter
// queueing, a woken waiter losing the race, a hand-off), never when the lock is free.
// Tests replace mutexClock to drive the starvation logic without depending on timing.
var (
	mutexEpoch = time.Now()
	mutexClock = func() int64 { return int64(time.Since(mutexEpoch)) }
)

// wokenOnly is waiter.got for a waiter woken in normal mode: it must compete for the
// lock. A waiter handed the lock gets the guard's generation instead (>= 0).
const wokenOnly = -1

// A Mutex waiter asks for nothing, so its node's want holds when it first queued
// (mutexClock), which the starvation check compares against. Re-queueing after a lost
// race keeps it: the wait that counts is the whole wait, as in sync.Mutex.
func (w *waiter) queuedAt() int64 { return w.want }

// MutexGuard is the proof of holding a Mutex, returned by TryLock, Lock and its blocking
// forms. Unlock it exactly once; a typical task or goroutine does so with defer. The
// zero MutexGuard holds nothing (Unlock panics).
type MutexGuard struct {
	m *Mutex
	// held is the state word this hold owns, flags aside: its generation with mLocked
	// (so Unlock compares it and frees the lock without shifting).
	held uint64
}

// mFlags are the state bits below the generation.
const mFlags = mGenOne - 1

// heldIn returns the guard of the hold that locked m in state s (or, for a hand-off,
// in state s with mLocked kept).
func heldIn(m *Mutex, s uint64) MutexGuard {
	return MutexGuard{m: m, held: s&^mFlags | mLocked}
}

//go:noinline
func nilMutex(op string) {
	panic("tsync: Mutex." + op + " called on a nil *Mutex")
}

// TryLock takes the lock if it is free, without waiting. As with sync.Mutex, it may take
// the lock ahead of queued waiters (the lock is free while a woken waiter is on its way),
// except in hand-off mode, where the lock goes to the oldest waiter and TryLock fails.
func (m *Mutex) TryLock() (MutexGuard, bool) {
	// Fast path: one load and one CAS. (mHandOff implies mLocked; testing both costs
	// nothing and keeps a newcomer out of a hand-off even if that ever changed.)
	if m != nil {
		if s := m.state.Load(); s&(mLocked|mHandOff) == 0 && m.state.CompareAndSwap(s, s|mLocked) {
			return heldIn(m, s), true
		}
	}
	return m.tryLockSlow()
}

//go:noinline
func (m *Mutex) tryLockSlow() (MutexGuard, bool) {
	if m == nil {
		nilMutex("TryLock")
	}
	for {
		s := m.state.Load()
		if s&(mLocked|mHandOff) != 0 {
			return MutexGuard{}, false
		}
		if m.state.CompareAndSwap(s, s|mLocked) {
			return heldIn(m, s), true
		}
	}
}

// LockAsync returns a future that is ready with a guard once the lock is held: the form
// for tasks (Poll it, or Await it in an Async function). Dropping the future while it
// waits gives up its place; if it was woken or handed the lock meanwhile, the wake or the
// lock passes on to the next waiter (or the lock is freed), so nothing is lost.
func (m *Mutex) LockAsync() *LockFuture {
	if m == nil {
		nilMutex("LockAsync")
	}
	return &LockFuture{m: m}
}

// Lock locks m from a plain goroutine, parking it until it gets the lock. Called from a
// task's code (or an Async function) when it would have to wait, it panics: it would
// block a worker; use LockAsync there.
func (m *Mutex) Lock() MutexGuard {
	if g, ok := m.TryLock(); ok {
		return g
	}
	refuseInRuntime("Mutex.Lock", "LockAsync")
	return blockOn[MutexGuard](m.LockAsync())
}

// LockContext is Lock that gives up when ctx is done, returning ctx.Err(): the place in
// the queue is given up, and a wake or lock handed over at that moment passes on. A ctx
// already done fails the call even when the lock is free (see the package doc).
func (m *Mutex) LockContext(ctx context.Context) (MutexGuard, error) {
	if err := ctx.Err(); err != nil {
		return MutexGuard{}, err
	}
	if g, ok := m.TryLock(); ok {
		return g, nil
	}
	refuseInRuntime("Mutex.LockContext", "LockAsync")
	return blockOnCtx[MutexGuard](ctx, m.LockAsync())
}

// IsLocked reports whether the lock is held at the moment of the call.
func (m *Mutex) IsLocked() bool { return m.state.Load()&mLocked != 0 }

// Unlock releases the lock and, if tasks wait for it, wakes the oldest (in hand-off
// mode: hands the lock to it). It panics if the guard was already unlocked (through this
// copy or another) or is the zero guard.
func (g MutexGuard) Unlock() {
	// The fast path, one CAS and no load: if the state word is exactly this guard's
	// hold (locked, no waiter, no wake outstanding, normal mode), releasing is adding
	// one generation and clearing mLocked. A load first would cost more than it saves:
	// it waits for the CAS that took the lock (a locked instruction orders every later
	// load), and the CAS fails only when somebody waits, where the slow path's work
	// dwarfs it. It is written out here and in UnlockFrom so that both inline (see
	// mutexState).
	if g.m == nil || !atomic.CompareAndSwapUint64(&g.m.state.v, g.held, g.held+(mGenOne-mLocked)) {
		g.unlockSlow(nil)
	}
}

// UnlockFrom is Unlock for a task being polled with cx: a task woken (or handed the lock)
// runs next on this worker (blitzio.Waker.WakeFrom), which keeps a hot lock on one
// worker's cache.
func (g MutexGuard) UnlockFrom(cx *blitzio.Context) {
	// Unlock's fast path.
	if g.m == nil || !atomic.CompareAndSwapUint64(&g.m.state.v, g.held, g.held+(mGenOne-mLocked)) {
		g.unlockSlow(cx)
	}
}

// release is the fast path of a contended Unlock, also one load and one CAS: in normal
// mode, when the hold is this guard's and nobody needs waking (a woken waiter is
// already on its way, the steady state of a contended lock), free the lock keeping the
// other flags. It reports false, leaving everything else (a wake, a hand-off, a zero or
// stale guard) to unlock.
func (g MutexGuard) release() bool {
	m := g.m
	if m == nil {
		return false // unlock names the mistake
	}
	s := m.state.Load()
	return s&^(mWaiters|mWoken) == g.held && s&(mWaiters|mWoken) != mWaiters &&
		m.state.CompareAndSwap(s, s+(mGenOne-mLocked))
}

// unlockSlow is every Unlock but the uncontended one, kept out of line so that Unlock's
// own code stays small.
//
//go:noinline
func (g MutexGuard) unlockSlow(cx *blitzio.Context) {
	if !g.release() {
		g.unlock(cx)
	}
}

func (g MutexGuard) unlock(cx *blitzio.Context) {
	m := g.m
	if m == nil {
		panic("tsync: Unlock of a zero MutexGuard")
	}
	for {
		s := m.state.Load()
		if s&^(mFlags&^mLocked) != g.held {
			panic("tsync: MutexGuard unlocked twice (the guard, or a copy of it, was already unlocked)")
		}
		if s&mHandOff == 0 {
			// Normal mode: free the lock first, so a running task can take it while we
			// wake a waiter. No mutex unless there is somebody to wake: with a wake
			// already outstanding (mWoken), that waiter will compete.
			if !m.state.CompareAndSwap(s, (s&^mLocked)+mGenOne) {
				continue // a waiter queued or a woken one re-queued: look again
			}
			if s&(mWaiters|mWoken) == mWaiters {
				m.wakeOne(cx)
			}
			return
		}
		var wl wakeList
		m.mu.Lock()
		ok := m.handOffLocked(s, &wl)
		m.mu.Unlock()
		if ok {
			wl.wake(cx)
			return
		}
		// The state moved between the load and the lock (a waiter left, or a racing
		// misuse of a copied guard): look again, the check above sorts it out.
	}
}

// wakeOne wakes the oldest waiter after a release in normal mode, unless the lock was
// taken again or a wake is outstanding by the time we hold mu.
func (m *Mutex) wakeOne(cx *blitzio.Context) {
	var wl wakeList
	m.mu.Lock()
	woke := m.wakeLocked(&wl)
	m.mu.Unlock()
	if woke {
		wl.wake(cx)
	}
}

// wakeLocked unlinks the oldest waiter and marks it woken (mWoken), adding its waker to
// wl, if the lock is free, somebody waits and no wake is outstanding; it reports whether
// it did. Called with m.mu held.
//
// Nobody is woken while the lock is held: its holder wakes a waiter when it releases.
// That the holder always does is what rules out a lost wake-up: a release that sees
// mWaiters without mWoken ends here, under mu, after any waiter that set mWaiters
// (also under mu) is linked; a woken waiter gives up mWoken only by taking the lock, by
// re-queueing while the lock is held (its holder will wake), or by being dropped (Drop
// calls this).
func (m *Mutex) wakeLocked(wl *wakeList) bool {
	for {
		s := m.state.Load()
		if s&(mLocked|mWoken|mHandOff) != 0 || s&mWaiters == 0 {
			return false
		}
		w := m.waiters.head // not nil: mWaiters is set and changes only under mu
		next := s | mWoken
		if w.next == nil {
			next &^= mWaiters
		}
		if m.state.CompareAndSwap(s, next) {
			m.waiters.remove(w)
			w.notified = true
			w.got = wokenOnly
			w.handed.Store(true) // after got: the owner's re-poll reads got once it sees this
			wl.add(w.waker)
			return true
		}
		// A running task took the lock meanwhile (or released it again): look again.
	}
}

// handOffLocked releases the lock held in state s (read by the caller) in hand-off mode:
// to the oldest waiter if any, whose waker it adds to wl, else by freeing it. It reports
// false if the state was no longer s. Called with m.mu held.
func (m *Mutex) handOffLocked(s uint64, wl *wakeList) bool {
	next := s&^(mLocked|mWaiters|mHandOff) + mGenOne
	w := m.waiters.head
	if w != nil {
		next |= mLocked
		// Stay in hand-off mode while the waiters served have starved; the last waiter,
		// or one that waited less than the threshold, returns the lock to normal mode
		// (sync.Mutex's rule: hand-off mode is slow enough that staying in it could make
		// every waiter wait past the threshold, so it must end on its own).
		if w.next != nil {
			next |= mWaiters
			if mutexClock()-w.queuedAt() >= starvationThreshold {
				next |= mHandOff
			}
		}
	}
	if !m.state.CompareAndSwap(s, next) {
		return false
	}
	if w != nil {
		// The lock now belongs to w: it stays locked across the hand-off, so nobody
		// can barge in before w's task runs.
		m.waiters.remove(w)
		w.notified = true
		w.got = int64(next >> mGenShift)
		w.handed.Store(true) // after got: the owner's re-poll reads got once it sees this
		wl.add(w.waker)
	}
	return true
}

// releaseLocked releases the lock on behalf of a holder that is gone (a waiter dropped
// after it was handed the lock), exactly as its Unlock would. Called with m.mu held.
func (m *Mutex) releaseLocked(wl *wakeList) {
	for {
		s := m.state.Load()
		if s&mHandOff != 0 {
			if m.handOffLocked(s, wl) {
				return
			}
			continue
		}
		if m.state.CompareAndSwap(s, (s&^mLocked)+mGenOne) {
			m.wakeLocked(wl)
			return
		}
	}
}

// LockFuture is the future returned by Mutex.LockAsync. Its waiter node lives inside it, so
// waiting allocates nothing; Reset lets a loop lock repeatedly with one future.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type LockFuture struct {
	m *Mutex
	w waiter
	// held is the guard's state word once done (the guard is MutexGuard{m, held}): one
	// word, not a guard with a pointer, so taking the lock stores no pointer.
	held uint64
	st   uint8
}

const (
	futIdle uint8 = iota
	futWaiting
	futDone
	futDropped
)

// Poll takes the lock, or queues the future and returns pending.
func (f *LockFuture) Poll(cx *blitzio.Context) (MutexGuard, bool) {
	if f.st == futIdle && cx.ConsumeBudget() {
		// Fast path, one load and one CAS: the lock is free (queued waiters or not, as
		// long as it is not being handed off).
		m := f.m
		if s := m.state.Load(); s&(mLocked|mHandOff) == 0 && m.state.CompareAndSwap(s, s|mLocked) {
			g := heldIn(m, s)
			f.held, f.st = g.held, futDone
			return g, true
		}
		return f.pollQueue(cx)
	}
	return f.pollSlow(cx)
}

// pollQueue takes the lock or queues f: the first poll when the fast path failed.
func (f *LockFuture) pollQueue(cx *blitzio.Context) (MutexGuard, bool) {
	m := f.m
	m.mu.Lock()
	for {
		s := m.state.Load()
		if s&(mLocked|mHandOff) == 0 {
			if m.state.CompareAndSwap(s, s|mLocked) {
				m.mu.Unlock()
				return f.finish(heldIn(m, s))
			}
			continue
		}
		// Announce the waiter before queueing it: an Unlock that sees mWaiters takes
		// mu and so waits until the node is linked.
		if m.state.CompareAndSwap(s, s|mWaiters) {
			break
		}
	}
	f.w.waker = cx.Waker()
	f.w.notified = false
	f.w.handed.Store(false)
	f.w.want = mutexClock() // queuedAt
	m.waiters.pushBack(&f.w)
	f.st = futWaiting
	m.mu.Unlock()
	return MutexGuard{}, false
}

// pollSlow is every poll but a first one with budget left.
func (f *LockFuture) pollSlow(cx *blitzio.Context) (MutexGuard, bool) {
	switch f.st {
	case futDone:
		return MutexGuard{m: f.m, held: f.held}, true
	case futDropped:
		panic("tsync: LockFuture polled after Drop")
	case futIdle:
		return MutexGuard{}, false // the budget is spent; the task was re-scheduled
	}
	// Waiting. A wake or hand-off unlinked the node and then set handed: once we see
	// it, nobody but us touches the node, so the common re-poll (the one right after
	// the wake) needs no mutex.
	m := f.m
	if f.w.handed.Load() {
		f.w.handed.Store(false)
		f.w.notified = false
		if f.w.got == wokenOnly {
			return f.compete(cx)
		}
		return f.finish(heldIn(m, uint64(f.w.got)<<mGenShift))
	}
	m.mu.Lock()
	if f.w.notified {
		f.w.notified = false
		f.w.handed.Store(false)
		got := f.w.got
		m.mu.Unlock()
		if got == wokenOnly {
			return f.compete(cx)
		}
		return f.finish(heldIn(m, uint64(got)<<mGenShift))
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	m.mu.Unlock()
	return MutexGuard{}, false
}

// compete is the poll of a waiter woken in normal mode (it holds mWoken): take the lock
// if it is free, else go back to the front of the queue, switching the lock to hand-off
// mode if this waiter has waited past the threshold.
func (f *LockFuture) compete(cx *blitzio.Context) (MutexGuard, bool) {
	m := f.m
	for {
		s := m.state.Load()
		if s&mLocked != 0 {
			break
		}
		// Free, so not in hand-off mode: take it, and the wake is spent.
		if m.state.CompareAndSwap(s, (s|mLocked)&^mWoken) {
			return f.finish(heldIn(m, s))
		}
	}
	// A running task took the lock first.
	starving := mutexClock()-f.w.queuedAt() >= starvationThreshold
	m.mu.Lock()
	for {
		s := m.state.Load()
		if s&mLocked == 0 {
			if m.state.CompareAndSwap(s, (s|mLocked)&^mWoken) {
				m.mu.Unlock()
				return f.finish(heldIn(m, s))
			}
			continue
		}
		// Re-queue while the lock is held, so its holder's release wakes a waiter (us,
		// at the front) now that mWoken is clear. Hand-off mode is entered only here,
		// with the lock held: its holder hands it on.
		next := (s | mWaiters) &^ mWoken
		if starving {
			next |= mHandOff
		}
		if m.state.CompareAndSwap(s, next) {
			break
		}
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	m.waiters.pushFront(&f.w)
	m.mu.Unlock()
	return MutexGuard{}, false
}

func (f *LockFuture) finish(g MutexGuard) (MutexGuard, bool) {
	f.held, f.st = g.held, futDone
	return g, true
}

// Drop gives up waiting. A wake or a lock handed to the future but not yet taken by Poll
// passes on to the next waiter (or the lock is freed). A guard Poll already returned is
// the caller's to unlock; Drop does not touch it.
func (f *LockFuture) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	m := f.m
	var wl wakeList
	m.mu.Lock()
	switch {
	case f.w.queued:
		m.waiters.remove(&f.w)
		if m.waiters.empty() {
			// Nobody waits: hand-off mode ends with the queue.
			for {
				s := m.state.Load()
				if m.state.CompareAndSwap(s, s&^(mWaiters|mHandOff)) {
					break
				}
			}
		}
	case f.w.notified:
		// Woken or handed the lock, never saw it: pass it on (the race the
		// waitlist.pml model checks).
		f.w.notified = false
		f.w.handed.Store(false)
		if f.w.got == wokenOnly {
			// Give up the wake; if the lock is free, the next waiter gets it.
			for {
				s := m.state.Load()
				if m.state.CompareAndSwap(s, s&^mWoken) {
					break
				}
			}
			m.wakeLocked(&wl)
		} else {
			// We hold the lock: release it as Unlock would.
			m.releaseLocked(&wl)
		}
	}
	m.mu.Unlock()
	if !wl.one.IsZero() {
		wl.wake(nil)
	}
}

// Reset makes f lock its Mutex afresh, so a loop can lock without allocating a future
// per iteration. A waiting f is dropped first (cancellation-safe, as Drop); a guard f
// already returned stays the caller's.
func (f *LockFuture) Reset() {
	if f.st == futWaiting {
		f.Drop()
	}
	f.st = futIdle
}

// MutexOf is a Mutex that owns the value it protects, like Tokio's Mutex<T>: the value is
// reachable only through a guard, so it cannot be touched without the lock. The zero
// MutexOf holds T's zero value and is unlocked.
type MutexOf[T any] struct {
	mu Mutex
	v  T
}

// NewMutexOf returns a MutexOf holding v.
func NewMutexOf[T any](v T) *MutexOf[T] { return &MutexOf[T]{v: v} }

// GuardOf is a MutexGuard of a MutexOf, with access to the protected value.
type GuardOf[T any] struct {
	MutexGuard
	v *T
}

// Value returns a pointer to the protected value, valid until Unlock.
func (g GuardOf[T]) Value() *T { return g.v }

// TryLock is Mutex.TryLock.
func (m *MutexOf[T]) TryLock() (GuardOf[T], bool) {
	g, ok := m.mu.TryLock()
	if !ok {
		return GuardOf[T]{}, false
	}
	return GuardOf[T]{g, &m.v}, true
}

// LockAsync is Mutex.LockAsync, ready with a guard giving access to the value.
func (m *MutexOf[T]) LockAsync() blitzio.Future[GuardOf[T]] {
	if m == nil {
		nilMutex("LockAsync")
	}
	return &lockOfFuture[T]{LockFuture: LockFuture{m: &m.mu}, v: &m.v}
}

// Lock is Mutex.Lock.
func (m *MutexOf[T]) Lock() GuardOf[T] { return GuardOf[T]{m.mu.Lock(), &m.v} }

// LockContext is Mutex.LockContext.
func (m *MutexOf[T]) LockContext(ctx context.Context) (GuardOf[T], error) {
	g, err := m.mu.LockContext(ctx)
	if err != nil {
		return GuardOf[T]{}, err
	}
	return GuardOf[T]{g, &m.v}, nil
}

type lockOfFuture[T any] struct {
	LockFuture
	v *T
}

func (f *lockOfFuture[T]) Poll(cx *blitzio.Context) (GuardOf[T], bool) {
	g, ok := f.LockFuture.Poll(cx)
	if !ok {
		return GuardOf[T]{}, false
	}
	return GuardOf[T]{g, f.v}, true
}
