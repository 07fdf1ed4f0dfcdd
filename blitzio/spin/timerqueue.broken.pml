// cc-flags: -DCOLLAPSE
/*
 * timerqueue.broken.pml: timerqueue.pml with VARIANT 2, a deliberately broken protocol
 * that spin must reject (.ci/spin.sh fails if it does not, which proves the model can
 * fail). Below the model marker this file equals timerqueue.pml except for the VARIANT
 * line.
 *
 * The mistake: processTimers stores nextAt (INF for an empty wheel) and clears active,
 * then unlocks without re-checking the pending stack H. A Register that pushed after
 * the drain and did its CAS-min of nextAt and its "active already set" load before
 * those stores leaves its entry in H with nextAt = INF and active = false: due() is
 * false for ever, so busy workers never process the timer (only a worker that parks
 * and drains would).
 *
 * spin's error: "assertion violated 0" in the Invariant process, its no-lost-timer
 * clause (owners done, L free, an armed T_QUEUED entry without active && nextAt <=
 * deadline), under 10 thousand states in: the worker's maintenance drains an empty
 * stack, owner 1 re-registers (push, nextAt = 1, active already true), the worker stores
 * nextAt = INF and active = false and unlocks.
 */
/* ==== model ==== */
/* VARIANT 0: the protocol. Mistakes spin rejects (2 is timerqueue.broken.pml):
 *   1: Register of a T_CANCELLED entry skips the drain under L and just stores T_IDLE;
 *   2: processTimers does not re-check H after its nextAt/active stores;
 *   3: a drainer firing an already-due entry stores T_FIRED before reading its waker;
 *   4: the timer driver does not reset parkedUntil to INF when it wakes. */
#define VARIANT 2

/* entry states (st); the values are the code's */
#define T_IDLE      0
#define T_QUEUED    1
#define T_CANCELLED 2
#define T_WHEEL     3
#define T_FIRED     4

#define N     2    /* entries 1..N; 0 is nil */
#define TMAX  2    /* last instant of time; deadlines are 1..TMAX */
#define INF   3    /* MaxInt64: no deadline */
#define NRESET 1   /* Resets of owner 1 (owner 2 never resets) */

byte st[N+1];
byte next[N+1];          /* entry.next, the stack link */
byte deadline[N+1];
byte H = 0;              /* pending stack head */
bit  L = 0;              /* timer lock */
bool isActive = false;   /* timerState.active ("active" is a Promela keyword) */
byte nextAt = INF;
byte parkedUntil = INF;
bool token = false;      /* a wake of the timer driver, not yet consumed */
byte now = 0;

/* ghost state */
byte listed[N+1];        /* times e is in H or in a list a drainer popped */
bit  inWheel[N+1];
bool armed[N+1];         /* registered, not cancelled since (a fired entry stays armed) */
bool writing[N+1];       /* the owner is writing deadline/waker */
byte ownersDone = 0;
bool shutdown = false;

/* the wheel's next expiration (INF if empty); reads only what L guards */
#define WHEELMIN(m) \
	m = INF; \
	if :: inWheel[1] && deadline[1] < m -> m = deadline[1] :: else fi; \
	if :: inWheel[2] && deadline[2] < m -> m = deadline[2] :: else fi

/* One entry x of a popped list: CAS(st, T_QUEUED, T_WHEEL), then insert it in the wheel,
 * or fire it if already due at tnow (collect its waker, then st = T_FIRED); a
 * T_CANCELLED entry is skipped and not touched. (next[x] was read before.) */
#define DRAINONE(x) \
	if \
	:: st[x] == T_QUEUED -> st[x] = T_WHEEL; \
		assert(!writing[x]) /* read deadline */; \
		if \
		:: deadline[x] > tnow -> assert(!inWheel[x]); inWheel[x] = 1 \
		:: else -> assert(armed[x]); COLLECT_AND_FIRE(x) \
		fi \
	:: else -> assert(st[x] == T_CANCELLED) \
	fi; \
	listed[x]--

#if VARIANT == 3
#define COLLECT_AND_FIRE(x) st[x] = T_FIRED; pend = x   /* waker read after the walk */
#define AFTER_DRAIN() if :: pend != 0 -> assert(!writing[pend]); pend = 0 :: else fi
#else
#define COLLECT_AND_FIRE(x) assert(!writing[x]) /* collect waker */; st[x] = T_FIRED
#define AFTER_DRAIN() skip
#endif

/* Drain (caller holds L, tnow is its clock reading): swap(H, nil), then walk the list,
 * reading each entry's next before touching the entry. One step: see "Abstracted". */
inline drain() {
	x = H; H = 0;
	do
	:: x == 0 -> break
	:: else -> y = next[x]; DRAINONE(x); x = y
	od;
	y = 0
}

/* fire wheel entry j if due: remove it, collect its waker, st = T_FIRED */
#define FIREONE(j) \
	if \
	:: inWheel[j] && deadline[j] <= tnow -> \
		assert(!writing[j]); assert(armed[j]); inWheel[j] = 0; st[j] = T_FIRED \
	:: else \
	fi

/* processTimers (from the lock to the unlock) */
inline processTimers() {
	do
	:: atomic { drain() };
#if VARIANT == 3
		AFTER_DRAIN();                          /* a step of its own: the race */
#endif
		atomic { FIREONE(1); FIREONE(2); WHEELMIN(m); nextAt = m };
		if
		:: m == INF -> isActive = false
		:: else
		fi;
		/* re-check: a push that raced with the stores above must not be lost */
		if
		:: atomic { (H == 0 || VARIANT == 2) -> m = 0; tnow = 0; L = 0 }; break  /* unlock */
		:: else -> isActive = true
		fi
	od
}

