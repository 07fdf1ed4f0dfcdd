/*
 * Promela model of the JoinHandle's join-waker hand-off for any number of waiters
 * (blitzio/joinhandle.go, taskstate.go), checked by spin in CI (.ci/spin.sh). A JoinHandle
 * is copied freely, so several tasks and goroutines may await one task at once; each
 * must be woken when it completes.
 *
 *   Completer  the worker finishing the task: one CAS to COMPLETE, then, if JOIN_WAKER
 *              was set, it wakes joinWaker: one waiter, or the list (closing it).
 *   Joiner 1-3 poll copies of the handle with different wakers: a poller takes JOIN_LOCK
 *              to change joinWaker; the first waiter writes the slot while JOIN_WAKER is
 *              clear and publishes it; a second one takes the slot back (clearing
 *              JOIN_WAKER, which fails once the task completed) and replaces it by a list
 *              of both, published with JOIN_MULTI; once JOIN_MULTI is set, waiters add
 *              themselves to the list under its mutex. Joiner 3 also polls twice.
 *
 * The rest of the task state machine (taskstate.pml) only sets or clears its own bits, so
 * it cannot disturb this protocol; here the task just completes at some point.
 *
 * Checked: joinWaker is never written by two pollers at once nor read by the completer
 * while written; every joiner is woken or sees the task complete (no invalid end state).
 */
#define IDLE       0
#define SCHEDULED  1
#define RUNNING    2
#define COMPLETE   3
#define LIFEMASK   3
#define CANCELLED  4
#define NOTIFIED   8
#define JOIN_INTEREST 16 /* not modelled: always set, the joiner never detaches */
#define JOIN_WAKER 32
#define JOIN_LOCK  64
#define JOIN_MULTI 128
#define LIST       4 /* slot value: the waiter list */
#define LIFE(s) ((s) & LIFEMASK)

byte state = RUNNING;
byte slot = 0;          /* joinWaker: 0 none, 1..3 a joiner's waker, LIST the list */
bool inList[4];         /* joiner i is in the list */
bool listClosed = false;
bool woken[4];          /* joiner i was woken */
bool joinWakerWriting = false;
bool outputWritten = false;
bool dropped = false;

active proctype Completer() {
	byte cur;
	outputWritten = true;
	atomic { cur = state; state = (cur & ~(LIFEMASK | NOTIFIED)) | COMPLETE };
	if
	:: (cur & JOIN_WAKER) != 0 ->
		assert(!joinWakerWriting);
		if
		:: slot == LIST ->
			atomic {
				listClosed = true;
				woken[1] = woken[1] || inList[1];
				woken[2] = woken[2] || inList[2];
				woken[3] = woken[3] || inList[3]
			}
		:: else -> woken[slot] = true
		fi
	:: else
	fi
}

/* registerJoinWaker (joinhandle.go): registered = false means the task completed first
 * (the output is ready). */
inline writeSlot(v) {
	atomic { assert(!joinWakerWriting); joinWakerWriting = true };
	slot = v;
	joinWakerWriting = false
}

/* publishJoinWaker: set JOIN_WAKER | extra and clear JOIN_LOCK in one CAS, unless the
 * task completed (then release the lock). A CAS loop that retries until it succeeds is a
 * single atomic read-modify-write, which is how the join loops are modelled (it keeps
 * the state space small; the worker's loops above keep their explicit loads and CASes). */
inline publish(extra, done) {
	atomic {
		if
		:: LIFE(state) == COMPLETE -> state = state & ~JOIN_LOCK; done = true
		:: else -> state = (state | JOIN_WAKER | extra) & ~JOIN_LOCK; done = false
		fi
	}
}

inline listAdd(me, done) {
	atomic {
		if
		:: listClosed -> done = true
		:: else -> inList[me] = true; done = false
		fi
	}
}

inline register(me, done) {
	done = false;
	cur = state;
	if
	:: LIFE(cur) == COMPLETE -> done = true
	:: LIFE(cur) != COMPLETE && (cur & JOIN_MULTI) != 0 -> listAdd(me, done)
	:: LIFE(cur) != COMPLETE && (cur & JOIN_MULTI) == 0 ->
		/* lockJoin: yields while another poller holds the lock */
		atomic {
			(LIFE(state) == COMPLETE || (state & JOIN_LOCK) == 0);
			if
			:: LIFE(state) == COMPLETE -> done = true
			:: else -> state = state | JOIN_LOCK; cur = state
			fi
		};
		if
		:: done -> skip
		:: !done && (cur & JOIN_MULTI) != 0 ->
			atomic { state = state & ~JOIN_LOCK };
			listAdd(me, done)
		:: !done && (cur & JOIN_MULTI) == 0 && (cur & JOIN_WAKER) == 0 ->
			writeSlot(me);
			publish(0, done)
		:: !done && (cur & JOIN_MULTI) == 0 && (cur & JOIN_WAKER) != 0 && slot == me ->
			atomic { state = state & ~JOIN_LOCK } /* same waker: nothing to do */
		:: !done && (cur & JOIN_MULTI) == 0 && (cur & JOIN_WAKER) != 0 && slot != me ->
			old = slot;
			/* unsetJoinWaker: fails if the task completed */
			atomic {
				if
				:: LIFE(state) == COMPLETE -> state = state & ~JOIN_LOCK; done = true
				:: else -> state = state & ~JOIN_WAKER
				fi
			};
			if
			:: !done ->
				inList[old] = true; inList[me] = true; /* the new list, not yet shared */
				writeSlot(LIST);
				publish(JOIN_MULTI, done);
				if
				:: done -> woken[old] = true /* completed meanwhile: wake the first waiter */
				:: else
				fi
			:: else
			fi
		fi
	fi
}

proctype Joiner(byte me) {
	byte cur; bool done; byte old;
	register(me, done);
	if
	:: done -> goto read
	:: else
	fi;
	if
	:: me == 3 -> /* polled again (a spurious wake-up), with the same waker */
		register(me, done);
		if
		:: done -> goto read
		:: else
		fi
	:: else
	fi;
	woken[me]; /* parked until someone wakes us */
read:
	assert(LIFE(state) == COMPLETE);
	assert(outputWritten)
}

init {
	atomic { run Joiner(1); run Joiner(2); run Joiner(3) }
}
