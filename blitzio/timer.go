package blitzio

import (
	"log"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Timer entry states (timerEntry.st). The pending stack lets a sleep start and be dropped
// with two locked instructions (a CAS to push, a CAS to cancel) instead of two lock/unlock
// pairs: on this 2-core EPYC every Go atomic read-modify-write or store is a locked
// instruction of about 5.5 ns, and starting and dropping a sleep costs about 65 ns in all.
// spin/timerqueue.pml models the protocol (its #defines must match these values).
//
//   - tsIdle: the runtime does not know the entry; its owner (the future holding it, whose
//     methods never run concurrently with each other) reads and writes it freely.
//   - tsQueued: pushed on timerState.pending by its owner (fields written before the push
//     CAS, which publishes them); not in the wheel yet.
//   - tsCancelled: cancelled by its owner while queued, by one CAS. It may still be in the
//     pending stack, or in a list a drainer has popped: drainers skip it without touching
//     it. Before the owner registers it again it drains that stack (the one of the runtime
//     it was queued on, which need not be the runtime it registers with next) under that
//     runtime's lock, after which no drainer can hold it, and it is the owner's alone
//     again.
//   - tsWheel: moved into the wheel by a drainer (CAS tsQueued -> tsWheel, so a cancel and
//     a drain cannot both win). Guarded by the lock from here on: a cancel takes the lock,
//     removes it and stores tsIdle.
//   - tsFired: expired; stored under the lock after the firer has copied its waker.
const (
	tsIdle uint32 = iota
	tsQueued
	tsCancelled
	tsWheel
	tsFired
)

// drainEvery is how many timers one Context registers between the drains it does itself:
// cancelled entries wait in the pending stack until some drain, so this bounds what a
// Context that starts and drops sleeps while nothing else processes timers keeps alive.
const drainEvery = 64

// timerState is a runtime's timer wheel with its lock and the atomics the scheduler reads
// without the lock. The wheel is driven by the scheduler, not by a goroutine per timer:
// worker 0 (and any worker that notices a due timer) advances it between tasks, and a
// parked worker takes the "timer driver" role and parks only until the next deadline.
type timerState struct {
	mu sync.Mutex
	w  wheel
	// pending is a Treiber stack of registered entries not yet in the wheel (pushed by
	// CAS without the lock, taken all at once by a Swap under the lock: no ABA, since
	// nothing pops single entries).
	pending atomic.Pointer[timerEntry]
	// active is set when a timer is registered and cleared only by processTimers when it
	// finds the wheel and the pending stack empty, so it may be stale-true (which costs
	// one needless lock) but never stale-false. A parking worker reads it to decide
	// whether someone must drive the wheel (paired with the registrant's read of the
	// parked bitmap, like the run queues: see idle). Not clearing it on cancel keeps a
	// start-and-drop of a sleep free of further atomic writes.
	active atomic.Bool
	// nextAt is a lower bound of the next expiration (MaxInt64 when none), so workers can
	// check "anything due?" without the lock. A cancel may leave it stale-low; that only
	// costs one spurious advance.
	nextAt atomic.Int64
	// parkedUntil is the tick the timer-driving parked worker will wake at (MaxInt64 if
	// none); a registration with an earlier deadline wakes it.
	parkedUntil atomic.Int64
}

func (ts *timerState) init() {
	ts.nextAt.Store(math.MaxInt64)
	ts.parkedUntil.Store(math.MaxInt64)
}

func (ts *timerState) due(now uint64) bool {
	return ts.active.Load() && uint64(ts.nextAt.Load()) <= now
}

// drainLocked moves the pending stack into the wheel (ts.mu held). Queued entries whose
// deadline the wheel has already passed fire at once: their wakers are appended to
// wakers, for the caller to call after unlocking. now, if not zero, is the real current
// tick, to which an empty wheel may jump (entries are then placed relative to the
// present, with fewer cascades); it must come from the real clock, not the fast one (a
// wheel time ahead of the true time would fire entries early).
func (ts *timerState) drainLocked(wakers []Waker, now uint64) []Waker {
	e := ts.pending.Swap(nil)
	if e == nil {
		return wakers
	}
	if ts.w.count == 0 && now > ts.w.elapsed {
		ts.w.elapsed = now
	}
	for e != nil {
		next := e.next // before insert relinks e
		if atomic.CompareAndSwapUint32(&e.st, tsQueued, tsWheel) {
			if !ts.w.insert(e, e.deadline) {
				wakers = append(wakers, e.waker)
				atomic.StoreUint32(&e.st, tsFired)
			}
		} // else tsCancelled: skipped untouched; its owner drains before reusing it
		e = next
	}
	return wakers
}

// wakeAll calls the wakers a drain or an advance collected (outside the lock: waking
// schedules tasks, which takes queue locks), on a goroutine that must not panic: a
// worker, or a future's Poll that happened to drain the timers. A waker that panics does
// not stop the others (see wakeAllCollect); the panic is reported by reportWakerPanic.
func wakeAll(wakers []Waker) {
	if pe := wakeAllCollect(wakers); pe != nil {
		reportWakerPanic(pe)
	}
}

// wakeAllCollect calls every waker, even when some panic (each timer was already marked
// fired, so a waker skipped here would never be called), and returns the first panic.
func wakeAllCollect(wakers []Waker) (first *PanicError) {
	for len(wakers) > 0 {
		wakers = wakeUntilPanic(wakers, &first)
	}
	return first
}

// wakeUntilPanic wakes ws in order; if a waker panics it records the first panic and
// returns the wakers after it. One deferred recover for the whole loop keeps the common
// path (no panic) as cheap as a plain loop.
//
// A waker that calls runtime.Goexit cannot be stopped: the goroutine ends once its
// deferred calls have run. Every timer in ws was already marked fired, so nobody would
// ever call the wakers after it: the deferred call wakes them before the goroutine goes,
// and reports the Goexit (and a panic of those wakers) by reportWakerPanic, since no
// caller will see it. The caller's own work after wakeAll is lost with the goroutine:
// callers wake only after releasing what they hold (the timer lock, the timer duty, a
// worker's parked bit), and a worker that exits this way is replaced.
func wakeUntilPanic(ws []Waker, first **PanicError) (rest []Waker) {
	i := 0
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			if *first == nil {
				*first = newPanicError(r, false)
			}
			rest = ws[i+1:]
			return
		}
		// runtime.Goexit in ws[i].
		log.Printf("blitzio: a Waker called runtime.Goexit while the runtime was firing timers; every other fired timer is woken, then the goroutine exits (a worker is replaced)\n%s", stack())
		if pe := wakeAllCollect(ws[i+1:]); pe != nil {
			reportWakerPanic(pe)
		}
		if *first != nil {
			reportWakerPanic(*first) // the caller that would have re-raised it is gone
		}
	}()
	for ; i < len(ws); i++ {
		ws[i].Wake()
	}
	returned = true
	return nil
}

