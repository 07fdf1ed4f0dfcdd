/*
 * oncelatch.pml: the four-state OnceLatch of ../latch.go, checked exhaustively by spin.
 *
 * Three waiters call Wait while one setter calls SetDone, in every interleaving, so
 * the park mutex is handed from the setter through two waiters to the third.
 * Checked:
 *   - no missed wake: every waiter returns. A waiter blocked forever on the park mutex
 *     is an invalid end state, which spin reports as an error;
 *   - no wait after SET: a waiter commits to parking (SLEEPY -> SLEEPING) only while the
 *     latch is not set, and once SetDone has returned no waiter can still be committing;
 *   - the setter unlocks the park mutex only while it is locked (unlocking an unlocked
 *     sync.Mutex is a fatal error in Go), and at the end the mutex is unlocked again, so
 *     Reset leaves a reusable latch;
 *   - Wait returns only when the latch is SET.
 *
 * Go's atomics are sequentially consistent; each one is one Promela statement, a CAS
 * an atomic if. The sync.Mutex is a bit: Lock blocks until it is 0 and sets it, Unlock
 * asserts it is 1 and clears it. Go allows a mutex locked by one goroutine to be
 * unlocked by another, which is how SetDone wakes the parked waiter.
 *
 * VARIANT selects the protocol: 0 is latch.go. The broken variants, which spin must
 * reject, are the same file with a different VARIANT line (TestSpinModelsInSync):
 *   1 (oncelatch.broken.pml): no SLEEPY state. The waiter checks the state, then stores
 *     SLEEPING and parks, the obvious three-state latch; a SetDone between the check
 *     and the store sees no sleeper and never wakes it.
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
bit park = 0;              /* latch.go: OnceLatch.park, a sync.Mutex */
bool setterDone = false;   /* ghost: SetDone has returned */
byte finished = 0;         /* ghost: waiters that returned */

inline lock()   { atomic { park == 0 -> park = 1 } }
inline unlock() { assert(park == 1); park = 0 }

proctype Waiter() {
	byte s;
	bool ok;
	do
	:: s = state;                                   /* switch l.state.Load() { */
		if
		:: s == SET -> break                    /* case latchSet: return */
#if VARIANT == 1
		:: s != SET ->                          /* BROKEN: no SLEEPY step */
			lock();
			state = SLEEPING;               /* plain store after the check */
			lock();                         /* park */
			unlock()
#else
		:: s == UNSET ->                        /* case latchUnset: */
			atomic { if                     /* l.state.CompareAndSwap(latchUnset, latchSleepy) */
			:: state == UNSET -> state = SLEEPY
			:: else -> skip
			fi }
		:: s == SLEEPY ->                       /* case latchSleepy: */
			lock();                         /* l.park.Lock() */
			atomic {                        /* if l.state.CompareAndSwap(latchSleepy, latchSleeping) { */
				ok = (state == SLEEPY);
				if
				:: ok -> state = SLEEPING; assert(!setterDone)  /* no commit after SET */
				:: else -> skip
				fi
			}
			if
			:: ok -> lock()                 /* l.park.Lock(): park until SetDone unlocks */
			:: else -> skip
			fi;
			unlock()                        /* l.park.Unlock(): pass it on */
		:: s == SLEEPING ->                     /* case latchSleeping: */
			lock();                         /* l.park.Lock() */
			unlock()                        /* l.park.Unlock() */
#endif
		fi
	od;
	assert(state == SET);                           /* Wait returns only once set */
	finished++
}

proctype Setter() {
	byte old;
#if VARIANT == 2
	old = state;                                    /* BROKEN: check ... */
	state = SET;                                    /* ... then set: not one swap */
#else
	atomic { old = state; state = SET };            /* old := l.state.Swap(latchSet) */
#endif
	if
	:: old == SLEEPING -> unlock()                  /* if old == latchSleeping { l.park.Unlock() } */
	:: else -> skip
	fi;
	setterDone = true
}

init {
	atomic { run Waiter(); run Waiter(); run Waiter(); run Setter() };
	/* all three have finished: the mutex must be free again for Reset */
	(finished == 3 && setterDone);
	assert(park == 0)
}
