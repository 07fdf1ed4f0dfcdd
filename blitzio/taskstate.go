package blitzio

import (
	"runtime"
	"sync/atomic"
)

// The task state is one uint64 changed only by compare-and-swap (Tokio's task/state.rs).
// Layout:
//
//	bits 0-1   lifecycle: idle, scheduled, running, complete
//	bit  2     CANCELLED   Abort or Shutdown asked for the task to be dropped
//	bit  3     NOTIFIED    woken while running: re-schedule after the poll
//	bit  4     JOIN_INTEREST  a JoinHandle still wants the output
//	bit  5     JOIN_WAKER     joinWaker holds a waker the completer must call
//	bit  6     JOIN_LOCK      a JoinHandle poller is changing joinWaker
//	bit  7     JOIN_MULTI     joinWaker is a *joinWaiters list (set once, never cleared)
//	bits 16-63 reference count
//
// Ownership rule that every transition keeps: exactly one party "owns" a task at a time.
// The queue that holds it owns a scheduled task; the worker that moved it to running owns
// it until it moves it out of running. Only the owner touches the future. Every other
// party (wakers, Abort, Shutdown) only sets bits, and the owner acts on them when it
// gives the task up. The model in spin/taskstate.pml checks this protocol.
const (
	stIdle      uint64 = 0
	stScheduled uint64 = 1
	stRunning   uint64 = 2
	stComplete  uint64 = 3
	lifeMask    uint64 = 3

	flagCancelled    uint64 = 1 << 2
	flagNotified     uint64 = 1 << 3
	flagJoinInterest uint64 = 1 << 4
	flagJoinWaker    uint64 = 1 << 5
	flagJoinLock     uint64 = 1 << 6
	flagJoinMulti    uint64 = 1 << 7

	refShift        = 16
	refOne   uint64 = 1 << refShift
)

// initialState: scheduled (Spawn pushes it at once), with a JoinHandle interested, and two
// references: the JoinHandle's and the runtime's (owned-task list) one.
const initialState = stScheduled | flagJoinInterest | 2*refOne

type taskState struct{ v atomic.Uint64 }

func life(s uint64) uint64 { return s & lifeMask }

// refs returns the reference count in s.
func refs(s uint64) uint64 { return s >> refShift }

// transitionToRunningResult says what a worker that popped a task must do.
type runAction uint8

const (
	actPoll   runAction = iota // we own it: poll it
	actCancel                  // we own it and it was aborted: drop it
	actSkip                    // not ours (completed or taken by Shutdown): forget it
)

// toRunning moves a task taken from a run queue from scheduled to running. A task can be
// in a queue without being scheduled only when Shutdown took it over, or it completed
// through cancellation; then the worker must not touch it.
func (s *taskState) toRunning() runAction {
	for {
		cur := s.v.Load()
		if life(cur) != stScheduled {
			return actSkip
		}
		next := cur&^(lifeMask|flagNotified) | stRunning
		if s.v.CompareAndSwap(cur, next) {
			if cur&flagCancelled != 0 {
				return actCancel
			}
			return actPoll
		}
	}
}

// idleAction is what the worker does after a poll returned pending.
type idleAction uint8

const (
	idleDone       idleAction = iota // now idle; a future waker will schedule it
	idleReschedule                   // woken during the poll: now scheduled, push it
	idleCancel                       // aborted during the poll: still running, drop it
)

// toIdle moves a running task whose poll returned pending to idle, or, if it was woken
// during the poll (NOTIFIED), straight back to scheduled. This is the "wake during poll"
// race: the waker saw running and only set NOTIFIED, relying on this CAS to see it; the
// CAS fails if the bit is set between our load and our swap, so the wake is never lost.
func (s *taskState) toIdle() idleAction {
	for {
		cur := s.v.Load()
		if cur&flagCancelled != 0 {
			return idleCancel
		}
		var next uint64
		act := idleDone
		if cur&flagNotified != 0 {
			next = cur&^(lifeMask|flagNotified) | stScheduled
			act = idleReschedule
		} else {
			next = cur&^lifeMask | stIdle
		}
		if s.v.CompareAndSwap(cur, next) {
			return act
		}
	}
}

// toYield moves a running task whose poll asked to yield straight back to scheduled
// (clearing NOTIFIED, which would mean the same). It returns false, leaving the task
// running, if the task was cancelled: then the caller drops it.
func (s *taskState) toYield() bool {
	for {
		cur := s.v.Load()
		if cur&flagCancelled != 0 {
			return false
		}
		if s.v.CompareAndSwap(cur, cur&^(lifeMask|flagNotified)|stScheduled) {
			return true
		}
	}
}

// toComplete moves a running task to complete and drops the runtime's reference in the
// same CAS; it returns the state before.
func (s *taskState) toComplete() uint64 {
	for {
		cur := s.v.Load()
		next := (cur&^(lifeMask|flagNotified) | stComplete) - refOne
		if s.v.CompareAndSwap(cur, next) {
			return cur
		}
	}
}

