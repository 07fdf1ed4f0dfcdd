// JEC sleep protocol of the blitz pool (blitz/sleep.go, after Rayon's rayon-core sleep module).
//
// Two workers and one poster. The poster publishes jobs of two kinds, as a busy worker
// does (deque: no fence, the JEC protocol alone must catch it) and as Pool.Go does
// (injection: fence 1, and the sleeper's last look at the queue after fence 2). Every
// atomic block is one sequentially consistent atomic operation of the Go code (Go's
// sync/atomic is SC); a mutex is a bool taken with an atomic test-and-set.
//
// Property: when the whole system is stuck (timeout: the poster is done and every
// worker is blocked), no job is pending: a posted job is always taken, no worker sleeps
// forever while work waits. Workers block only at end-labelled states, so any other
// stuck state is reported as an invalid end state too.
//
// BROKEN selects a deliberately wrong protocol that spin must reject (see
// jec.broken.pml and jec_nocheck.broken.pml): 1 = a tempting variant, where the
// announcing worker increments the JEC "if even" like posters do (the JEC then sticks
// at odd and the sleeper's check sees nothing); 2 = the sleeper registers without
// comparing the JEC to the value it saved.
#define BROKEN 2

#define W     2
#define JOBS  2
#define JECM  8   // JEC modulo: at most 2 posts between a save and its check, so 8 never aliases

byte sleeping = 0;
byte inactive = 0;
byte jec = 0;
byte deq = 0;       // published deque jobs not yet stolen
byte inj = 0;       // injected jobs not yet taken
byte taken = 0;
bool mutex[W];
bool blocked[W];
bool parked[W];

inline lock(m)   { atomic { !m -> m = true } }
inline unlock(m) { m = false }

// wakeSpecific + wakeThreads(n): the waker clears blocked and decrements sleeping,
// under the sleeper's mutex; parked is the lock-free pre-check.
inline wakeThreads(n) {
	k = 0;
	do
	:: k < W && n > 0 ->
		if
		:: parked[k] ->
			lock(mutex[k]);
			if
			:: blocked[k] -> blocked[k] = false; sleeping--; n--
			:: else -> skip
			fi;
			unlock(mutex[k])
		:: else -> skip
		fi;
		k++
	:: else -> break
	od
}

// newJobs(1, wasEmpty): toggle the JEC even->odd and read the counters in the same
// atomic step; wake only what the awake-but-idle workers cannot serve.
inline newJobs(wasEmpty) {
	atomic {
		if
		:: jec % 2 == 0 -> jec = (jec + 1) % JECM
		:: else -> skip
		fi;
		s = sleeping; i = inactive
	}
	idle = (i > s -> i - s : 0);
	if
	:: wasEmpty && idle >= 1 -> n = 0
	:: else -> n = (s > 0 -> 1 : 0)
	fi;
	wakeThreads(n)
}

active proctype poster() {
	byte posted = 0, s, i, idle, n, k;
	bool wasEmpty;
	do
	:: posted < JOBS ->
		if
		:: atomic { wasEmpty = (deq == 0); deq++ }   // Deque.Push (release store of bottom)
		:: atomic { wasEmpty = (inj == 0); inj++ }   // TreiberStack.Push; fence 1 is the SC order
		fi;
		newJobs(wasEmpty);
		posted++
	:: else -> break
	od
}

// findWork: steal a deque job or take an injected one.
inline findWork(got) {
	atomic {
		if
		:: deq > 0 -> deq--; taken++; got = true
		:: inj > 0 -> inj--; taken++; got = true
		:: else -> got = false
		fi
	}
}

proctype worker(byte id) {
	byte saved;
	bool got;
look:
	findWork(got);
	if
	:: got -> goto look        // ran the job
	:: else -> skip
	fi;
	inactive++;                   // counters.addInactive (atomic add)
idle:
	// Rounds 0..SpinRounds-1: yield and look (one look is enough for safety).
	findWork(got);
	if
	:: got -> inactive--; goto look
	:: else -> skip
	fi;
	// Announce sleepy: odd -> even, save the value AFTER the toggle.
	atomic {
#if BROKEN == 1
		if
		:: jec % 2 == 0 -> jec = (jec + 1) % JECM
		:: else -> skip
		fi;
#else
		if
		:: jec % 2 == 1 -> jec = (jec + 1) % JECM
		:: else -> skip
		fi;
#endif
		saved = jec
	}
	// One more round.
	findWork(got);
	if
	:: got -> inactive--; goto look
	:: else -> skip
	fi;
	// Sleep: lock, (CoreLatch SLEEPY->SLEEPING: nobody sets it in this model), parked,
	// then compare the JEC and register with one CAS from the value compared.
	lock(mutex[id]);
	parked[id] = true;
	atomic {
#if BROKEN == 2
		sleeping++
#else
		if
		:: jec != saved ->
			parked[id] = false; unlock(mutex[id]);
			goto idle            // new work since we announced: look again, re-announce
		:: else -> sleeping++
		fi
#endif
	}
	// Fence 2, then the last look at the injection queue.
	if
	:: atomic { inj > 0 -> sleeping-- } ->
		parked[id] = false; unlock(mutex[id]);
		goto idle
	:: atomic { inj == 0 -> blocked[id] = true; unlock(mutex[id]) }  // cond.Wait releases the mutex
	fi;
end_sleep:
	!blocked[id];
	lock(mutex[id]);              // cond.Wait reacquires it
	parked[id] = false;
	unlock(mutex[id]);
	goto idle
}

init {
	atomic {
		run worker(0);
		run worker(1)
	}
}

// When nothing can move any more, no job may be pending.
active proctype monitor() {
end_mon:
	timeout -> assert(deq == 0 && inj == 0)
}
