package tsync

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// ring is the buffer of a bounded channel: Dmitry Vyukov's bounded MPMC queue, in the
// layout of crossbeam's ArrayQueue so that the capacity is exact (not rounded up to a
// power of two) without a division per operation.
//
// head and tail are positions made of a lap and an index: index < capacity is the slot,
// and the lap (the bits at and above oneLap) counts trips around the ring. Each slot has
// a stamp: tail's position when the slot is free for that lap's sender, that position
// plus one once it holds a value, which its receiver then advances to the next lap. A
// sender claims a slot by a CAS of tail and publishes the value by storing the stamp; a
// receiver claims it by a CAS of head and frees it by storing the stamp. So producers
// and consumers never share a lock, and the only word both write is a slot's stamp.
//
// Closing sets markBit in tail: a sender's CAS from an unmarked tail then fails, and a
// receiver that finds the ring empty sees the mark.
//
// The ring never spins: a slot claimed by a peer that has not published yet (a sender
// between its CAS and its stamp store, or a receiver between its CAS and freeing the
// slot) reads as empty or full. The waiter protocol (waitSet) covers the slot itself:
// the peer checks for waiters right after it publishes. It does not cover what the
// claimed slot hides: a sender that published slot k+1 while nobody waited woke nobody;
// receivers that register then look at slot k, still claimed, and wait; k's sender wakes
// one of them, who takes k, and k+1's value would sit with the others asleep (the same
// with senders and free slots). So whoever takes a value and sees another ready while
// receivers wait wakes one more (readyNow), and whoever fills a slot and sees the next
// free while senders wait does the same (roomNow): a chain that reaches every hidden
// value. blitzio/spin/ringwake.pml checks it. Spinning until the peer publishes, as
// crossbeam's ArrayQueue does, also closes the gap, but was measured: with a full or
// empty ring the two sides find each other mid-operation millions of times a second,
// and a message cost about twice as much.
type ring[T any] struct {
	head atomic.Uint64
	_    [56]byte // head (receivers) and tail (senders) on separate cache lines
	tail atomic.Uint64
	_    [56]byte

	buf     []ringSlot[T]
	cap     uint64
	oneLap  uint64
	markBit uint64
}

type ringSlot[T any] struct {
	stamp atomic.Uint64
	val   T
}

// maxAllocBytes bounds a ring's buffer: a request beyond it would fail inside make with
// an obscure message (the largest allocation is below 2^48 bytes on 64-bit platforms and
// below 2^31 on 32-bit ones).
const maxAllocBytes = min(1<<46, uint64(math.MaxInt))

type pushResult uint8

const (
	pushOK pushResult = iota
	pushFull
	pushClosed
)

type popResult uint8

const (
	popOK popResult = iota
	popEmpty
	popClosed
)

func newRing[T any](op string, capacity int) *ring[T] {
	if capacity < 1 {
		panic(fmt.Sprintf("tsync: %s: capacity must be at least 1, got %d (Go's unbuffered "+
			"rendezvous has no equivalent here; use capacity 1 or a Oneshot)", op, capacity))
	}
	size := uint64(unsafe.Sizeof(ringSlot[T]{}))
	if hi, lo := bits.Mul64(uint64(capacity), size); hi != 0 || lo > maxAllocBytes {
		panic(fmt.Sprintf("tsync: %s: capacity %d is too large (%d-byte slots exceed %d bytes)",
			op, capacity, size, uint64(maxAllocBytes)))
	}
	c := uint64(capacity)
	mark := uint64(1) << bits.Len64(c) // the smallest power of two above c
	r := &ring[T]{
		buf:     make([]ringSlot[T], c),
		cap:     c,
		markBit: mark,
		oneLap:  mark << 1,
	}
	for i := range r.buf {
		r.buf[i].stamp.Store(uint64(i))
	}
	return r
}

// next returns the position after pos (same lap, next index, or the next lap's index 0).
func (r *ring[T]) next(pos uint64) uint64 {
	index := pos & (r.markBit - 1)
	if index+1 < r.cap {
		return pos + 1
	}
	return (pos &^ (r.oneLap - 1)) + r.oneLap
}

// push stores v if there is room.
func (r *ring[T]) push(v T) pushResult {
	tail := r.tail.Load()
	for {
		if tail&r.markBit != 0 {
			return pushClosed
		}
		s := &r.buf[tail&(r.markBit-1)]
		stamp := s.stamp.Load()
		switch {
		case stamp == tail:
			// The slot is free for this lap: claim it. The CAS fails if another sender
			// claimed it first, or if the channel was closed (the mark changed tail).
			if r.tail.CompareAndSwap(tail, r.next(tail)) {
				s.val = v
				s.stamp.Store(tail + 1) // publish: a receiver's stamp load sees val
				return pushOK
			}
		case stamp+r.oneLap == tail+1:
			// The slot still holds the previous lap's value: full (or its receiver has
			// claimed it and not yet freed it; it checks for waiting senders after).
			return pushFull
		}
		tail = r.tail.Load()
	}
}

// pop takes the oldest value if one is published.
func (r *ring[T]) pop() (T, popResult) {
	head := r.head.Load()
	for {
		s := &r.buf[head&(r.markBit-1)]
		stamp := s.stamp.Load()
		switch {
		case stamp == head+1:
			if r.head.CompareAndSwap(head, r.next(head)) {
				v := s.val
				var zero T
				s.val = zero // do not keep the value alive for the garbage collector
				s.stamp.Store(head + r.oneLap)
				return v, popOK
			}
		case stamp == head:
			// Nothing published here for this lap. Closed only if no sender claimed the
			// slot before the close; a sender that did will publish and wake us.
			tail := r.tail.Load()
			if tail&r.markBit != 0 && tail&^r.markBit == head {
				var zero T
				return zero, popClosed
			}
			var zero T
			return zero, popEmpty
		}
		head = r.head.Load()
	}
}

// readyNow reports whether the head slot holds a published value (see the chain above).
func (r *ring[T]) readyNow() bool {
	head := r.head.Load()
	return r.buf[head&(r.markBit-1)].stamp.Load() == head+1
}

// roomNow reports whether the tail slot is free for a sender (see the chain above).
func (r *ring[T]) roomNow() bool {
	tail := r.tail.Load()
	return tail&r.markBit == 0 && r.buf[tail&(r.markBit-1)].stamp.Load() == tail
}

// close marks the ring closed and reports whether this call did it.
func (r *ring[T]) close() bool {
	return r.tail.Or(r.markBit)&r.markBit == 0
}

func (r *ring[T]) isClosed() bool { return r.tail.Load()&r.markBit != 0 }

// len returns the number of values claimed into the ring and not yet claimed out.
func (r *ring[T]) len() int {
	for {
		tail := r.tail.Load()
		head := r.head.Load()
		if r.tail.Load() != tail {
			continue // a consistent pair: tail did not move while head was read
		}
		t := tail &^ r.markBit
		hix := head & (r.markBit - 1)
		tix := t & (r.markBit - 1)
		switch {
		case hix < tix:
			return int(tix - hix)
		case hix > tix:
			return int(r.cap - hix + tix)
		case t == head:
			return 0
		default:
			return int(r.cap)
		}
	}
}
