// Package blitzio is an async runtime in the spirit of Rust's Tokio: stackless,
// poll-based futures run as tasks by a work-stealing scheduler, with a timer wheel, a
// pool for blocking calls, and an I/O driver (io_uring on Linux when the kernel allows
// it, epoll otherwise; kqueue on macOS and FreeBSD) under TCP, UDP and Unix sockets.
// Files, child processes, signals and a graceful Shutdown are here too; synchronisation
// primitives and channels are in package blitzio/tsync, and stream helpers, codecs and
// the net.Conn and net.Listener adapters in package blitzio/stream.
//
// # Futures
//
// A Future[T] is a computation polled to completion: Poll(cx) returns (value, true) when
// done, or (zero, false) after arranging for cx.Waker() to be called when it can make
// progress. Poll never blocks. A task is a future the runtime owns; it costs one
// allocation (header, future and result together) and, while waiting, no goroutine: a
// task sleeping for a minute is about 230 bytes (task, sleep future and its timer entry),
// where a goroutine in time.Sleep is several kilobytes.
//
// A future that holds an outside resource (a timer entry) implements Dropper; Drop
// releases it when the future is abandoned (the loser of a select, an aborted task).
//
// # Writing async code
//
// There are three ways to write a task, from the most convenient to the cheapest:
//
//   - Async and Await: the task is a plain sequential Go function that awaits futures
//     (a loop, an if, a defer for cleanup), run as a coroutine (Go's iter.Pull):
//
//     blitzio.Async(func(co *blitzio.Co) T { v := blitzio.Await(co, f); ... })
//
//     A retry with a timeout and exponential backoff is 11 lines (ExampleAsync_retry),
//     a line-protocol handler a loop (ExampleAsync_lineProtocol). Dropping the task
//     while it waits unwinds the function, so its deferred calls run and the future it
//     awaited is dropped: abort-safe without WithDrop (once it has started: a task
//     aborted before its first poll never runs the function).
//
//   - Composition: Map, AndThen (its callback may return a concrete future type such
//     as *SleepFuture), Lazy, YieldNow, Sleep, Timeout, the combinators
//     (Join2, Join3, JoinAll, TryJoin, All, Select2, Select3, SelectN, Race); for
//     futures of Result values Then, MapOk, MapErr and OrElse; Loop with Step for state
//     machines (ExampleLoop_retry is the retry in 12 lines); MapLimit for fan-out with a
//     limit and fan-in in order (ExampleMapLimit: one line).
//
//   - A PollFunc closure: the state machine by hand (the package Example).
//
// What the coroutine costs, measured on a shared 2-core machine (go test -bench
// 'Switch|YieldTask|Suspended|StartAsync' -benchtime 200000x; the Suspended pair with
// 1x):
//
//	                                      Async          PollFn
//	suspend + resume, polled by hand      140-300 ns     2-4 ns
//	yield through the scheduler           210-330 ns     77-92 ns
//	memory per task asleep in Sleep       3.1-3.4 KB     265-270 B
//	start and finish (one suspension)     0.9-1.1 µs, 10 allocations, 304 B
//	the same as a task with 4 KiB on its  1.0-1.8 µs a task (3.1-4.9 µs when every task
//	stack, 64 at a time on 2 workers      started a new goroutine; BenchmarkSpawnAsyncTasks)
//
// A worker keeps up to 64 coroutines of Async functions that returned, stacks grown, and
// starts the next Async function it polls on one of them: that is the difference in the
// last row.
//
// So an Async task is a goroutine's worth of memory while it waits (its stack), about
// twelve times a PollFn task, and each await that suspends costs a coroutine switch
// there and back on top of the scheduler's round trip; awaits of futures that are
// already ready cost nothing extra. That is the right price for request handlers,
// protocol loops, retries and orchestration: code that waits for I/O or timers and
// does little between awaits, where clarity and abort safety matter. For hundreds of
// thousands of mostly idle tasks, or a hot loop awaiting futures that are usually
// pending, compose futures or write a PollFn: they stay at a few hundred bytes and no
// goroutine. The two mix freely: an Async function awaits any future, and an Async
// future is a future like any other.
//
// # Bridging to CPU work and to plain Go code
//
// A task must not block its worker, neither in a system call nor in a long
// computation. NewCompletion returns a Completion and its future: any goroutine (a
// goroutine of your own, a blitz pool job, a callback) calls Complete once, and the task
// that awaits the future resumes; the worker runs other tasks meanwhile. SpawnBlocking
// runs a function on the blocking pool for calls that block.
//
// Both runtimes in one binary: blitzio and blitz each start GOMAXPROCS workers by
// default, so together they have twice as many goroutines as cores wanting the CPU when
// both are busy. Go's scheduler shares the cores out, so nothing breaks, but CPU-heavy
// blitz work then competes with the blitzio workers and raises the latency of every
// task. Size them to split the machine: Config.Workers small for blitzio when its tasks
// mostly wait (1 to 4 workers carry many thousands of I/O-bound tasks), and the blitz
// pool at GOMAXPROCS minus that for the CPU work; hand CPU work from tasks to the pool
// through a Completion (see the example in the module testing/stress,
// Example_cpuWorkFromATask). Do not call a blitz Call or a parallel loop directly from a
// task: it blocks the worker until the loop ends.
//
// # Tasks and the runtime
//
//	rt, err := blitzio.New(blitzio.Config{})
//	defer rt.Close()
//	h := blitzio.Spawn(rt, fut)        // from any goroutine
//	v, err := h.Wait()                  // or await h inside another task
//	v, err = blitzio.BlockOn(rt, fut)   // drive a future on this goroutine
//	b := blitzio.SpawnBlocking(rt, f)   // run a blocking func() T on the blocking pool
//
// Inside a task, Spawn(cx, f) queues the child on the current worker. JoinHandle is itself
// a future, and any number of tasks and goroutines may await or Wait on copies of one
// handle; Abort cancels a task at its next scheduling point (an AbortHandle, from
// JoinHandle.AbortHandle or JoinSet.Spawn, can abort and query a task but not read its
// result, as Tokio's); a panic in Poll becomes a
// *PanicError on the handle and the worker carries on. A panic in a dropped future's Drop
// is reported on the handle too (joined to its error), and a runtime.Goexit in a task's
// code (t.Fatal in a test) completes the task with ErrGoexit while the runtime replaces
// the goroutine that exited.
//
// Nothing that runs on a worker may block. BlockOn, JoinHandle.Wait, Close and a
// Shutdown that would wait, called on a worker goroutine or inside an Async function,
// panic with "blitzio: cannot block from within a runtime" instead of deadlocking (see
// BlockOn for what is detected).
//
// Misuse panics at the call with a message naming the function and the argument: a nil
// Spawner, runtime or future given to Spawn, SpawnBlocking or BlockOn, the zero
// JoinHandle, reading a JoinHandle after Detach. A Config that names an I/O backend the
// platform lacks makes New fail with ErrBackendUnavailable.
//
// # Streams, files, processes, signals and a graceful stop
//
// AsyncReader and AsyncWriter are the poll forms of io.Reader and io.Writer (Tokio's
// AsyncRead and AsyncWrite); package blitzio/stream builds on them: Read, ReadFull,
// WriteAll, Copy, CopyBidirectional, BufReader (ReadLine), BufWriter, and framing with
// LinesCodec and LengthDelimitedCodec, over sockets, files, pipes and the in-memory
// stream.Duplex alike.
//
// Files work like package os, as futures (Tokio's tokio::fs): Open, Create, OpenFile and
// OpenOptions give a *File (an AsyncReader and AsyncWriter with ReadAt, WriteAt, SeekTo,
// Sync, SetLen, Stat, Close); ReadFile, WriteFile, CopyFile, Rename, Remove, RemoveAll,
// Mkdir, MkdirAll, Stat, Lstat, Chmod, Link, Symlink, Readlink, Canonicalize and Exists
// act on paths, and ReadDir streams a directory's entries. Their errors are os's
// (*fs.PathError), so errors.Is(err, fs.ErrNotExist) works. File calls run on the
// blocking pool, except reads whose bytes are already in memory, which the worker does
// itself (preadv2 with RWF_NOWAIT on Linux); one given to BlockOn itself runs on the
// goroutine that called BlockOn, as with package os.
//
// Command starts child processes (Tokio's tokio::process): arguments, environment,
// directory, and stdin, stdout and stderr inherited, null or piped as Files; a Child has
// a Wait future, TryWait, Kill and Signal, and Output and Status collect a run (lazily,
// as Tokio's async fns do: the command starts at the future's first poll). A child is
// reaped when it exits even if nobody waits for it. A non-zero exit status is a result,
// not an error (exec returns an *exec.ExitError for it): check ProcessState.Success.
//
// ListenSignals delivers signals to tasks by portable SignalKind (SIGUSR1 is 10 on Linux
// and 30 on macOS; the kinds name the right one), to every listener of a signal, and
// CtrlC is the future of an interrupt. NewShutdown coordinates a graceful stop in the
// style of http.Server.Shutdown: a signal or code triggers it, new work is refused,
// work in flight holds WorkGuards that Wait lets finish within a deadline, then Wait
// runs the hooks (a server's Shutdown, Runtime.Shutdown), once however many goroutines
// call it.
//
// # The scheduler (worker.go, queue.go, inject.go, idle.go)
//
// Each worker goroutine owns a 256-slot ring (FIFO for fairness; others steal half of it
// at once) and a LIFO slot: a task woken by the running task runs next, which keeps
// message passing between two tasks on one core, capped at 3 LIFO polls in a row so they
// cannot starve the queue. Tasks spawned or woken from outside go to a global injection
// queue that workers pull from in batches of up to 64 and check first at an interval
// adapted to the mean poll time (about every 200 µs of work). A task gets a budget of 128
// leaf-future completions per poll; when it is spent the leaf returns pending and the task
// goes to the back of the queue, so a task looping over always-ready futures cannot starve
// its neighbours. Idle workers search (at most half of them at once), then park on a
// channel; a bitmap of parked workers gives O(1) wake-ups. On Linux a parking worker
// lowers its thread's timer slack to 1 µs, so that the Go scheduler's short sleep before
// it takes a just-woken goroutine from a busy thread stays short (Config.KeepTimerSlack).
//
// # Task state (taskstate.go)
//
// One uint64 per task, changed only by compare-and-swap: lifecycle (idle, scheduled,
// running, complete), CANCELLED, NOTIFIED (woken while running: re-schedule after the
// poll), JOIN_INTEREST, JOIN_WAKER, JOIN_LOCK and JOIN_MULTI (the JoinHandle's waker
// hand-off: one waker in the task, or a list once a second waiter comes), and a reference
// count. spin/taskstate.pml is a Promela model of the protocol checked by spin in CI, and
// spin/taskjoin.pml checks the hand-off with several waiters.
//
// # Time (timerwheel.go, timer.go, time.go, clock.go)
//
// A hierarchical timer wheel of 5 levels × 64 slots at 1 ms resolution (about 12 days;
// beyond that an overflow list), O(1) insert and cancel, driven by the scheduler (worker 0
// between tasks, or the parked worker with timer duty, which parks only until the next
// deadline), so there is no goroutine or runtime timer per sleep. A *TestClock in
// Config.Clock makes time move only when a test calls Advance.
//
// Starting and dropping a sleep is on the hot path of every timeout, so it avoids the
// wheel's lock: a sleep registers by pushing its entry on a lock-free pending stack (one
// CAS) and a drop of a still-queued entry is one CAS on the entry's state; workers move
// pending entries into the wheel under the lock when they process timers, and every 64
// registrations through one Context. spin/timerqueue.pml models this protocol. A sleep's
// deadline is computed from the fast clock (fastclock_linux_amd64.go): the time-stamp
// counter extrapolated from a recent monotonic reading, with a margin that makes it never
// early, at 10 ns instead of Go's 26 ns monotonic read here.
//
// # Networking and the I/O driver
//
// Sockets live in this package, not in a subpackage: a server needs one import and reads
// like Go's net (blitzio.ListenTCP, blitzio.DialTCP, blitzio.TCPStream beside
// net.TCPAddr), and no name forces an alias for a standard package imported in the same
// file (a "net" subpackage would clash with net; the addresses, errors and
// net.KeepAliveConfig are the standard ones). Every operation is a future
// (Accept, Read, ReadFull, Write, WriteAll, WriteVectored, Peek, Readable, Writable,
// DialTCP, Dial, and a Dialer's Dial, DialUDP and DialUnix, which dial by name as
// net.Dialer's do), with a Poll form (PollRead, PollWrite, PollAccept) for hand-written
// state machines that allocates nothing. Dropping an unfinished operation leaves the
// socket as if it had not started: the system call runs only inside the Poll that
// reports its result. Errors are *net.OpError around *os.SyscallError around the errno,
// so errors.Is(err, syscall.ECONNRESET) and errors.Is(err, net.ErrClosed) work, and an
// expired Timeout is a net.Error with Timeout() true. For what the package does not wrap
// (a socket option, recvmmsg, descriptor passing), every socket has SyscallConn, Go's
// syscall.RawConn, and AsyncIO, the future a task awaits to make a system call of its
// own when the socket is ready (Tokio's async_io). A socket made by package net, or
// inherited (systemd's socket activation, through net.FileListener), is taken over with
// TCPListenerFromNet and its siblings, as Tokio's from_std.
//
// The I/O driver has three layers: the platform pollers (internal/poller: epoll,
// io_uring, kqueue, a portable fallback) that know system calls but no futures; the
// driver (io_driver.go, io_scheduled.go) that keeps per-socket readiness and waiters and
// is polled by the workers; and the sockets on top. Workers take ready events between
// tasks (a try-lock and a zero timeout), and while anything is registered the worker
// that parks with the driver free waits in it until an event, its timer deadline, or a
// wake from a producer (through Go's own netpoller, where the epoll or io_uring
// descriptor is registered, so its thread is not held in epoll_wait or io_uring_enter
// and its P serves other goroutines meanwhile). With nothing registered every worker
// parks on its channel, which a new task wakes without a system call. An idle runtime with idle connections uses no CPU, and an idle
// connection holds no buffer (bytes go from the kernel into the caller's buffer when the
// socket is readable). Runtime.Backend reports the backend in use and why the automatic
// choice fell back. On io_uring a socket's readiness comes from a one-shot poll that the
// driver arms when a task is about to wait on it (its read or write found nothing to
// do), queued with the worker's next batch of submissions: the kernel posts a poll's
// completion from the thread that submitted it, and a busy worker's thread does that at
// its next system call, where a poll armed once for the socket's life would keep
// waking whichever thread registered the socket, often one the Go scheduler has parked.
// BLITZIO_IOURING_MULTISHOT=1, read when a runtime is created, keeps one multishot poll
// per socket instead (for comparison); BLITZIO_IOURING=off forces epoll.
//
// Which Linux backend to pick (Config.Backend), from blitzbench's net, http and fs
// suites on a 2-vCPU guest: TCP echo is within a few percent either way at 100 and 1,000
// connections (they trade places between runs); httpserve served more requests per
// second on io_uring in most plaintext cases; file reads that miss the page cache go
// through the ring only on io_uring (without it, through the blocking pool); but a UDP
// server received about 40% more datagrams per second on epoll, and on io_uring a UDP
// socket or an abstract Unix listener closed while a task waits on it keeps its address
// for a few milliseconds (see UDPConn.Close). So the default, io_uring, suits TCP
// servers and file work; a program that is mostly UDP, or that rebinds addresses at
// once, may prefer BackendEpoll.
//
// The sockets are built for Linux, macOS and FreeBSD (tested on Linux;
// on the BSDs the kqueue driver serves them, compiled but not exercised here; '@' abstract
// Unix names are Linux-only); elsewhere (Windows) the package builds and runs the
// scheduler, timers and blocking pool, without sockets.
//
// # Shutdown
//
// Close or Shutdown(ctx) cancels and drops every task, cancels queued blocking jobs,
// waits for running blocking jobs, and returns when every goroutine the runtime started
// has exited. A File's read or write of a pipe or socket in Go's poller (a child's piped
// streams) is interrupted rather than waited for, as Tokio's reactor-driven pipes are. Both are idempotent. The shutdown runs on a goroutine of its own, so
// Shutdown returns ctx.Err() by its deadline even if a poll is stuck, and a task stops
// its own runtime with Shutdown and a cancelled context (Close there would wait for
// itself, and panics). A SpawnBlocking job may Close its own runtime.
//
// # Differences from Tokio
//
// Go has no thread-locals, so the current worker travels in the *Context passed to Poll
// (Spawn(cx, f), Waker.WakeFrom(cx)) instead of a thread-local. Go has no destructors, so
// abandoning a future is explicit (Dropper). Memory is garbage collected, so a task's reference
// count only decides when a finished task's output can be released, never when memory is
// freed. The local queue is Tokio's FIFO ring rather than a Chase-Lev deque. Only the
// worker on timer duty parks with a timeout (until the next deadline); the others park
// until woken, instead of waking every few milliseconds, so an idle runtime costs no
// CPU at all (the lost-wake-up race is closed by the parked bitmap protocol, not by
// periodic polling). A Sleep's duration counts from its first poll, since the future
// knows its runtime (and so its clock) only then.
package blitzio
