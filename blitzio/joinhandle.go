package blitzio

import (
	"log"
	"runtime/debug"
	"sync"
)

// JoinHandle is the handle of a spawned task. It is a Future[Result[T]], so another task
// can await it; Wait blocks a plain goroutine until the task finishes. A JoinHandle is a
// small value: copy it freely. Any number of tasks and goroutines may await or Wait on
// copies of one handle at the same time; each of them sees the result. Dropping every
// copy does not cancel the task (use Abort); Detach tells the runtime nobody will read
// the result. The zero JoinHandle is not a handle of any task; its methods panic with a
// message that says so.
//
// After Detach (on any copy), the handle must not be used to read the result: Poll and
// Wait then panic with "after Detach", including a Wait or an await that was already
// blocked in another goroutine or task when the handle was detached (it is woken when
// the task finishes and panics then, rather than sleeping forever). Abort and
// IsFinished remain usable.
type JoinHandle[T any] struct {
	c *core[T]
}

// check panics with a clear message if h is the zero JoinHandle (op names the method).
func (h JoinHandle[T]) check(op string) *core[T] {
	if h.c == nil {
		panic("blitzio: JoinHandle." + op + " called on the zero JoinHandle (not a handle of any task)")
	}
	return h.c
}

// panicDetached is called by Poll and Wait when the state says the handle was detached:
// the output may already be released, and the completer of a detached task keeps no
// promise to wake anyone.
func panicDetached(op string) {
	panic("blitzio: JoinHandle." + op + " after Detach: a detached handle's result is released, so it cannot be read")
}

// Poll is ready when the task has finished: with its value, or with ErrCancelled if it
// was aborted or dropped by Shutdown, or with a *PanicError if its Poll panicked, or
// with ErrGoexit if its code called runtime.Goexit.
//
// Every distinct waker a pending Poll is given is woken when the task finishes, so
// several awaiters (tasks, goroutines in Wait, children of a combinator) may poll copies
// of one handle. A waiter that goes away (an aborted task, a dropped select) costs
// nothing but its entry, and the entries stay bounded by the number of live waiters:
// those of waiters known to be gone (finished tasks) are pruned as new ones arrive, and
// when the list is still long every waiter is woken once and the live ones re-register
// (a spurious wake-up, which futures tolerate), so a select over the handle in a loop
// does not accumulate one entry per iteration. A waiter's Waker that panics when the
// task completes (a WakerFunc of a hand-written adapter) does not stop the others from
// being woken: its panic is written to the standard logger.
func (h JoinHandle[T]) Poll(cx *Context) (Result[T], bool) { return h.poll(cx, "Poll") }

func (h JoinHandle[T]) poll(cx *Context, op string) (Result[T], bool) {
	c := h.check(op)
	if !cx.ConsumeBudget() {
		return Result[T]{}, false
	}
	cur := c.state.v.Load()
	if cur&flagJoinInterest == 0 {
		panicDetached(op)
	}
	if life(cur) == stComplete {
		return h.result(), true
	}
	if c.registerJoinWaker(cur, cx.Waker()) {
		return Result[T]{}, false
	}
	if c.state.v.Load()&flagJoinInterest == 0 {
		// Detached while we registered: the output was (or will be) released.
		panicDetached(op)
	}
	return h.result(), true
}

