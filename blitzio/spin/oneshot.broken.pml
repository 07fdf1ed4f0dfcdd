/*
 * BROKEN variant of oneshot.pml: Send does not wake the side table's waiters when the
 * state it replaced had MORE. spin must find the receive stranded in the table.
 *
 * Promela model of tsync's oneshot channel (blitzio/tsync/chan_oneshot.go) waited on from
 * two places at once: one state word updated with atomic operations, one waker slot, and
 * a side table for the waits beyond the first.
 *
 *   Sender       Send: claim (CAS), publish with a fetch-or of SENT, then wake the slot's
 *                waker if the state it replaced had WAKER, and every waiter in the table
 *                if it had MORE. Or Close: CAS in TXCLOSED, waking the same way.
 *   Receiver 1-2 A blocking Recv: look at the state (take the value with a CAS, or end
 *                on a final state); else take RXLOCK and register: a slot holding its own
 *                waker means wait; a slot holding another's means join the table, set
 *                MORE, and if the state had become final meanwhile leave the table and
 *                look again; an empty slot (the probe's zero waker, id 0) is taken back
 *                with a CAS and filled, then WAKER is set and RXLOCK released in one
 *                atomic add. Each receive first registers the probe's zero waker (the
 *                first poll of a blocking wait), which wakes nobody. Receiver 2 may give
 *                up instead of waiting (RecvContext cancelled): under RXLOCK it clears
 *                the slot if it holds its waker, or leaves the table.
 *
 * Checked: no receive waits for ever (a receiver blocked on its wake-up when everything
 * else has ended is an invalid end state); at most one receive gets the value, and when
 * the value was sent one does (the one that did not give up) unless the receiver was
 * dropped; the table is empty at the end.
 * The broken twin's Send ignores MORE, so a receive waiting in the table is stranded.
 */
#define SENT     1
#define TXCLOSED 2
#define TAKEN    4
#define WAKER    8
#define RXLOCK   16
#define MORE     32
#define CLAIMED  64
#define RXCLOSED 128
#define FINAL    (SENT | TXCLOSED | RXCLOSED)

byte state = 0;
byte slot = 0;          /* receiver id whose waker is in the slot; 0: the zero waker */
bool table[3];
bool woken[3];
byte values = 0;        /* receives that got the value */
bool sent = false;
bool gaveUp = false;
bool dropped = false;   /* the receiver was dropped by a poller that is not waiting */
bool withDropper = false;
byte ended = 0;

inline wake(id) { if :: id != 0 -> woken[id] = true :: else -> skip fi }

inline wakeTable() {
	d_step {
		if :: table[1] -> table[1] = false; woken[1] = true :: else -> skip fi;
		if :: table[2] -> table[2] = false; woken[2] = true :: else -> skip fi
	}
}

proctype Sender() {
	byte st, prev;
	if
	:: /* Send */
		do
		:: atomic {
			if
			:: ((state & (CLAIMED | TXCLOSED | RXCLOSED)) != 0) -> goto done
			:: else -> state = state | CLAIMED; break
			fi
		   }
		od;
		atomic { prev = state; state = state | SENT; sent = ((prev & RXCLOSED) == 0) };
		if :: ((prev & WAKER) != 0) -> wake(slot) :: else -> skip fi;
		/* BROKEN: no wakeTable() for MORE */
	:: /* Close */
		do
		:: st = state;
		   if
		   :: ((st & (CLAIMED | TXCLOSED)) != 0) -> goto done
		   :: else -> skip
		   fi;
		   atomic {
			if
			:: state == st -> state = st | TXCLOSED; break
			:: else -> skip
			fi
		   }
		od;
		if :: ((st & WAKER) != 0) -> wake(slot) :: else -> skip fi;
		if :: ((st & MORE) != 0) -> wakeTable() :: else -> skip fi
	fi;
done:
	ended++
}

/* Dropper: a task that holds the receiver in a Select and drops it without having polled
 * it (the other branch won): the receiver's Drop closes it and wakes the waiting receives
 * (the slot's waker even without MORE: it is another's). */
