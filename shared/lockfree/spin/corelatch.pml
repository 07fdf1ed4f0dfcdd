/*
 * corelatch.pml: the worker sleep handshake built on CoreLatch (../latch.go), as the
 * fork-join pool uses it (Rayon's sleep protocol) and TestCoreLatchHandshake runs it: the worker
 * parks on its own mutex and condition variable, and CoreLatch decides who sleeps and
 * who must signal. Checked exhaustively over two rounds:
 *   - no missed wake: the worker never stays blocked in cond.Wait (an invalid end state
 *     for spin) and every Set is observed by the worker;
 *   - the waker signals only a worker that committed to sleep (Set returned true only
 *     after FallAsleep succeeded).
 *
 * sync.Cond is modelled by what makes the handshake subtle: Wait releases the mutex and
 * blocks in one step, and a Signal with nobody waiting is lost. A waker that saw
 * SLEEPING takes the mutex before signalling; since the worker held the mutex from its
 * FallAsleep until cond.Wait released it, the signal cannot fall in between.
 *
 * VARIANT 0 is the protocol; corelatch.broken.pml (VARIANT 1) signals without taking
 * the mutex, and spin must find the lost wake-up.
 */
/* ==== model ==== */
#define VARIANT 0

#define UNSET    0
#define SLEEPY   1
#define SLEEPING 2
#define SET      3
#define ROUNDS   2

byte state = UNSET;      /* latch.go: CoreLatch.state */
bit mu = 0;              /* the worker's sync.Mutex */
bool waiting = false;    /* the worker is blocked in cond.Wait */
bool signaled = false;   /* a Signal reached the waiting worker */
byte arrived = 0;        /* rounds the worker has started (test: arrived.Store(i)) */

inline lock()   { atomic { mu == 0 -> mu = 1 } }
inline unlock() { mu = 0 }

proctype Worker() {
	byte round = 0;
	bool ok;
	do
	:: round < ROUNDS ->
		arrived = round + 1;
		atomic { ok = (state == UNSET); if :: ok -> state = SLEEPY :: else fi }  /* GetSleepy: CAS(UNSET, SLEEPY) */
		if
		:: ok ->
			lock();                                                     /* mu.Lock() */
			atomic { ok = (state == SLEEPY); if :: ok -> state = SLEEPING :: else fi }  /* FallAsleep: CAS(SLEEPY, SLEEPING) */
			if
			:: ok ->
				do                                                  /* for !l.Probe() { cond.Wait() } */
				:: state == SET -> break
				:: state != SET ->
					atomic { waiting = true; mu = 0 };          /* cond.Wait: unlock and block */
					atomic { signaled -> signaled = false; waiting = false };
					lock()                                      /* cond.Wait: relock */
				od
			:: else -> skip
			fi;
			unlock()                                                    /* mu.Unlock() */
		:: else -> skip
		fi;
		state == SET;                 /* for !l.Probe() { Gosched }: the Set is on its way */
		state = UNSET;                /* l.Reset(): acted on the Set */
		round++
	:: round == ROUNDS -> break
	od
}

proctype Waker() {
	byte round = 0;
	byte old;
	do
	:: round < ROUNDS ->
		(arrived == round + 1 && state != SET);       /* wait for the worker's round */
		atomic { old = state; state = SET };          /* l.Set(): Swap(SET) == SLEEPING */
		if
		:: old == SLEEPING ->
#if VARIANT == 1
			if :: waiting -> signaled = true :: else fi   /* BROKEN: cond.Signal() without mu */
#else
			lock();                                   /* mu.Lock() */
			if :: waiting -> signaled = true :: else fi   /* cond.Signal(): lost if nobody waits */
			unlock()                                  /* mu.Unlock() */
#endif
		:: else -> skip
		fi;
		(arrived != round + 1 || state != SET);       /* the worker took this Set */
		round++
	:: round == ROUNDS -> break
	od
}

init {
	atomic { run Worker(); run Waker() }
}
