package tsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// ErrSemaphoreClosed is the error of an acquire on a closed Semaphore, including
// acquires that were waiting when it was closed.
var ErrSemaphoreClosed = errors.New("tsync: semaphore closed")

// ErrNoPermits is returned by TryAcquire when the permits are not available right now.
var ErrNoPermits = errors.New("tsync: no permits available")

// MaxPermits is the largest number of permits a Semaphore holds, and the largest n one
// acquire asks for.
const MaxPermits = 1<<61 - 1

// Semaphore is a counting semaphore for tasks, like Tokio's Semaphore: acquire n permits
// (waiting if they are not there), release them by releasing the Permit, or forget them
// to shrink the semaphore for good.
//
// Acquires are served in arrival order: a waiter at the head of the queue collects
// permits as they are released until it has all it asked for, and no later acquire (nor
// TryAcquire) overtakes it, so a large request cannot starve behind a stream of small
// ones. Dropping a waiting acquire returns what it had collected. Acquiring 0 permits
// never waits (as with Tokio's acquire_many(0)): it fails only if the semaphore is closed.
//
// The zero Semaphore has no permits (AddPermits gives some). A Semaphore must not be
// copied after first use.
type Semaphore struct {
	// state is permits<<semShift | semWaiters | semClosed. While waiters are queued the
	// permit count is 0: every released permit goes to the head waiter first.
	state   atomic.Uint64
	mu      sync.Mutex // guards waiters and their nodes; state changes with waiters present
	waiters waitList
}

const (
	semClosed  = 1
	semWaiters = 2
	semShift   = 2
)

// waiter.kind for a semaphore waiter woken by Close rather than given its permits.
const kindClosed uint8 = 1

// NewSemaphore returns a semaphore holding permits permits. It panics if permits is
// negative or above MaxPermits.
func NewSemaphore(permits int64) *Semaphore {
	checkPermits("NewSemaphore", "permits", permits)
	s := &Semaphore{}
	s.state.Store(uint64(permits) << semShift)
	return s
}

func checkPermits(op, arg string, n int64) {
	if n < 0 || n > MaxPermits {
		panic(fmt.Sprintf("tsync: %s: %s = %d is out of range [0, MaxPermits]", op, arg, n))
	}
}

func nilSemaphore(op string) {
	panic("tsync: Semaphore." + op + " called on a nil *Semaphore")
}

// Permit is n permits of a Semaphore. Release gives them back; Forget drops them from the
// semaphore for good. Release and Forget empty the Permit, so calling either again on
// the same Permit does nothing; releasing a copy as well returns the permits twice, so do
// not copy a Permit you release. (The package never hands one out twice: an
// AcquireFuture polled again after it was ready panics rather than return its Permit
// again.) The zero Permit holds nothing.
type Permit struct {
	sem *Semaphore
	n   int64
}

// N returns how many permits p holds.
func (p *Permit) N() int64 { return p.n }

// Release gives the permits back to the semaphore, to its waiters first.
func (p *Permit) Release() {
	if p.n == 0 {
		return
	}
	n := p.n
	p.n = 0
	p.sem.add(n, nil)
}

// ReleaseFrom is Release for a task being polled with cx: a task the permits complete
// runs next on this worker.
func (p *Permit) ReleaseFrom(cx *blitzio.Context) {
	if p.n == 0 {
		return
	}
	n := p.n
	p.n = 0
	p.sem.add(n, cx)
}

// Forget drops the permits without returning them: the semaphore has that many fewer.
func (p *Permit) Forget() { p.n = 0 }

// Available returns the number of permits free at the moment of the call.
func (s *Semaphore) Available() int64 {
	if s == nil {
		nilSemaphore("Available")
	}
	return int64(s.state.Load() >> semShift)
}

// IsClosed reports whether Close was called.
func (s *Semaphore) IsClosed() bool {
	if s == nil {
		nilSemaphore("IsClosed")
	}
	return s.state.Load()&semClosed != 0
}

// TryAcquire takes n permits if they are free and nobody waits ahead, without waiting. It
// fails with ErrNoPermits or ErrSemaphoreClosed. Taking 0 permits succeeds unless the
// semaphore is closed, even while acquires wait: it takes nothing from them. It panics if
// n is negative or above MaxPermits.
func (s *Semaphore) TryAcquire(n int64) (Permit, error) {
	if s == nil {
		nilSemaphore("TryAcquire")
	}
	checkPermits("Semaphore.TryAcquire", "n", n)
	for {
		st := s.state.Load()
		if st&semClosed != 0 {
			return Permit{}, ErrSemaphoreClosed
		}
		if n == 0 {
			// Nothing to take, so nobody to wait behind (Tokio's try_acquire_many(0)).
			// Every acquire form goes through here first, so a 0-permit acquire is
			// never queued.
			return Permit{sem: s}, nil
		}
		if st&semWaiters != 0 || int64(st>>semShift) < n {
			return Permit{}, ErrNoPermits
		}
		if s.state.CompareAndSwap(st, st-uint64(n)<<semShift) {
			return Permit{sem: s, n: n}, nil
		}
	}
}

