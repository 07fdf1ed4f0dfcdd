// cc-flags: -DCOLLAPSE
/*
 * timerqueue.pml: registration and cancellation of blitzio timers (../timer.go,
 * ../time.go, ../worker.go) through a lock-free pending stack, checked exhaustively by
 * spin in CI (.ci/spin.sh).
 *
 * The protocol. A timer entry (inside a SleepFuture) has an atomic state word st. Its
 * owner registers it without the timer lock L: it writes deadline and waker (plain: the
 * entry is its own), stores T_QUEUED, pushes the entry on a Treiber stack H, lowers
 * nextAt (CAS-min), sets active if clear, and wakes the timer driver if the deadline is
 * before parkedUntil. Cancelling a still-queued entry is one CAS T_QUEUED -> T_CANCELLED,
 * again without L: the entry stays physically in the stack and the next drainer skips
 * it. Cancelling a T_WHEEL entry takes L. Drainers (anyone holding L) swap H to nil and
 * move each T_QUEUED entry into the wheel by CAS T_QUEUED -> T_WHEEL, firing it at once
 * if already due. Re-registering a T_CANCELLED entry first drains under L, so the entry
 * is surely out of the stack and out of every popped list before its next field is
 * rewritten. processTimers drains, fires due wheel entries, stores nextAt (the wheel's
 * next deadline or INF), clears active if the wheel is empty, then re-checks H: a push
 * that raced with those stores is drained and the stores redone. The parking timer
 * driver drains, reads the wheel's next expiration, unlocks and publishes it in
 * parkedUntil, which it resets to INF whenever it wakes.
 *
 * Processes (sizes: N = 2 entries, deadlines 1..TMAX = 1..2, time 0..TMAX):
 *   Owner(1)  registers its entry; may Reset it once (cancel, then register again with a
 *             new deadline: from T_IDLE, T_CANCELLED or T_FIRED); then Drops it
 *             (cancel) or just waits;
 *   Owner(2)  registers its entry, then Drops it or waits;
 *   Worker    a worker in any order of: maintenance between tasks (processTimers with
 *             TryLock, when due(): active && nextAt <= now); parking as the timer driver
 *             (sleep until parkedUntil's deadline or a wake; on waking, parkedUntil =
 *             INF and processTimers if active); Runtime.Close's clear (drain, every
 *             wheel entry back to T_IDLE, active = false), after which it exits;
 *   Clock     time advances 0 -> TMAX at arbitrary points.
 * Every deadline choice and every interleaving is explored.
 *
 * One runtime is modelled. A sleep may be reset and polled on another runtime; then the
 * stack H and the lock L of the drain before re-registering are those of the runtime the
 * entry was cancelled in (SleepFuture.rt, which changes only when the entry is registered
 * again), not those of the runtime it moves to. After that drain the entry is in no
 * structure of either runtime and is T_CANCELLED (owned), which is the T_CANCELLED -> push
 * step of this model on the new runtime; so two runtimes interleave as two copies of this
 * model whose entries move only between owner-exclusive states. (Draining the new
 * runtime's stack instead left the entry linked in the old stack while it was pushed on
 * the new one: TestCombSleepMovedBetweenRuntimes.)
 *
 * Checked:
 *   - the pending stack is a real linked list (next[], H), and an entry is never pushed
 *     while it is in the stack or in a list a drainer popped (assert listed[e] == 0 at
 *     every push), never inserted in the wheel twice, and is in the wheel only while
 *     st == T_WHEEL (never while T_IDLE or T_CANCELLED): the Invariant process, checked
 *     in every reachable state;
 *   - a timer fires only while armed (registered and not cancelled since) and due;
 *   - when its owner sees T_IDLE (after a cancel under L, after the drain of a
 *     re-register) the entry is in neither the stack nor the wheel;
 *   - the owner never writes deadline/waker while a drainer or firer reads them: the
 *     owner's write is a window writing[e] of two steps, every read asserts !writing[e];
 *   - no lost timer for busy workers: whenever the owners are done and L is free, every
 *     armed, unfired entry has active set and nextAt <= its deadline, so due() reports
 *     it when its time comes (Invariant);
 *   - no lost timer for a parked driver: when the driver parks for good (empty wheel, no
 *     wake pending, owners done, time at TMAX), every armed entry is T_FIRED; so a
 *     registration racing with the driver's park (after its drain, before or after its
 *     parkedUntil store) wakes it. And the driver settles (at most 3 wakes once nothing
 *     can change) instead of spinning on a due entry it does not fire;
 *   - no deadlock (spin's invalid end states).
 * The liveness checks are skipped once Close ran (timers are then dropped on purpose);
 * the safety checks still apply to owners dropping or resetting late.
 *
 * Abstracted. Each Go atomic operation is one Promela step, ghost bookkeeping is updated
 * in the step it describes, and steps that only touch data no other process can touch
 * at that moment are merged into the neighbouring step: an owner's plain writes while
 * its entry is exclusive; the Treiber push (a failed CAS only retries; the load of H and
 * the write of next[e] are private until the CAS), the CAS-min of nextAt and
 * "if !active { active = true }" are one step each (each is linearizable as one atomic
 * update); a drain is one step (the swap and the walk: every entry of a popped list is
 * touched only by the drainer and by its owner's CAS T_QUEUED -> T_CANCELLED, which
 * gives the same result whether it lands before the swap or before the drainer's CAS;
 * pushes during the walk go to the new stack); the fire loop with the nextAt store is
 * one step (wheel entries change only under L; an owner seeing T_WHEEL a little longer
 * only waits for L). The steps that race stay separate: drain, nextAt store, active
 * store, re-check of H; push, nextAt min, active set, parkedUntil load; parkedUntil
 * store, sleep, parkedUntil reset, active load.
 * Time is a counter and deadlines are 1 or 2, so an entry may be due when drained or
 * later; the wheel is a set (levels and cascading are ../timerwheel.go, tested by
 * timerwheel_test.go); a waker is only an access to be checked for overlap, and wakes
 * after unlock are not modelled. The wake of the timer driver is a token it consumes
 * when it parks (the unpark channel): this relies on the driver's parked bit being set
 * before its drain (worker.park sets it first), so a wake between that drain and the
 * sleep reaches the driver; which worker drives (timerDriver CAS, parked bitmap) is the
 * idle protocol's and not modelled: one worker plays maintenance and driver (whose only
 * shared effects are under L or in the atomics modelled). updateWaker (poll with
 * another waker) is not modelled: it writes the waker under L, where every drainer and
 * firer reads it, and only returns false on T_FIRED. Observe (load st == T_FIRED) is
 * the first load of every owner operation. Owner 1 resets at most once (NRESET; 2 gives
 * 11 million states and 700 MB for no new case: each Reset starts from the same
 * T_IDLE, T_CANCELLED or T_FIRED), owner 2 never (its entry is the other one in the
 * stack, the wheel and the popped lists, and is cancelled in the stack or the wheel).
 *
 * Size: 6.1 million states, about 6 s and 470 MB with -DCOLLAPSE.
 *
 * timerqueue.broken.pml is this file with VARIANT set to 2; spin must reject it. The
 * other variants below are rejected too (by the assertion named): 1 by the owner's
 * "T_IDLE is in no stack" assert in register; 3 by !writing[pend] (the owner, seeing
 * T_FIRED, re-registers and writes the waker while the drainer still reads it); 4 by
 * the parked-for-good check (the driver sleeps on a stale parkedUntil nobody beats).
 */
/* ==== model ==== */
/* VARIANT 0: the protocol. Mistakes spin rejects (2 is timerqueue.broken.pml):
 *   1: Register of a T_CANCELLED entry skips the drain under L and just stores T_IDLE;
 *   2: processTimers does not re-check H after its nextAt/active stores;
 *   3: a drainer firing an already-due entry stores T_FIRED before reading its waker;
 *   4: the timer driver does not reset parkedUntil to INF when it wakes. */
#define VARIANT 0

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
