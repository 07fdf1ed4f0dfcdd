#define BROKEN
/*
 * Promela model of how blitzio's workers take the I/O poller duty when they park
 * (blitzio/worker.go park, io_driver.go addLive, runtime.go activate/notifyParked),
 * checked by spin in CI (.ci/spin.sh).
 *
 * While nothing is registered (live == 0) no worker parks inside the poller: each parks
 * on its channel, which a new task wakes without a system call. So the first
 * registration must bring a worker into the poller:
 *
 *   Registrar  live = 1; then, if no worker is polling, notifyParked: unless a worker
 *              is searching or none is parked, clear one parked bit, count it searching,
 *              send it a token (and Poller.Wake if it was the poller). Then the socket
 *              becomes ready (an I/O event only a worker in the poller can deliver).
 *   Worker     ends its search; takes the poller duty if live > 0 and the poller's
 *              try-lock is free; sets its parked bit; re-checks: if it did not take the
 *              duty and live > 0 and nobody polls, it does not sleep (it clears its bit,
 *              or takes the token of whoever cleared it, and parks again). Otherwise it
 *              sleeps: in the poller until an event or a wake, or on its channel.
 *
 * Checked: the event is always delivered (when everything is blocked, `served` holds:
 * no worker sleeps on its channel while the registered socket goes unpolled), with two
 * workers and every interleaving of the decision, the parked bit and the registration.
 * iopark.broken.pml drops the worker's re-check, and spin finds the lost wake-up.
 */
#define N 2
#define NONE 255

byte live = 0;
bool pollMu = false;
byte polling = NONE;
byte parked = 0;       /* bit i: worker i parked */
byte searching = N;    /* both workers start out searching */
bool ioEvent = false;  /* readiness the poller has still to deliver */
bool ioWake = false;   /* Poller.Wake was called */
bool served = false;   /* a poller delivered the event */
chan unpark[N] = [1] of { bit };

proctype Worker(byte id) {
	bool ioPoll;
	bool srch = true;
	bool cleared;
park:
	if
	:: srch -> srch = false; searching--
	:: else -> skip
	fi;
	atomic {
		if
		:: live > 0 && !pollMu -> pollMu = true; ioPoll = true
		:: else -> ioPoll = false
		fi
	}
	if
	:: ioPoll -> polling = id
	:: else -> skip
	fi;
	parked = parked | (1 << id);
#ifndef BROKEN
	if
	:: !ioPoll && live > 0 && polling == NONE ->
		/* re-check hit: give up the parked bit (or the token of whoever took it) */
		atomic {
			if
			:: (parked & (1 << id)) != 0 -> parked = parked & ~(1 << id); cleared = true
			:: else -> cleared = false
			fi
		}
		if
		:: !cleared -> unpark[id]?_; srch = true
		:: else -> skip
		fi;
		goto park
	:: else -> skip
	fi;
#endif
	if
	:: ioPoll ->
		/* inside epoll_wait / io_uring_enter until an event or a wake */
end_poll:
		atomic {
			if
			:: ioEvent -> ioEvent = false; served = true
			:: ioWake -> ioWake = false
			fi
		}
		polling = NONE;
		pollMu = false;
		atomic {
			if
			:: (parked & (1 << id)) != 0 -> parked = parked & ~(1 << id); cleared = true
			:: else -> cleared = false
			fi
		}
		if
		:: !cleared -> unpark[id]?_; srch = true
		:: else -> skip
		fi;
		if
		:: served -> goto done
		:: else -> goto park
		fi
	:: else ->
end_sleep:
		unpark[id]?_;
		srch = true;
		goto park
	fi;
done:
	skip
}

proctype Registrar() {
	byte woke = NONE;
	live = 1;
	if
	:: polling == NONE ->
		if
		:: searching != 0 || parked == 0 -> skip
		:: else ->
			atomic {
				if
				:: (parked & 1) != 0 -> parked = parked & ~1; woke = 0
				:: (parked & 2) != 0 -> parked = parked & ~2; woke = 1
				:: parked == 0 -> woke = NONE
				fi
			}
			if
			:: woke != NONE ->
				searching++;
				unpark[woke]!1;
				if
				:: polling == woke -> ioWake = true
				:: else -> skip
				fi
			:: else -> skip
			fi
		fi
	:: else -> skip
	fi;
	ioEvent = true
}

/* When nothing can move, the event must have been delivered. */
active proctype Monitor() {
	timeout -> assert(served)
}

init {
	atomic {
		run Worker(0);
		run Worker(1);
		run Registrar()
	}
}
