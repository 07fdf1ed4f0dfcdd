// BROKEN on purpose: toIdle stores IDLE without a CAS, so a wake that sets NOTIFIED
// between its load and its store is lost (the race the real CAS prevents). spin must
// reject this model.
/*
 * Promela model of the blitzio task state machine (blitzio/taskstate.go), checked by spin
 * in CI (.ci/spin.sh). One task, one worker polling it, and three other goroutines racing
 * with the worker:
 *
 *   Waker   makes the future's data ready and then wakes the task (wake during poll:
 *           RUNNING -> NOTIFIED, re-scheduled by toIdle after the poll);
 *   Aborter optionally aborts the task (abort before, during or after a poll);
 *   Joiner  awaits the JoinHandle (join-waker hand-off: it writes joinWaker only while
 *           JOIN_WAKER is clear, the completer reads it only after seeing JOIN_WAKER set;
 *           it may also replace its waker once, as a re-polled JoinHandle does).
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
#define LIFE(s) ((s) & LIFEMASK)

byte state = SCHEDULED; /* spawned: one entry in the run queue */
byte queued = 1;        /* run-queue entries for the task */
bool dataReady = false; /* what the future waits for */
bool polling = false;
bool dropped = false;
bool outputWritten = false;
bool joinWakerWriting = false;
bool joinerWoken = false;
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
		:: (cur & JOIN_WAKER) != 0 -> assert(!joinWakerWriting); joinerWoken = true
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

/* setJoinWaker / unsetJoinWaker loops; done = true means the task completed first. */
inline setJoinWaker(done) {
	done = false;
	do
	:: cur = state;
		if
		:: LIFE(cur) == COMPLETE -> done = true; break
		:: else ->
			cas(cur, cur | JOIN_WAKER, ok);
			if
			:: ok -> break
			:: else
			fi
		fi
	od
}

active proctype Joiner() {
	byte cur; bool ok; bool done;
	if
	:: LIFE(state) == COMPLETE -> goto read
	:: else
	fi;
	joinWakerWriting = true; /* write joinWaker: allowed, JOIN_WAKER is clear */
	joinWakerWriting = false;
	setJoinWaker(done);
	if
	:: done -> goto read
	:: else
	fi;
	if
	:: true -> /* polled again with a different waker: take the slot back, rewrite it */
		do
		:: cur = state;
			if
			:: LIFE(cur) == COMPLETE -> goto read
			:: else ->
				cas(cur, cur & ~JOIN_WAKER, ok);
				if
				:: ok -> break
				:: else
				fi
			fi
		od;
		joinWakerWriting = true;
		joinWakerWriting = false;
		setJoinWaker(done);
		if
		:: done -> goto read
		:: else
		fi
	:: true -> skip
	fi;
	joinerWoken; /* parked until the completer wakes us */
read:
	assert(LIFE(state) == COMPLETE);
	assert(outputWritten || dropped)
}
