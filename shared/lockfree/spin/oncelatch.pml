/*
 * oncelatch.pml: the four-state OnceLatch of ../latch.go, checked exhaustively by spin.
 *
 * Two waiters call Wait while one setter calls SetDone, in every interleaving.
 * Checked:
 *   - no missed wake: a waiter that parks is always released. A waiter blocked forever
 *     on the channel is an invalid end state, which spin reports as an error;
 *   - no wait after SET: once SetDone has returned, any waiter that goes to park finds
 *     the channel already closed (it cannot block for good after the latch is set);
 *   - the setter closes the channel at most once (a second close panics in Go) and
 *     only after a waiter published it (close of a nil channel panics too);
 *   - Wait returns only when the latch is SET.
 *
 * Go's atomics are sequentially consistent; each one is one Promela statement, a CAS
 * an atomic if. The park channel is modelled by what matters about it: a pointer that
 * is nil or names the channel a waiter made (park), and a sticky closed flag per
 * channel; a receive is the blocking guard (closed[ch]), which like a Go receive on a
 * closed channel passes whether the close came before or after the receiver arrived.
 *
 * VARIANT selects the protocol: 0 is latch.go. The broken variants, which spin must
 * reject, are the same file with a different VARIANT line (TestSpinModelsInSync):
 *   1 (oncelatch.broken.pml): no SLEEPY state. The waiter checks the state and then
 *     stores SLEEPING and parks, the obvious three-state latch; a SetDone between the
 *     check and the store sees no sleeper and never wakes it.
 *   2 (oncelatch-setter.broken.pml): the setter checks for a sleeper and then stores
 *     SET, instead of one swap; a waiter that turns SLEEPING in between is missed.
 */
/* ==== model ==== */
#define VARIANT 0

#define UNSET    0
#define SLEEPY   1
#define SLEEPING 2
#define SET      3

byte state = UNSET;        /* latch.go: OnceLatch.state */
byte park = 0;             /* latch.go: OnceLatch.park; 0 = nil, else the maker's _pid */
bool closed[4];            /* closed[ch]: channel ch was closed */
bool setterDone = false;   /* ghost: SetDone has returned */

proctype Waiter() {
	byte s, ch;
	do
	:: s = state;                                   /* switch l.state.Load() { */
		if
		:: s == SET -> break                    /* case latchSet: return */
#if VARIANT == 1
		:: s != SET ->                          /* BROKEN: no SLEEPY step */
			atomic { if                     /* publish the channel as variant 0 does */
			:: park == 0 -> park = _pid
			:: else -> skip
			fi };
			state = SLEEPING;               /* plain store after the check */
			ch = park;
			assert(!setterDone || closed[ch]);
			closed[ch];                     /* <-ch */
			break
#else
		:: s == UNSET ->                        /* case latchUnset: */
			atomic { if                     /* l.state.CompareAndSwap(latchUnset, latchSleepy) */
			:: state == UNSET -> state = SLEEPY
			:: else -> skip
			fi }
		:: s == SLEEPY ->                       /* case latchSleepy: */
			if
			:: park == 0 ->                 /* if l.park.Load() == nil { ch := make(chan struct{}) */
				atomic { if             /* l.park.CompareAndSwap(nil, &ch) */
				:: park == 0 -> park = _pid
				:: else -> skip
				fi }
			:: else -> skip
			fi;
			atomic { if                     /* l.state.CompareAndSwap(latchSleepy, latchSleeping) */
			:: state == SLEEPY -> state = SLEEPING
			:: else -> skip
			fi }
		:: s == SLEEPING ->                     /* case latchSleeping: */
			ch = park;                      /* *l.park.Load() */
			assert(ch != 0);                /* published before SLEEPING: never nil */
			assert(!setterDone || closed[ch]);  /* no wait after SET */
			closed[ch];                     /* <-ch: blocks until closed */
			break                           /* return */
#endif
		fi
	od;
	assert(state == SET)                            /* Wait returns only once set */
}

proctype Setter() {
	byte old, ch;
#if VARIANT == 2
	old = state;                                    /* BROKEN: check ... */
	state = SET;                                    /* ... then set: not one swap */
#else
	atomic { old = state; state = SET };            /* old := l.state.Swap(latchSet) */
#endif
	if
	:: old == SLEEPING ->                           /* if old == latchSleeping { */
		ch = park;                              /* close(*l.park.Load()) */
		assert(ch != 0);
		assert(!closed[ch]);
		closed[ch] = true
	:: else -> skip
	fi;
	setterDone = true
}

init {
	atomic { run Waiter(); run Waiter(); run Setter() }
}
