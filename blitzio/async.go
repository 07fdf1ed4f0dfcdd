package blitzio

import (
	"iter"
	"sync/atomic"
)

// Co is the handle an Async function receives: what Await needs to suspend it. It is
// valid only inside that function (and the functions it calls on the same goroutine),
// and only while the function runs; Await refuses it inside the Poll of a future that
// the function is awaiting (a Map callback), which must not suspend. A *Co is also a
// Spawner: Spawn(co, f) inside an Async function spawns on the worker that is running
// it.
type Co struct {
	cx    *Context // the Context of the poll now running the function; nil between polls
	yield func(struct{}) bool
	// panicked holds the *PanicError of a panic that escaped the function, with the stack
	// of the coroutine's goroutine at the panic (the poller re-raises it).
	panicked *PanicError
	// unwinding is set by Drop before it resumes the function to unwind it.
	unwinding bool
	// polling is set while Await polls a future for the function, and an Await with
	// this *Co is refused meanwhile. Such an Await comes either from an Async function
	// nested in that future (on a coroutine of its own) that captured the outer *Co,
	// whose yield would switch the outer coroutine from the wrong goroutine (the poller
	// takes the outer function for suspended while it runs, and a Drop resumes it as if
	// its Await had returned); or from inside the future's Poll (a Map callback), whose
	// suspension would leave that Poll half done across the switch, the frames of the
	// combinators above it too, with the worker's shared Context still set up for their
	// child (cx.child): the next task the worker polls would take a wrong Waker. In
	// either case the Poll would not return before the coroutine suspends, as the Future
	// contract (Poll never blocks) requires.
	polling bool
	// active is true while a poll (or Drop) has switched to the function. Atomic only so
	// that Await called by another goroutine while the function is suspended (a misuse)
	// is told clearly instead of racing on cx.
	active atomic.Bool
}

// errAsyncCancelled is the panic value with which Await unwinds an Async function whose
// future was dropped while it was suspended, so that the function's deferred calls run.
// runCoroutine recovers it; user code that recovers everything should re-panic values it
// does not know.
var errAsyncCancelled = &struct{ msg string }{"blitzio: Async function cancelled (its future was dropped)"}

func (co *Co) spawnTarget() (*Runtime, *Context) {
	if co == nil || co.cx == nil {
		if co != nil && co.active.Load() && co.unwinding {
			// A deferred call run by Drop: the function is running, but no poll is, so
			// there is no worker to spawn on. Saying "outside" would send the reader
			// looking for a *Co that escaped.
			panic("blitzio: Spawn with the *Co of an Async function that is being unwound " +
				"(its future was dropped, so no poll runs it): spawn with the *Runtime instead")
		}
		panic("blitzio: Spawn with a *Co outside its running Async function")
	}
	return co.cx.spawnTarget()
}

// Context returns the Context of the poll that is running the Async function, for the
// rare call that needs one directly (Waker().WakeFrom, a hand-written future's Poll).
// It is valid until the next Await. It is nil while a Drop unwinds the function (its
// deferred calls run with no poll), and outside the function.
func (co *Co) Context() *Context { return co.cx }

