package blitzio

import (
	"context"
	"fmt"
	"os"
	"time"
)

// ErrTimeout is the error of a Timeout or Deadline whose time ran out before its future
// finished. errors.Is(err, context.DeadlineExceeded) and errors.Is(err,
// os.ErrDeadlineExceeded) are true for it, so code that already handles context
// deadlines, or the deadline errors of a net.Conn, handles it too.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "blitzio: deadline exceeded" }
func (timeoutError) Is(target error) bool {
	return target == context.DeadlineExceeded || target == os.ErrDeadlineExceeded
}

// Timeout reports true, like the net.Error method, so the error is recognised as a
// timeout by code written for the net package.
func (timeoutError) Timeout() bool { return true }

const (
	sleepNew        uint8 = iota
	sleepRegistered       // its timer is registered with s.rt
	sleepDone             // due (or dropped)
)

// SleepFuture is the future returned by Sleep and SleepUntil. Its timer entry lives
// inside it, so a sleeping task allocates nothing else. Drop removes the entry from the
// wheel (the runtime calls it when the sleeping task is cancelled; combinators call it on
// a losing sleep).
//
// Its state and mode live in spare bytes of the entry, and SleepUntil's deadline behind a
// pointer, so that a SleepFuture is 72 bytes (the 80-byte size class) rather than 96:
// starting and dropping a sleep is about 60 ns, and allocation and the GC work that
// follows it are a third of that.
type SleepFuture struct {
	entry timerEntry // entry.ownerState: sleepNew...; entry.ownerMode: sleepRelative...
	rt    *Runtime
	// d is the duration (mode sleepRelative) or the deadline as runtime-elapsed time
	// (mode sleepAtElapsed, Interval's ticks).
	d time.Duration
	// until is the deadline of mode sleepUntil (SleepUntil, Deadline), stored beside the
	// future by its constructor.
	until *time.Time
}

const (
	sleepRelative uint8 = iota
	sleepUntil
	sleepAtElapsed
)

// Sleep returns a future that is ready d after its first poll (a duration counts from
// the first poll, not from the call). A sleep of d <= 0 is ready on its first poll. It
// panics if polled outside a runtime.
//
// With the system clock a sleep fires on the first timer tick (1 ms) at or after its
// deadline, never before it; with a TestClock it fires exactly when Advance brings the
// clock to its deadline.
func Sleep(d time.Duration) *SleepFuture { return &SleepFuture{d: d} }

// SleepUntil returns a future that is ready at t on the runtime's clock: on its first
// poll if t is not after the clock's current time.
//
// On the system clock t is compared with the current time as Go's time.Until does: by
// the monotonic clock if t has a monotonic reading (a time derived from time.Now), by
// the wall clock as it reads at the first poll if not (t.Round(0), time.Date, Parse,
// Unix). Once started the sleep runs on the monotonic clock, like a Go timer: later
// changes of the wall clock do not move it.
func SleepUntil(t time.Time) *SleepFuture {
	x := &struct {
		s SleepFuture
		t time.Time
	}{t: t}
	x.s.until = &x.t
	x.s.entry.ownerMode = sleepUntil
	return &x.s
}

