package tsync

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
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
// A slot claimed by a peer that has not published yet (a sender between its CAS and its
// stamp store, or a receiver between its CAS and freeing the slot) is waited for, as
// crossbeam's ArrayQueue does (it snoozes): push reports full, and pop empty, only when
// the ring is. Reporting the busy slot as empty or full instead looks safe, since the
// peer checks for waiters right after it publishes, but with several waiters it loses
// wake-ups: a receiver woken for the value in slot k+1 finds slot k still unpublished,
// goes back to wait, and so uses up the wake-up meant for k+1; k's sender then wakes
// one other receiver, which takes k, and the value in k+1 is left with every receiver
// asleep (the same happens to senders and free slots). The window is two stores long,
// so the wait is a few reloads; a peer preempted inside it gets the processor through
// runtime.Gosched.
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
	spins := 0
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
			// The slot still holds the previous lap's value: full, unless its receiver
			// has claimed it (head moved past) and is about to free it.
			if r.head.Load()+r.oneLap == tail {
				return pushFull
			}
			snooze(&spins)
		}
		tail = r.tail.Load()
	}
}

// snooze waits a little for a peer to publish a slot it has claimed: a few reloads, then
// a yield of the processor, which the peer may need if it was preempted in between.
func snooze(spins *int) {
	if *spins < 16 {
		*spins++
		return
	}
	runtime.Gosched()
}

// pop takes the oldest value if one is published.
func (r *ring[T]) pop() (T, popResult) {
	head := r.head.Load()
	spins := 0
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
			// Nothing published here for this lap: empty (or closed, the mark says) if
			// no sender has claimed the slot; if one has, it is about to publish.
			tail := r.tail.Load()
			if tail&^r.markBit == head {
				var zero T
				if tail&r.markBit != 0 {
					return zero, popClosed
				}
				return zero, popEmpty
			}
			snooze(&spins)
		}
		head = r.head.Load()
	}
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
