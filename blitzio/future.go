package blitzio

// Future is a computation that may not have finished yet: the unit of work the runtime
// runs. It is the Go form of Rust's Future trait.
//
// Poll advances the computation as far as it can without blocking and reports
// (value, true) when it has finished, or (zero, false) when it is waiting for
// something. The contract every implementation keeps:
//
//   - Poll never blocks: no channel receive, mutex wait, sleep or blocking system call.
//     Blocking work belongs in SpawnBlocking.
//   - Returning pending means the future has arranged for cx.Waker() (or a waker taken
//     from an earlier Context of the same task) to be called when polling again can make
//     progress. A future that returns pending without arranging a wake-up is never polled
//     again.
//   - After Poll has returned ready, it is not called again. Every future in this package
//     (JoinHandle, Ready, Lazy, Map, AndThen, Sleep, Timeout and the combinators)
//     tolerates it anyway: polled again, a finished future returns the same value, and a
//     finished composite future (Map, AndThen, Lazy, Timeout, the joins and selects)
//     returns it without polling its children or calling its callbacks again. A leaf
//     (Ready, Sleep, JoinHandle) consumes budget on every poll, so polled again when the
//     task's budget is spent it returns pending after re-scheduling the task, like any
//     leaf, and the same value on the next poll. User futures need not tolerate it. (A
//     Ticker is a stream: each ready poll is a new tick.)
//   - The *Context is valid only during the call; keep the Waker, not the Context.
//
// A future that holds a resource outside itself (a timer entry, a registration with an
// I/O driver) also implements Dropper so that whoever abandons it can release it.
type Future[T any] interface {
	Poll(cx *Context) (T, bool)
}

// Dropper is implemented by futures that must release something when they are abandoned
// before finishing (Go has no destructors). The runtime calls Drop on a task's future
// when the task is cancelled (Abort, Shutdown) or its Poll panicked; combinators call it
// on children they abandon (the losers of a select, the rest of a failed TryJoin, the
// inner future of an expired Timeout). A future that finishes normally releases what it
// holds itself and is not dropped. Drop must be idempotent and must not block. A dropped
// future is never polled again. A poll-function future gets a Drop with WithDrop.
type Dropper interface {
	Drop()
}

// Drop calls f.Drop if f implements Dropper; it is a no-op otherwise. Combinators and
// hand-written futures use it on children they abandon.
func Drop(f any) {
	if d, ok := f.(Dropper); ok {
		d.Drop()
	}
}

// Result is the outcome of a computation that can fail: a task behind a JoinHandle, a
// Timeout, a TryJoin. Exactly one of Value and Err is meaningful.
type Result[T any] struct {
	Value T
	Err   error
}

// Get returns the value and the error in Go's usual order.
func (r Result[T]) Get() (T, error) { return r.Value, r.Err }

// Context is what a future receives in Poll: the Waker of the task being polled, the
// runtime it runs on, and the task's cooperative budget. One Context is reused for every
// poll a worker makes, so it must not be retained after Poll returns.
type Context struct {
	// waker is the Waker of the task (or BlockOn, or hand-made Context) being polled.
	// While an n-ary combinator polls its child childIdx, child is the combinator's
	// group and Waker() returns that child's waker instead, made on demand: polling a
	// child that is ready at once then writes no pointer into the Context (a write
	// barrier per child while the garbage collector marks, the largest cost of a join
	// of many finished handles).
	waker    Waker
	child    *group
	rt       *Runtime
	w        *worker // the worker polling, nil when polled by BlockOn or by hand
	task     *header // the task being polled by w
	budget   int32
	childIdx int32
	// yield is set by Yield during a worker's poll: the worker re-queues the task at the
	// back of its queue with one CAS, instead of a wake (CAS) plus the idle transition.
	// In BlockOn's poll it asks BlockOn to poll again at once.
	yield bool
	// blockOn is the parker of the BlockOn polling with this Context, nil elsewhere.
	blockOn *parker
	// timerPushes counts the timers registered through this Context since its last drain
	// of the pending stack (see drainEvery).
	timerPushes uint8
}

// budgetPerPoll is the cooperative budget a task gets for one poll (Tokio's is 128 as
// well). Every leaf future that completes consumes one unit; when the budget is spent a
// leaf returns pending and re-schedules the task, so a task that loops over futures which
// are always ready cannot monopolise its worker.
const budgetPerPoll = 128

// unlimitedBudget marks a Context that has no cooperative budget (NewContext).
const unlimitedBudget = -1

// NewContext returns a Context for polling futures by hand, outside any runtime (tests,
// adapters): leaf futures that need a runtime (Sleep, Spawn) panic when polled with it.
// rt may be nil.
//
// A hand-made Context has no cooperative budget: ConsumeBudget always succeeds, so it can
// be reused for any number of polls and leaf completions. The budget exists to make a
// task yield its worker to other tasks; whoever polls by hand owns the goroutine and
// decides when to stop polling. (Workers and BlockOn give each poll a fresh budget.)
func NewContext(rt *Runtime, w Waker) *Context {
	return &Context{waker: w, rt: rt, budget: unlimitedBudget}
}