// Await suspends the Async function until f is ready and returns its value: the
// sequential form of polling f from a state machine. The worker does not wait: the task
// returns pending, and the function resumes when f wakes it.
//
// If the Async future is dropped while the function is suspended here (its task was
// aborted or shut down, it lost a select, a Timeout expired), Await drops f and unwinds
// the function with a private panic that the Async future recovers: the function's
// deferred calls run, and it does not resume. Do not recover that panic and carry on
// awaiting: every later Await unwinds again at once.
//
// If f's Poll panics (or calls runtime.Goexit), f is dropped before the panic goes on
// up the function, as Rust drops the futures a panic unwinds past: a lock, permit or
// channel waiter that f holds or has queued is given back instead of being stranded.
//
// Await panics if co is nil or not running (called after the function returned, or
// from another goroutine while the function is suspended), if co is already awaiting
// (called inside the Poll of the future it awaits, a Map or AndThen callback say, or by
// a nested Async function with the *Co of the function that awaits it), and if f is
// nil. An Await from another goroutine while the function runs is a data race that
// Await cannot always tell (the race detector does): a *Co stays on its function's
// goroutine.
func Await[T any](co *Co, f Future[T]) T {
	if co == nil || co.yield == nil {
		panic("blitzio: Await called with a nil or unstarted *Co (use the *Co that Async passed to the function)")
	}
	if isNilFuture(f) {
		panic("blitzio: Await called with a nil future")
	}
	// Checked before the defer below is armed: a refused Await must not read or write
	// co.polling, which belongs to the function's goroutine. (Once the function runs,
	// only Poll resumes it, with active set: the loop need not check again.)
	if !co.active.Load() {
		panic("blitzio: Await called outside its running Async function (after it returned, " +
			"or from another goroutine)")
	}
	if co.polling {
		panic("blitzio: Await called with a *Co that is already awaiting (inside the Poll of " +
			"the future it awaits, a Map callback say, or in a nested Async function that " +
			"captured the outer function's *Co): a Poll must not suspend, and each Async " +
			"function awaits with the *Co passed to it")
	}
	// One defer for the whole Await, not one per poll: co.polling is set while f.Poll
	// runs, so that a poll that panics or exits the goroutine drops f on the way out (see
	// dropQuietly). It is cleared after the Drop: an Async function nested in f, unwound
	// by it, must not await with this *Co either.
	defer func() {
		if co.polling {
			dropQuietly(f)
			co.polling = false
		}
	}()
	for {
		if co.unwinding {
			// Dropped: the function is being unwound (a deferred call awaiting).
			Drop(f)
			panic(errAsyncCancelled)
		}
		co.polling = true
		v, ok := f.Poll(co.cx)
		co.polling = false
		if ok {
			return v
		}
		if !co.yield(struct{}{}) {
			Drop(f)
			panic(errAsyncCancelled)
		}
	}
}

// Async returns a future that runs fn as a coroutine: a plain sequential Go function
// that awaits futures with Await, instead of a state machine written with PollFn.
//
//	fut := blitzio.Async(func(co *blitzio.Co) string {
//		blitzio.Await(co, blitzio.Sleep(time.Millisecond))
//		r := blitzio.Await(co, blitzio.Spawn(co, child))
//		return r.Value
//	})
//
// fn starts on the first poll and runs, on a goroutine of its own that the poller
// switches to directly (Go's iter.Pull coroutines, no trip through the scheduler),
// until it awaits a future that is not ready or returns. Polled by a worker, it may run
// on a goroutine an earlier Async function ran on: a worker keeps a few of those for
// reuse, so do not leave goroutine state behind in fn (runtime.LockOSThread without
// UnlockOSThread, pprof labels set with pprof.SetGoroutineLabels). Suspended, it costs that
// goroutine's stack (a few KB, where a PollFn task is a few hundred bytes) and each
// resumption costs a coroutine switch there and back (a few hundred ns); see the
// package documentation for figures and for when to prefer PollFn.
//
// A panic in fn (or in a future it awaits) is re-raised by the Async future's Poll as a
// *PanicError that keeps the stack of fn's goroutine at the panic, so the task's
// JoinHandle reports where fn panicked. runtime.Goexit in fn ends the goroutine polling
// it too (Go's coroutines propagate it): in a task, the handle reports ErrGoexit and the
// worker is replaced, as for any Goexit in a Poll.
//
// Dropping the future while fn is suspended unwinds fn (see Await): its deferred calls
// run during Drop. A future dropped before its first poll (a task aborted before it
// ran) never starts fn, so fn's defers do not run either: a resource fn receives from
// outside (an accepted connection) and closes in a defer must also be released by a
// WithDrop hook, or be owned by the code that spawns. A future returned by Async that
// was polled must be driven to the end
// or dropped, as the runtime and the combinators do; one that is merely forgotten keeps
// its goroutine. Polled after it has finished, the future returns the same value; polled
// after Drop, or after fn called runtime.Goexit, it panics. Polled or dropped while fn
// runs (from inside fn, which awaits or drops its own future, or by two pollers at once)
// it panics too: like a Rust future, it is polled by one task at a time.
func Async[T any](fn func(co *Co) T) Future[T] {
	if fn == nil {
		panic("blitzio: Async called with a nil function")
	}
	return &asyncFuture[T]{fn: fn}
}

