/*
 * Promela model of tsync.Mutex (blitzio/tsync/mutex.go): sync.Mutex-style fairness for
 * tasks, with waiters that can be dropped at any moment.
 *
 *   state word   L (locked), W (queue not empty), K (a woken waiter is on its way),
 *                H (hand-off mode); every CAS of the Go code is one atomic step here.
 *   mu           the Mutex's internal lock, guarding the FIFO queue and every change
 *                of W and H, and every setting of K.
 *   Unlock       normal mode: free the lock (one CAS); if W was set and K clear, take mu
 *                and, if the lock is still free, nobody is woken and somebody waits,
 *                unlink the oldest waiter, set K, and wake it outside mu. Hand-off mode:
 *                under mu, give the lock (kept locked) to the oldest waiter; hand-off
 *                mode stays or ends (the starvation clock: a free choice here).
 *   Locker       TryLock fast path (free and not hand-off); else under mu take the lock
 *                if free, or set W and queue at the tail. Woken in normal mode it
 *                competes: takes the lock if free (clearing K), else under mu re-queues
 *                at the front (clearing K, maybe switching to hand-off mode: a free
 *                choice). Handed the lock, it owns it. A dropper may give up at any
 *                moment: under mu it leaves the queue (the last one out clears W and H),
 *                or, woken, clears K and wakes the next waiter if the lock is free, or,
 *                handed the lock, releases it as Unlock would.
 *   Barger       takes the free lock (TryLock) twice, never waiting: the running task
 *                that competes with woken waiters.
 *
 * Checked: mutual exclusion (assert in the critical section); no lost wake-up or lost
 * lock (a staying waiter blocked forever is an invalid end state, which spin reports);
 * at the end the lock is free, nobody is queued and no flag is left set.
 * The broken twin drops a woken waiter without passing its wake on.
 */
#define NL 3

bool L = false; bool W = false; bool K = false; bool H = false;
bool mu = false;
byte q[NL];
byte qlen = 0;
bool queued[NL + 1];
byte sig[NL + 1];    /* 0 none, 1 woken, 2 handed */
bool wake[NL + 1];   /* the waker ran (the parker's channel) */
byte incs = 0;
byte served = 0;
byte dropped = 0;

inline acquire() { atomic { !mu -> mu = true } }
inline release() { mu = false }

inline crit() {
	d_step { incs++; assert(incs == 1) };
	d_step { incs--; served++ }
}

inline pushBack(i) { d_step { q[qlen] = i; qlen++; queued[i] = true } }
inline pushFront(i) {
	d_step { q[2] = q[1]; q[1] = q[0]; q[0] = i; qlen++; queued[i] = true }
}
inline popFront(w) {
	d_step { w = q[0]; q[0] = q[1]; q[1] = q[2]; q[2] = 0; qlen--; queued[w] = false }
}
inline remove(i) {
	d_step {
		k = 0;
		do
		:: q[k] != i -> k++
		:: else -> break
		od;
		do
		:: k + 1 < qlen -> q[k] = q[k + 1]; k++
		:: else -> break
		od;
		qlen--; q[qlen] = 0; queued[i] = false
	}
}

/* wakeLocked: under mu. */
inline wakeLocked(w) {
	if
	:: atomic { !L && !K && !H && W -> K = true } ->
		popFront(w); W = (qlen > 0); sig[w] = 1
	:: else -> w = 0
	fi
}

/* handOffLocked: under mu, lock held in hand-off mode (H implies W). */
inline handOffLocked(w) {
	assert(qlen > 0 && W && L && !K);
	popFront(w);
	W = (qlen > 0);
	if
	:: W -> skip       /* the served waiter starved: stay in hand-off mode */
	:: true -> H = false
	fi;
	sig[w] = 2
}

inline wakeOutside(w) {
	if
	:: w != 0 -> wake[w] = true
	:: else -> skip
	fi
}

/* unlock by the holder. In hand-off mode the Go code reads the state, takes mu and
 * CASes from what it read: if the last waiter left meanwhile (ending hand-off mode) the
 * CAS fails and it starts over; here, H is looked at again under mu. */
inline unlock(w) {
	w = 0;
retry:
	if
	:: atomic { !H -> L = false; doWake = W && !K } ->
		if
		:: doWake -> acquire(); wakeLocked(w); release()
		:: else -> skip
		fi
	:: atomic { H -> skip } ->
		acquire();
		if
		:: H -> handOffLocked(w); release()
		:: else -> release(); goto retry
		fi
	fi;
	wakeOutside(w)
}

proctype Barger() {
	byte w = 0; bool doWake = false;
	byte n = 0;
	do
	:: n < 2 ->
		if
		:: atomic { !L && !H -> L = true } ->
			crit(); unlock(w); n++
		:: atomic { L || H -> n++ }  /* TryLock failed: gives up this turn */
		fi
	:: else -> break
	od
}

proctype Locker(byte i) {
	byte w = 0; byte k = 0; bool doWake = false;
	bool dropper;
	if
	:: dropper = true
	:: dropper = false
	fi;
	if
	:: atomic { !L && !H -> L = true } -> goto own
	:: else -> skip
	fi;
	acquire();
	if
	:: atomic { !L && !H -> L = true } -> release(); goto own
	:: atomic { L || H -> W = true } -> pushBack(i); release()
	fi;
waiting:
	if
	:: wake[i] ->
		wake[i] = false;
		if
		:: sig[i] == 2 -> sig[i] = 0; goto own
		:: sig[i] == 1 -> sig[i] = 0; goto compete
		:: sig[i] == 0 -> goto waiting   /* stale wake */
		fi
	:: dropper -> goto drop
	fi;
compete:
	if
	:: atomic { !L -> assert(!H); L = true; K = false } -> goto own
	:: else -> skip
	fi;
	acquire();
	if
	:: atomic { !L -> L = true; K = false } -> release(); goto own
	:: atomic { L -> W = true; K = false;
		if
		:: H = true
		:: skip
		fi } ->
		pushFront(i); release(); goto waiting
	fi;
drop:
	acquire();
	if
	:: queued[i] ->
		remove(i);
		if
		:: qlen == 0 -> W = false; H = false
		:: else -> skip
		fi
	:: !queued[i] && sig[i] == 1 ->
		sig[i] = 0;
		K = false;
		wakeLocked(w)
	:: !queued[i] && sig[i] == 2 ->
		/* handed the lock, never took it: release it as Unlock would */
		sig[i] = 0;
		if
		:: H -> handOffLocked(w)
		:: else -> L = false; wakeLocked(w)
		fi
	:: else -> skip
	fi;
	release();
	wakeOutside(w);
	dropped++;
	goto done;
own:
	crit();
	unlock(w);
done:
	skip
}

init {
	atomic {
		run Locker(1); run Locker(2); run Locker(3); run Barger()
	}
	(_nr_pr == 1);
	assert(!L && !W && !K && !H && qlen == 0);
	assert(served + dropped >= NL)
}