// wake records a wake-up and reports whether the caller must push the task to a run
// queue (idle -> scheduled). Waking a scheduled task or a task already NOTIFIED costs one
// load and no write; waking a completed task does nothing.
func (s *taskState) wake() (mustSchedule bool) {
	for {
		cur := s.v.Load()
		var next uint64
		switch life(cur) {
		case stComplete, stScheduled:
			return false
		case stRunning:
			if cur&flagNotified != 0 {
				return false
			}
			next = cur | flagNotified
		default: // idle
			next = cur&^lifeMask | stScheduled
		}
		if s.v.CompareAndSwap(cur, next) {
			return life(cur) == stIdle
		}
	}
}

// abort sets CANCELLED and reports whether the caller must schedule the task so a worker
// drops it (it was idle). A running or scheduled task is dropped by its owner when the
// poll ends or when it is popped.
func (s *taskState) abort() (mustSchedule bool) {
	for {
		cur := s.v.Load()
		if life(cur) == stComplete || cur&flagCancelled != 0 {
			return false
		}
		next := cur | flagCancelled
		if life(cur) == stIdle {
			next = next&^lifeMask | stScheduled
		}
		if s.v.CompareAndSwap(cur, next) {
			return life(cur) == stIdle
		}
	}
}

// toShutdown is Shutdown's takeover: if nobody is polling the task (idle or scheduled),
// the caller becomes its owner (state running+cancelled) and must drop it; if a worker is
// polling it, CANCELLED makes that worker drop it when the poll ends.
func (s *taskState) toShutdown() (owned bool) {
	for {
		cur := s.v.Load()
		switch life(cur) {
		case stComplete:
			return false
		case stRunning:
			if cur&flagCancelled != 0 {
				return false
			}
			if s.v.CompareAndSwap(cur, cur|flagCancelled) {
				return false
			}
			continue
		}
		next := cur&^lifeMask | stRunning | flagCancelled
		if s.v.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// The join-waker hand-off (Tokio's can_read_output, extended to any number of waiters,
// since a JoinHandle may be copied and awaited by several tasks and goroutines at once).
//
// joinWaker is written only by a poller of a JoinHandle that holds JOIN_LOCK while
// JOIN_WAKER is clear, and read by the completer only after its completing CAS saw
// JOIN_WAKER set, so the two never race; JOIN_LOCK makes the pollers take turns, so two
// of them never write it at once (the race that made the second waiter overwrite, and so
// lose, the first). Once JOIN_MULTI is set joinWaker holds a *joinWaiters and never
// changes again, so pollers read it without the lock.

// lockJoin takes JOIN_LOCK. It fails, returning false, if the task completed (then the
// output is ready); it returns the state with the lock held. Another poller holds the
// lock only for a few instructions (it never blocks while holding it), so we yield and
// retry rather than park.
func (s *taskState) lockJoin() (cur uint64, ok bool) {
	for {
		cur = s.v.Load()
		switch {
		case life(cur) == stComplete:
			return cur, false
		case cur&flagJoinLock != 0:
			runtime.Gosched()
		case s.v.CompareAndSwap(cur, cur|flagJoinLock):
			return cur | flagJoinLock, true
		}
	}
}

// unlockJoin releases JOIN_LOCK without publishing anything.
func (s *taskState) unlockJoin() {
	for {
		cur := s.v.Load()
		if s.v.CompareAndSwap(cur, cur&^flagJoinLock) {
			return
		}
	}
}

// publishJoinWaker publishes joinWaker (written by the caller, who holds JOIN_LOCK, just
// before) by setting JOIN_WAKER, plus extra (JOIN_MULTI or nothing), and releases the
// lock in the same CAS. It fails, returning false, if the task completed meanwhile: then
// the completer did not see the waker, and the caller reads the output.
func (s *taskState) publishJoinWaker(extra uint64) bool {
	for {
		cur := s.v.Load()
		if life(cur) == stComplete {
			s.unlockJoin()
			return false
		}
		if s.v.CompareAndSwap(cur, (cur|flagJoinWaker|extra)&^flagJoinLock) {
			return true
		}
	}
}

// unsetJoinWaker takes back the right to write joinWaker (the caller holds JOIN_LOCK).
// It fails if the task completed (the completer may be reading joinWaker right now).
func (s *taskState) unsetJoinWaker() bool {
	for {
		cur := s.v.Load()
		if life(cur) == stComplete {
			return false
		}
		if s.v.CompareAndSwap(cur, cur&^flagJoinWaker) {
			return true
		}
	}
}

// dropJoinInterest clears JOIN_INTEREST and drops the handle's reference in one CAS
// (Detach). It returns the state before, so the caller can release an output that was
// already stored; ok is false if the handle was already detached.
func (s *taskState) dropJoinInterest() (prev uint64, ok bool) {
	for {
		cur := s.v.Load()
		if cur&flagJoinInterest == 0 {
			return cur, false
		}
		if s.v.CompareAndSwap(cur, cur&^flagJoinInterest-refOne) {
			return cur, true
		}
	}
}
