package tsync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// Mutex is a mutual-exclusion lock for tasks: Tokio's Mutex without the data (guard a
// value the way a sync.Mutex does, or use MutexOf). A task waiting for it returns pending
// instead of blocking its worker.
//
// The lock is fair: waiters are served in arrival order, and Unlock hands the lock
// directly to the oldest waiter, so a newcomer (TryLock, or a Lock that was never
// queued) cannot take it in between and a waiter cannot starve.
//
// Locking yields a MutexGuard; unlocking goes through the guard, and unlocking a guard
// twice (or a copy of an unlocked guard) panics, even if the lock has been taken again
// meanwhile.
//
// The zero Mutex is unlocked and ready to use. A Mutex must not be copied after first
// use.
type Mutex struct {
	// state is mLocked | mWaiters | generation<<mGenShift. The generation counts
	// unlocks: a guard remembers the generation it was issued in, so a second Unlock of
	// it (or of a copy) finds a newer generation and panics.
	state atomic.Uint64
	// mu guards waiters and every waiter node queued in it; state changes with waiters
	// present happen under mu.
	mu      sync.Mutex
	waiters waitList
}

const (
	mLocked   = 1
	mWaiters  = 2
	mGenShift = 2
	mGenOne   = 1 << mGenShift
)

// MutexGuard is the proof of holding a Mutex, returned by TryLock, Lock and its blocking
// forms. Unlock it exactly once; a typical task or goroutine does so with defer. The
// zero MutexGuard holds nothing (Unlock panics).
type MutexGuard struct {
	m   *Mutex
	gen uint64
}

//go:noinline
func nilMutex(op string) {
	panic("tsync: Mutex." + op + " called on a nil *Mutex")
}