// registerJoinWaker records w to be woken when the task completes. It returns false if
// the task completed meanwhile (the output is then ready). cur is a recent state.
//
// The common case, one waiter, costs two CAS on the task state: take JOIN_LOCK, then
// publish the waker and release the lock together. A second distinct waker turns the
// slot into a *joinWaiters list (once per task); from then on a poll is a mutex-guarded
// append to the list and touches the state only to load it.
func (h *header) registerJoinWaker(cur uint64, w Waker) bool {
	if cur&flagJoinMulti != 0 {
		// joinWaker never changes once JOIN_MULTI is set, and we loaded that bit with
		// acquire ordering after the publishing CAS, so reading it without the lock is
		// safe.
		return h.joinWaker.t.(*joinWaiters).add(w)
	}
	cur, ok := h.state.lockJoin()
	if !ok {
		return false
	}
	if cur&flagJoinMulti != 0 {
		// Another poller installed the list while we waited for the lock.
		h.state.unlockJoin()
		return h.joinWaker.t.(*joinWaiters).add(w)
	}
	if cur&flagJoinWaker == 0 {
		// First waiter: the slot is ours to write while JOIN_WAKER is clear.
		h.joinWaker = w
		return h.state.publishJoinWaker(0)
	}
	// The slot holds a waker; only lock holders write it, so we may read it.
	old := h.joinWaker
	if old.WillWake(w) {
		h.state.unlockJoin()
		return true
	}
	// A second waiter. Replacing the slot's waker (what a single-waiter JoinHandle does)
	// would leave the first waiter asleep forever: move both to a list instead. Take the
	// slot back first; this fails if the task completed, and then the completer wakes
	// old itself.
	if !h.state.unsetJoinWaker() {
		h.state.unlockJoin()
		return false
	}
	jw := &joinWaiters{ws: []Waker{old, w}}
	h.joinWaker = Waker{t: jw}
	if !h.state.publishJoinWaker(flagJoinMulti) {
		// The task completed while JOIN_WAKER was clear, so its completer woke nobody:
		// wake the first waiter ourselves (we report ready to the second). Plain Wake,
		// not WakeFrom(cx): passing cx on would make every poller's Context escape to
		// the heap (Wait's included), for a path this rare.
		old.Wake()
		return false
	}
	return true
}

func (h JoinHandle[T]) result() Result[T] {
	return Result[T]{Value: h.c.out, Err: h.c.err}
}

// Wait blocks the calling goroutine until the task finishes and returns its value or
// error. Call it from plain Go code; inside a task, await the handle instead: Wait on a
// worker goroutine, where it would block the worker (and, with one worker or several
// waits, deadlock the runtime), panics with "blitzio: cannot block from within a
// runtime" unless the task has already finished (see BlockOn for what is detected).
//
// Wait panics on the zero JoinHandle and after Detach (see JoinHandle).
func (h JoinHandle[T]) Wait() (T, error) {
	c := h.check("Wait")
	cur := c.state.v.Load()
	if cur&flagJoinInterest == 0 {
		panicDetached("Wait")
	}
	if life(cur) == stComplete {
		return c.out, c.err
	}
	panicIfOnWorker("JoinHandle.Wait", &c.header)
	p := newParker()
	cx := &Context{waker: Waker{t: p}, budget: budgetPerPoll}
	for {
		cx.budget = budgetPerPoll
		if r, ok := h.poll(cx, "Wait"); ok {
			return r.Value, r.Err
		}
		<-p.ch
	}
}

// Abort cancels the task: it is dropped at its next scheduling point (at once if it is
// waiting; after the current poll if it is running) and the handle reports ErrCancelled.
// A task that completes during the poll in progress keeps its result. Aborting a finished
// task does nothing. Safe from any goroutine.
func (h JoinHandle[T]) Abort() { h.check("Abort").header.abort() }

// abort is Abort of the task h heads (JoinHandle.Abort, AbortHandle.Abort).
func (h *header) abort() {
	if h.state.abort() {
		h.rt.schedule(h, nil, false)
	} else if _, job := h.vt.(blockingJob); job && h.state.toShutdown() {
		// A SpawnBlocking job still in the pool's queue (scheduled, not started): its
		// "next scheduling point" is when a pool goroutine pops it, which with every
		// goroutine busy on long calls may be never. It has not started, so take it over
		// now, as Shutdown does with queued jobs, and cancel it: the handle reports
		// ErrCancelled at once, and the pool goroutine that pops it later skips it
		// (toRunning sees it is no longer scheduled). A job already running is left
		// alone: toShutdown only marks it, and it runs to the end keeping its result.
		h.cancelOwned(nil)
	}
}

// IsFinished reports whether the task has completed, failed or been cancelled.
func (h JoinHandle[T]) IsFinished() bool {
	return life(h.check("IsFinished").state.v.Load()) == stComplete
}

// AbortHandle returns a handle that can abort the task and ask whether it has finished,
// but not read its result (Tokio's JoinHandle::abort_handle). Give it to code that may
// cancel the task while the result stays with whoever holds the JoinHandle. It works
// after Detach too.
func (h JoinHandle[T]) AbortHandle() AbortHandle {
	return AbortHandle{h: &h.check("AbortHandle").header}
}

