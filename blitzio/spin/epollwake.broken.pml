/* epollwake.broken.pml: epollwake.pml with woken cleared before the eventfd is drained (BROKEN below). spin must find the lost wake-up: the poller asleep in epoll with work published. */
/*
 * Promela model of how the epoll poller coalesces Wakes (blitzio/internal/poller,
 * epoll_linux.go: Wake, and Poll's handling of the eventfd's event), checked by spin in
 * CI (.ci/spin.sh).
 *
 *   Waker   publishes work for the polling goroutine (req++), then Wake: a CAS of woken
 *           from false to true; only the Wake that wins it writes the eventfd (which
 *           makes it readable). The others write nothing: a write is pending.
 *   Poller  takes published work if there is any; otherwise it waits in epoll until the
 *           eventfd is readable, drains it (a read takes the whole counter: not readable
 *           any more), and then clears woken.
 *
 * Checked: the poller never sleeps in epoll while published work is left and every
 * Waker has finished (spin reports such a state as an invalid end state), with two
 * Wakers waking twice each and every interleaving. Clearing woken before the drain (the
 * order of an earlier version; epollwake.broken.pml) lets a Wake between the clear and
 * the drain win the CAS and write, the drain swallow that write, and woken stay set
 * over an empty eventfd: spin finds a later Wake that writes nothing while the poller
 * sleeps.
 */
#define WAKERS 2
#define ROUNDS 2
#define BROKEN 1

byte req = 0;          /* published work not yet taken */
byte taken = 0;
bool woken = false;
bool readable = false; /* the eventfd holds a count */

proctype Waker() {
	byte i = 0;
	bool won;
	do
	:: i < ROUNDS ->
		req++;
		atomic {
			if
			:: !woken -> woken = true; won = true
			:: else -> won = false
			fi
		}
		if
		:: won -> readable = true
		:: else -> skip
		fi;
		i++
	:: else -> break
	od
}

proctype Poller() {
	do
	:: taken == WAKERS * ROUNDS -> break
	:: else ->
		if
		:: req > 0 -> atomic { req--; taken++ }
		:: else ->
			readable;          /* epoll_wait returns: the eventfd is readable */
#ifdef BROKEN
			woken = false;
			readable = false;  /* the drain */
#else
			readable = false;  /* the drain */
			woken = false;
#endif
		fi
	od
}

init {
	atomic {
		run Poller();
		run Waker();
		run Waker();
	}
}
