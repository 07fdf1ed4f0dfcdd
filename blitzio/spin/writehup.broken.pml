/*
 * Promela model of a write waiting for send space on io_uring one-shot readiness when
 * the peer half-closes (blitzio/internal/poller/uring_linux.go completeOnceLocked and
 * armOnceLocked; blitzio/io_scheduled.go pollReady; blitzio/net_fd.go pollIOShort),
 * checked by spin in CI (.ci/spin.sh). BROKEN TWIN of writehup.pml: see the Driver.
 *
 * io_uring adds POLLRDHUP to the events of every poll, so a POLLOUT poll completes when
 * the peer shuts down its writing side even if there is still no room, and at once if
 * it is armed after that. The model:
 *
 *   Kernel   two events, in either order: the peer half-closes (hup), and the peer reads,
 *            which makes room. An armed poll posts a completion at each event (a one-shot
 *            poll then stops; the completion stays in the CQ ring until reaped), and at
 *            the arming if room or hup is already there.
 *   Driver   reaps a completion. One-shot: the slot is disarmed. Room in it: Writable is
 *            ORed into the readiness word with tick+1 and the waiting writer is woken.
 *            POLLRDHUP alone: the slot switches to a multishot poll, armed again if the
 *            one-shot ended (it posts at once, for the hup, and then at each event).
 *   Writer   wants room: if the word says Writable it tries the write (EAGAIN without
 *            room: Writable cleared if the tick is still the one it loaded); otherwise
 *            it registers its waker, arms (unless armed), re-loads the word and sleeps
 *            unless it changed.
 *
 * Checked: the writer always gets its room (no invalid end state: it never sleeps for
 * ever), whatever the order of the events and the arming. The broken twin frees the slot
 * on POLLRDHUP alone and reports only the read side, as the poller did before: spin
 * finds the writer asleep for ever.
 */
bool room = false;   /* the peer has read: the socket is writable */
bool hup = false;    /* the peer has shut down its writing side */
bool armed = false;  /* the poller's armed flag for the write direction */
bool multi = false;  /* the write direction's poll is multishot */
bool posted = false; /* a completion waits in the CQ ring */
bool prm = false;    /* ... and it reports room */
bool writable = false;
byte tick = 0;
bool waiter = false;
bool woken = false;
bool mu = false;
bool done = false;
bool kdone = false;

inline lock()   { atomic { !mu -> mu = true } }
inline unlock() { mu = false }

/* A wake-up of the socket: an armed poll in the kernel posts (one-shot: only if it has
 * not posted yet; multishot: again, the masks ORed into the pending completion). */
inline event() {
	if
	:: armed && (multi || !posted) -> posted = true; prm = prm || room
	:: else -> skip
	fi
}

proctype Kernel() {
	do
	:: atomic { !hup -> hup = true; event() }
	:: atomic { !room -> room = true; event() }
	:: atomic { room && hup -> kdone = true; break }
	od
}

proctype Driver() {
	bool r;
	do
	:: atomic { posted -> posted = false; r = prm; prm = false;
		if
		:: !multi -> armed = false
		:: else -> skip
		fi }
		if
		:: r ->
			d_step { writable = true; tick = (tick + 1) % 4 }
			lock();
			if
			:: waiter -> waiter = false; woken = true
			:: else -> skip
			fi;
			unlock()
		:: else ->
			/* POLLRDHUP alone. BROKEN: the slot is freed (disarmed, and a one-shot
			 * again) and only the read side hears of it: no re-arming, no wake-up. */
			skip
		fi
	:: atomic { done && !posted -> break }
	od
}

proctype Writer() {
	bool w;
	byte tk;
	do
	:: done -> break
	:: else ->
		d_step { w = writable; tk = tick }
		if
		:: w ->
			if
			:: atomic { room -> done = true }
			:: atomic { !room -> skip } ->
				d_step {
					if
					:: tick == tk -> writable = false
					:: else -> skip
					fi
				}
			fi
		:: else ->
			lock(); waiter = true; unlock();
			atomic {
				if
				:: !armed -> armed = true;
					if
					:: room || hup -> posted = true; prm = room
					:: else -> skip
					fi
				:: else -> skip
				fi
			}
			d_step { w = writable }
			if
			:: w -> skip
			:: else -> atomic { woken -> woken = false }
			fi
		fi
	od
}

init {
	atomic {
		run Kernel();
		run Driver();
		run Writer()
	}
}