// Waker returns the waker of the task being polled. Copy it freely; it stays valid after
// Poll returns.
func (cx *Context) Waker() Waker {
	if cx.child != nil {
		return cx.child.waker(cx.childIdx)
	}
	return cx.waker
}

// Runtime returns the runtime the future is polled on (nil for a hand-made Context
// without one).
func (cx *Context) Runtime() *Runtime { return cx.rt }

// ConsumeBudget spends one unit of the task's cooperative budget. A leaf future calls it
// before reporting ready; when it returns false the budget is spent, the task has already
// been re-scheduled, and the leaf must return pending. This is what makes a task that
// loops over always-ready futures yield to its neighbours. With a Context from NewContext
// it always returns true.
func (cx *Context) ConsumeBudget() bool {
	if cx.budget > 0 {
		cx.budget--
		return true
	}
	if cx.budget < 0 { // unlimitedBudget
		return true
	}
	cx.wakeSelfYield()
	return false
}

// budgetSpent reports whether the next ConsumeBudget will fail: combinators stop polling
// children then, since every leaf would only refuse and re-wake itself.
func (cx *Context) budgetSpent() bool { return cx.budget == 0 }

// Yield asks for the task being polled to be polled again after the other queued tasks:
// the caller returns pending, and the task goes to the back of the run queue. It is how a
// hand-written future yields without allocating (YieldNow is the future form). Outside a
// worker (BlockOn, a hand-made Context) it wakes cx.Waker().
func (cx *Context) Yield() { cx.wakeSelfYield() }

// wakeSelfYield re-schedules the polled task at the back of its worker's queue.
func (cx *Context) wakeSelfYield() {
	if cx.w != nil && cx.task != nil && cx.child == nil {
		if h, ok := cx.waker.t.(*header); ok && h == cx.task {
			// We are polling h right now, so only this worker can act on the request:
			// no atomic needed until the poll ends (worker.poll).
			cx.yield = true
			return
		}
	}
	if cx.blockOn != nil && cx.child == nil && cx.waker.t == wakeTarget(cx.blockOn) {
		// BlockOn's own poll asks to be polled again: BlockOn loops at once instead of
		// a send and a receive on its parker's channel. A join of many finished futures
		// yields every budgetPerPoll of them, so this is paid hundreds of times.
		cx.yield = true
		return
	}
	cx.Waker().Wake()
}

// Waker wakes a task: it tells the runtime that polling the task again can make
// progress. A Waker is two words, cheap to copy, and safe to call from any goroutine, so
// plain Go code (a callback, a goroutine finishing a system call) can wake a task. Waking
// a task that has completed or been cancelled does nothing; waking a task several times
// before it is polled polls it once. The zero Waker does nothing.
type Waker struct {
	t wakeTarget
}

// wakeTarget is what a Waker points at: a task header, a BlockOn parker, a combinator's
// child slot. cx is the Context of the caller when it is polling on a worker (so the
// woken task can go to that worker's LIFO slot), or nil.
type wakeTarget interface {
	wake(cx *Context)
}

// Wake wakes the task. Safe from any goroutine.
func (w Waker) Wake() {
	if w.t != nil {
		w.t.wake(nil)
	}
}

// WakeFrom is Wake for a caller that is itself being polled with cx: when cx belongs to
// a worker of the same runtime, the woken task goes to that worker's LIFO slot and runs
// next, which is what message passing between tasks wants (Tokio's LIFO optimisation).
func (w Waker) WakeFrom(cx *Context) {
	if w.t != nil {
		w.t.wake(cx)
	}
}

// WillWake reports whether w and other wake the same task, so a future can skip
// replacing a stored waker that is already right.
func (w Waker) WillWake(other Waker) bool { return w.t == other.t }

// IsZero reports whether w is the zero Waker.
func (w Waker) IsZero() bool { return w.t == nil }

// WakerFunc returns a Waker that calls f. f must be safe to call from any goroutine, any
// number of times. It is meant for adapters and tests that poll futures by hand.
//
// f should not panic. If it does while the runtime fires timers, every other fired timer
// is still woken; then the panic is re-raised, as a *PanicError, by TestClock.Advance when
// Advance was firing, and otherwise (a worker, or a poll that happened to fire timers)
// written with its stack to the standard logger (package log), and the runtime carries
// on.
func WakerFunc(f func()) Waker { return Waker{t: &funcWaker{f: f}} }

type funcWaker struct{ f func() }

func (fw *funcWaker) wake(*Context) { fw.f() }

// ---- building blocks ----

// readyFuture is always ready with its value.
type readyFuture[T any] struct{ v T }

func (r *readyFuture[T]) Poll(cx *Context) (T, bool) {
	if !cx.ConsumeBudget() {
		var zero T
		return zero, false
	}
	return r.v, true
}

// Ready returns a future that is immediately ready with v. It consumes one unit of the
// task's budget per poll, like every leaf future.
func Ready[T any](v T) Future[T] { return &readyFuture[T]{v: v} }