// Poll implements Future.
func (s *SleepFuture) Poll(cx *Context) (struct{}, bool) {
	switch s.entry.ownerState {
	case sleepNew:
		rt := cx.rt
		if rt == nil {
			panic("blitzio: Sleep polled without a Runtime")
		}
		var now, at time.Duration
		switch s.entry.ownerMode {
		case sleepAtElapsed:
			now, at = rt.elapsed(), s.d
		case sleepUntil:
			now, at = rt.untilElapsed(*s.until)
		default:
			// "d from now" may start from a reading that is late but never early (the fast
			// clock): the sleep then lasts at least d. An absolute deadline is compared
			// with the real clock above, so it is never taken as passed too soon.
			now = rt.elapsedAtLeast()
			at = now + s.d
			if s.d > 0 && at < now { // overflow: sleep "forever"
				at = 1<<63 - 1
			}
		}
		// Due already (d <= 0, a deadline in the past): ready now, not on the next tick.
		if at > now {
			// s.rt is the runtime the entry was last registered with, if any: a sleep
			// reset and polled on another runtime may still sit, cancelled, in that
			// runtime's pending stack, and registerTimer must take it out of there. So s.rt
			// changes only here, when the entry is registered again.
			prev := s.rt
			s.rt = rt
			s.entry.ownerState = sleepRegistered
			if rt.registerTimer(cx, prev, &s.entry, rt.deadlineTick(at), rt.nowTick(now), cx.Waker()) {
				return struct{}{}, false
			}
		}
		s.entry.ownerState = sleepDone
	case sleepRegistered:
		if cx.rt != s.rt && cx.rt != nil {
			// Polled on another runtime than the one holding its timer (the future was
			// moved): the timer follows it, so that it is timed by the clock of the
			// runtime polling it and does not wait on a runtime that may be closed (whose
			// timers are cleared without firing).
			s.moveTo(cx.rt)
			return s.Poll(cx)
		}
		if timerFired(&s.entry) {
			s.entry.ownerState = sleepDone
		} else if w := cx.Waker(); !s.entry.waker.WillWake(w) {
			// Reading entry.waker without the lock is safe: only the poller writes it
			// (before publishing the entry, or under the lock), and firing does not.
			if s.rt.updateTimerWaker(&s.entry, w) {
				return struct{}{}, false
			}
			s.entry.ownerState = sleepDone
		} else {
			return struct{}{}, false
		}
	}
	if !cx.ConsumeBudget() {
		return struct{}{}, false
	}
	return struct{}{}, true
}

// moveTo takes the registered timer off s.rt and re-arms the sleep for the same instant
// on rt's clock, to be registered there by the next poll (or done, if it fired).
func (s *SleepFuture) moveTo(rt *Runtime) {
	old := s.rt
	old.cancelTimer(&s.entry)
	if timerFired(&s.entry) {
		s.entry.ownerState = sleepDone
		return
	}
	// The entry is ours again (cancelled, or cleared by old's shutdown): its deadline is
	// stable. A SleepUntil keeps its absolute deadline; otherwise the tick is converted
	// through the absolute time it stands for (rounded up already: never early).
	if s.entry.ownerMode != sleepUntil {
		s.d = rt.toElapsed(old.tickTime(s.entry.deadline))
		s.entry.ownerMode = sleepAtElapsed
	}
	s.entry.ownerState = sleepNew
}

// Drop removes the sleep's timer from the wheel if it is still there.
func (s *SleepFuture) Drop() {
	if s.entry.ownerState == sleepRegistered {
		s.rt.cancelTimer(&s.entry)
	}
	s.entry.ownerState = sleepDone
}

// Reset re-arms the sleep to finish d after its next poll, removing its current timer
// if it has one. A reset sleep may be polled again, even on another runtime: reusing one
// SleepFuture for a series of timeouts costs no allocation.
//
// A sleep that is not reset may be moved to another runtime too: polled there, its timer
// moves with it, keeping its deadline as an instant, and is timed by that runtime's clock
// (so the runtime it left may be closed meanwhile).
func (s *SleepFuture) Reset(d time.Duration) {
	if s.entry.ownerState == sleepRegistered {
		s.rt.cancelTimer(&s.entry)
	}
	s.d, s.entry.ownerMode, s.entry.ownerState = d, sleepRelative, sleepNew
}

// resetAt re-arms the sleep for the absolute elapsed time at (Interval's ticks).
func (s *SleepFuture) resetAt(at time.Duration) {
	if s.entry.ownerState == sleepRegistered {
		s.rt.cancelTimer(&s.entry)
	}
	s.d, s.entry.ownerMode = at, sleepAtElapsed
	s.entry.ownerState = sleepNew
}

// MissedTickBehavior says what an Interval does when ticks were missed because the task
// was not polled in time.
type MissedTickBehavior uint8

const (
	// Delay (the default) starts counting the period afresh from the late tick: ticks
	// stay a full period apart, drifting later.
	//
	// As with Tokio, a tick delivered at most 5 ms late (and before the next one is due)
	// is not missed: every behaviour keeps the schedule then, so that the small lateness
	// of every tick (the timer's 1 ms resolution, scheduling) does not make Delay drift.
	// Later than that, Delay moves the schedule even if no whole period was missed.
	Delay MissedTickBehavior = iota
	// Burst fires the missed ticks back to back until the schedule has caught up.
	Burst
	// Skip drops the missed ticks and fires at the next multiple of the period on the
	// original schedule.
	Skip
)

