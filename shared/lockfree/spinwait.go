package lockfree

import "runtime"

// spinLimit is the number of doubling busy-spin rounds before SpinWait starts yielding:
// 1, 2, 4, ..., 64 spins, as crossbeam's Backoff does before it starts yielding.
const spinLimit = 6

// yieldLimit is the number of rounds after which IsCompleted reports true: the caller
// has spun and yielded long enough that parking is cheaper than more polling.
const yieldLimit = 10

// SpinWait is an exponential backoff for retry loops (a lost CAS, a steal that answered
// Retry, a latch that is about to be set). The zero value is ready to use. It is not safe
// for concurrent use: each waiting goroutine has its own, usually on its stack.
//
// Go has no way to issue the CPU's spin-loop hint from user code without assembly, so a
// "spin" is a short loop of no-op work. After spinLimit rounds Snooze yields to the Go
// scheduler (runtime.Gosched) instead, so a waiter never starves the goroutine it waits
// for, even with GOMAXPROCS=1.
type SpinWait struct {
	step uint32
}

// Reset starts the backoff over.
func (s *SpinWait) Reset() { s.step = 0 }

// Spin busy-waits for 2^step iterations (step capped at spinLimit) and advances. Use it
// where the wait is known to be very short, e.g. between the retries of a CAS loop.
func (s *SpinWait) Spin() {
	spin(1 << min(s.step, spinLimit))
	if s.step <= spinLimit {
		s.step++
	}
}

// Snooze busy-waits while the backoff is short and yields the processor once it has
// grown, then advances. Use it while waiting for another goroutine to make progress.
func (s *SpinWait) Snooze() {
	if s.step <= spinLimit {
		spin(1 << s.step)
	} else {
		runtime.Gosched()
	}
	if s.step <= yieldLimit {
		s.step++
	}
}

// IsCompleted reports whether the backoff has run its course: a waiter should now park
// (block on a channel, condition variable or latch) instead of polling further.
func (s *SpinWait) IsCompleted() bool { return s.step > yieldLimit }

// spin busy-waits for about n iterations. The result goes to a non-inlined function so
// the compiler cannot delete the loop as dead code.
//
//go:noinline
func spin(n uint32) {
	var x uint32
	for i := uint32(0); i < n; i++ {
		x += i
	}
	spinSinkFn(x)
}

//go:noinline
func spinSinkFn(uint32) {}
