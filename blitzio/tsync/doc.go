// Package tsync provides synchronisation primitives and channels for blitzio tasks: the
// counterpart of Tokio's tokio::sync. A task that waits on them returns pending and
// frees its worker instead of blocking it, so thousands of tasks can wait on one lock or
// channel on a handful of workers.
//
// The name (task sync) keeps it from clashing with the standard library's sync, which
// code using these primitives often imports too.
//
// Every primitive has three forms: a try-form that never waits, a future form for tasks
// (Poll it, Await it in an Async function, or combine it with Select and Timeout), and a
// blocking form for plain goroutines, so one value can join a task world and a goroutine
// world. Blocking forms must not be called from a task: they would block its worker, so
// one that would have to wait there panics, naming the future form to use instead.
//
// Names follow one rule. The method named for the wait blocks (Mutex.Lock,
// Semaphore.Acquire, Barrier.Wait, Notify.Wait); its future form has the Async suffix
// (LockAsync, AcquireAsync, WaitAsync); its Context form gives up when a context.Context
// is done (LockContext, AcquireContext, WaitContext); its try-form never waits (TryLock,
// TryAcquire). Where Tokio's name already says "future" (Notify.Notified,
// CancelToken.Cancelled, OnceCell.GetOrInit), that name is the future form.
//
// A Context form given a context that is already done never waits, so a task may call
// it too. The ones that take something (Mutex.LockContext, RwLock.ReadContext and
// WriteContext, Semaphore.AcquireContext, Barrier.WaitContext) then return ctx.Err()
// without taking it, even when it is free, as x/sync/semaphore's Acquire does: a caller
// that has given up does not end up holding a lock. The ones that observe something
// (a channel's RecvContext, SendContext and ChangedContext, Notify.WaitContext,
// CancelToken.WaitContext, OnceCell.GetOrInitContext) first take what is already there
// (a buffered value, room, a stored notification, a cancellation, a set value) and
// return ctx.Err() only if they would have to wait.
//
// The primitives:
//
//   - Mutex (and MutexOf, which owns its value): a lock with sync.Mutex's fairness
//     (running tasks may take it ahead of a woken waiter, but a waiter that has waited
//     1 ms gets it handed over, so none starves), unlocked through a guard that
//     refuses to unlock twice.
//   - RwLock: readers or one writer, fair both ways.
//   - Semaphore: n permits, FIFO, with Permit.Release, Permit.Forget and Close.
//   - Notify: NotifyOne (with a stored permit) and NotifyWaiters.
//   - Barrier: n parties, one leader per generation.
//   - OnceCell: a value initialised once by the first caller's future; a failed or
//     cancelled initialiser lets the next caller try.
//   - CancelToken: a tree of cancellation signals, bridged to context.Context.
//
// Futures of the primitives hold their waiter node inline and can be reused with Reset
// (LockFuture, AcquireFuture, NotifiedFuture), so a task's state machine that keeps one
// waits and re-waits without allocating.
//
// Waiting is cancellation-safe: dropping a waiting future (the loser of a Select, an
// expired Timeout, an aborted task) never loses a permit, a lock hand-off, a message or a
// notification; what was handed to the dropped waiter passes to the next one.
//
// # Channels
//
// Five channel kinds, each with Tokio's behaviour and Go's close rules:
//
//	NewChannel    bounded, many senders and many receivers (a lock-free ring, exact capacity)
//	NewUnbounded  unbounded, many senders, one receiver
//	NewOneshot    one value, one sender, one receiver
//	NewBroadcast  every receiver sees every value; a slow receiver gets a *LagError
//	NewWatch      the latest value only; receivers wait for a change
//
// Every end is a handle. Go has no destructors, so a handle is released with Close, and
// Clone makes another handle to the same end. When the last sender handle is closed the
// receivers drain what was sent and then get ErrClosed; when the last receiver handle is
// closed, sends fail with a *SendError that gives the value back. A receiver that is
// forgotten without Close keeps the channel open for senders, exactly as a Go channel
// nobody reads: close receivers you stop using.
//
// Each operation comes in the three forms of the package: TryRecv and TrySend never
// wait; RecvAsync and SendAsync return futures for tasks; Recv and Send block a plain
// goroutine (RecvContext and SendContext give up when a context is done), and All ranges
// over received values. RecvAny waits on several receivers at once.
package tsync