// missedTickTolerance is how late a tick may be delivered without counting as missed
// (Tokio's 5 ms).
const missedTickTolerance = 5 * time.Millisecond

// Ticker is the stream returned by Interval: each Tick (or Poll) completes at the next
// tick of the schedule.
type Ticker struct {
	period   time.Duration
	next     time.Duration // elapsed time of the next tick; valid once started
	started  bool
	behavior MissedTickBehavior
	sleep    SleepFuture
	rt       *Runtime
	// first says where a reset made before the first poll puts the first tick:
	// firstNow (at the first poll), firstAfter (firstD after it) or firstAt (at firstAt).
	first   uint8
	firstD  time.Duration
	firstAt time.Time
}

const (
	firstNow uint8 = iota
	firstAfter
	firstAt
)

// Interval returns a Ticker whose first tick completes at once (on the first poll) and
// then every d, with the Delay missed-tick behaviour (Tokio's default is Burst:
// SetMissedTickBehavior(Burst) gives its schedule). It panics if d <= 0, as Tokio's
// interval panics on a zero period.
//
// A Ticker may be moved to another runtime between ticks (awaited by a task there): its
// schedule is kept as instants on the clock and followed by that runtime's clock.
func Interval(d time.Duration) *Ticker {
	if d <= 0 {
		panic("blitzio: Interval: period must be > 0")
	}
	return &Ticker{period: d}
}

// SetMissedTickBehavior chooses Burst, Delay or Skip. It panics on any other value (a
// programmer error, which would otherwise behave as Delay unnoticed).
func (t *Ticker) SetMissedTickBehavior(b MissedTickBehavior) {
	if b > Skip {
		panic(fmt.Sprintf("blitzio: Ticker.SetMissedTickBehavior: unknown MissedTickBehavior %d (want Burst, Delay or Skip)", b))
	}
	t.behavior = b
}

// MissedTickBehavior returns the Ticker's missed-tick behaviour.
func (t *Ticker) MissedTickBehavior() MissedTickBehavior { return t.behavior }

// Period returns the Ticker's period.
func (t *Ticker) Period() time.Duration { return t.period }

// Reset moves the next tick to one period from now, as Tokio's Interval::reset; the ticks
// after it follow every period from there. On a Ticker not polled yet, "now" is its first
// poll (as a Sleep's duration counts from its first poll): the first tick then comes one
// period after it instead of at once.
//
// The reset methods re-arm the Ticker's timer, so call them from the task that polls it
// (between polls), as with every other method of a Ticker. A task whose last poll of the
// Ticker returned pending is woken at the moved tick (at once if it is due now) even if
// it does not poll the Ticker again first, as with Tokio: it may reset the Ticker from
// another branch of a select, or before returning pending, and still get its wake-up.
func (t *Ticker) Reset() { t.ResetAfter(t.period) }

// ResetImmediately makes the next tick due now (Tokio's Interval::reset_immediately): the
// next poll completes at once, and the ticks after it follow every period from there.
func (t *Ticker) ResetImmediately() { t.ResetAfter(0) }

// ResetAfter moves the next tick to d from now (Tokio's Interval::reset_after); d <= 0
// makes it due now. On a Ticker not polled yet, d counts from its first poll.
func (t *Ticker) ResetAfter(d time.Duration) {
	d = max(d, 0)
	if !t.started {
		t.first, t.firstD = firstAfter, d
		return
	}
	t.rearm(satAdd(t.rt.elapsed(), d))
}

// ResetAt moves the next tick to deadline on the runtime's clock (Tokio's
// Interval::reset_at); a deadline not after the current time makes it due now. The
// deadline is compared with the clock as SleepUntil compares it. Unlike Tokio, which
// delivers a past deadline itself as the tick and lets the MissedTickBehavior catch up
// from it, a past deadline is taken as now: the tick is now, the next one a period later.
func (t *Ticker) ResetAt(deadline time.Time) {
	if !t.started {
		t.first, t.firstAt = firstAt, deadline
		return
	}
	now, at := t.rt.untilElapsed(deadline)
	t.rearm(max(at, now))
}