// AddPermits adds n permits, to the waiters first. It panics if n is negative or the
// total would exceed MaxPermits.
func (s *Semaphore) AddPermits(n int64) {
	if s == nil {
		nilSemaphore("AddPermits")
	}
	checkPermits("Semaphore.AddPermits", "n", n)
	s.add(n, nil)
}

// Forget takes up to n free permits out of the semaphore for good and returns how many it
// took (Tokio's forget_permits). Waiting acquires are not affected.
func (s *Semaphore) Forget(n int64) int64 {
	if s == nil {
		nilSemaphore("Forget")
	}
	checkPermits("Semaphore.Forget", "n", n)
	for {
		st := s.state.Load()
		take := min(n, int64(st>>semShift))
		if s.state.CompareAndSwap(st, st-uint64(take)<<semShift) {
			return take
		}
	}
}

// add releases n permits.
func (s *Semaphore) add(n int64, cx *blitzio.Context) {
	if n == 0 {
		return
	}
	for {
		st := s.state.Load()
		if st&semWaiters != 0 {
			break
		}
		if int64(st>>semShift) > MaxPermits-n {
			panic(fmt.Sprintf("tsync: Semaphore: adding %d permits to %d exceeds MaxPermits", n, st>>semShift))
		}
		if s.state.CompareAndSwap(st, st+uint64(n)<<semShift) {
			return
		}
	}
	var wl wakeBuf
	s.mu.Lock()
	over := s.addLocked(n, &wl)
	s.mu.Unlock()
	wl.wake(cx)
	if over != 0 {
		panic(fmt.Sprintf("tsync: Semaphore: adding %d permits to %d exceeds MaxPermits", n, over))
	}
}

// addLocked gives n permits to the waiters in order, the rest to the pool. Called with
// s.mu held. It completes every head waiter that n covers, even with n = 0 (a head whose
// need is already met), and clears semWaiters once the queue is empty. If the pool would
// exceed MaxPermits it adds nothing to the pool and returns the pool's count, for the
// caller to panic once mu is released (a panic under mu would leave the semaphore locked
// for good).
func (s *Semaphore) addLocked(n int64, wl *wakeBuf) (overflowAt uint64) {
	for {
		w := s.waiters.head
		if w == nil {
			break
		}
		need := w.want - w.got
		if n < need {
			w.got += n
			return 0 // the state's permit count stays 0 while waiters are queued
		}
		n -= need
		w.got = w.want
		s.waiters.remove(w)
		w.notified = true
		wl.add(w.waker)
	}
	// The queue is empty now: the rest goes to the pool.
	for {
		st := s.state.Load()
		next := st &^ semWaiters
		if int64(st>>semShift) > MaxPermits-n {
			return max(st>>semShift, 1)
		}
		next += uint64(n) << semShift
		if s.state.CompareAndSwap(st, next) {
			return 0
		}
	}
}

// Close closes the semaphore: every waiting acquire fails with ErrSemaphoreClosed, and so
// does every later one. Permits held stay valid and may still be released.
func (s *Semaphore) Close() {
	if s == nil {
		nilSemaphore("Close")
	}
	var wl wakeBuf
	s.mu.Lock()
	var back int64
	for w := s.waiters.popFront(); w != nil; w = s.waiters.popFront() {
		back += w.got
		w.got = 0
		w.kind = kindClosed
		w.notified = true
		wl.add(w.waker)
	}
	for {
		st := s.state.Load()
		next := (st | semClosed) &^ semWaiters
		next += uint64(back) << semShift
		if s.state.CompareAndSwap(st, next) {
			break
		}
	}
	s.mu.Unlock()
	wl.wake(nil)
}

// AcquireAsync returns a future that is ready with n permits once they are free, or
// with ErrSemaphoreClosed: the form for tasks. It panics if n is negative or above
// MaxPermits. Acquiring 0 permits never waits for permits, not even behind queued
// acquires (like Tokio's acquire_many(0)): it is ready with an empty Permit, or with
// ErrSemaphoreClosed if the semaphore is closed.
func (s *Semaphore) AcquireAsync(n int64) *AcquireFuture {
	if s == nil {
		nilSemaphore("AcquireAsync")
	}
	checkPermits("Semaphore.AcquireAsync", "n", n)
	f := &AcquireFuture{s: s}
	f.w.want = n
	return f
}

// Acquire acquires n permits from a plain goroutine, parking it until they are free; it
// fails with ErrSemaphoreClosed. Acquiring 0 permits returns at once. Called from a
// task's code when it would have to wait, it panics (it would block a worker); use
// AcquireAsync there.
func (s *Semaphore) Acquire(n int64) (Permit, error) {
	if s == nil {
		nilSemaphore("Acquire")
	}
	if p, err := s.TryAcquire(n); err != ErrNoPermits {
		return p, err
	}
	refuseInRuntime("Semaphore.Acquire", "AcquireAsync")
	return blockOn[blitzio.Result[Permit]](s.AcquireAsync(n)).Get()
}