const (
	asyncNew uint8 = iota
	asyncSuspended
	asyncDone
	asyncDropped
)

type asyncFuture[T any] struct {
	co    Co
	fn    func(*Co) T
	c     *coroutine // the goroutine running fn, from its first poll until it returns
	own   coroutine  // c when no worker polls it (nothing would keep it for reuse)
	out   T
	state uint8
}

// coroutine is the goroutine an Async function runs on: an iter.Pull coroutine whose
// sequence runs one function body, or, when a worker keeps it for reuse, one body
// after another.
//
// Why reuse: starting a coroutine costs a goroutine (about half a microsecond here), and
// a function that keeps a few KB on its stack (a read buffer) then grows that stack,
// copying it, which cost more than the start itself (about 2 us a task against 0.7 us
// for a plain goroutine, measured on 64 tasks each reading into a 4 KiB stack buffer).
// A worker keeps the coroutines of functions that returned, parked between two bodies
// with their grown stacks, and starts the next Async function it polls on one of them:
// the pooling of worker goroutines that Go's net/http or fasthttp do for handlers,
// applied to coroutines. Only coroutines whose body returned (or panicked, which
// runCoroutine recovers) are kept; one unwound by Drop or ended by runtime.Goexit
// ends with it.
type coroutine struct {
	next  func() (struct{}, bool)
	stop  func()
	co    *Co       // the function's Co, set before the body starts
	body  asyncBody // the body to run (its future); nil between bodies
	reuse bool      // loop for another body once this one returned (a worker keeps it)
	done  bool      // the body returned: set on the coroutine, read by the poller after next
}

// maxIdleCoroutines bounds the coroutines a worker keeps between bodies. Each holds a
// parked goroutine (its stack, 2-8 KB, shrunk by the garbage collector when mostly
// unused); a burst of more Async functions than this starts the rest afresh.
const maxIdleCoroutines = 64

// asyncBody is an Async future as its coroutine sees it: an interface holding the
// *asyncFuture, so that handing a body over allocates nothing.
type asyncBody interface{ run() }

// startCoroutine starts c's goroutine (c is new, or a future's own).
func startCoroutine(c *coroutine, reuse bool) *coroutine {
	c.reuse = reuse
	c.next, c.stop = iter.Pull(c.loop)
	return c
}

// loop is the coroutine's sequence. After a body it yields once more, with done set, to
// park between bodies: resumed (next), it runs the body set meanwhile; stopped (stop,
// by a worker dropping its idle coroutines), yield returns false and the goroutine ends.
func (c *coroutine) loop(yield func(struct{}) bool) {
	for {
		co := c.co
		co.yield = yield
		runCoroutine(co, c.body.run)
		c.co, c.body = nil, nil
		c.done = true
		if !c.reuse || !yield(struct{}{}) {
			return
		}
	}
}

// getCoroutine returns a coroutine to start an Async function's body on: one the polling
// worker kept, or a new one (kept for reuse only when a worker polls: BlockOn and hand-
// made Contexts have no worker to keep it, so the future's own is used).
func getCoroutine(cx *Context, own *coroutine) *coroutine {
	if cx == nil || cx.w == nil {
		return startCoroutine(own, false)
	}
	w := cx.w
	if n := len(w.coros); n > 0 {
		c := w.coros[n-1]
		w.coros[n-1] = nil
		w.coros = w.coros[:n-1]
		c.done = false
		return c
	}
	return startCoroutine(new(coroutine), true)
}

// putCoroutine takes a coroutine parked between bodies: the polling worker keeps it if
// it has room, otherwise it is stopped (its goroutine ends).
func putCoroutine(cx *Context, c *coroutine) {
	if cx != nil && cx.w != nil && len(cx.w.coros) < maxIdleCoroutines {
		cx.w.coros = append(cx.w.coros, c)
		return
	}
	c.stop()
}

// stopIdleCoroutines ends the coroutines w keeps (its runtime is closing).
func (w *worker) stopIdleCoroutines() {
	for i, c := range w.coros {
		w.coros[i] = nil
		c.stop()
	}
	w.coros = nil
}

