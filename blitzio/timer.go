package blitzio

import (
	"math"
	"sync"
	"sync/atomic"
)

// timerState is a runtime's timer wheel with its lock and the atomics the scheduler reads
// without the lock. The wheel is driven by the scheduler, not by a goroutine per timer:
// worker 0 (and any worker that notices a due timer) advances it between tasks, and a
// parked worker takes the "timer driver" role and parks only until the next deadline.
type timerState struct {
	mu sync.Mutex
	w  wheel
	// active is set when a timer is inserted and cleared only by processTimers when it
	// finds the wheel empty, so it may be stale-true (which costs one needless lock) but
	// never stale-false. A parking worker reads it to decide whether someone must drive
	// the wheel (paired with the inserter's read of the parked bitmap, like the run
	// queues: see idle). Not clearing it on cancel keeps a start-and-drop of a sleep free
	// of atomic writes beyond the lock.
	active atomic.Bool
	// nextAt is a lower bound of the next expiration (MaxInt64 when none), so workers can
	// check "anything due?" without the lock. A cancel may leave it stale-low; that only
	// costs one spurious advance.
	nextAt atomic.Int64
	// parkedUntil is the tick the timer-driving parked worker will wake at (MaxInt64 if
	// none); an insert with an earlier deadline wakes it.
	parkedUntil atomic.Int64
}

func (ts *timerState) init() {
	ts.nextAt.Store(math.MaxInt64)
	ts.parkedUntil.Store(math.MaxInt64)
}

func (ts *timerState) due(now uint64) bool {
	return ts.active.Load() && uint64(ts.nextAt.Load()) <= now
}

// timerCount returns the number of registered timers (tests).
func (rt *Runtime) timerCount() int {
	rt.timers.mu.Lock()
	defer rt.timers.mu.Unlock()
	return rt.timers.w.count
}

// register inserts e with deadline (ticks) and waker w. It returns false if the deadline
// has already passed; then nothing was inserted.
func (rt *Runtime) registerTimer(e *timerEntry, deadline, now uint64, w Waker) bool {
	ts := &rt.timers
	ts.mu.Lock()
	if ts.w.count == 0 && now > ts.w.elapsed {
		// An empty wheel can jump to the present: entries are then placed relative to
		// the real time instead of a stale one (fewer cascades).
		ts.w.elapsed = now
	}
	if deadline <= now || !ts.w.insert(e, deadline) {
		ts.mu.Unlock()
		return false
	}
	e.waker = w
	if !ts.active.Load() {
		ts.active.Store(true)
	}
	if int64(deadline) < ts.nextAt.Load() {
		ts.nextAt.Store(int64(deadline))
	}
	needWake := int64(deadline) < ts.parkedUntil.Load()
	ts.mu.Unlock()
	if needWake && rt.testClock == nil {
		rt.wakeTimerDriver()
	}
	return true
}

// updateTimerWaker replaces e's waker; it returns false if e fired meanwhile.
func (rt *Runtime) updateTimerWaker(e *timerEntry, w Waker) bool {
	ts := &rt.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e.fired.Load() {
		return false
	}
	e.waker = w
	return true
}

// cancelTimer removes e if it is still registered (O(1)).
func (rt *Runtime) cancelTimer(e *timerEntry) {
	ts := &rt.timers
	ts.mu.Lock()
	if e.level > 0 {
		ts.w.remove(e)
	}
	ts.mu.Unlock()
}

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

// processTimers fires every due timer. tryOnly makes it give up if another goroutine is
// already driving the wheel.
func (rt *Runtime) processTimers(tryOnly bool) {
	ts := &rt.timers
	if !ts.active.Load() {
		return
	}
	now := nowTick(rt.elapsed())
	if tryOnly {
		if !ts.mu.TryLock() {
			return
		}
	} else {
		ts.mu.Lock()
	}
	var wakers []Waker
	ts.w.advance(now, func(e *timerEntry) {
		// e.waker is left in place: only the poller writes it (see SleepFuture.Poll).
		wakers = append(wakers, e.waker)
		e.fired.Store(true)
	})
	if t, ok := ts.w.nextExpiration(); ok {
		ts.nextAt.Store(int64(t))
	} else {
		ts.nextAt.Store(math.MaxInt64)
		ts.active.Store(false)
	}
	ts.mu.Unlock()
	// Wake outside the lock: waking schedules tasks, which takes queue locks.
	for _, w := range wakers {
		w.Wake()
	}
}

// clear drops every timer at shutdown (their tasks are gone).
func (ts *timerState) clear() {
	ts.mu.Lock()
	// Unlink every remaining entry so a late Drop of its future finds it gone.
	unlink := func(list *timerEntry) {
		for e := list; e != nil; {
			next := e.next
			e.prev, e.next, e.level = nil, nil, 0
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