// reportWakerPanic makes a waker's panic visible where it cannot be re-raised to the
// code responsible (a worker firing timers between tasks, or an unrelated future whose
// poll drained the timers): it is written, with its stack, to the standard logger, as
// net/http does with a handler's panic, and the runtime carries on.
func reportWakerPanic(pe *PanicError) {
	log.Printf("blitzio: a Waker panicked while the runtime was firing timers (every other fired timer was woken): %v\n%s", pe.Value, pe.Stack)
}

// Timer ticks. With the system clock a tick is 1 ms: deadlines round up and the current
// time rounds down, so a timer never fires early and the wheel spans about 12 days in its
// five levels. With a TestClock a tick is 1 ns, so a timer fires exactly when Advance
// brings the clock to its deadline (the wheel then spans about a second before the
// overflow list, which only costs a test more cascading).

// deadlineTick converts a deadline (elapsed runtime time) to a wheel tick.
func (rt *Runtime) deadlineTick(at time.Duration) uint64 {
	if rt.testClock != nil {
		return uint64(max(at, 0))
	}
	return timeToTick(at)
}

// nowTick converts the current elapsed runtime time to a wheel tick.
func (rt *Runtime) nowTick(now time.Duration) uint64 {
	if rt.testClock != nil {
		return uint64(max(now, 0))
	}
	return nowTick(now)
}

// elapsedTime converts elapsed runtime time back to an absolute time on the runtime's
// clock (the inverse of toElapsed).
func (rt *Runtime) elapsedTime(at time.Duration) time.Time {
	if rt.testClock != nil {
		return rt.testStart.Add(at)
	}
	return rt.start.Add(at)
}

// untilElapsed returns the current elapsed time and t converted to elapsed time. On the
// system clock both come from one reading of time.Now, so t is compared with the present
// as time.Until compares it: by the monotonic clock if t has a monotonic reading, else by
// the wall clock as it reads now (not as it read when the runtime started: it may have
// been stepped since).
func (rt *Runtime) untilElapsed(t time.Time) (now, at time.Duration) {
	if rt.testClock != nil {
		return rt.elapsed(), rt.toElapsed(t)
	}
	n := time.Now()
	now = n.Sub(rt.start)
	d := t.Sub(n) // saturates
	at = now + d
	switch {
	case d > 0 && at < now:
		at = math.MaxInt64
	case d < 0 && at > now:
		at = math.MinInt64
	}
	return now, at
}

