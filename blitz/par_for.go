package blitz

import "sync/atomic"

// For calls body on disjoint subranges [lo, hi) that together cover [0, n), in parallel, and
// returns when all have returned. It is Rayon's fork-join loop over a range: the range
// is split in halves down to the grain (see WithGrain), the left half runs on the current
// worker and the right half can be stolen. Inputs no larger than one grain run sequentially
// on the caller's goroutine, without touching the pool.
//
// A panic in body stops the remaining leaves from starting (a panic fuse) and re-raises in
// the caller: on the parallel path as a *PanicError carrying the panicking goroutine's stack,
// on the sequential path as the original value. For panics if body is nil; n <= 0 is a no-op.
func For(n int, body func(lo, hi int), opts ...Option) {
	if body == nil {
		parNil("For", "body")
	}
	parFor(parResolve(n, parMinGrain, opts), n, body)
}

// ForGrain is For with an explicit grain: body receives ranges of at most grain indices. It
// is the same as For(n, body, WithGrain(grain)) and panics if grain < 1.
func ForGrain(n, grain int, body func(lo, hi int), opts ...Option) {
	if body == nil {
		parNil("ForGrain", "body")
	}
	g := WithGrain(grain)
	c := parResolve(n, parMinGrain, opts)
	c.grain = g.grain
	c.seq = n <= c.grain
	parFor(c, n, body)
}

// Stop is the early-exit flag of one ForUntil call, shared by every leaf. Calling Stop makes
// every worker stop splitting and starting leaves; a long-running body should also poll
// Stopped inside its loop so that leaves already running end early too.
type Stop struct {
	flag *atomic.Bool
}

// Stop asks the loop to stop. It is safe to call from any leaf, any number of times.
func (s Stop) Stop() { s.flag.Store(true) }

// Stopped reports whether Stop has been called (or a leaf panicked).
func (s Stop) Stopped() bool { return s.flag.Load() }

// ForUntil is For with early exit: body receives a Stop shared by all leaves and may call
// s.Stop() when it has found what it was looking for. The remaining leaves are not started
// (the flag is checked at every split point and before every leaf) and running leaves should
// poll s.Stopped(). ForUntil reports whether the loop was stopped. Leaves that had already
// started when Stop was called still run to completion (or to their next Stopped check).
func ForUntil(n int, body func(lo, hi int, s Stop), opts ...Option) (stopped bool) {
	if body == nil {
		parNil("ForUntil", "body")
	}
	if n <= 0 {
		return false
	}
	c := parResolve(n, parMinGrain, opts)
	fc := newForCall(c.grain, nil)
	s := Stop{&fc.st.stop}
	if c.seq {
		body(0, n, s)
	} else {
		fc.body = func(lo, hi int) { body(lo, hi, s) }
		fc.run(c.pool, n)
	}
	return fc.st.stop.Load()
}
