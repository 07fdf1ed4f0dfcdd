package lockfree

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// DefaultDequeCapacity is the ring size of a deque made with capacity 0: 256 slots, the
// per-worker queue size of Tokio's workers; PushGrow grows the ring from there.
const DefaultDequeCapacity = 256

// StealResult says how a steal attempt ended.
type StealResult uint8

const (
	// Empty means the deque held no item when the thief looked.
	Empty StealResult = iota
	// Success means the thief took the item it returned.
	Success
	// Retry means the thief lost a race (with the owner popping the last item, or with
	// another thief) and the deque may still hold items; try again.
	Retry
)

// String returns "Empty", "Success" or "Retry".
func (r StealResult) String() string {
	switch r {
	case Empty:
		return "Empty"
	case Success:
		return "Success"
	case Retry:
		return "Retry"
	}
	return fmt.Sprintf("StealResult(%d)", uint8(r))
}

// ring is one circular buffer of a deque. A ring is never written after a deque has
// replaced it by a larger one, so a thief that loaded the old ring reads consistent,
// still-valid slots; the garbage collector frees it once no thief holds it. This is what
// makes growth safe without the epoch-based reclamation that C and Rust need.
type ring[T any] struct {
	mask  int64
	slots []atomic.Pointer[T]
}

func newRing[T any](capacity int64) *ring[T] {
	return &ring[T]{mask: capacity - 1, slots: make([]atomic.Pointer[T], capacity)}
}

func (r *ring[T]) load(i int64) *T     { return r.slots[i&r.mask].Load() }
func (r *ring[T]) store(i int64, v *T) { r.slots[i&r.mask].Store(v) }

// Deque is a Chase-Lev work-stealing deque of *T (Chase and Lev, SPAA 2005, with the
// memory orderings of Lê et al., PPoPP 2013).
//
// Roles:
//   - The owner, a single goroutine at a time, calls Push, PushGrow, Pop and
//     SetOverflow at the bottom end. Push and Pop are wait-free. Ownership may pass to
//     another goroutine only through a synchronising hand-off (a channel, a mutex),
//     because the owner keeps plain, non-atomic copies of its end.
//   - Thieves, any number of goroutines, call Steal, StealLoop and StealHalf at the top
//     end. These are lock-free: a steal that loses a race answers Retry.
//   - Len, Cap and IsEmpty may be called by anyone; from a thief they are estimates.
//
// The deque holds pointers, not values: a thief reads a slot before it knows whether its
// claim on it will succeed, and after the ring wraps around the owner may be
// overwriting that same slot. Pointer slots are one machine word that sync/atomic loads
// and stores whole, so that race is benign and invisible to the race detector. Jobs and
// tasks are pointers in every user of this package anyway. Pushing nil panics, because
// nil is how Pop and Steal say "nothing". A slot keeps pointing at an item after it was
// taken until a later Push overwrites it, so a deque keeps at most Cap() taken items
// reachable for the garbage collector; clearing slots would cost the owner another
// atomic store per Pop, and a thief may not write slots at all.
//
// Two departures from the textbook algorithm save atomic read-modify-writes, which cost
// about as much as a cache miss on x86 (every Go atomic store is an XCHG):
//
//   - Pop takes the last item with a single CAS on top, as a thief would, without
//     first moving bottom: when the owner sees top = bottom-1 there is at most one item,
//     and the CAS decides between it and the thieves.
//   - After Pop finds the deque empty or took the last item through top, it leaves the
//     shared bottom one below the owner's own copy instead of storing it back. The
//     thieves then see top = bottom+1, which they read as empty; the next Push writes
//     the slot at the owner's copy and publishes bottom past it. Invariant: the shared
//     bottom is either the owner's copy, or one less and then top equals the owner's
//     copy (the deque is empty).
//
// Both are checked, with the owner and two thieves over a ring of two slots, by the
// spin model spin/deque.pml.
//
// Indices only grow and are never reset, so after 2^63 increments they wrap from
// math.MaxInt64 to math.MinInt64 (Go defines signed overflow as wrapping). Only the
// distance between two indices has a meaning, so, like Chase and Lev's pseudocode
// (size = b - t), the code compares top and bottom through their difference (b-t <= 0,
// never t >= b). That is exact across the wrap because the distance stays between -1
// and the ring size, and slot i&mask is the same slot on both sides of it.
//
// The zero value is not usable; make deques with NewDeque.
type Deque[T any] struct {
	// top is where thieves take from; only ever incremented, by CAS (by thieves, and by
	// the owner for the last item).
	top atomic.Int64
	_   [CacheLineSize - 8]byte

	// bottom is the owner's end as thieves see it; written only by the owner.
	bottom atomic.Int64
	// Owner-only fields, on the owner's cache line, read and written without atomics.
	// ownBottom is the index the next Push fills (bottom, or bottom+1 when the deque is
	// empty, see the type comment). ownRing is the current ring: the owner is the only
	// writer of buf, so its copy is always current. topSeen is a lower bound of top (top
	// only grows), so Push reloads top only when the ring looks full.
	ownBottom int64
	topSeen   int64
	ownRing   *ring[T]
	onFull    func(*T)
	_         [CacheLineSize - 3*8 - 2*ptrSize]byte

	// buf is the ring thieves read; replaced only by PushGrow. Read-mostly, so it has a
	// line of its own rather than sharing the owner's, which changes on every Push.
	buf atomic.Pointer[ring[T]]
	_   [CacheLineSize - ptrSize]byte
}

