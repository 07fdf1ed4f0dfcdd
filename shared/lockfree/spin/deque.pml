/*
 * deque.pml: the Chase-Lev deque of ../deque.go, checked exhaustively by spin.
 *
 * One owner pushes NITEMS numbered items and pops in any order it likes (every
 * interleaving of Push and Pop is explored), then drains the deque; two thieves steal
 * any number of times. The ring has CAP = 2 slots, so it wraps around and Push meets a
 * full ring. Checked:
 *   - no item is taken twice (assert at every take),
 *   - no thief or pop ever returns an empty slot (item 0),
 *   - at the end every pushed item was taken exactly once (none lost),
 *   - the invariant of the lazy bottom (see the Deque type comment): the shared bottom
 *     is the owner's ownBottom, or one less and then top == ownBottom,
 *   - no deadlock (spin's invalid end states).
 *
 * Each Go atomic operation (sync/atomic, sequentially consistent) is one Promela
 * statement; owner-local fields (ownBottom, topSeen) are process-local variables.
 * A Go CAS is an atomic { if :: top == t -> top = t + 1 :: else fi } block. The
 * bookkeeping array taken[] is ghost state and is updated inside the same atomic step
 * as the CAS or after the load that decides ownership.
 * PushGrow is not modelled: it adds no new interleaving for thieves beyond the
 * one-ring case (the old ring is never written again; ../deque.go PushGrow comment),
 * and it is covered by TestDequeStressPushGrow and FuzzDeque.
 *
 * deque.broken.pml is this file with FENCED set to 0; spin must reject it.
 */
/* ==== model ==== */
#define FENCED 1

#define CAP 2
#define NITEMS 4

byte top = 0;       /* deque.go: Deque.top */
byte bottom = 0;    /* deque.go: Deque.bottom */
byte ring[CAP];     /* deque.go: ring.slots; 0 = never written */
byte taken[NITEMS + 1];
byte thievesDone = 0;

inline take(it) {
	assert(it != 0);          /* never an empty slot */
	assert(taken[it] == 0);   /* never twice */
	taken[it]++
}

proctype Thief() {
	byte t, b, it;
	do
	:: /* deque.go Steal */
		t = top;                          /* t := d.top.Load() */
		b = bottom;                       /* b := d.bottom.Load() */
		if
		:: t >= b -> skip                 /* if b-t <= 0 { return nil, Empty } */
		:: t < b ->
			it = ring[t % CAP];       /* item := r.load(t) (after r := d.buf.Load()) */
			atomic {                  /* if !d.top.CompareAndSwap(t, t+1) { Retry } */
				if
				:: top == t -> top = t + 1; take(it)
				:: else -> skip   /* Retry: the item read is dropped */
				fi
			}
		fi
	:: break
	od;
	thievesDone++
}

active proctype Owner() {
	byte ownBottom = 0;   /* deque.go: Deque.ownBottom */
	byte topSeen = 0;     /* deque.go: Deque.topSeen */
	byte next = 1;        /* the next item to push */
	byte t, b, it;
	bool draining = false;
	bool gotNone;

	run Thief(); run Thief();

	do
	:: !draining && next <= NITEMS ->
		/* deque.go Push */
		b = ownBottom;                            /* b := d.ownBottom */
		if
		:: b - topSeen >= CAP -> topSeen = top    /* if b-d.topSeen > r.mask { d.topSeen = d.top.Load() */
		:: else -> skip
		fi;
		if
		:: b - topSeen >= CAP -> skip             /* still full: return false (item not pushed) */
		:: else ->
			ring[b % CAP] = next;             /* r.store(b, item) */
			bottom = b + 1;                   /* d.bottom.Store(b + 1) */
			ownBottom = b + 1;                /* d.ownBottom = b + 1 */
			next++
		fi
	:: true ->
		/* deque.go Pop */
		gotNone = false;
		b = ownBottom;                            /* b := d.ownBottom */
		t = top;                                  /* t := d.top.Load() */
		if
		:: t >= b -> topSeen = t; gotNone = true    /* if b-t <= 0 { d.topSeen = t; return nil } */
		:: t + 1 == b ->                          /* if t == b-1 { */
			it = ring[t % CAP];               /* item := r.load(t) */
			topSeen = b;                      /* d.topSeen = b */
			atomic {                          /* if d.top.CompareAndSwap(t, b) { return item }; return nil */
				if
				:: top == t -> top = b; take(it)
				:: else -> gotNone = true
				fi
			}
		:: t + 1 < b ->                           /* two or more items */
			b = b - 1;                        /* b-- */
#if FENCED
			bottom = b;                       /* d.bottom.Store(b): the fence */
			t = top;                          /* t = d.top.Load() */
#else
			t = top;                          /* BROKEN: top read before bottom is lowered */
			bottom = b;
#endif
			topSeen = t;                      /* d.topSeen = t */
			if
			:: t < b ->                       /* case b-t > 0: */
				ownBottom = b;            /* d.ownBottom = b */
				it = ring[b % CAP];       /* return r.load(b) */
				take(it)
			:: t == b ->                      /* case t == b: */
				it = ring[b % CAP];       /* item := r.load(b) */
				ownBottom = b + 1;        /* d.ownBottom = b + 1 */
				topSeen = b + 1;          /* d.topSeen = b + 1 */
				atomic {                  /* if d.top.CompareAndSwap(t, t+1) { return item }; return nil */
					if
					:: top == t -> top = t + 1; take(it)
					:: else -> gotNone = true
					fi
				}
			:: t > b ->                       /* default: t == b+1, emptied by thieves */
				ownBottom = b + 1;        /* d.ownBottom = b + 1 */
				gotNone = true
			fi
		fi;
		/* the lazy-bottom invariant, between owner operations */
		assert(bottom == ownBottom || (bottom + 1 == ownBottom && top == ownBottom));
		if
		:: draining && gotNone -> break     /* drained: Pop found nothing */
		:: else -> skip
		fi
	:: !draining && next > NITEMS -> draining = true
	od;

	/* Every item pushed was taken exactly once once the thieves are done. */
	(thievesDone == 2);
	t = 1;
	do
	:: t <= NITEMS -> assert(taken[t] == 1); t++
	:: else -> break
	od
}
