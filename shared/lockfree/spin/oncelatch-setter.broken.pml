/*
 * oncelatch-setter.broken.pml: oncelatch.pml with VARIANT 2, a SetDone that checks for
 * a sleeper and then stores SET instead of swapping. spin must report the missed wake.
 * Below the model marker this file equals oncelatch.pml except for the VARIANT line
 * (TestSpinModelsInSync).
 */
/* ==== model ==== */
#define VARIANT 2

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