// AbortHandle can cancel a task and ask whether it has finished, but cannot read the
// task's result, wait for it, or detach it: it is Tokio's AbortHandle. JoinSet.Spawn
// returns one, since the set owns the results of its tasks; JoinHandle.AbortHandle makes
// one for any task. Unlike a JoinHandle it has no type parameter, so handles of tasks of
// different result types can be kept together.
//
// An AbortHandle is a small value: copy it freely, and use its copies from any goroutine,
// task or runtime at the same time. It stays valid after the task finishes (Abort then
// does nothing) and keeps the task's memory reachable while it is held. The zero
// AbortHandle is not a handle of any task; its methods panic with a message that says so.
type AbortHandle struct {
	h *header
}

// check panics with a clear message if a is the zero AbortHandle (op names the method).
func (a AbortHandle) check(op string) *header {
	if a.h == nil {
		panic("blitzio: AbortHandle." + op + " called on the zero AbortHandle (not a handle of any task)")
	}
	return a.h
}

// Abort cancels the task, as JoinHandle.Abort does: it is dropped at its next scheduling
// point (at once if it is waiting; after the current poll if it is running), and its
// result becomes ErrCancelled, which is what JoinSet.Next or the task's JoinHandle then
// report. A task that completes during the poll in progress keeps its result. Aborting a
// finished task does nothing, as does aborting twice. Safe from any goroutine.
func (a AbortHandle) Abort() { a.check("Abort").abort() }

// IsFinished reports whether the task has completed, failed or been cancelled. Once true
// it stays true. After Abort it may still be false for a moment: a task being polled is
// dropped when its poll returns.
func (a AbortHandle) IsFinished() bool {
	return life(a.check("IsFinished").state.v.Load()) == stComplete
}

// Detach gives up the handle: the task keeps running, and its result is released as soon
// as it finishes. The result can no longer be read through the handle or its copies:
// Poll and Wait panic afterwards (see JoinHandle); Abort still works. Detaching twice
// does nothing more.
func (h JoinHandle[T]) Detach() {
	c := h.check("Detach")
	prev, ok := c.state.dropJoinInterest()
	if ok && (life(prev) == stComplete || refs(prev) == 1) {
		// The completer saw our interest and kept the output, or we hold the last
		// reference: release it now.
		c.vt.release()
	}
}

// joinWaiters is the list of wakers of a task awaited by more than one waiter. It is
// itself the wake target stored in joinWaker, so the completer's single wake reaches
// every waiter.
//
// The list must not grow with waiters that went away. Those known to be gone (finished
// tasks, returned BlockOn calls) are pruned. Others cannot tell: a select or a join
// polled in a loop registers a new child waker on every iteration, and the old ones
// belong to combinators that have finished or been dropped. So when the list reaches
// its limit and pruning does not halve it, every entry is woken (a spurious wake-up,
// which every future tolerates: a live waiter polls again and re-registers, a dead one
// ignores it) and the list starts afresh. The limit follows the number of live waiters
// seen re-registering after the previous such wake-up, so a handle awaited by many live
// waiters wakes them O(log n) times in all, and a loop of selects keeps the list at a
// few dozen entries.
type joinWaiters struct {
	mu     sync.Mutex
	closed bool // the task completed: every waiter has been woken
	ws     []Waker
	// index finds a waker in ws once the list is long, so that n waiters registering
	// cost O(n) in all, not O(n^2).
	index map[wakeTarget]struct{}
	// pruneAt is the length at which add next drops the entries of waiters known to be
	// gone, or wakes the list (see above).
	pruneAt int
	// flushed holds the targets woken by the last flush that have not re-registered
	// since; relive counts those that have (live waiters).
	flushed map[wakeTarget]struct{}
	relive  int
}

// joinIndexAt is the list length from which joinWaiters keeps a map index; joinMinPrune
// is the smallest pruning limit.
const (
	joinIndexAt  = 16
	joinMinPrune = 2 * joinIndexAt
)