// tickTime is the time on the runtime's clock at which wheel tick tick begins (the
// inverse of deadlineTick, up to its rounding up).
func (rt *Runtime) tickTime(tick uint64) time.Time {
	if rt.testClock != nil {
		return rt.elapsedTime(time.Duration(min(tick, math.MaxInt64)))
	}
	if tick > math.MaxInt64/uint64(time.Millisecond) {
		return rt.elapsedTime(math.MaxInt64)
	}
	return rt.elapsedTime(time.Duration(tick) * time.Millisecond)
}

// timerCount returns the number of registered timers that have not fired (tests). It
// drains the pending stack first, so cancelled entries waiting there are not counted.
func (rt *Runtime) timerCount() int {
	ts := &rt.timers
	ts.mu.Lock()
	wakers := ts.drainLocked(nil, 0)
	n := ts.w.count
	ts.mu.Unlock()
	wakeAll(wakers)
	return n
}

// registerTimer registers e (owned by the caller, in state tsIdle, tsFired or
// tsCancelled) with deadline and waker w; now is the current tick. prev is the runtime e
// was last registered with (nil if never). It returns false if the deadline has already
// passed; then nothing was registered (but e is no longer in prev's pending stack). cx is the polling Context (its registration count
// triggers drains).
func (rt *Runtime) registerTimer(cx *Context, prev *Runtime, e *timerEntry, deadline, now uint64, w Waker) bool {
	ts := &rt.timers
	if atomic.LoadUint32(&e.st) == tsCancelled {
		// e may still be in the pending stack it was cancelled in (or in a list a drainer
		// of that stack is walking): after a drain under that runtime's lock it is in
		// neither, and ours again. The stack is prev's, not necessarily ours: a sleep
		// reset and polled on another runtime that skipped this drain would be pushed on
		// our stack while still linked in prev's, and prev's next drain would take it (it
		// would never fire here) and walk on into our stack through its next link.
		if prev == nil {
			prev = rt
		}
		pts := &prev.timers
		pts.mu.Lock()
		wakers := pts.drainLocked(nil, 0)
		pts.mu.Unlock()
		wakeAll(wakers)
	}
	// Checked after the drain above, so that e is out of prev's stack either way.
	if deadline <= now {
		return false
	}
	// e is ours alone (tsIdle, tsFired or drained tsCancelled): plain writes, published
	// by the push's CAS.
	e.deadline = deadline
	e.waker = w
	e.st = tsQueued
	for {
		h := ts.pending.Load()
		e.next = h
		if ts.pending.CompareAndSwap(h, e) {
			break
		}
	}
	// After the push (processTimers re-checks pending after its stores of active and
	// nextAt, so one of the two sides sees the other).
	if !ts.active.Load() {
		ts.active.Store(true)
	}
	for {
		n := ts.nextAt.Load()
		if int64(deadline) >= n || ts.nextAt.CompareAndSwap(n, int64(deadline)) {
			break
		}
	}
	// A timer driver that drained before our push has either not yet published its
	// parkedUntil (still MaxInt64 from its release) or published a later one: either way
	// we wake it.
	if int64(deadline) < ts.parkedUntil.Load() && rt.testClock == nil {
		rt.wakeTimerDriver()
	}
	// No worker fires a TestClock's timers: Advance does. An Advance that ran between
	// the caller's clock read (now) and the push above moved the clock and fired what it
	// found without this entry, which may be due already: fire it here then. (Either that
	// Advance's drain, after its clock store, saw our push, or this read, after our push,
	// sees its clock.)
	if rt.testClock != nil && deadline <= rt.nowTick(rt.elapsed()) {
		rt.processTimers(false)
	}
	if cx != nil {
		if cx.timerPushes++; cx.timerPushes >= drainEvery {
			cx.timerPushes = 0
			ts.mu.Lock()
			wakers := ts.drainLocked(nil, 0)
			ts.mu.Unlock()
			wakeAll(wakers)
		}
	}
	return true
}

// updateTimerWaker replaces e's waker; it returns false if e fired meanwhile. Drainers and
// firers read the waker only under the lock, so the lock orders this write with them.
func (rt *Runtime) updateTimerWaker(e *timerEntry, w Waker) bool {
	ts := &rt.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if atomic.LoadUint32(&e.st) == tsFired {
		return false
	}
	e.waker = w
	return true
}

