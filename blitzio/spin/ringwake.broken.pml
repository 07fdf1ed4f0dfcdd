/* The broken twin of ringwake.pml: no chain (BROKEN_SLOT), the ring as it was before the fix. */
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
 *                 (woken), pop; on nothing (empty, or the head slot claimed by a sender
 *                 that has not published it: the ring does not wait), register (queue at
 *                 the back unless queued; a new registration clears notified) and pop
 *                 again; still nothing: pending until its waker runs, then poll again.
 *                 On a value: took() (leave the set; pass on a notification that came
 *                 after the take, when it was not notified before it), then the chain:
 *                 if receivers wait and the next slot holds a published value, wake one.
 *
 * The chain is what makes the unwaited-for claimed slot safe: a sender that published
 * slot k+1 while nobody waited woke nobody, and receivers registering since look at slot
 * k, claimed and unpublished, and wait; k's sender wakes one of them, who takes k and,
 * through the chain, wakes the next for k+1. ringwake.broken.pml lacks the chain: a
 * receiver is left asleep with k+1's value in the buffer, which spin finds.
 *
 * Checked: once nothing can move, every receiver has its value (the assert of Check);
 * a receiver left asleep with a value in the buffer fails it. Two senders and two
 * receivers (NS=2) suffice for the lost wake-up and check in seconds; NS=3 runs for
 * many minutes here.
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

/* tryPop sets r to 1 (took a value), 0 (empty) or 2 (busy: the head slot is claimed
 * by a sender that has not published it). */
inline tryPop(r) {
	do
	:: atomic { slot[head] == PUBLISHED -> slot[head] = TAKEN; head++; r = 1 }; break
	:: atomic { slot[head] == FREE -> r = 0 }; break    /* tail == head: empty */
	:: atomic { slot[head] == CLAIMED -> r = 2 }; break
	od
}

proctype Receiver(byte i) {
	byte r = 0;
	byte k = 0;
	byte w = 0;
	bool nreg = false;   /* the node has a registration (waitNode.registered) */
	bool regd;           /* registered in this poll (Poll's loop variable) */
	bool woke = false;
poll:
	regd = false;
again:
	woke = nreg && notified[i];
	tryPop(r);
	if
	:: r == 1 -> goto took
	:: else -> skip
	fi;
	if
	:: regd -> goto pending  /* empty, or busy (claimed, not published): wait */
	:: else -> skip          /* register, then look again (the waitSet protocol) */
	fi;
	acquire();
	if
	:: !queued[i] -> q[qlen] = i; qlen++; queued[i] = true; notified[i] = false
	:: else -> skip
	fi;
	release();
	nreg = true;
	regd = true;
	goto again;
pending:
	/* parked until its waker runs */
	woken[i] -> woken[i] = false;
	goto poll;
took:
	if
	:: nreg ->
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
#ifndef BROKEN_SLOT
	/* the chain: a value is ready behind the one taken and receivers wait: wake one
	 * (its sender may have published while nobody waited, and the slot in flight
	 * ahead of it hid it from the receivers that registered since) */
	if
	:: qlen > 0 && slot[head] == PUBLISHED ->
		acquire(); popFront(w); release();
		if
		:: w != 0 -> woken[w] = true
		:: else -> skip
		fi
	:: else -> skip
	fi;
#endif
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
