package tsync

import (
	"context"
	"fmt"
	"sync"

	"github.com/blitzgo/blitz/blitzio"
)

// Barrier lets n parties wait until all of them have arrived, like Tokio's Barrier. The
// barrier is reusable: when the n-th party arrives, all n are released together, the last
// one to arrive is told it is the leader (exactly one per generation), and the next
// generation starts empty.
//
// A waiting party that is dropped (a Timeout or Select around Wait) withdraws its
// arrival, so the generation waits for someone else instead of releasing with a party
// missing. A party dropped after its generation was released (the release came between
// its last poll and the drop) can no longer withdraw: it counted in that generation,
// whose other parties went on, though its own wait reports the timeout.
//
// Barrier has no try-form: arriving is the wait.
//
// The zero Barrier is a barrier for one party. A Barrier must not be copied after first
// use.
type Barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	waiters waitList
}

// BarrierResult is what Wait yields: IsLeader is true for exactly one party of each
// generation (the last to arrive).
type BarrierResult struct {
	IsLeader bool
}

// NewBarrier returns a barrier for n parties. A barrier for 0 parties behaves as one for
// 1 (every Wait returns at once as the leader), as in Tokio. It panics if n is negative.
func NewBarrier(n int) *Barrier {
	if n < 0 {
		panic(fmt.Sprintf("tsync: NewBarrier: n = %d is negative", n))
	}
	return &Barrier{n: max(n, 1)}
}

// WaitAsync returns a future that is ready when all parties of the current generation
// have arrived: the form for tasks. The future arrives at its first poll.
func (b *Barrier) WaitAsync() *BarrierFuture {
	if b == nil {
		panic("tsync: Barrier.WaitAsync called on a nil *Barrier")
	}
	return &BarrierFuture{b: b}
}

// Wait arrives at the barrier from a plain goroutine and parks it until the generation is
// released. Called from a task's code it panics (it would block a worker); use WaitAsync
// there.
func (b *Barrier) Wait() BarrierResult {
	f := b.WaitAsync()
	if r, ok := f.Poll(probeContext); ok {
		return r // the last party: nothing to wait for
	}
	refuseInRuntimeDrop("Barrier.Wait", "WaitAsync", f)
	return blockOn[BarrierResult](f)
}

// WaitContext is Wait that gives up when ctx is done, returning ctx.Err() (the
// arrival is withdrawn).
func (b *Barrier) WaitContext(ctx context.Context) (BarrierResult, error) {
	if err := ctx.Err(); err != nil {
		return BarrierResult{}, err
	}
	f := b.WaitAsync()
	if r, ok := f.Poll(probeContext); ok {
		return r, nil
	}
	refuseInRuntimeDrop("Barrier.WaitContext", "WaitAsync", f)
	return blockOnCtx[BarrierResult](ctx, f)
}

// BarrierFuture is the future returned by Barrier.WaitAsync; its waiter node lives in it.
// Reset reuses it for the next generation.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type BarrierFuture struct {
	b   *Barrier
	w   waiter
	res BarrierResult
	st  uint8
}

// Poll arrives at the barrier (first poll) and waits for the rest of the generation.
func (f *BarrierFuture) Poll(cx *blitzio.Context) (BarrierResult, bool) {
	b := f.b
	switch f.st {
	case futDone:
		return f.res, true
	case futDropped:
		panic("tsync: BarrierFuture polled after Drop")
	case futIdle:
		if !cx.ConsumeBudget() {
			return BarrierResult{}, false
		}
		b.mu.Lock()
		b.arrived++
		if b.arrived < b.n {
			f.w.waker = cx.Waker()
			f.w.notified = false
			b.waiters.pushBack(&f.w)
			f.st = futWaiting
			b.mu.Unlock()
			return BarrierResult{}, false
		}
		// The last party: release the generation. Every waiter is unlinked and
		// marked before mu is released, so none of them can withdraw any more.
		b.arrived = 0
		var wl wakeBuf
		for w := b.waiters.popFront(); w != nil; w = b.waiters.popFront() {
			w.notified = true
			wl.add(w.waker)
		}
		b.mu.Unlock()
		wl.wake(cx)
		f.res, f.st = BarrierResult{IsLeader: true}, futDone
		return f.res, true
	}
	b.mu.Lock()
	if f.w.notified {
		b.mu.Unlock()
		f.st = futDone
		return f.res, true
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	b.mu.Unlock()
	return BarrierResult{}, false
}

// Drop withdraws a waiting party's arrival. A party whose generation was already
// released has nothing to give back.
func (f *BarrierFuture) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	b := f.b
	b.mu.Lock()
	if f.w.queued {
		b.waiters.remove(&f.w)
		b.arrived--
	}
	b.mu.Unlock()
}

// Reset makes f arrive again (a new wait, normally in the next generation), so a loop can
// wait without allocating a future per generation. A waiting f is dropped first, which
// withdraws its arrival.
func (f *BarrierFuture) Reset() {
	if f.st == futWaiting {
		f.Drop()
	}
	f.st, f.res = futIdle, BarrierResult{}
}