// rearm sets the next tick to at (elapsed time on t.rt) and re-arms the timer for it.
//
// A timer still registered by a poll that returned pending is registered again at once
// for the new tick, with that poll's waker (or, if the new tick is due already, the
// waker is called): the task awaiting the Ticker is owed a wake-up, and may reset it and
// wait for it without polling it again (a reset made by another branch of a select, or
// by the task's own poll before it returns pending), as Tokio's reset re-registers the
// timer with the last waker. Otherwise (never polled, a tick just delivered, dropped)
// nobody is owed one, and the next poll registers the timer.
func (t *Ticker) rearm(at time.Duration) {
	t.next = at
	s := &t.sleep
	if s.entry.ownerState != sleepRegistered {
		s.resetAt(at)
		return
	}
	// Registered with s.rt, which is t.rt (the runtime of the last poll).
	rt := s.rt
	rt.cancelTimer(&s.entry)
	s.d, s.entry.ownerMode, s.entry.ownerState = at, sleepAtElapsed, sleepNew
	if rt.closed.Load() {
		// No task of a closed runtime awaits it any more; a poll on another runtime
		// registers it there.
		return
	}
	// Registered again even if it fired for the old tick: that wake-up may be the one
	// that has the task running now, resetting the Ticker before it returns pending. The
	// entry is ours again (cancelled, fired, or out of the wheel): its waker is stable,
	// and only its owner writes it. As in SleepFuture.Poll, a tick due by the exact clock
	// is due now, not on the next timer tick (the wheel rounds deadlines up).
	w := s.entry.waker
	if now := rt.elapsed(); at > now && rt.registerTimer(nil, rt, &s.entry, rt.deadlineTick(at), rt.nowTick(now), w) {
		s.entry.ownerState = sleepRegistered
		return
	}
	w.Wake() // due now: the next poll completes at once
}

// Poll waits for the next tick and returns its scheduled time on the runtime's clock.
// Each ready result consumes one tick.
func (t *Ticker) Poll(cx *Context) (time.Time, bool) {
	rt := cx.rt
	if rt == nil {
		panic("blitzio: Interval polled without a Runtime")
	}
	if !t.started {
		t.rt = rt
		t.sleep.rt = rt
		t.started = true
		switch t.first {
		case firstNow:
			t.next = rt.elapsed()
			t.sleep.entry.ownerState = sleepDone // the first tick is due now
		case firstAfter:
			t.ResetAfter(t.firstD) // started now: counts from this poll
		case firstAt:
			t.ResetAt(t.firstAt)
			t.firstAt = time.Time{}
		}
		if t.first != firstNow {
			t.first = firstNow
			if _, ok := t.sleep.Poll(cx); !ok {
				return time.Time{}, false
			}
		}
	} else {
		if t.rt != rt {
			// Moved to another runtime: keep the schedule as instants on the clock (each
			// runtime counts elapsed time from its own start).
			if t.next != 1<<63-1 {
				t.next = rt.toElapsed(t.tickTime(t.rt, t.next))
			}
			t.rt = rt
			if st := t.sleep.entry.ownerState; st == sleepNew || st == sleepRegistered {
				t.sleep.resetAt(t.next)
			}
		}
		if st := t.sleep.entry.ownerState; st == sleepNew || st == sleepRegistered {
			if _, ok := t.sleep.Poll(cx); !ok {
				return time.Time{}, false
			}
		}
	}
	tick := t.next
	now := rt.elapsed()
	switch next := satAdd(tick, t.period); {
	case t.behavior == Burst || next > now && now-tick <= missedTickTolerance:
		t.next = next
	case t.behavior == Skip:
		t.next = satAdd(now, t.period-(now-tick)%t.period)
	default: // Delay
		t.next = satAdd(now, t.period)
	}
	t.sleep.resetAt(t.next)
	return t.tickTime(rt, tick), true
}

func (t *Ticker) tickTime(rt *Runtime, at time.Duration) time.Time { return rt.elapsedTime(at) }

// satAdd adds durations, saturating instead of overflowing (a period of centuries must
// not wrap to a tick in the past, which would fire continuously).
func satAdd(a, b time.Duration) time.Duration {
	c := a + b
	if b > 0 && c < a {
		return 1<<63 - 1
	}
	return c
}

// Tick returns a future for the next tick (the same as polling the Ticker).
func (t *Ticker) Tick() Future[time.Time] { return t }

