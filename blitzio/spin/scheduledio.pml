/*
 * Promela model of the I/O driver's readiness/waker hand-off (blitzio/io_scheduled.go,
 * io_driver.go), checked by spin in CI (.ci/spin.sh).
 *
 *   Driver   the worker polling epoll: bytes arrive (kernel), the edge is reported; the
 *            driver drops an event whose token generation is not the slot's current one,
 *            else it ORs Readable into the readiness word with tick+1, then takes the
 *            waiter list under the socket's mutex and wakes it.
 *   Reader   a task reading until it has both bytes or sees the socket closed: it loads
 *            the word; if ready it reads (a read that finds nothing is EAGAIN and clears
 *            Readable only if the tick is still the one it loaded; so may a read that
 *            empties the queue, a short TCP read); if not ready it
 *            registers its waker under the mutex, re-loads the word, and sleeps unless it
 *            changed.
 *   Closer   closes the socket: sets the shutdown bit, takes and wakes the waiters; the
 *            slot is then reused by a new owner (generation 2) while an event for the old
 *            registration is still in flight.
 *
 * Checked: no lost wake-up (a reader that sleeps is always woken: no invalid end state,
 * with readiness arriving during the reader's poll, between its EAGAIN and its clear,
 * and with close racing a wake), and a stale event never marks the new owner ready.
 */
#define READY 1

byte ready = 0;      /* Readable bit of the current owner's word */
byte tick = 0;       /* the word's tick, modulo 4 */
bool shut = false;   /* shutdown bit */
bool waiter = false; /* the reader's waker is in the list */
bool woken = false;  /* the reader's task was woken (a wake-up token) */
bool mu = false;     /* the socket's mutex */
byte data = 0;       /* bytes in the kernel's receive queue */
byte gen = 1;        /* the slot's current generation */
bool ready2 = false; /* the new owner's readiness (generation 2) */
byte got = 0;

inline lock()   { atomic { !mu -> mu = true } }
inline unlock() { mu = false }

proctype Driver() {
	byte i = 0;
	byte evgen;
	do
	:: i < 2 ->
		atomic { data++; evgen = 1 } /* the edge is for the registration of generation 1 */
		/* the event is dispatched: maybe after the slot was reused */
		if
		:: evgen == gen && gen == 1 ->
			d_step {
				if
				:: !shut -> ready = READY; tick = (tick + 1) % 4
				:: else -> skip
				fi
			}
			lock();
			if
			:: waiter -> waiter = false; woken = true
			:: else -> skip
			fi;
			unlock()
		:: evgen == gen && gen == 2 -> ready2 = true /* never: the check drops it */
		:: evgen != gen -> skip /* stale: dropped */
		fi;
		i++
	:: else -> break
	od
}

proctype Reader() {
	byte r, tk;
	bool s;
	do
	:: got == 2 -> break
	:: else ->
		d_step { r = ready; tk = tick; s = shut }
		if
		:: s -> break
		:: r == READY ->
			/* the system call */
			if
			:: atomic { data > 0 -> got = got + data; data = 0 } ->
				/* It took every byte queued: a short read, which (TCP) also
				 * clears Readable if the tick is still the one it loaded; or a read that
				 * filled its buffer, which clears nothing. */
				if
				:: d_step {
					if
					:: tick == tk && !shut -> ready = 0
					:: else -> skip
					fi
				   }
				:: skip
				fi
			:: atomic { data == 0 -> skip } ->
				/* EAGAIN: clear only if no readiness was delivered since the load */
				d_step {
					if
					:: tick == tk && !shut -> ready = 0
					:: else -> skip
					fi
				}
			fi
		:: else ->
			lock(); waiter = true; unlock();
			d_step { r = ready; s = shut }
			if
			:: r == READY || s -> skip
			:: else -> atomic { woken -> woken = false } /* park until woken */
			fi
		fi
	od
}

proctype Closer() {
	d_step { shut = true }
	lock();
	if
	:: waiter -> waiter = false; woken = true
	:: else -> skip
	fi;
	unlock();
	/* the fd number and slot are reused by a new registration */
	gen = 2
}

init {
	atomic {
		run Driver();
		run Reader();
		if
		:: run Closer()
		:: skip
		fi
	}
}

/* a stale event never reaches the new owner */
active proctype Monitor() {
end:	atomic { ready2 -> assert(false) }
}