// AcquireContext is Acquire that gives up when ctx is done, returning ctx.Err()
// (the permits collected so far go back to the semaphore). A ctx already done fails the
// call even when the permits are there, as x/sync/semaphore's Acquire does.
func (s *Semaphore) AcquireContext(ctx context.Context, n int64) (Permit, error) {
	if s == nil {
		nilSemaphore("AcquireContext")
	}
	if err := ctx.Err(); err != nil {
		checkPermits("Semaphore.AcquireContext", "n", n) // a bad n is reported whatever ctx says
		return Permit{}, err
	}
	if p, err := s.TryAcquire(n); err != ErrNoPermits {
		return p, err
	}
	refuseInRuntime("Semaphore.AcquireContext", "AcquireAsync")
	r, err := blockOnCtx[blitzio.Result[Permit]](ctx, s.AcquireAsync(n))
	if err != nil {
		return Permit{}, err
	}
	return r.Get()
}

// AcquireFuture is the future returned by Semaphore.AcquireAsync; its waiter node lives in it,
// so waiting allocates nothing. Reset reuses it for another acquire of the same count.
//
// Unlike the package's other futures, which return the same result when polled again
// after they were ready, an AcquireFuture panics then: a second copy of its Permit would
// return the permits twice when both were released. Reset it to acquire again.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type AcquireFuture struct {
	s  *Semaphore
	w  waiter
	st uint8
}

// Poll takes the permits, or queues the future and returns pending. It panics if the
// future was ready already (see AcquireFuture) or dropped.
func (f *AcquireFuture) Poll(cx *blitzio.Context) (blitzio.Result[Permit], bool) {
	s := f.s
	switch f.st {
	case futDone:
		panic("tsync: AcquireFuture polled again after it returned ready (its Permit would be handed out twice); Reset it to acquire again")
	case futDropped:
		panic("tsync: AcquireFuture polled after Drop")
	case futIdle:
		if !cx.ConsumeBudget() {
			return blitzio.Result[Permit]{}, false
		}
		// TryAcquire settles every acquire of 0 permits (ready, or closed): only an
		// acquire that needs permits goes on to queue.
		p, err := s.TryAcquire(f.w.want)
		if err != ErrNoPermits {
			return f.finish(p, err)
		}
		s.mu.Lock()
		for {
			st := s.state.Load()
			if st&semClosed != 0 {
				s.mu.Unlock()
				return f.finish(Permit{}, ErrSemaphoreClosed)
			}
			have := int64(st >> semShift)
			if st&semWaiters == 0 && have >= f.w.want {
				if s.state.CompareAndSwap(st, st-uint64(f.w.want)<<semShift) {
					s.mu.Unlock()
					return f.finish(Permit{sem: s, n: f.w.want}, nil)
				}
				continue
			}
			// Queue, taking what is free now as a down payment (0 if others wait:
			// the count is 0 then).
			if s.state.CompareAndSwap(st, st&(semClosed)|semWaiters) {
				f.w.got = have
				break
			}
		}
		f.w.waker = cx.Waker()
		f.w.notified, f.w.kind = false, 0
		s.waiters.pushBack(&f.w)
		f.st = futWaiting
		s.mu.Unlock()
		return blitzio.Result[Permit]{}, false
	}
	s.mu.Lock()
	if f.w.notified {
		f.w.notified = false
		closed := f.w.kind == kindClosed
		n := f.w.got
		f.w.got = 0
		s.mu.Unlock()
		if closed {
			return f.finish(Permit{}, ErrSemaphoreClosed)
		}
		return f.finish(Permit{sem: s, n: n}, nil)
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	s.mu.Unlock()
	return blitzio.Result[Permit]{}, false
}

func (f *AcquireFuture) finish(p Permit, err error) (blitzio.Result[Permit], bool) {
	f.st = futDone
	return blitzio.Result[Permit]{Value: p, Err: err}, true
}

// Drop gives up waiting: the permits collected so far, or all of them if the acquire was
// complete but not yet returned by Poll, go to the next waiters.
func (f *AcquireFuture) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	s := f.s
	var wl wakeBuf
	s.mu.Lock()
	if f.w.queued {
		s.waiters.remove(&f.w)
	}
	back := f.w.got
	f.w.got, f.w.notified = 0, false
	// Always through addLocked, even with nothing to give back: it serves whatever head
	// the queue now has as far as back (and the empty pool) allow, wakes it if that
	// completes it, and clears semWaiters when the queue is now empty, so that
	// TryAcquire stops failing. It cannot overflow: the pool is empty while waiters are
	// queued, and back is at most MaxPermits.
	s.addLocked(back, &wl)
	s.mu.Unlock()
	wl.wake(nil)
}

// Reset makes f acquire again (the same count), so a loop can acquire without allocating
// a future per iteration. A waiting f is dropped first; a Permit f already returned stays
// the caller's.
func (f *AcquireFuture) Reset() {
	if f.st == futWaiting {
		f.Drop()
	}
	f.st = futIdle
}
