/* The broken twin of ringwake.pml: a slot claimed by a sender and not yet published reads as empty (the ring before the fix). */
#define BROKEN_SLOT
/*
 * Promela model of the receive side of a bounded channel in package tsync: the ring
 * buffer (blitzio/tsync/chan_ring.go, Vyukov's bounded MPMC queue) and the receivers'
 * waiter set (waitSet and waitNode in chan.go), as TrySend/SendAsync and RecvAsync use
 * them (chan_bounded.go). The send side, senders waiting for room, is the mirror image.
 *
 *   Sender 1-N    push: claim the next slot (the CAS of tail), then publish it (the
 *                 store of its stamp), two steps; then notifyOne: if the waiter count is
 *                 not zero, under the set's lock unlink the oldest waiter and mark it
 *                 notified, and wake it outside the lock.
 *   Receiver 1-N  each wants one value. A poll: note whether its node was notified
 *                 (woken), pop; on empty, register (queue at the back unless queued; a
 *                 new registration clears notified) and pop again; still empty: pending
 *                 until its waker runs, then poll again. On a value, took(): if it was
 *                 notified before the pop, that notification was used (leave the set
 *                 quietly); if not, leave it and pass on a notification that came after
 *                 the pop (it announced another value) to the next waiter.
 *                 pop finds the head slot published (take it: the CAS of head), free
 *                 (empty), or claimed by a sender that has not published: the ring waits
 *                 for that sender (the guard blocks until its publish), as crossbeam's
 *                 ArrayQueue snoozes.
 *
 * Broken twins: ringwake.broken.pml reports a claimed slot as empty (a receiver woken for
 * the next slot goes back to sleep, its wake spent); ringwake_quiet.broken.pml treats
 * every notification as used after a take (one that reached a receiver still queued
 * while it helped itself is lost).
 *
 * Checked: once nothing can move, every receiver has its value (the assert of Check);
 * a receiver left asleep with a value in the buffer fails it. Two senders and two
 * receivers (NS=2) are enough for both lost wake-ups and check in well under a second;
 * NS=3 runs for many minutes here.
 */
#ifndef NS
#define NS 2
#endif
#define NR NS
#define FREE 0
#define CLAIMED 1
#define PUBLISHED 2
#define TAKEN 3

byte slot[NS + 1];  /* one lap: NS values, capacity NS (never full); slot[NS] stays FREE */
byte head = 0;
byte tail = 0;

bool lock = false;
byte q[NR + 1];     /* FIFO of waiting receivers, ids 1..NR */
byte qlen = 0;
bool queued[NR + 1];
bool notified[NR + 1];
bool woken[NR + 1];
byte got = 0;

active proctype Check() {
	timeout -> assert(got == NR)
}

inline acquire() { atomic { !lock -> lock = true } }
inline release() { lock = false }

/* popFront unlinks the oldest waiter into w (0: none) and marks it notified. */
inline popFront(w) {
	d_step {
		if
		:: qlen > 0 ->
			w = q[0]; k = 0;
			do
			:: k + 1 < qlen -> q[k] = q[k + 1]; k++
			:: else -> break
			od;
			qlen--; q[qlen] = 0; queued[w] = false; notified[w] = true
		:: else -> w = 0
		fi
	}
}

inline remove(i) {
	d_step {
		k = 0;
		do
		:: k < qlen && q[k] != i -> k++
		:: k >= qlen || q[k] == i -> break
		od;
		assert(k < qlen);
		do
		:: k + 1 < qlen -> q[k] = q[k + 1]; k++
		:: else -> break
		od;
		qlen--; q[qlen] = 0; queued[i] = false
	}
}

inline notifyOne() {
	if
	:: qlen > 0 ->                                     /* waiting(): one load */
		acquire(); popFront(w); release();
		if
		:: w != 0 -> woken[w] = true
		:: else -> skip
		fi
	:: else -> skip
	fi
}

proctype Sender() {
	byte j, k;
	byte w = 0;
	atomic { j = tail; tail++; slot[j] = CLAIMED };   /* the CAS of tail */
	slot[j] = PUBLISHED;                               /* the stamp store */
	notifyOne()
}

/* tryPop sets r to 1 (took a value) or 0 (empty). */
inline tryPop(r) {
	do
	:: atomic { slot[head] == PUBLISHED -> slot[head] = TAKEN; head++; r = 1 }; break
	:: atomic { slot[head] == FREE -> r = 0 }; break   /* tail == head: empty */
#ifdef BROKEN_SLOT
	:: atomic { slot[head] == CLAIMED -> r = 0 }; break /* reported empty */
#endif
	/* a CLAIMED head slot enables neither branch: the receiver waits for the sender */
	od
}

proctype Receiver(byte i) {
	byte r = 0;
	byte k = 0;
	byte w = 0;
	bool registered = false;
	bool woke = false;
poll:
	woke = registered && notified[i];
	tryPop(r);
	if
	:: r == 1 -> goto took
	:: else -> skip
	fi;
	acquire();
	if
	:: !queued[i] -> q[qlen] = i; qlen++; queued[i] = true; notified[i] = false
	:: else -> skip
	fi;
	release();
	registered = true;
	woke = false;   /* a new registration: not notified */
	tryPop(r);
	if
	:: r == 1 -> goto took
	:: else -> skip
	fi;
	/* pending: parked until its waker runs */
	woken[i] -> woken[i] = false;
	goto poll;
took:
	if
	:: registered ->
		acquire();
		if
		:: queued[i] -> remove(i)
		:: else -> skip
		fi;
#ifndef BROKEN_QUIET
		if
		:: !woke && notified[i] ->
			/* notified after the take: pass it on */
			popFront(w);
			release();
			if
			:: w != 0 -> woken[w] = true
			:: else -> skip
			fi
		:: else -> release()
		fi;
#else
		release();
#endif
		notified[i] = false
	:: else -> skip
	fi;
	got++
}

init {
	atomic {
		byte n = 1;
		do
		:: n <= NR -> run Receiver(n); run Sender(); n++
		:: else -> break
		od
	}
}
