package blitzio

import (
	"math/bits"
	"sync/atomic"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// idle tracks which workers are parked and how many are searching for work (a
// count of searchers and a bitmap of parked workers; Tokio's idle.rs).
//
// The lost-wake-up race and what prevents it: a worker parks by setting its bit in parked
// and then re-checking every queue; a producer pushes a task and then reads searching and
// parked. All four are sequentially consistent atomics, so either the producer sees the
// bit (and wakes the worker) or the worker sees the task (and does not sleep).
//
// A producer does not wake anyone while a worker is searching: that searcher will find the
// task, and when the last searcher finds work it wakes one more worker (chained wake-up),
// or, if it parks instead, it re-checks the queues first. At most half the workers search
// at once, so a burst of wake-ups does not make every worker hammer every queue.
type idle struct {
	parked    atomic.Uint64 // bit i set: worker i is parked (or about to park)
	_         lockfree.CachePad
	searching atomic.Int32
	_         lockfree.CachePad
	n         int32
}

// tryStartSearching reports whether a worker that is not yet searching may start.
func (i *idle) tryStartSearching() bool {
	s := i.searching.Load()
	if 2*s >= i.n {
		return false
	}
	i.searching.Add(1)
	return true
}

// stopSearching ends a search and reports whether it was the last searcher.
func (i *idle) stopSearching() bool { return i.searching.Add(-1) == 0 }

// popParked clears the lowest parked bit and returns that worker, or -1: O(1) with a
// count of trailing zeros.
func (i *idle) popParked() int {
	for {
		p := i.parked.Load()
		if p == 0 {
			return -1
		}
		id := bits.TrailingZeros64(p)
		if i.parked.CompareAndSwap(p, p&^(1<<id)) {
			return id
		}
	}
}

// clear clears worker id's bit; it reports false if someone else cleared it first (and so
// has sent, or is about to send, the worker a wake-up token).
func (i *idle) clear(id int) bool {
	for {
		p := i.parked.Load()
		if p&(1<<id) == 0 {
			return false
		}
		if i.parked.CompareAndSwap(p, p&^(1<<id)) {
			return true
		}
	}
}

func (i *idle) setParked(id int) { i.parked.Or(1 << id) }
