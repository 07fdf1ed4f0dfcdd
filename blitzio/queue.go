package blitzio

import (
	"sync/atomic"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// Local run queue: a fixed 256-slot ring per worker (the shape
// of Tokio's queue.rs). The owner pushes at the tail and pops at the head (FIFO, which is
// fairer for tasks than the LIFO end of a Chase-Lev deque; the LIFO slot gives the
// locality). Other workers steal half of it at once.
//
// head packs two uint32 positions: "steal", where an in-progress stealer started, and
// "real", the next task to take. steal != real means a stealer is copying tasks out of
// [steal, real); the owner must not reuse those slots yet, so the free space is computed
// from steal. Positions wrap as uint32 and are reduced modulo the capacity.
const (
	localCap  = 256
	localMask = localCap - 1
)

type localQueue struct {
	head atomic.Uint64 // steal<<32 | real
	_    lockfree.CachePad
	tail atomic.Uint32 // written only by the owner
	_    lockfree.CachePad
	// buf slots are plain fields: a slot is written only by the owner at tail, while no
	// stealer can read it (it lies outside [steal, tail)), and every hand-off is ordered
	// by the head/tail atomics.
	buf [localCap]*header
}

func packHead(steal, real uint32) uint64 { return uint64(steal)<<32 | uint64(real) }
func unpackHead(v uint64) (steal, real uint32) {
	return uint32(v >> 32), uint32(v)
}

// len is a racy snapshot of the number of queued tasks.
func (q *localQueue) len() int {
	_, real := unpackHead(q.head.Load())
	return int(q.tail.Load() - real)
}

// pushBack appends h (owner only). When the ring is full, half of it plus h move to the
// injection queue in one batch (Tokio's push_overflow), so a worker that spawns a burst
// shares it with the others.
func (q *localQueue) pushBack(h *header, inj *injectQueue) {
	for {
		steal, real := unpackHead(q.head.Load())
		tail := q.tail.Load()
		if tail-steal < localCap {
			q.buf[tail&localMask] = h
			// The store publishes the slot to stealers (they load tail before reading).
			q.tail.Store(tail + 1)
			return
		}
		if steal != real {
			// A stealer is about to free room; do not wait for it.
			inj.push(h)
			return
		}
		if q.pushOverflow(h, real, inj) {
			return
		}
		// A stealer took tasks between our loads and the CAS: retry, there is room now.
	}
}

func (q *localQueue) pushOverflow(h *header, head uint32, inj *injectQueue) bool {
	const n = localCap / 2
	// Claim the oldest half by advancing both positions; this fails if a stealer moved
	// head first, and then the caller retries with the room the stealer made.
	if !q.head.CompareAndSwap(packHead(head, head), packHead(head+n, head+n)) {
		return false
	}
	first := q.buf[head&localMask]
	last := first
	for i := uint32(1); i < n; i++ {
		t := q.buf[(head+i)&localMask]
		last.next = t
		last = t
	}
	last.next = h
	h.next = nil
	inj.pushBatch(first, h, n+1)
	return true
}

// pop takes the oldest task (owner only).
func (q *localQueue) pop() *header {
	head := q.head.Load()
	for {
		steal, real := unpackHead(head)
		if real == q.tail.Load() {
			return nil
		}
		next := packHead(steal, real+1)
		if steal == real {
			next = packHead(real+1, real+1)
		}
		if q.head.CompareAndSwap(head, next) {
			return q.buf[real&localMask]
		}
		head = q.head.Load()
	}
}

// stealInto moves half of q's tasks into dst (owned by the caller) and returns one of
// them to run at once, or nil.
func (q *localQueue) stealInto(dst *localQueue) *header {
	dstTail := dst.tail.Load()
	dsteal, _ := unpackHead(dst.head.Load())
	if dstTail-dsteal > localCap/2 {
		return nil // our own queue is busy enough; do not steal
	}
	n := q.stealHalf(dst, dstTail)
	if n == 0 {
		return nil
	}
	n--
	ret := dst.buf[(dstTail+n)&localMask]
	if n > 0 {
		dst.tail.Store(dstTail + n)
	}
	return ret
}

func (q *localQueue) stealHalf(dst *localQueue, dstTail uint32) uint32 {
	prev := q.head.Load()
	var first, n uint32
	for {
		steal, real := unpackHead(prev)
		if steal != real {
			return 0 // another worker is stealing from q
		}
		tail := q.tail.Load()
		n = tail - real
		n -= n / 2
		if n == 0 || n > localCap/2+1 {
			if n == 0 {
				return 0
			}
			prev = q.head.Load() // tail raced ahead of a stale head; re-read
			continue
		}
		// Advance real but leave steal: the owner must not overwrite [steal, real+n)
		// until we have copied it out.
		if q.head.CompareAndSwap(prev, packHead(steal, real+n)) {
			first = real
			break
		}
		prev = q.head.Load()
	}
	for i := uint32(0); i < n; i++ {
		dst.buf[(dstTail+i)&localMask] = q.buf[(first+i)&localMask]
	}
	// Release the slots: steal catches up with real (which the owner may have moved on).
	prev = q.head.Load()
	for {
		_, real := unpackHead(prev)
		if q.head.CompareAndSwap(prev, packHead(real, real)) {
			return n
		}
		prev = q.head.Load()
	}
}

// drain pops every task (owner only, at shutdown).
func (q *localQueue) drain(f func(*header)) {
	for h := q.pop(); h != nil; h = q.pop() {
		f(h)
	}
}