type pendingFuture[T any] struct{}

func (pendingFuture[T]) Poll(*Context) (T, bool) {
	var zero T
	return zero, false
}

// Pending returns a future that is never ready (and never wakes anyone). It is useful as
// the never-firing arm of a select and in tests of cancellation.
func Pending[T any]() Future[T] { return pendingFuture[T]{} }

// PollFunc is a future written as a poll function: a small state machine in a closure.
//
//	step := 0
//	f := blitzio.PollFunc[int](func(cx *blitzio.Context) (int, bool) { ... })
//
// See the package Example for a multi-step task written this way.
type PollFunc[T any] func(cx *Context) (T, bool)

// Poll calls f.
func (f PollFunc[T]) Poll(cx *Context) (T, bool) { return f(cx) }

// PollFn returns a future whose Poll is f. It is PollFunc[T](f) with the type argument
// inferred.
func PollFn[T any](f func(cx *Context) (T, bool)) PollFunc[T] { return PollFunc[T](f) }

type withDrop[T any] struct {
	Future[T]
	drop func()
	once bool
}

// Drop runs the hook, then drops the wrapped future: wrapping must not take away f's own
// Drop (an Async function suspended in an Await would otherwise never unwind, a Sleep
// would keep its timer entry). Drop is idempotent, so a hook that drops f itself is fine.
func (w *withDrop[T]) Drop() {
	if !w.once {
		w.once = true
		defer Drop(w.Future) // even if the hook panics
		w.drop()
	}
}

// WithDrop returns f with a Drop method that calls drop once and then drops f (if f is a
// [Dropper]): how a future written as a poll function releases the futures it holds (a
// Sleep, an Interval) when its task is aborted.
func WithDrop[T any](f Future[T], drop func()) Future[T] {
	return &withDrop[T]{Future: f, drop: drop}
}

type lazyFuture[T any] struct {
	f func() T
	v T
}

func (l *lazyFuture[T]) Poll(*Context) (T, bool) {
	if l.f != nil {
		f := l.f
		l.f = nil // before the call: a panicking f is not called again either
		l.v = f()
	}
	return l.v, true
}

// Lazy returns a future that calls f on its first poll and is ready with its result.
// Nothing runs until the future is polled (unlike a plain function call), and f runs
// once: polled again, the future returns the same result.
func Lazy[T any](f func() T) Future[T] { return &lazyFuture[T]{f: f} }

type mapFuture[A, B any] struct {
	inner Future[A] // nil once finished, failed or dropped
	fn    func(A) B
	out   B
	state uint8 // mapRunning, mapDone, mapDropped or mapFailed
}

const (
	mapRunning uint8 = iota
	mapDone
	mapDropped // Drop was called before it finished
	mapFailed  // fn panicked
)

func (m *mapFuture[A, B]) Poll(cx *Context) (B, bool) {
	switch m.state {
	case mapDone:
		return m.out, true
	case mapDropped:
		panic(errPolledAfterDrop)
	case mapFailed:
		panic("blitzio: Map's future polled again after its function panicked")
	}
	a, ok := m.inner.Poll(cx)
	if !ok {
		var zero B
		return zero, false
	}
	// Finished before fn runs, so a panicking fn leaves no child to poll again; the
	// state says so until fn returns, so the future never reports a value fn did not make.
	m.inner, m.state = nil, mapFailed
	m.out = m.fn(a)
	m.fn, m.state = nil, mapDone
	return m.out, true
}

func (m *mapFuture[A, B]) Drop() {
	if m.state != mapRunning {
		return // finished futures hold nothing; Drop is idempotent
	}
	m.state = mapDropped
	inner := m.inner
	m.inner = nil
	Drop(inner)
}

// Map returns a future that is f's value transformed by fn.
func Map[A, B any](f Future[A], fn func(A) B) Future[B] {
	return &mapFuture[A, B]{inner: f, fn: fn}
}

type erased[T any] struct{ inner Future[T] }

func (e erased[T]) Poll(cx *Context) (any, bool) { return e.inner.Poll(cx) }
func (e erased[T]) Drop()                        { Drop(e.inner) }

// Erase returns f as a Future[any], so futures of different value types can share a
// collection (SelectN over heterogeneous futures, a registry of pending work). Every
// Future[T] is already type-erased over its concrete type by being an interface value;
// Erase also erases T.
func Erase[T any](f Future[T]) Future[any] { return erased[T]{inner: f} }

type yieldFuture struct{ yielded bool }

func (y *yieldFuture) Poll(cx *Context) (struct{}, bool) {
	if y.yielded {
		return struct{}{}, true
	}
	y.yielded = true
	cx.wakeSelfYield()
	return struct{}{}, false
}

// YieldNow returns a future that is pending once, after re-scheduling its task at the
// back of the run queue, and ready on the next poll: it lets other tasks run. A
// hand-written future yields the same way without allocating: it calls cx.Yield() and
// returns pending.
func YieldNow() Future[struct{}] { return &yieldFuture{} }