// TryLock takes the lock if it is free and nobody waits for it, without waiting.
func (m *Mutex) TryLock() (MutexGuard, bool) {
	// Not locked implies no waiters: an unlock with waiters hands the lock over instead
	// of freeing it, and the last waiter to leave clears mWaiters.
	if m != nil {
		if s := m.state.Load(); s&mLocked == 0 && m.state.CompareAndSwap(s, s|mLocked) {
			return MutexGuard{m: m, gen: s >> mGenShift}, true
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
		if s&mLocked != 0 {
			return MutexGuard{}, false
		}
		if m.state.CompareAndSwap(s, s|mLocked) {
			return MutexGuard{m: m, gen: s >> mGenShift}, true
		}
	}
}

// LockAsync returns a future that is ready with a guard once the lock is held: the form
// for tasks (Poll it, or Await it in an Async function). Dropping the
// future while it waits gives up its place; if the lock was handed to it meanwhile, the
// lock passes on to the next waiter (or is freed), so no hand-off is lost.
func (m *Mutex) LockAsync() *LockFuture {
	if m == nil {
		nilMutex("LockAsync")
	}
	return &LockFuture{m: m}
}

// Lock locks m from a plain goroutine, parking it until the lock is handed over. Called
// from a task's code (or an Async function) when it would have to wait, it panics: it
// would block a worker; use LockAsync there.
func (m *Mutex) Lock() MutexGuard {
	if g, ok := m.TryLock(); ok {
		return g
	}
	refuseInRuntime("Mutex.Lock", "LockAsync")
	return blockOn[MutexGuard](m.LockAsync())
}

// LockContext is Lock that gives up when ctx is done, returning ctx.Err(): the
// place in the queue is given up, and a lock handed over at that moment passes on.
func (m *Mutex) LockContext(ctx context.Context) (MutexGuard, error) {
	if g, ok := m.TryLock(); ok {
		return g, nil
	}
	if err := ctx.Err(); err != nil {
		return MutexGuard{}, err
	}
	refuseInRuntime("Mutex.LockContext", "LockAsync")
	return blockOnCtx[MutexGuard](ctx, m.LockAsync())
}

// IsLocked reports whether the lock is held at the moment of the call.
func (m *Mutex) IsLocked() bool { return m.state.Load()&mLocked != 0 }

// Unlock releases the lock, handing it to the oldest waiter if there is one. It panics if
// the guard was already unlocked (through this copy or another) or is the zero guard.
func (g MutexGuard) Unlock() {
	// Fast path, one CAS: held by this guard's generation and nobody waits. (A zero
	// guard's nil m goes to the slow path, which names the mistake.)
	if m := g.m; m == nil || !m.state.CompareAndSwap(g.gen<<mGenShift|mLocked, (g.gen+1)<<mGenShift) {
		g.unlockSlow()
	}
}

// unlockSlow is unlock without a Context, kept out of line so Unlock inlines.
//
//go:noinline
func (g MutexGuard) unlockSlow() { g.unlock(nil) }

// UnlockFrom is Unlock for a task being polled with cx: the task the lock is handed to
// runs next on this worker (blitzio.Waker.WakeFrom), which keeps a hot lock on one
// worker's cache.
func (g MutexGuard) UnlockFrom(cx *blitzio.Context) {
	if g.m != nil && g.m.state.CompareAndSwap(g.gen<<mGenShift|mLocked, (g.gen+1)<<mGenShift) {
		return
	}
	g.unlock(cx)
}

func (g MutexGuard) unlock(cx *blitzio.Context) {
	m := g.m
	if m == nil {
		panic("tsync: Unlock of a zero MutexGuard")
	}
	for {
		s := m.state.Load()
		if s&mLocked == 0 || s>>mGenShift != g.gen {
			panic("tsync: MutexGuard unlocked twice (the guard, or a copy of it, was already unlocked)")
		}
		if s&mWaiters == 0 {
			// Fast path: nobody waits. The CAS fails if a waiter set mWaiters
			// meanwhile; then the slow path hands the lock to it.
			if m.state.CompareAndSwap(s, (s&^mLocked)+mGenOne) {
				return
			}
			continue
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

// handOffLocked releases the lock held in state s (read by the caller): to the oldest
// waiter if any, whose waker it adds to wl, else by freeing it. It reports false if the
// state was no longer s. Called with m.mu held.
func (m *Mutex) handOffLocked(s uint64, wl *wakeList) bool {
	next := s&^(mLocked|mWaiters) + mGenOne
	w := m.waiters.head
	if w != nil {
		next |= mLocked
		if w.next != nil {
			next |= mWaiters
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

// LockFuture is the future returned by Mutex.LockAsync. Its waiter node lives inside it, so
// waiting allocates nothing; Reset lets a loop lock repeatedly with one future.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type LockFuture struct {
	m     *Mutex
	w     waiter
	guard MutexGuard
	st    uint8
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
		// Fast path, one CAS: the lock is free (so nobody waits either).
		m := f.m
		if s := m.state.Load(); s&mLocked == 0 && m.state.CompareAndSwap(s, s|mLocked) {
			f.guard, f.st = MutexGuard{m: m, gen: s >> mGenShift}, futDone
			return f.guard, true
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
		if s&mLocked == 0 {
			if m.state.CompareAndSwap(s, s|mLocked) {
				m.mu.Unlock()
				return f.finish(MutexGuard{m: m, gen: s >> mGenShift})
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
	m.waiters.pushBack(&f.w)
	f.st = futWaiting
	m.mu.Unlock()
	return MutexGuard{}, false
}

// pollSlow is every poll but a first one with budget left.
func (f *LockFuture) pollSlow(cx *blitzio.Context) (MutexGuard, bool) {
	switch f.st {
	case futDone:
		return f.guard, true
	case futDropped:
		panic("tsync: LockFuture polled after Drop")
	case futIdle:
		return MutexGuard{}, false // the budget is spent; the task was re-scheduled
	}
	// Waiting. The hand-off unlinked the node and then set handed: once we see it,
	// nobody but us touches the node, so taking the lock needs no mutex (the common
	// re-poll, the one right after the wake).
	m := f.m
	if f.w.handed.Load() {
		f.w.handed.Store(false)
		f.w.notified = false
		return f.finish(MutexGuard{m: m, gen: uint64(f.w.got)})
	}
	m.mu.Lock()
	if f.w.notified {
		f.w.notified = false
		gen := uint64(f.w.got)
		m.mu.Unlock()
		return f.finish(MutexGuard{m: m, gen: gen})
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	m.mu.Unlock()
	return MutexGuard{}, false
}

func (f *LockFuture) finish(g MutexGuard) (MutexGuard, bool) {
	f.guard, f.st = g, futDone
	return g, true
}

// Drop gives up waiting. A lock handed to the future but not yet returned by Poll passes
// on to the next waiter (or is freed). A guard Poll already returned is the caller's to
// unlock; Drop does not touch it.
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
			for {
				s := m.state.Load()
				if m.state.CompareAndSwap(s, s&^mWaiters) {
					break
				}
			}
		}
	case f.w.notified:
		// Handed the lock, never took it: pass it on (the race the waitlist.pml
		// model checks). The state cannot move under us: the lock is held (by us),
		// and waiters change only under mu.
		f.w.notified = false
		f.w.handed.Store(false)
		m.handOffLocked(m.state.Load(), &wl)
	}
	m.mu.Unlock()
	wl.wake(nil)
}

// Reset makes f lock its Mutex afresh, so a loop can lock without allocating a future
// per iteration. A waiting f is dropped first (cancellation-safe, as Drop); a guard f
// already returned stays the caller's.
func (f *LockFuture) Reset() {
	if f.st == futWaiting {
		f.Drop()
	}
	f.st, f.guard = futIdle, MutexGuard{}
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
