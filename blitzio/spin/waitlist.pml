/*
 * Promela model of the waiter-list hand-off of package tsync (blitzio/tsync/waitlist.go
 * and notify.go; Semaphore, RwLock, OnceCell and Mutex in hand-off mode hand off the
 * same way; mutex.pml models Mutex's normal mode, where a waiter is woken to compete): a
 * notification handed to a waiter races the waiter being dropped (the loser of a Select,
 * an expired Timeout, an aborted task).
 *
 *   Notifier 1-2  NotifyOne: under the primitive's mutex, unlink the oldest waiter and
 *                 mark it notified, or store the permit if nobody waits (a permit already
 *                 stored absorbs it: counted as coalesced); then wake the waiter outside
 *                 the mutex.
 *   Waiter 1-3    Notified: under the mutex, consume a stored permit or queue itself at
 *                 the tail. Then either it waits for its wake and takes the notification
 *                 (under the mutex), or it is dropped at any moment: under the mutex it
 *                 leaves the queue if still queued, and if it was already notified but
 *                 never saw it, it passes the notification on exactly as NotifyOne would
 *                 (to the next waiter, or the stored permit), waking that waiter outside
 *                 the mutex.
 *
 * Checked: every notification is consumed by exactly one waiter, stored, or coalesced
 * with a stored one (the final assert: nothing lost, nothing duplicated); a waiter that
 * stays is woken whenever it is handed a notification (a staying waiter left without one
 * once everything else has finished gives up; it must not hold an unseen notification).
 * The broken twin drops a notified waiter without passing the notification on.
 */
#define NW 3
#define NN 2

bool lock = false;
byte q[NW];            /* the FIFO waitList, waiter ids 1..NW */
byte qlen = 0;
bool queued[NW + 1];
bool notified[NW + 1];
bool woken[NW + 1];
byte permit = 0;
byte coalesced = 0;
byte consumed = 0;
byte sent = 0;

inline acquire() { atomic { !lock -> lock = true } }
inline release() { lock = false }

inline push(i) {
	d_step { q[qlen] = i; qlen++; queued[i] = true }
}

inline popFront(w) {
	d_step {
		if
		:: qlen > 0 ->
			w = q[0]; q[0] = q[1]; q[1] = q[2]; q[2] = 0; qlen--; queued[w] = false
		:: else -> w = 0
		fi
	}
}

inline remove(i) {
	d_step {
		k = 0;
		do
		:: k < qlen && q[k] != i -> k++
		:: k >= qlen || q[k] == i -> break
		od;
		assert(k < qlen);
		do
		:: k + 1 < qlen -> q[k] = q[k + 1]; k++
		:: else -> break
		od;
		qlen--; q[qlen] = 0; queued[i] = false
	}
}

/* notifyOneLocked: hand to the oldest waiter, or store the permit. */
inline notifyOneLocked(w) {
	popFront(w);
	if
	:: w != 0 -> notified[w] = true
	:: else ->
		if
		:: permit == 1 -> coalesced++
		:: else -> permit = 1
		fi
	fi
}

inline wakeOutside(w) {
	if
	:: w != 0 -> woken[w] = true
	:: else -> skip
	fi
}

proctype Notifier() {
	byte w = 0;
	acquire();
	notifyOneLocked(w);
	sent++;
	release();
	wakeOutside(w)
}

proctype Waiter(byte i) {
	byte w = 0;
	byte k = 0;
	acquire();
	if
	:: permit == 1 ->
		permit = 0; consumed++; release(); goto done
	:: else ->
		push(i); release()
	fi;
	if
	:: true ->
		/* stays: parked until its waker runs, then polls */
		if
		:: woken[i] ->
			acquire();
			assert(notified[i] && !queued[i]);
			notified[i] = false;
			consumed++;
			release();
			goto done
		:: timeout ->
			/* every notification is spent and nothing else can run: this waiter
			 * waits in vain and its task gives up. Had it been handed one, its
			 * wake would have run before the system stalled: a lost wake-up. */
			assert(!notified[i]);
			goto drop
		fi
	:: true ->
		/* dropped, at any point relative to the notifiers */
drop:
		acquire();
		if
		:: queued[i] -> remove(i)
		:: !queued[i] && notified[i] ->
			notified[i] = false;
			notifyOneLocked(w)   /* the pass-on */
		:: else -> skip
		fi;
		release();
		wakeOutside(w)
	fi;
done:
	skip
}

init {
	atomic {
		run Waiter(1); run Waiter(2); run Waiter(3);
		run Notifier(); run Notifier()
	}
	(_nr_pr == 1);
	assert(consumed + permit + coalesced == sent);
	assert(sent == NN)
}