// ptrSize is the size of a pointer, for padding that is right on 32-bit platforms too.
const ptrSize = unsafe.Sizeof(uintptr(0))

// NewDeque returns an empty deque with a ring of the given capacity, which must be 0
// (DefaultDequeCapacity) or a positive power of two. It panics otherwise: capacities are
// fixed by code, so a bad one is a programming error.
func NewDeque[T any](capacity int) *Deque[T] {
	if capacity == 0 {
		capacity = DefaultDequeCapacity
	}
	if capacity < 0 || capacity&(capacity-1) != 0 {
		panic(fmt.Sprintf("lockfree: NewDeque: capacity %d must be 0 (the default, %d) or a positive power of two",
			capacity, DefaultDequeCapacity))
	}
	d := &Deque[T]{}
	d.ownRing = newRing[T](int64(capacity))
	d.buf.Store(d.ownRing)
	return d
}

// SetOverflow installs a hook that Push calls with the item when the ring is full,
// instead of returning false; Push then reports true because the hook took ownership of
// the item. A scheduler uses it to move the item to a global queue. Owner only; install
// it before the deque is shared. A nil hook removes it.
func (d *Deque[T]) SetOverflow(hook func(*T)) { d.onFull = hook }

// Push adds item at the bottom. Owner only. It reports false, leaving the deque
// unchanged, when the ring is full and no overflow hook is installed. It never blocks.
// It panics if item is nil.
func (d *Deque[T]) Push(item *T) bool {
	if item == nil {
		panic("lockfree: Deque.Push: nil item (nil is how Pop and Steal report nothing)")
	}
	b := d.ownBottom
	r := d.ownRing
	if b-d.topSeen > r.mask {
		d.topSeen = d.top.Load()
		if b-d.topSeen > r.mask {
			if d.onFull != nil {
				d.onFull(item)
				return true
			}
			return false
		}
	}
	// The slot is written before bottom is published: a thief that sees the new bottom
	// (atomic load, synchronised with this atomic store) also sees the item. The slot
	// index b is free: b - top <= mask, so no thief can still claim the item that used
	// to live in it (a thief that read it with an older top fails its CAS on top).
	r.store(b, item)
	d.bottom.Store(b + 1)
	d.ownBottom = b + 1
	return true
}

// PushGrow adds item at the bottom, doubling the ring first when it is full. Owner
// only. Thieves still holding the old ring read valid, unchanged slots from it: the old
// ring is never written again, and the garbage collector keeps it alive for them.
// It ignores the overflow hook. It panics if item is nil.
func (d *Deque[T]) PushGrow(item *T) {
	if item == nil {
		panic("lockfree: Deque.PushGrow: nil item (nil is how Pop and Steal report nothing)")
	}
	b := d.ownBottom
	r := d.ownRing
	if b-d.topSeen > r.mask {
		d.topSeen = d.top.Load()
	}
	if t := d.topSeen; b-t > r.mask {
		bigger := newRing[T]((r.mask + 1) * 2)
		for i := t; i != b; i++ { // != rather than <: the indices may wrap (type comment)
			bigger.store(i, r.load(i))
		}
		// Publish the new ring before the new bottom: a thief that reads bottom = b+1
		// must find item in whichever ring it loads afterwards. It loads buf after
		// bottom, so it gets the bigger ring, which holds [t, b] after the next store.
		// A thief that loaded the old ring reads slots in [t, b) there, unchanged.
		d.buf.Store(bigger)
		d.ownRing = bigger
		r = bigger
	}
	r.store(b, item)
	d.bottom.Store(b + 1)
	d.ownBottom = b + 1
}

