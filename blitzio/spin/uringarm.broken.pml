/*
 * BROKEN variant of uringarm.pml: the arming does not look at the socket's state, only
 * at later arrivals (as a poll armed after the data came would be if it waited for the
 * next wake-up of the socket). spin must find the lost wake-up: both bytes arrive before
 * the reader arms, and nothing wakes it.
 *
 * Promela model of arming on demand with io_uring one-shot readiness polls
 * (blitzio/io_scheduled.go pollReady and ioDriver.arm; the poller's Arm and
 * completeOnceLocked in internal/poller/uring_linux.go), checked by spin in CI
 * (.ci/spin.sh).
 *
 *   Kernel   bytes arrive (two in all). An armed poll fires once the socket has data: its
 *            completion is posted, and the slot's armed flag stays set until the driver
 *            reaps the completion (the flag is the poller's, cleared under its lock when
 *            it processes the completion), so an Arm in between finds the poll "armed"
 *            and does nothing.
 *   Driver   reaps a posted completion: clears armed, ORs Readable into the readiness
 *            word with tick+1, then takes the waiter under the socket's mutex and wakes it.
 *   Reader   reads until it has both bytes: loads the word; if ready it reads (a read that
 *            finds nothing is EAGAIN and clears Readable only if the tick is still the one
 *            it loaded); if not ready it registers its waker under the mutex, then arms
 *            the poll (unless armed), and the arming looks at the socket's state at once
 *            (a ready socket completes the poll during the submission), then re-loads the
 *            word and sleeps unless it changed.
 *
 * Checked: no lost wake-up (a reader that sleeps is always woken: no invalid end state),
 * with data arriving before, during and after the arming, and a completion posted but
 * not yet reaped when the reader arms again.
 */
#define READY 1

byte ready = 0;      /* Readable bit of the readiness word */
byte tick = 0;       /* the word's tick, modulo 4 */
bool waiter = false; /* the reader's waker is in the list */
bool woken = false;  /* the reader's task was woken */
bool mu = false;     /* the socket's mutex */
byte data = 0;       /* bytes in the kernel's receive queue */
byte sent = 0;
bool armed = false;  /* the poller's armed flag */
bool posted = false; /* a completion waits in the CQ ring */
byte got = 0;

inline lock()   { atomic { !mu -> mu = true } }
inline unlock() { mu = false }

proctype Kernel() {
	do
	:: sent < 2 -> atomic { data++; sent++ }
	:: atomic { armed && !posted && data > 0 && sent < 2 -> posted = true } /* only with an arrival to come */
	:: got == 2 -> break
	od
}

proctype Driver() {
	do
	:: atomic { posted -> posted = false; armed = false }
		d_step { ready = READY; tick = (tick + 1) % 4 }
		lock();
		if
		:: waiter -> waiter = false; woken = true
		:: else -> skip
		fi;
		unlock()
	:: got == 2 -> break
	od
}

proctype Reader() {
	byte r, tk;
	do
	:: got == 2 -> break
	:: else ->
		d_step { r = ready; tk = tick }
		if
		:: r == READY ->
			if
			:: atomic { data > 0 -> got = got + data; data = 0 }
			:: atomic { data == 0 -> skip } ->
				d_step {
					if
					:: tick == tk -> ready = 0
					:: else -> skip
					fi
				}
			fi
		:: else ->
			lock(); waiter = true; unlock();
			/* arm: queued, then submitted; the submission completes a poll on a
			 * socket that already has data */
			atomic {
				if
				:: !armed -> armed = true
				:: else -> skip
				fi
			}
			d_step { r = ready }
			if
			:: r == READY -> skip
			:: else -> atomic { woken -> woken = false } /* park until woken */
			fi
		fi
	od
}

init {
	atomic {
		run Kernel();
		run Driver();
		run Reader()
	}
}
