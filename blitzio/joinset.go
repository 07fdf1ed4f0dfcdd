package blitzio

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrJoinSetEmpty is the error of JoinSet.Next and JoinSet.WaitNext when the set has no
// task left to return: every task spawned in it has been returned already (or none was).
var ErrJoinSetEmpty = errors.New("blitzio: JoinSet is empty")

// JoinSet is a set of tasks of one result type, awaited in the order they finish: spawn
// any number of tasks into it, then take their results one by one as each finishes, with
// Next inside a task or WaitNext from plain Go code. It is Tokio's JoinSet.
//
//	var set blitzio.JoinSet[int]
//	for _, u := range urls {
//		set.Spawn(cx, fetch(u))
//	}
//	for set.Len() > 0 {
//		r := <await set.Next()>   // the next task to finish, whichever it is
//	}
//
// A task that panics gives its result with a *PanicError, a task that is aborted one
// with ErrCancelled; either way the others carry on. The AbortHandle Spawn returns
// cancels one task; AbortAll cancels every task still in the set; Drop (a JoinSet is a
// Dropper) does too, so a JoinSet held by a future is cleaned up when that future is
// dropped, and nothing spawned into it outlives it.
//
// The zero JoinSet is empty and ready to use. A JoinSet must not be copied after first
// use. All its methods are safe for concurrent use, and any number of tasks and
// goroutines may wait on Next or WaitNext at once: each finished task is returned to
// exactly one of them.
type JoinSet[T any] struct {
	mu      sync.Mutex
	live    []*joinSetMember[T] // tasks not yet returned, finished or not
	done    []*joinSetMember[T] // finished, not yet returned, in the order they finished
	waiters []Waker             // pollers of Next waiting for a task to finish
	pruneAt int                 // length of waiters at which gone waiters are dropped
	dropped bool
}

// joinSetMember is one task of a set; it is also the waker the set registers on the
// task's JoinHandle, so the task's completion queues it in done. The set holds the only
// JoinHandle of the task (Spawn hands out an AbortHandle), so nothing else can await the
// handle or detach it: the result is always there for Next to read.
type joinSetMember[T any] struct {
	set  *JoinSet[T]
	h    JoinHandle[T]
	idx  int         // index in set.live, -1 once returned or dropped (set.mu)
	fin  bool        // in set.done (set.mu)
	gone atomic.Bool // returned or dropped: the handle may prune this waker
}

// Spawn spawns f as a task (on sp: a *Runtime, or the *Context of a task, as for the
// package's Spawn) and adds it to the set, whose Next returns the task's result. The
// returned AbortHandle can cancel this one task (Next then returns it with ErrCancelled)
// or ask whether it has finished, from any goroutine; the result itself belongs to the
// set, as with Tokio's JoinSet::spawn. Spawn panics if the set has been dropped.
func (s *JoinSet[T]) Spawn(sp Spawner, f Future[T]) AbortHandle {
	s.mu.Lock()
	if s.dropped {
		s.mu.Unlock()
		panic("blitzio: JoinSet.Spawn on a JoinSet that has been dropped")
	}
	s.mu.Unlock()
	h := Spawn(sp, f)
	m := &joinSetMember[T]{set: s, h: h}
	s.mu.Lock()
	if s.dropped {
		// Dropped while we spawned: the task must not outlive the set.
		s.mu.Unlock()
		h.Abort()
		panic("blitzio: JoinSet.Spawn on a JoinSet that has been dropped")
	}
	m.idx = len(s.live)
	s.live = append(s.live, m)
	s.mu.Unlock()
	// Ask the task to wake m when it completes (at once if it already has).
	cur := h.c.state.v.Load()
	if life(cur) == stComplete || !h.c.registerJoinWaker(cur, Waker{t: m}) {
		m.wake(nil)
	}
	return AbortHandle{h: &h.c.header}
}

// wake implements wakeTarget: the member's task has completed, or this is a spurious
// wake-up. A JoinHandle awaited by many waiters wakes its whole waiter list now and then
// and expects the live ones to poll again and re-register (futures tolerate spurious
// wake-ups). The member is the only waiter of its handle, since the set keeps the handle
// to itself, but it checks all the same that the task has really completed (the
// completer marks it complete before it wakes anyone) and otherwise registers again:
// returning the zero value of a task still running as its result would be far worse than
// the cost of one load.
func (m *joinSetMember[T]) wake(cx *Context) {
	if c := m.h.c; life(c.state.v.Load()) != stComplete {
		if m.gone.Load() {
			return // returned or dropped already: nobody reads this member any more
		}
		if cur := c.state.v.Load(); life(cur) != stComplete && c.registerJoinWaker(cur, Waker{t: m}) {
			return
		}
		// Completed meanwhile: registration failed, so no completer will wake us.
	}
	s := m.set
	s.mu.Lock()
	if m.idx < 0 || m.fin {
		s.mu.Unlock()
		return
	}
	m.fin = true
	s.done = append(s.done, m)
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	// Every waiting poller re-polls; one of them takes m, the others wait again. The list
	// was taken from the set, so a waiter skipped here would sleep forever: wakeEach
	// wakes every one even if a waker (a hand-written WakerFunc) panics, and logs the
	// panic, as the JoinHandle does for its own waiters.
	wakeEach(ws, cx)
}

// waiterGone tells the task's JoinHandle that this entry can be pruned.
func (m *joinSetMember[T]) waiterGone() bool { return m.gone.Load() }

