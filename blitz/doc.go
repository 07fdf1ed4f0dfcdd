// Package blitz is a work-stealing fork-join pool for CPU-parallel work, in the spirit of
// Rust's Rayon: Join, scopes, parallel loops and reductions, parallel iterators over
// slices and parallel sorts.
//
// # Using it
//
// A Pool runs worker goroutines (GOMAXPROCS of them by default). Work enters a pool
// through Pool.Call, from any goroutine, and every job receives a *Task: the context of
// the worker running it, through which all nested parallelism goes (there is no
// goroutine-local state in Go, so the Task is passed explicitly):
//
//	p := blitz.Default()
//	sum := blitz.Call(p, func(t *blitz.Task) int {
//		a, b := blitz.Join2(t, left, right) // left and right may run in parallel
//		return a + b
//	})
//
// The fork-join forms, from the most convenient to the cheapest:
//
//   - Scope and Spawner.Spawn: any number of tasks, from anywhere, all done when Scope
//     returns; ScopeContext stops starting tasks once its context is cancelled.
//   - Join, Join2, JoinN, TryJoin, TryJoinContext: closures, forked and joined.
//   - Job and Future: a typed job declared once (var j blitz.Job[In, Out]) whose Fork
//     and Join allocate nothing and, when the fork is not pushed, cost one atomic load
//     and a compare, inlined. With Future.Stolen instead of Join, a fork that nobody
//     stole is run by the caller with a direct call: within a nanosecond of plain
//     recursion (measured: fib(30) with a fork per call, 2.9 ns per fork against 2.65
//     for plain recursion). Use it for
//     fine-grained recursion (a fork at every node of a tree).
//
// Most programs never touch a Task: the parallel functions take slices and functions
// and run on the default pool (or the one given by WithPool), splitting the input by
// the number of workers (WithGrain overrides the leaf size), and run small inputs on the
// caller's goroutine without touching the pool:
//
//   - loops and reductions: For, ForGrain, ForUntil (early exit), Reduce, MapReduce,
//     MapReduceChunked, TryFor, TryForContext, TryForEach, TryReduce. MapReduce copies
//     its identity value into every leaf, so an identity that is a map, slice or
//     pointer would be shared; MapReduceFunc (and ZipMapReduceFunc, ChainMapReduceFunc,
//     RangeReduceFunc) take an identity constructor instead, as Rayon's reduce does;
//   - independent leaves that never fork: Group, errgroup's shape (Go, Wait, SetLimit,
//     GroupContext) with the functions run on the pool's workers;
//   - slice functions: Sum, Min, Max, MinFunc, MaxFunc, MinByKey, MaxByKey, Count, Any,
//     All, FindAny, FindFirst, FindLast, Index, IndexAny, LastIndex, ForEach,
//     ForEachIndex, Map, MapInto, MapInPlace, Fill, Filter, FlatMap, Flatten, Scatter,
//     Partition, and the sources Chunks, Zip, Chain and Range;
//   - iter.Seq: ForEachSeq consumes a sequence in parallel batches, MapSeq returns the
//     results as a sequence that stops the work when the loop breaks;
//   - sorts: Sort and SortDesc (a parallel radix sort for integer, float and string
//     types), SortFunc (pattern-defeating quicksort, or a merge sort for small
//     pointer-free elements with a cheap comparator), SortByKey, SortByCachedKey, and
//     the stable SortStableFunc (parallel merge sort).
//
// The comment at the top of par_options.go explains how these fit together (grain,
// the stop flag that is both the early-exit flag and the panic fuse, leaves).
//
// A panic in forked work is re-raised in the goroutine that joins it, as a *PanicError
// carrying the value and the stack of the panicking goroutine, after the sibling work
// has finished. Workers never die of a user panic. A job that calls runtime.Goexit
// (t.Fatal does) ends the goroutine running it; its joiner receives a *PanicError
// wrapping ErrGoexit, and a worker goroutine that exits is replaced. A job started with
// Pool.Go runs in isolation (never beneath other work), and its panic crashes the
// program unless Config.PanicHandler is set, as a panic in a goroutine would.
//
// Nil pools, Tasks and functions given to the package's functions panic at once with
// a message naming the argument (the exceptions: Fork's Task, see Job.Fork, and
// WithPool(nil), which means the default pool).
//
// # When to use blitz, and when goroutines
//
// blitz is for CPU-bound work: computations that keep a core busy from start to end.
// A pool has a fixed number of workers, GOMAXPROCS by default, so that each runs on a
// core of its own with no more goroutines than cores to schedule; a worker never
// blocks on purpose. A job that blocks (on I/O, a channel, a lock, time.Sleep, a
// remote call) holds its worker without using its core: a blocked worker is a lost
// core, and the jobs queued behind it wait. For example, on a 2-core machine, 12 calls
// that each wait 50 ms, run with For and WithGrain(1), take about 200 ms (four rounds
// of three: two workers and the calling goroutine), against about 50 ms with errgroup,
// which starts a goroutine per call. That is by design: for blocking work use goroutines, errgroup
// (golang.org/x/sync/errgroup) or an async runtime, and hand only the CPU-heavy parts
// to blitz (Pool.Call and the parallel functions may be called from any goroutine).
//
// Which form of Call to use: Pool.Call, or the function Call for a result, when the
// work cannot fail (a panic stays a panic); Pool.TryCall, or the function TryCall for
// a result, when the work returns an error or the caller wants every failure (a panic,
// a closed pool) as an error value.
//
// # How it works
//
// The design follows Rayon's (rayon-core): work-stealing deques, joins that steal
// while they wait, and a sleep protocol with a jobs event counter. See the comments of
// each file for the details and the races they prevent.
//
//   - Workers (pool.go, workerLoop): each has a Chase-Lev deque (lockfree.Deque). A
//     worker looking for work steals from guests (callers inside Pool.Call) first, then
//     from the other workers starting at a random one (XorShift64*), then takes injected
//     jobs (Pool.Go, Spawner.Spawn), then goes through the sleep protocol.
//   - Sleep (sleep.go): Rayon's JEC protocol: packed sleeping/inactive/JEC counters, 32
//     yield rounds, announce sleepy, one more round, then the four-state CoreLatch and a
//     condition variable. The waker decrements the sleeping count; posters wake only as
//     many sleepers as the awake-but-idle workers cannot serve. An idle pool's workers
//     are blocked, using no CPU.
//   - Frames (job.go, task.go): a future cannot live on a goroutine stack in Go (stacks
//     move), so each Task keeps slabs of frames reused in LIFO order, one per Job type
//     pair [In, Out], not per Job value, so that memory is bounded by the types in use.
//     Forks use lazy binary splitting: a fork is pushed to the deque only while the
//     deque holds fewer than SplitDepth jobs (or while it is one of the first
//     EagerLevels nested forks), otherwise it costs an atomic load and runs at its Join
//     ("Lazy binary splitting" in the Task documentation). Thieves take the oldest,
//     biggest pushed fork. A join of a stolen fork runs other work while it waits
//     (steal, yield, then the sleep protocol) and a worker sleeps only when there is
//     nothing it could do.
//   - Guests (Pool.Call): a goroutine from outside becomes a guest worker for the
//     duration of its call, where Rayon's in_worker_cold would hand the closure to a
//     worker and block: no hand-off, and its forks can be stolen like a worker's. So
//     during a call the caller computes alongside the Workers workers; Pool.Go hands
//     work to the workers instead. Up to twice the workers (at least 8) guest Tasks
//     are kept and claimed without a lock; workers scan those and the guests of the
//     Calls in flight beyond them.
//   - Close (Pool.Close) waits for the work in flight, which may still make nested
//     calls meanwhile. Workers, Calls and detached Go jobs run under a mark on their
//     goroutine's call stack, so Close can tell that it was called from the pool's own
//     work (it panics rather than wait for itself).
//
// The Promela model spin/jec.pml checks the sleep protocol with two workers and a poster
// that publishes deque and injected jobs: a posted job is always taken. spin must
// reject two broken variants: the announcing worker incrementing the JEC "if even",
// like posters, and a sleeper that registers without comparing the JEC it saved.
package blitz