// add records w; it returns false if the task has already completed.
func (j *joinWaiters) add(w Waker) bool {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return false
	}
	if j.index != nil {
		if _, ok := j.index[w.t]; ok {
			j.mu.Unlock()
			return true
		}
	} else {
		for _, x := range j.ws {
			if x.WillWake(w) {
				j.mu.Unlock()
				return true
			}
		}
	}
	if _, ok := j.flushed[w.t]; ok {
		delete(j.flushed, w.t)
		j.relive++
	}
	var flush []Waker
	if len(j.ws) >= j.pruneAt {
		j.prune()
		if len(j.ws) >= j.pruneAt/2 && j.pruneAt >= joinMinPrune {
			// Mostly entries of unknown liveness: wake them all and start afresh.
			flush = j.ws
			j.flushed = make(map[wakeTarget]struct{}, len(flush))
			for _, x := range flush {
				j.flushed[x.t] = struct{}{}
			}
			j.pruneAt = max(2*j.relive, joinMinPrune)
			j.relive = 0
			j.ws, j.index = nil, nil
		} else {
			j.pruneAt = max(2*len(j.ws), joinMinPrune)
		}
	}
	j.ws = append(j.ws, w)
	if j.index != nil {
		j.index[w.t] = struct{}{}
	} else if len(j.ws) >= joinIndexAt {
		j.index = make(map[wakeTarget]struct{}, 2*len(j.ws))
		for _, x := range j.ws {
			j.index[x.t] = struct{}{}
		}
	}
	j.mu.Unlock()
	// Outside the lock: a waker may poll the handle again (and so call add).
	wakeEach(flush, nil)
	return true
}

// prune drops the wakers of waiters that are gone (j.mu held): a waiter that is gone
// would ignore the wake-up anyway.
func (j *joinWaiters) prune() {
	live := j.ws[:0]
	for _, w := range j.ws {
		if g, ok := w.t.(interface{ waiterGone() bool }); ok && g.waiterGone() {
			if j.index != nil {
				delete(j.index, w.t)
			}
			continue
		}
		live = append(live, w)
	}
	clear(j.ws[len(live):])
	j.ws = live
}

// wake is called once, by the completer: it wakes every waiter.
func (j *joinWaiters) wake(cx *Context) {
	j.mu.Lock()
	j.closed = true
	ws := j.ws
	j.ws, j.index, j.flushed = nil, nil, nil
	j.mu.Unlock()
	wakeEach(ws, cx)
}

// wakeJoinWaker calls the join waker of a completing task (one waiter's waker, or the
// *joinWaiters list). A waiter's waker is user code when the handle is polled by a
// hand-written adapter (WakerFunc): if it panics, the panic must not escape into the
// completer (a worker, which would crash the process; Abort; the shutdown), so it is
// recovered and logged, as the timers do with a waker's panic.
func wakeJoinWaker(w Waker, cx *Context) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			reportJoinWakerPanic(r)
		}
		// Otherwise runtime.Goexit: it cannot be stopped. The task is complete already,
		// and a worker goroutine that exits is replaced (worker.replace).
	}()
	w.WakeFrom(cx)
	returned = true
}

// wakeEach wakes every waker in ws, even when some panic or call runtime.Goexit: a
// waiter skipped here would never be woken again, since the task has completed. Panics
// are recovered and logged; a Goexit goes on after the rest are woken (from the deferred
// call, which runs while the goroutine unwinds).
func wakeEach(ws []Waker, cx *Context) {
	i := 0
	defer func() {
		if i >= len(ws) {
			return
		}
		if r := recover(); r != nil {
			reportJoinWakerPanic(r)
		}
		wakeEach(ws[i+1:], cx)
	}()
	for ; i < len(ws); i++ {
		ws[i].WakeFrom(cx)
	}
}

// reportJoinWakerPanic makes a waiter's waker's panic visible where it cannot be
// re-raised to the code responsible: it is written, with its stack, to the standard
// logger, and the runtime carries on.
func reportJoinWakerPanic(r any) {
	log.Printf("blitzio: a Waker panicked when what it waited for (a task, a Completion, a JoinSet) was done or dropped (every other waiter was woken): %v\n%s", r, debug.Stack())
}

// waiterGone reports that a task awaiting a JoinHandle is gone: a completed task ignores
// wake-ups.
func (h *header) waiterGone() bool { return life(h.state.v.Load()) == stComplete }
