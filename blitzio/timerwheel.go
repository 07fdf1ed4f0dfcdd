package blitzio

import "math/bits"

// Hierarchical timer wheel (Tokio's time/wheel shape: 5 levels of 64 slots, 1 ms resolution
// on the real clock, an overflow list). Time is in ticks since the runtime
// started.
//
// An entry with deadline D is stored at the level of the highest 6-bit group in which D
// and the wheel's current time differ, in the slot given by D's bits of that group. So
// level 0 holds the timers of the current 64 ms, level 1 those of the current 4 s, and so
// on; an entry beyond level 4 (about 12.4 days away) goes to the overflow list. When time
// reaches the start of a slot above level 0, the slot's entries are re-inserted lower
// down (cascading); entries of a level-0 slot expire. Insert and cancel are O(1) (a
// doubly linked list per slot plus an occupancy bitmap per level); finding the next
// expiration is O(levels) with a count of trailing zeros per level.
const (
	wheelLevels   = 5
	wheelSlots    = 64
	wheelBits     = 6
	overflowLevel = wheelLevels
	// wheelSpan is the number of ticks levels 0..4 cover: entries whose deadline differs
	// from the current time above bit 30 live in the overflow list.
	wheelSpan = uint64(1) << (wheelBits * wheelLevels)
)

// timerEntry is one timer, embedded in the future that owns it (so a sleeping task costs
// no separate allocation for its timer). Who may touch which field when is set by st (see
// the ts* states in timer.go); in the wheel, fields are guarded by the runtime's timer
// mutex. next is also the pending stack's link while the entry is queued.
type timerEntry struct {
	deadline   uint64
	prev, next *timerEntry
	st         uint32 // ts* state; atomic except while the owner holds the entry alone
	level      int8   // 0: not in the wheel; 1..5: level+1; overflowLevel+1: overflow list
	// ownerState and ownerMode are padding lent to the owning future (SleepFuture keeps
	// its state and mode here); the timer code never touches them.
	ownerState, ownerMode uint8
	waker                 Waker
}

type wheelLevel struct {
	occupied uint64
	slots    [wheelSlots]*timerEntry
}

// wheel is the data structure alone; timerState adds the lock and the runtime glue.
type wheel struct {
	elapsed     uint64 // current time of the wheel (ticks)
	levels      [wheelLevels]wheelLevel
	overflow    *timerEntry
	overflowMin uint64 // lower bound of the overflow deadlines (may be stale-low)
	count       int
}

func levelFor(elapsed, deadline uint64) int {
	masked := (elapsed ^ deadline) | (wheelSlots - 1)
	sig := 63 - bits.LeadingZeros64(masked)
	l := sig / wheelBits
	if l > overflowLevel {
		l = overflowLevel
	}
	return l
}

func slotFor(deadline uint64, level int) int {
	return int(deadline>>(uint(level)*wheelBits)) & (wheelSlots - 1)
}

// insert adds e with the given deadline. It returns false, without inserting, if the
// deadline is not in the future of the wheel's time: the caller fires it at once.
func (w *wheel) insert(e *timerEntry, deadline uint64) bool {
	if deadline <= w.elapsed {
		return false
	}
	e.deadline = deadline
	w.link(e)
	w.count++
	return true
}

func (w *wheel) link(e *timerEntry) {
	l := levelFor(w.elapsed, e.deadline)
	e.level = int8(l) + 1
	e.prev = nil
	if l == overflowLevel {
		e.next = w.overflow
		if w.overflow != nil {
			w.overflow.prev = e
		}
		w.overflow = e
		if w.overflow.next == nil || e.deadline < w.overflowMin {
			w.overflowMin = e.deadline
		}
		return
	}
	lv := &w.levels[l]
	s := slotFor(e.deadline, l)
	e.next = lv.slots[s]
	if e.next != nil {
		e.next.prev = e
	}
	lv.slots[s] = e
	lv.occupied |= 1 << s
}

// remove cancels e if it is in the wheel (O(1)).
func (w *wheel) remove(e *timerEntry) {
	if e.level == 0 {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else if e.level == overflowLevel+1 {
		w.overflow = e.next
	} else {
		l := int(e.level) - 1
		s := slotFor(e.deadline, l)
		w.levels[l].slots[s] = e.next
		if e.next == nil {
			w.levels[l].occupied &^= 1 << s
		}
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.prev, e.next, e.level = nil, nil, 0
	w.count--
}

// nextExpiration returns the tick of the next event: a level-0 slot expiring, a higher
// slot to cascade, or the overflow list to re-examine. ok is false when the wheel is
// empty.
func (w *wheel) nextExpiration() (tick uint64, ok bool) {
	t, _, _, ok := w.next()
	return t, ok
}

func (w *wheel) next() (tick uint64, level, slot int, ok bool) {
	for l := 0; l < wheelLevels; l++ {
		occ := w.levels[l].occupied
		if occ == 0 {
			continue
		}
		shift := uint(l) * wheelBits
		cur := uint((w.elapsed >> shift) & (wheelSlots - 1))
		// Every occupied slot is after the current one (its entries' deadlines differ
		// from the wheel time first in this group, and are later), so only the bits
		// above cur can be set.
		above := occ >> (cur + 1) << (cur + 1)
		if above == 0 {
			above = occ // defensive: cannot happen while the invariant holds
		}
		s := bits.TrailingZeros64(above)
		levelSpan := uint64(1) << (shift + wheelBits)
		start := w.elapsed&^(levelSpan-1) | uint64(s)<<shift
		if !ok || start < tick {
			tick, level, slot, ok = start, l, s, true
		}
	}
	if w.overflow != nil {
		start := w.overflowMin &^ (wheelSpan - 1)
		if start <= w.elapsed {
			start = w.elapsed + 1
		}
		if !ok || start < tick {
			tick, level, slot, ok = start, overflowLevel, 0, true
		}
	}
	return tick, level, slot, ok
}

// advance moves the wheel's time to now, calling fire for every entry whose deadline has
// passed (in deadline order across slots; any order within a slot). fire may not touch
// the wheel.
func (w *wheel) advance(now uint64, fire func(*timerEntry)) {
	for {
		t, l, s, ok := w.next()
		if !ok || t > now {
			break
		}
		if t > w.elapsed {
			w.elapsed = t
		}
		var list *timerEntry
		if l == overflowLevel {
			list, w.overflow = w.overflow, nil
		} else {
			lv := &w.levels[l]
			list = lv.slots[s]
			lv.slots[s] = nil
			lv.occupied &^= 1 << s
		}
		for e := list; e != nil; {
			next := e.next
			e.prev, e.next = nil, nil
			if e.deadline <= w.elapsed {
				e.level = 0
				w.count--
				fire(e)
			} else {
				w.link(e) // cascade to a lower level (or back to overflow)
			}
			e = next
		}
	}
	if now > w.elapsed {
		w.elapsed = now
	}
}
