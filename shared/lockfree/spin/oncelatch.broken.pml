/*
 * oncelatch.broken.pml: oncelatch.pml with VARIANT 1, the latch without the SLEEPY
 * state. spin must report the missed wake (a waiter parked forever); .ci/spin.sh fails
 * if it does not. Below the model marker this file equals oncelatch.pml except for the
 * VARIANT line (TestSpinModelsInSync).
 */
/* ==== model ==== */
#define VARIANT 1

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