// Drop removes the Ticker's timer from the wheel, keeping its schedule: a Ticker dropped
// by a select it lost (Select2(t.Tick(), ...) in a loop, as Tokio's select! over
// interval.tick()) and polled again waits for its next tick, not a moment less.
func (t *Ticker) Drop() {
	if t.started {
		t.sleep.Drop()
		t.sleep.resetAt(t.next) // armed again at the next poll
	}
}

// timeoutFuture runs inner against a sleep.
type timeoutFuture[T any] struct {
	inner Future[T]
	sleep SleepFuture
	done  bool      // finished (out holds the result) or dropped
	out   Result[T] // returned again if polled after it finished
	until time.Time // Deadline's deadline (sleep.until points here)
}

func (f *timeoutFuture[T]) Poll(cx *Context) (Result[T], bool) {
	if f.done {
		return f.out, true
	}
	if v, ok := f.inner.Poll(cx); ok {
		f.sleep.Drop()
		f.finish(Result[T]{Value: v})
		return f.out, true
	}
	if f.pollSleep(cx) {
		inner := f.inner
		f.finish(Result[T]{Err: ErrTimeout})
		Drop(inner)
		return f.out, true
	}
	return Result[T]{}, false
}

// pollSleep polls the timer. If inner spent the task's cooperative budget (a future
// looping over always-ready work), the timer is polled with an unconstrained budget, as
// Tokio's Timeout does: otherwise the spent budget would refuse the expired timer on
// every poll and the timeout would never end. The task was already re-scheduled by the
// leaf that found the budget spent.
func (f *timeoutFuture[T]) pollSleep(cx *Context) bool {
	if !cx.budgetSpent() {
		_, ok := f.sleep.Poll(cx)
		return ok
	}
	cx.budget = unlimitedBudget
	_, ok := f.sleep.Poll(cx)
	cx.budget = 0
	return ok
}

func (f *timeoutFuture[T]) finish(r Result[T]) {
	f.done, f.out, f.inner = true, r, nil
}

func (f *timeoutFuture[T]) Drop() {
	if f.done {
		return
	}
	inner := f.inner
	f.finish(Result[T]{Err: ErrCancelled})
	// The sleep is dropped even if inner's Drop panics: its timer must leave the wheel.
	dropEach(2, func(i int) {
		if i == 0 {
			Drop(inner)
		} else {
			f.sleep.Drop()
		}
	})
}

// Timeout runs f with a time limit of d (counted from the first poll). If f finishes
// first its value is returned and the timer removed; otherwise f is dropped and the error
// is ErrTimeout, which satisfies errors.Is(err, context.DeadlineExceeded). f is polled
// first, so a ready f wins even when d <= 0; with d <= 0 a pending f times out on the
// first poll. As with Tokio, the time limit holds even for an f that spends the task's
// whole cooperative budget on every poll.
func Timeout[T any](d time.Duration, f Future[T]) Future[Result[T]] {
	return &timeoutFuture[T]{inner: f, sleep: SleepFuture{d: d}}
}

// Deadline is Timeout with an absolute deadline on the runtime's clock.
func Deadline[T any](t time.Time, f Future[T]) Future[Result[T]] {
	tf := &timeoutFuture[T]{inner: f, until: t}
	tf.sleep.until = &tf.until
	tf.sleep.entry.ownerMode = sleepUntil
	return tf
}

// TryTimeout is Timeout for a future that can fail by itself (a JoinHandle, a TryJoin,
// anything of type Future[Result[T]]): instead of a Result[Result[T]] to unwrap twice,
// its result is f's own Result when f finishes in time, and ErrTimeout otherwise. Tell
// the two failures apart with errors.Is(err, ErrTimeout).
func TryTimeout[T any](d time.Duration, f Future[Result[T]]) Future[Result[T]] {
	return Map(Timeout(d, f), flattenResult[T])
}

// TryDeadline is TryTimeout with an absolute deadline on the runtime's clock.
func TryDeadline[T any](t time.Time, f Future[Result[T]]) Future[Result[T]] {
	return Map(Deadline(t, f), flattenResult[T])
}

func flattenResult[T any](r Result[Result[T]]) Result[T] {
	if r.Err != nil {
		return Result[T]{Err: r.Err}
	}
	return r.Value
}