proctype Dropper() {
	byte prev;
	atomic { prev = state; state = state | RXCLOSED; dropped = true };
	if
	:: ((prev & (SENT | TAKEN | RXCLOSED)) == SENT) ->
		d_step { state = state | TAKEN }   /* the value sent and not received is dropped */
	:: else -> skip
	fi;
	if
	:: ((prev & FINAL) == 0) ->
		if :: ((prev & WAKER) != 0) -> wake(slot) :: else -> skip fi;
		if :: ((prev & MORE) != 0) -> wakeTable() :: else -> skip fi
	:: else -> skip
	fi;
	ended++
}

proctype Receiver(byte me; bool mayGiveUp) {
	byte st, prev, wid = 0;   /* wid: the waker registered; 0 for the first (probe) poll */
	bool got = false, locked;
look:
	st = state;
	if
	:: ((st & (TAKEN | RXCLOSED)) != 0) -> goto fin
	:: ((st & (TAKEN | RXCLOSED)) == 0) && ((st & SENT) != 0) ->
		atomic {
			if
			:: state == st -> state = st | TAKEN; got = true
			:: else -> skip
			fi
		};
		if :: got -> goto fin :: else -> goto look fi
	:: ((st & (TAKEN | SENT | RXCLOSED)) == 0) && ((st & TXCLOSED) != 0) -> goto fin
	:: else -> skip
	fi;
	/* lockRx: take RXLOCK unless the state is final */
	atomic {
		if
		:: ((state & FINAL) != 0) -> locked = false
		:: ((state & FINAL) == 0) && ((state & RXLOCK) == 0) -> state = state | RXLOCK; locked = true
		fi
	};
	if :: !locked -> goto look :: else -> skip fi;
	/* register(wid) */
	st = state;
	if
	:: ((st & WAKER) != 0) ->
		if
		:: ((st & FINAL) != 0) -> state = state & ~RXLOCK; goto look
		:: else -> skip
		fi;
		if
		:: slot == wid -> d_step { state = state & ~RXLOCK }; goto wait
		:: slot != 0 && wid == 0 -> d_step { state = state & ~RXLOCK }; goto wait
		:: slot != 0 && wid != 0 && slot != wid ->
			table[wid] = true;   /* under the table's mutex */
			atomic { prev = state; state = state | MORE };
			if
			:: ((prev & FINAL) != 0) -> table[wid] = false; d_step { state = state & ~RXLOCK }; goto look
			:: else -> d_step { state = state & ~RXLOCK }; goto wait
			fi
		:: slot == 0 && wid != 0 ->
			atomic {
				if
				:: state == st -> state = st & ~WAKER; locked = true
				:: else -> locked = false
				fi
			};
			if
			:: !locked -> d_step { state = state & ~RXLOCK }; goto look
			:: else -> skip
			fi
		fi
	:: else -> skip
	fi;
	slot = wid;
	atomic { state = (state | WAKER) & ~RXLOCK; st = state };
	if :: ((st & FINAL) != 0) -> goto look :: else -> skip fi;
wait:
	if
	:: wid == 0 -> wid = me; goto look   /* the probe poll returns pending; then the real wait */
	:: else -> skip
	fi;
	if
	:: woken[me] -> woken[me] = false; goto look
	:: mayGiveUp && !gaveUp ->
		/* Drop: forget the waker, the receiver stays open */
		gaveUp = true;
		atomic {
			if
			:: ((state & FINAL) != 0) -> locked = false
			:: ((state & FINAL) == 0) && ((state & RXLOCK) == 0) -> state = state | RXLOCK; locked = true
			fi
		};
		if
		:: locked ->
			st = state;
			if
			:: ((st & WAKER) != 0) && slot == me ->
				atomic {
					if
					:: state == st -> state = st & ~WAKER; slot = 0
					:: else -> skip
					fi
				}
			:: else ->
				if :: ((st & MORE) != 0) -> table[me] = false :: else -> skip fi
			fi;
			d_step { state = state & ~RXLOCK }
		:: else -> skip
		fi;
		goto out
	fi;
fin:
	if :: got -> values++ :: else -> skip fi;
out:
	ended++
}

init {
	atomic {
		run Sender();
		run Receiver(1, false);
		run Receiver(2, true);
		if :: run Dropper(); withDropper = true :: skip fi
	};
	(ended == 3 && !withDropper) || ended == 4;
	assert(values <= 1);
	assert(!sent || dropped || values == 1);
	assert(!table[1] && !table[2])
}