// remove takes m out of live (s.mu held).
func (s *JoinSet[T]) remove(m *joinSetMember[T]) {
	last := len(s.live) - 1
	if m.idx != last {
		moved := s.live[last]
		s.live[m.idx] = moved
		moved.idx = m.idx
	}
	s.live[last] = nil
	s.live = s.live[:last]
	m.idx = -1
	m.gone.Store(true)
}

// Len returns the number of tasks in the set: spawned and not yet returned by Next or
// WaitNext, whether they have finished or not.
func (s *JoinSet[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// IsEmpty reports whether Len is 0.
func (s *JoinSet[T]) IsEmpty() bool { return s.Len() == 0 }

// tryNext returns the next finished task's result if there is one (ok), or reports that
// the set is empty (ok, ErrJoinSetEmpty), or registers w to be woken when a task
// finishes (not ok).
func (s *JoinSet[T]) tryNext(w Waker) (Result[T], bool) {
	s.mu.Lock()
	if len(s.done) > 0 {
		m := s.done[0]
		s.done[0] = nil
		s.done = s.done[1:]
		if len(s.done) == 0 {
			s.done = nil // let the backing array go once drained
		}
		s.remove(m)
		s.mu.Unlock()
		return m.h.result(), true
	}
	if len(s.live) == 0 {
		s.mu.Unlock()
		return Result[T]{Err: ErrJoinSetEmpty}, true
	}
	if !w.IsZero() {
		known := false
		for _, x := range s.waiters {
			if x.WillWake(w) {
				known = true
				break
			}
		}
		if !known {
			if len(s.waiters) >= s.pruneAt {
				// Drop the wakers of waiters that are gone (a finished BlockOn, a dropped
				// select), so that pollers that come and go while no task finishes do
				// not grow the list without bound; pruneAt doubles, so this is O(1) per
				// waiter amortised.
				live := s.waiters[:0]
				for _, x := range s.waiters {
					if g, ok := x.t.(interface{ waiterGone() bool }); !ok || !g.waiterGone() {
						live = append(live, x)
					}
				}
				clear(s.waiters[len(live):])
				s.waiters = live
				s.pruneAt = max(2*len(live), 8)
			}
			s.waiters = append(s.waiters, w)
		}
	}
	s.mu.Unlock()
	return Result[T]{}, false
}

// Next returns a future of the result of the next task of the set to finish (in the
// order they finish, not the order they were spawned), which it removes from the set.
// When the set is empty the future is ready at once with ErrJoinSetEmpty. The result's
// error is the task's: a *PanicError, ErrCancelled, ErrGoexit. Like every future in this
// package, polled again after it finished it returns the same result.
func (s *JoinSet[T]) Next() Future[Result[T]] { return &joinSetNext[T]{s: s} }

type joinSetNext[T any] struct {
	s    *JoinSet[T]
	out  Result[T]
	done bool
}

func (n *joinSetNext[T]) Poll(cx *Context) (Result[T], bool) {
	if n.done {
		return n.out, true
	}
	if !cx.ConsumeBudget() {
		return Result[T]{}, false
	}
	r, ok := n.s.tryNext(cx.Waker())
	if ok {
		n.out, n.done = r, true
	}
	return r, ok
}

// WaitNext blocks the calling goroutine until a task of the set finishes and returns its
// value or error, removing it from the set; on an empty set it returns ErrJoinSetEmpty at
// once. Call it from plain Go code; inside a task, await Next instead (WaitNext on a
// worker goroutine panics, as JoinHandle.Wait does, unless a result is ready).
func (s *JoinSet[T]) WaitNext() (T, error) {
	if r, ok := s.tryNext(Waker{}); ok {
		return r.Value, r.Err
	}
	if onRuntimeGoroutine() == onWorker {
		panic("blitzio: cannot block from within a runtime: JoinSet.WaitNext called by a task's " +
			"code on a worker goroutine would block the worker; await JoinSet.Next instead")
	}
	p := newParker()
	defer p.gone.Store(true)
	w := Waker{t: p}
	for {
		if r, ok := s.tryNext(w); ok {
			return r.Value, r.Err
		}
		<-p.ch
	}
}

// AbortAll cancels every task in the set (AbortHandle.Abort). The tasks stay in the set
// until their results are taken: Next then returns ErrCancelled for each task that the
// abort stopped, and the result of each that had finished first.
func (s *JoinSet[T]) AbortAll() {
	s.mu.Lock()
	hs := make([]JoinHandle[T], len(s.live))
	for i, m := range s.live {
		hs[i] = m.h
	}
	s.mu.Unlock()
	for _, h := range hs {
		h.Abort()
	}
}

// Drop aborts every task in the set and empties it: the set is abandoned (a future that
// holds it is being dropped), so no task spawned into it keeps running. Spawn panics
// afterwards, and Next and WaitNext report ErrJoinSetEmpty. Drop is idempotent.
func (s *JoinSet[T]) Drop() {
	s.mu.Lock()
	if s.dropped {
		s.mu.Unlock()
		return
	}
	s.dropped = true
	live := s.live
	s.live, s.done = nil, nil
	ws := s.waiters
	s.waiters = nil
	for _, m := range live {
		m.idx = -1
		m.gone.Store(true)
	}
	s.mu.Unlock()
	for _, m := range live {
		m.h.Abort()
	}
	// Pollers of Next see the set empty now (every one woken, as in joinSetMember.wake).
	wakeEach(ws, nil)
}