func (a *asyncFuture[T]) Poll(cx *Context) (T, bool) {
	var zero T
	switch a.state {
	case asyncDone:
		return a.out, true
	case asyncDropped:
		panic("blitzio: Async future polled after Drop")
	case asyncNew:
		a.c = getCoroutine(cx, &a.own)
		a.c.co, a.c.body = &a.co, a
		a.state = asyncSuspended
	}
	// Not re-entrant: a poll while fn runs (fn awaiting its own future, or a second
	// poller) would call the coroutine's next from inside it, or beside it, and break
	// the hand-over between poller and coroutine (a task that never finishes). The CAS
	// costs what the plain store it replaces did.
	if !a.co.active.CompareAndSwap(false, true) {
		panic("blitzio: Async future polled while its function is running (polled from inside " +
			"that function, or by two pollers at once)")
	}
	c := a.c
	a.co.cx = cx
	_, more := c.next()
	a.co.active.Store(false)
	a.co.cx = nil
	if more && !c.done {
		return zero, false
	}
	if !c.done {
		// The coroutine has ended without fn returning: fn called runtime.Goexit in an
		// earlier poll (this poll comes from a deferred call of the goroutine Goexit is
		// ending). There is no value to report.
		panic("blitzio: Async future polled again after its function called runtime.Goexit")
	}
	a.state = asyncDone
	a.c, a.fn = nil, nil
	if more {
		putCoroutine(cx, c) // parked between bodies
	}
	if p := a.co.panicked; p != nil {
		a.co.panicked = nil
		panic(p)
	}
	return a.out, true
}

func (a *asyncFuture[T]) run() { a.out = a.fn(&a.co) }

// runCoroutine runs an Async function's body on its coroutine goroutine. It is not
// generic, so that onRuntimeGoroutine can recognise a coroutine by this frame, and it
// turns a panic into co.panicked with the coroutine's own stack (re-raised on the
// poller's goroutine, whose stack would not show where the function panicked).
//
//go:noinline
func runCoroutine(co *Co, body func()) {
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover()
		switch {
		case r == nil:
			// runtime.Goexit: it cannot be stopped; iter.Pull propagates it to the poller.
			// The function no longer runs: a Drop of its future (by the task's guard)
			// must not take it for running.
			co.active.Store(false)
		case r == errAsyncCancelled && co.unwinding:
			// Unwound by a Drop: the deferred calls have run, nothing to report. (The
			// same value re-raised by a function that is not being unwound, forwarded
			// by a panic catcher, is a panic like any other: not a quiet zero result.)
		default:
			// newPanicError keeps a *PanicError from a nested Async function as is
			// (with its own stack), and otherwise records this stack and panic site.
			co.panicked = newPanicError(r, false)
		}
	}()
	body()
	returned = true
}

// dropQuietly drops f, which a panic (or runtime.Goexit) is unwinding past. A panic of
// the Drop itself is not allowed to replace the first one, which says what went wrong.
func dropQuietly(f any) {
	defer func() { recover() }()
	Drop(f)
}

// Drop unwinds a suspended function (see Await) so that its deferred calls run. A panic
// in one of them is re-raised here.
func (a *asyncFuture[T]) Drop() {
	if a.state != asyncSuspended {
		if a.state == asyncNew {
			a.fn = nil
			a.state = asyncDropped
		}
		return
	}
	if a.co.active.Load() {
		// fn is running (it dropped its own future): stopping its coroutine from inside
		// would switch back to the poller as if fn had suspended, and leave fn blocked.
		panic("blitzio: Async future dropped while its function is running (from inside " +
			"that function)")
	}
	a.state = asyncDropped
	stop := a.c.stop // unwinds the body, then ends the coroutine (not kept for reuse)
	a.c, a.fn = nil, nil
	a.co.cx = nil
	a.co.unwinding = true
	a.co.active.Store(true)
	stop()
	a.co.active.Store(false)
	if p := a.co.panicked; p != nil {
		a.co.panicked = nil
		cp := *p // a copy: the value may be shared (a re-raised handle error)
		cp.InDrop = true
		panic(&cp)
	}
}