inline cancel(e) {
	atomic {                                        /* s = st; CAS(st, T_QUEUED, T_CANCELLED) */
		s = st[e];
		if
		:: s == T_QUEUED -> st[e] = T_CANCELLED; armed[e] = false; s = 0
		:: s == T_WHEEL
		:: else -> s = 0                                /* T_FIRED, T_IDLE, T_CANCELLED */
		fi
	};
	if
	:: s == T_WHEEL ->
		atomic {                                /* lock; if still T_WHEEL: remove, T_IDLE; unlock */
			L == 0 ->
			if
			:: st[e] == T_WHEEL -> inWheel[e] = 0; armed[e] = false; st[e] = T_IDLE
			:: else                         /* fired meanwhile */
			fi;
			s = 0;
			assert(st[e] != T_IDLE || (listed[e] == 0 && !inWheel[e]))
		}
	:: else
	fi
}

inline register(e) {
	/* st is T_IDLE, T_FIRED or T_CANCELLED here, and only the owner changes it */
	atomic {
		if
		:: st[e] == T_CANCELLED ->
#if VARIANT == 1
			skip                            /* BUG: no drain */
#else
			L == 0 -> L = 1; tnow = now; drain(); tnow = 0; AFTER_DRAIN(); L = 0
#endif
		:: else
		fi;
		/* now e is surely in no stack: plain writes of st, deadline, waker */
		assert(listed[e] == 0 && !inWheel[e]); st[e] = T_IDLE;
		if
		:: d = 1
		:: d = 2
		fi;
		writing[e] = true
	};
	atomic { deadline[e] = d /* and the waker */; writing[e] = false; armed[e] = true; st[e] = T_QUEUED };
	atomic { assert(listed[e] == 0); next[e] = H; H = e; listed[e]++ };   /* push (CAS loop) */
	atomic { if :: d < nextAt -> nextAt = d :: else fi };                 /* CAS-min nextAt */
	atomic { if :: !isActive -> isActive = true :: else fi };
	atomic { if :: d < parkedUntil -> token = true :: else fi; d = 0 }    /* wakeTimerDriver */
}

proctype Owner(byte e) {
	byte s, d, x, y, tnow, ops, pend;
	register(e);
	do
	:: e == 1 && ops < NRESET -> ops++; cancel(e); register(e)   /* Reset, polled again */
	:: cancel(e); break                             /* Drop */
	:: break                                        /* just waits */
	od;
	ownersDone++
}

#define LIVE_NOTICED(j) \
	(!armed[j] || (st[j] != T_QUEUED && st[j] != T_WHEEL) || (isActive && nextAt <= deadline[j]))

/* A worker: between tasks it runs maintenance (processTimers(tryOnly) if due()); with
 * nothing to do it parks as the timer driver; or Close clears the timers. */
active proctype Worker() {
	byte x, y, tnow, m, next2, late, pend;
	do
	:: atomic { isActive && nextAt <= now && L == 0 -> L = 1; tnow = now };  /* due(), TryLock */
		processTimers()
	:: /* park as the timer driver: lock, drain, next expiration, unlock; publish it */
		atomic { L == 0 -> L = 1; tnow = now; drain(); tnow = 0; AFTER_DRAIN(); WHEELMIN(next2); L = 0 };
		parkedUntil = next2;
		if                                      /* sleep until woken or next2 */
		:: atomic { token -> token = false }
		:: now >= next2 -> skip                 /* timeout */
		:: atomic { next2 == INF && !token && ownersDone == N && now == TMAX ->
				/* parked for good: nothing may be left to fire */
				assert(!armed[1] || st[1] == T_FIRED);
				assert(!armed[2] || st[2] == T_FIRED) };
			break
		fi;
		atomic {
#if VARIANT != 4
			parkedUntil = INF;              /* woken: releaseTimerDriver */
#endif
			next2 = 0;
			if
			:: ownersDone == N && now == TMAX ->
				/* nothing new can come: the driver must settle, not spin */
				late++; assert(late <= 3)
			:: else
			fi
		};
		if
		:: atomic { isActive -> L == 0 -> L = 1; tnow = now }; processTimers()
		:: else
		fi
	:: atomic { L == 0 -> L = 1; tnow = now; shutdown = true;     /* Close: timerState.clear */
			drain(); AFTER_DRAIN();
			if
			:: inWheel[1] -> inWheel[1] = 0; armed[1] = false; st[1] = T_IDLE
			:: else
			fi;
			if
			:: inWheel[2] -> inWheel[2] = 0; armed[2] = false; st[2] = T_IDLE
			:: else
			fi };
		isActive = false;
		atomic { nextAt = INF; L = 0 };
		break                                   /* the workers exit */
	od
}

active proctype Clock() {
	do
	:: now < TMAX -> now++
	:: else -> break
	od
}

/* checked in every reachable state */
active proctype Invariant() {
end:	atomic {
		!((!inWheel[1] || st[1] == T_WHEEL) && (!inWheel[2] || st[2] == T_WHEEL) &&
		  listed[1] <= 1 && listed[2] <= 1 &&
		  /* busy workers notice every armed entry (due() once its time comes) */
		  (ownersDone < N || L == 1 || shutdown || (LIVE_NOTICED(1) && LIVE_NOTICED(2)))) ->
		assert(false)
	}
}

init {
	atomic {
		run Owner(1);
		run Owner(2)
	}
}
