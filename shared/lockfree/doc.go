// Package lockfree holds the lock-free building blocks that the blitz fork-join pool and
// the blitzio async runtime both stand on.
//
// The package knows nothing about its users. Each type documents who may call which
// method (the owner only, or any goroutine) and the ordering argument for its atomics.
// Go's sync/atomic operations are sequentially consistent, which satisfies every
// acquire/release/seq_cst requirement of these algorithms; where an algorithm needs a
// full fence (Chase-Lev pop, the sleep protocol's two fences) a seq-cst read-modify-write
// or store provides it.
//
// The pieces:
//
//   - [Deque]: the Chase-Lev work-stealing deque. One owner pushes and pops at the
//     bottom (LIFO, wait-free); any number of thieves steal at the top (FIFO,
//     lock-free). A steal can answer [Retry] when it lost a race, which is why
//     [Deque.StealLoop] exists.
//   - [OnceLatch]: a one-shot latch with four states (UNSET, SLEEPY, SLEEPING, SET) so a
//     waiter that parks is never missed by the setter.
//   - [CountLatch]: a counter that releases its waiters when it drops to zero.
//   - [CoreLatch]: the worker sleep handshake of the fork-join pool.
//   - [TreiberStack]: a lock-free stack for work injected from outside a pool.
//   - [AtomicCounters]: one uint64 packing the sleeping and inactive worker counts and
//     the jobs event counter (JEC) of the sleep protocol, with the JEC toggles
//     [AtomicCounters.IncrementJECIfSleepy] and [AtomicCounters.IncrementJECIfActive].
//   - [SpinWait], [CachePad] and the padded atomics, and [XorShift64Star] for victim
//     selection.
//
// # How it is proven
//
// Every type has unit tests, and the concurrent ones stress tests that run far more
// goroutines than cores and check the outcome exactly: the deque and the Treiber stack
// deliver each of a million numbered items exactly once; the latches survive 100,000
// set/wait races, where a lost wake fails the test by timeout instead of hanging it.
// FuzzDeque and FuzzTreiberStack compare long operation sequences with a slice. The
// Chase-Lev deque and OnceLatch are also modelled in Promela (directory spin) and
// checked exhaustively by the spin model checker, next to deliberately broken variants
// that spin must reject, so the checks are seen to bite.
//
// # Cost
//
// On x86-64 every Go atomic store or read-modify-write is a locked instruction (XCHG,
// LOCK CMPXCHG) costing several nanoseconds, and Go has no release-only store. The
// deque's owner therefore pays three of them per Push and Pop pair (the slot and
// bottom stores of Push, and the fence or the last-item CAS of Pop), which bounds a
// push+pop pair near 20 ns; loads are plain MOVs, so an empty Pop, a Probe or a failed
// Steal cost about a nanosecond. See BenchmarkDequePushPop and the blitzbench lockfree
// suite for the figures against a mutex-guarded slice and a channel.
//
// A scheduler's find-work loop built from these pieces looks like this:
//
//	for {
//		if job := own.Pop(); job != nil { // newest local work first: cache-warm
//			run(job)
//			continue
//		}
//		start := rng.Intn(len(victims)) // random start spreads thieves out
//		for i := range victims {
//			if job, ok := victims[(start+i)%len(victims)].StealLoop(); ok {
//				run(job)
//				goto next
//			}
//		}
//		if job, ok := injected.Pop(); ok { // work from outside the pool
//			run(job)
//			continue
//		}
//		sleep() // the JEC protocol of AtomicCounters and CoreLatch
//	next:
//	}
package lockfree