// cancelTimer withdraws e if it is still registered: one CAS while it waits in the
// pending stack, the lock and an O(1) unlink once it is in the wheel.
func (rt *Runtime) cancelTimer(e *timerEntry) {
	st := atomic.LoadUint32(&e.st)
	if st == tsQueued {
		if atomic.CompareAndSwapUint32(&e.st, tsQueued, tsCancelled) {
			return
		}
		st = atomic.LoadUint32(&e.st) // a drainer moved it into the wheel (or fired it)
	}
	if st != tsWheel {
		return // tsIdle, tsCancelled or tsFired: nothing registered
	}
	ts := &rt.timers
	ts.mu.Lock()
	if atomic.LoadUint32(&e.st) == tsWheel { // not fired meanwhile
		ts.w.remove(e)
		// A plain store: an entry in the wheel is read by others only under the lock (the
		// firer) or by its owner, which is us; an atomic store would be one more locked
		// instruction on every cancel of a registered timer.
		e.st = tsIdle
	}
	ts.mu.Unlock()
}

// timerFired reports whether e has expired.
func timerFired(e *timerEntry) bool { return atomic.LoadUint32(&e.st) == tsFired }

// wakeTimerDriver makes sure some worker notices an earlier deadline: the parked timer
// driver if there is one, else any parked worker (which will become the driver when it
// parks again). If every worker is busy, worker 0's maintenance drives the wheel.
func (rt *Runtime) wakeTimerDriver() {
	if d := rt.timerDriver.Load(); d >= 0 && rt.unparkWorker(int(d)) {
		return
	}
	rt.unparkOne()
}

func (rt *Runtime) releaseTimerDriver() {
	rt.timers.parkedUntil.Store(math.MaxInt64)
	rt.timerDriver.Store(-1)
}

// processTimers fires every due timer, on a worker. tryOnly makes it give up if another
// goroutine is already driving the wheel. A waker that panics is reported by
// reportWakerPanic, after every other fired timer has been woken.
func (rt *Runtime) processTimers(tryOnly bool) {
	if pe := rt.fireTimers(tryOnly); pe != nil {
		reportWakerPanic(pe)
	}
}

// fireTimers is processTimers returning the first panic of a waker instead of reporting
// it (every fired timer is woken either way), for callers that re-raise it.
func (rt *Runtime) fireTimers(tryOnly bool) *PanicError {
	ts := &rt.timers
	// The flag spares a worker the lock when no timer is registered. It is set after a
	// registration's push, so for a moment an entry can be registered (and drained into
	// the wheel) with the flag still clear: a worker then finds the timer on a later
	// pass, after the registration sets the flag and wakes the timer driver. A test
	// clock's Advance has no later pass (no worker fires timers then), so it always looks.
	if !ts.active.Load() && rt.testClock == nil {
		return nil
	}
	now := rt.nowTick(rt.elapsed())
	if tryOnly {
		if !ts.mu.TryLock() {
			return nil
		}
	} else {
		ts.mu.Lock()
	}
	wakers := ts.drainLocked(nil, now)
	ts.w.advance(now, func(e *timerEntry) {
		// e.waker is left in place: only the poller writes it (see SleepFuture.Poll).
		wakers = append(wakers, e.waker)
		atomic.StoreUint32(&e.st, tsFired)
	})
	for range 4 {
		if t, ok := ts.w.nextExpiration(); ok {
			ts.nextAt.Store(int64(t))
		} else {
			ts.nextAt.Store(math.MaxInt64)
			ts.active.Store(false)
		}
		// A registration that pushed before these stores may have had its active or
		// nextAt update overwritten; its entry is still in pending, which it pushed
		// before those updates. Take it in and store again.
		if ts.pending.Load() == nil {
			break
		}
		ts.active.Store(true)
		wakers = ts.drainLocked(wakers, now)
	}
	if ts.pending.Load() != nil {
		// Registrations keep arriving: leave the next maintenance a due mark.
		ts.active.Store(true)
		ts.nextAt.Store(0)
	}
	ts.mu.Unlock()
	return wakeAllCollect(wakers)
}

// clear drops every timer at shutdown (their tasks are gone).
func (ts *timerState) clear() {
	ts.mu.Lock()
	ts.drainLocked(nil, 0) // the wakers' tasks are gone
	// Unlink every remaining entry so a late Drop of its future finds it gone.
	unlink := func(list *timerEntry) {
		for e := list; e != nil; {
			next := e.next
			e.prev, e.next, e.level = nil, nil, 0
			atomic.StoreUint32(&e.st, tsIdle)
			e = next
		}
	}
	for l := range ts.w.levels {
		for _, list := range ts.w.levels[l].slots {
			unlink(list)
		}
	}
	unlink(ts.w.overflow)
	ts.w = wheel{elapsed: ts.w.elapsed}
	ts.active.Store(false)
	ts.nextAt.Store(math.MaxInt64)
	ts.mu.Unlock()
}