// Pop removes and returns the most recently pushed item, or nil when the deque is
// empty. Owner only; wait-free (at most one CAS, for the last item). An empty Pop
// performs no atomic write at all, which keeps an idle owner's polling cheap.
func (d *Deque[T]) Pop() *T {
	b := d.ownBottom
	t := d.top.Load()
	if b-t <= 0 { // t >= b, compared through the difference (the type comment)
		// Empty (t == b: the deque never holds fewer than zero items). The shared bottom
		// is b or b-1; either way thieves see no item.
		d.topSeen = t
		return nil
	}
	r := d.ownRing
	if t == b-1 {
		// At most one item, at index t (top may have moved past it since the load).
		// Compete for it through top exactly as a thief does: the CAS gives it to one
		// goroutine only. Afterwards top = b = bottom, consistent without touching
		// bottom. The slot is read before the CAS; if the CAS fails a thief took the
		// item and the value read is dropped.
		item := r.load(t)
		d.topSeen = b
		if d.top.CompareAndSwap(t, b) {
			return item
		}
		return nil
	}
	// Two or more items when top was read. Claim slot b-1 by lowering bottom before
	// looking at top again. This seq-cst store is the full fence of Chase-Lev: without
	// it a thief could read the old bottom while we read an old top, and both would take
	// the same item.
	b--
	d.bottom.Store(b)
	t = d.top.Load()
	d.topSeen = t
	switch {
	case b-t > 0: // t < b
		// Thieves can reach at most slot t < b (they need top < bottom = b), so b is ours.
		d.ownBottom = b
		return r.load(b)
	case t == b:
		// Thieves took all but one meanwhile: race them for it through top. Whoever
		// wins, top ends at b+1 and the deque is empty; bottom stays at b, one below
		// ownBottom, which thieves read as empty (see the type comment).
		item := r.load(b)
		d.ownBottom = b + 1
		d.topSeen = b + 1
		if d.top.CompareAndSwap(t, t+1) {
			return item
		}
		return nil
	default:
		// t == b+1: thieves emptied the deque. Leave bottom one below ownBottom.
		d.ownBottom = b + 1
		return nil
	}
}

// Steal tries to take the oldest item from the top. Any goroutine. It answers
// (item, Success), (nil, Empty), or (nil, Retry) when it lost a race and the deque may
// still hold items. It never blocks.
func (d *Deque[T]) Steal() (*T, StealResult) {
	// Read top before bottom: the pair (t, b) then describes a state that existed at the
	// moment bottom was read, because top only grows.
	t := d.top.Load()
	b := d.bottom.Load()
	if b-t <= 0 { // t >= b, wrap-safe (see the type comment)
		return nil, Empty
	}
	// Load the ring after bottom: if bottom covers an item pushed after a growth, the
	// ring we load is the grown one (see PushGrow).
	r := d.buf.Load()
	item := r.load(t)
	// The CAS decides ownership. If the owner popped down to t, or another thief took t,
	// top has moved (or the owner's CAS on the last item won) and ours fails, so a stale
	// item read above is discarded, never returned.
	if !d.top.CompareAndSwap(t, t+1) {
		return nil, Retry
	}
	return item, Success
}

// StealLoop steals until it gets an item or finds the deque empty, backing off
// exponentially (busy spins, then yields to the Go scheduler) between retries. Any
// goroutine. It reports false only when the deque was seen empty.
func (d *Deque[T]) StealLoop() (*T, bool) {
	var sw SpinWait
	for {
		item, res := d.Steal()
		switch res {
		case Success:
			return item, true
		case Empty:
			return nil, false
		}
		sw.Snooze()
	}
}

// StealHalf moves about half of d's items (rounded up, at most what dst can hold without
// growing) from d's top into dst, and returns how many it moved. The caller must be the
// owner of dst, and dst must not be d. Any goroutine may be the thief of d.
//
// Each item is claimed with its own CAS on top, as Steal does. A Chase-Lev owner pops
// without a CAS whenever it sees more than one item, so a thief cannot claim a whole
// range with one CAS: the owner could be taking the range's last item at that moment.
// Claiming one at a time keeps exactly-once delivery; the batch still saves the thief
// from coming back for every item.
func (d *Deque[T]) StealHalf(dst *Deque[T]) int {
	if dst == d {
		panic("lockfree: Deque.StealHalf: dst must differ from the deque stolen from")
	}
	t := d.top.Load()
	b := d.bottom.Load()
	want := (b - t + 1) / 2
	if room := dst.buf.Load().mask + 1 - int64(dst.Len()); want > room {
		want = room
	}
	moved := 0
	var sw SpinWait
	for int64(moved) < want {
		item, res := d.Steal()
		if res == Empty {
			break
		}
		if res == Retry {
			sw.Spin()
			continue
		}
		// room makes Push succeed; should a hook-less dst still be full, grow it rather
		// than drop an item that is no longer in d.
		if !dst.Push(item) {
			dst.PushGrow(item)
		}
		moved++
	}
	return moved
}

// Len returns the number of items. Exact for the owner between its own operations; an
// estimate for anyone else (it may be stale by the time it is used). Never negative.
func (d *Deque[T]) Len() int {
	b := d.bottom.Load()
	t := d.top.Load()
	if n := b - t; n > 0 { // compared through the difference: indices may wrap
		return int(n)
	}
	return 0
}

// IsEmpty reports whether Len is zero.
func (d *Deque[T]) IsEmpty() bool { return d.Len() == 0 }

// Cap returns the current ring capacity.
func (d *Deque[T]) Cap() int { return int(d.buf.Load().mask + 1) }
