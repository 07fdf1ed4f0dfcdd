// BROKEN on purpose: toIdle stores IDLE without a CAS, so a wake that sets NOTIFIED
// between its load and its store is lost (the race the real CAS prevents). spin must
// reject this model.
/*
 * Promela model of the blitzio task state machine (blitzio/taskstate.go), checked by spin
 * in CI (.ci/spin.sh). One task, one worker polling it, and three other goroutines racing
 * with the worker:
 *
 *   Waker    makes the future's data ready and then wakes the task (wake during poll:
 *            RUNNING -> NOTIFIED, re-scheduled by toIdle after the poll);
 *   Aborter  optionally aborts the task (abort before, during or after a poll);
 *   Joiner   awaits the JoinHandle (the join-waker hand-off, joinhandle.go: a poller
 *            takes JOIN_LOCK to change joinWaker, writes it while JOIN_WAKER is clear, and
 *            publishes it by setting JOIN_WAKER; the completer reads it only after seeing
 *            JOIN_WAKER set). It may poll a second time with the same waker. The same
 *            code handles several joiners (the list and JOIN_MULTI); taskjoin.pml checks
 *            that part with three joiners against a completing task, which keeps each
 *            model's state space small.
 *
 * Checked: the future is never polled by two parties at once nor after it was dropped;
 * it is dropped at most once; the completer never reads joinWaker while it is being
 * written; the task always ends COMPLETE (no lost wake-up); the joiner is always woken
 * (no invalid end state) and sees the output or the cancellation.
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
#define LIST       3 /* slot value: the waiter list */
#define LIFE(s) ((s) & LIFEMASK)

byte state = SCHEDULED; /* spawned: one entry in the run queue */
byte slot = 0;          /* joinWaker: 0 none, 1 or 2 a joiner's waker, LIST the list */
bool inList[3];         /* joiner i is in the list */
bool listClosed = false;
bool woken[3];          /* joiner i was woken */
byte queued = 1;        /* run-queue entries for the task */
bool dataReady = false; /* what the future waits for */
bool polling = false;
bool dropped = false;
bool outputWritten = false;
bool joinWakerWriting = false;
bool wakerDone = false;
bool aborterDone = false;

/* compare-and-swap on state */
inline cas(expected, newval, ok) {
	atomic {
		if
		:: state == expected -> state = newval; ok = true
		:: else -> ok = false
		fi
	}
}

active proctype Worker() {
	byte cur; bool ok; bool ready;
	do
	:: atomic { queued > 0 -> queued-- };
		/* toRunning */
		do
		:: cur = state;
			if
			:: LIFE(cur) != SCHEDULED -> goto next /* not ours any more */
			:: else ->
				cas(cur, (cur & ~(LIFEMASK | NOTIFIED)) | RUNNING, ok);
				if
				:: ok -> break
				:: else
				fi
			fi
		od;
		if
		:: (cur & CANCELLED) != 0 -> goto cancel
		:: else
		fi;
		/* poll */
		assert(!polling && !dropped);
		polling = true;
		ready = dataReady;
		polling = false;
		if
		:: ready -> outputWritten = true; goto complete
		:: else
		fi;
		/* toIdle */
		do
		:: cur = state;
			if
			:: (cur & CANCELLED) != 0 -> goto cancel
			:: (cur & CANCELLED) == 0 && (cur & NOTIFIED) != 0 ->
				cas(cur, (cur & ~(LIFEMASK | NOTIFIED)) | SCHEDULED, ok);
				if
				:: ok -> queued++; goto next
				:: else
				fi
			:: (cur & CANCELLED) == 0 && (cur & NOTIFIED) == 0 ->
				state = (cur & ~LIFEMASK) | IDLE; /* BUG: plain store, not CAS */
				goto next
			fi
		od;
cancel:
		assert(!dropped);
		dropped = true;
complete:
		/* toComplete, then wake the joiner if it registered a waker */
		atomic { cur = state; state = (cur & ~(LIFEMASK | NOTIFIED)) | COMPLETE };
		if
		:: (cur & JOIN_WAKER) != 0 ->
			assert(!joinWakerWriting);
			if
			:: slot == LIST -> /* joinWaiters.wake: close the list, wake every entry */
				atomic { listClosed = true; woken[1] = woken[1] || inList[1]; woken[2] = woken[2] || inList[2] }
			:: else -> woken[slot] = true
			fi
		:: else
		fi;
next:
		skip
	:: atomic { queued == 0 && wakerDone && aborterDone } -> break
	od;
	/* Nothing can wake the task any more: it must have finished. */
	assert(LIFE(state) == COMPLETE)
}

active proctype Waker() {
	byte cur; bool ok;
	dataReady = true;
	do
	:: cur = state;
		if
		:: LIFE(cur) == COMPLETE || LIFE(cur) == SCHEDULED -> break
		:: LIFE(cur) == RUNNING && (cur & NOTIFIED) != 0 -> break
		:: LIFE(cur) == RUNNING && (cur & NOTIFIED) == 0 ->
			cas(cur, cur | NOTIFIED, ok);
			if
			:: ok -> break
			:: else
			fi
		:: LIFE(cur) == IDLE ->
			cas(cur, (cur & ~LIFEMASK) | SCHEDULED, ok);
			if
			:: ok -> queued++; break
			:: else
			fi
		fi
	od;
	wakerDone = true
}

active proctype Aborter() {
	byte cur; bool ok;
	if
	:: true ->
		do
		:: cur = state;
			if
			:: LIFE(cur) == COMPLETE || (cur & CANCELLED) != 0 -> break
			:: LIFE(cur) == IDLE && (cur & CANCELLED) == 0 ->
				cas(cur, (cur & ~LIFEMASK) | SCHEDULED | CANCELLED, ok);
				if
				:: ok -> queued++; break
				:: else
				fi
			:: LIFE(cur) != IDLE && LIFE(cur) != COMPLETE && (cur & CANCELLED) == 0 ->
				cas(cur, cur | CANCELLED, ok);
				if
				:: ok -> break
				:: else
				fi
			fi
		od
	:: true -> skip /* this run does not abort */
	fi;
	aborterDone = true
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
	:: true -> /* polled again (a spurious wake-up), with the same waker */
		register(me, done);
		if
		:: done -> goto read
		:: else
		fi
	:: true -> skip
	fi;
	woken[me]; /* parked until someone wakes us */
read:
	assert(LIFE(state) == COMPLETE);
	assert(outputWritten || dropped)
}

init {
	run Joiner(2) /* one joiner here (it re-polls); taskjoin.pml checks several */
}
