package blitz

import (
	"context"
	"sync/atomic"
)

// The closure API is built on the same frames as Job/Future: internal Jobs whose input
// is the closure (or the slice of closures) to run. Join itself allocates nothing, but
// Go's escape analysis is static: a closure stored in a frame that another worker may
// run escapes to the heap, so a closure that captures variables costs its caller one
// allocation (and the captured variables may move to the heap). Code that needs zero
// allocations per fork uses NewJob.

var (
	closureJob Job[func(*Task), *PanicError]
	sliceJob   Job[[]func(*Task), *PanicError]
	tryJob     Job[tryArgs, *PanicError]
)

func runClosure(t *Task, f func(*Task)) *PanicError { return t.protectCall(f) }

type tryArgs struct {
	fns  []func(*Task) error
	errs []error
}

// joinCatch joins fu, turning a panic of the joined work into a returned *PanicError
// (after cleaning up the frames it left behind).
func joinCatch[In, Out any](t *Task, fu Future[In, Out]) (out Out, pe *PanicError) {
	d0 := t.depth - 1
	defer func() {
		if r := recover(); r != nil {
			t.unwindTo(d0)
			pe = wrapPanic(r)
		}
	}()
	return fu.Join(t), nil
}

func firstPanic(ps ...*PanicError) *PanicError {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// Join runs a and b, potentially in parallel, and returns when both have finished: b is
// forked (another worker may steal it), a runs on the calling goroutine, then Join waits
// for b (running it here if nobody took it, as Future.Join does). Both always run to completion. If either
// panics, Join re-raises the panic as a *PanicError after both finished; a's panic wins
// if both panic. Join panics with a message naming the argument if t, a or b is nil.
//
// If a (or b, when it runs on the calling goroutine) calls runtime.Goexit, Join does not
// return, but it is still left only after b: a b that another worker started is waited
// for before the deferred calls of Join's callers run, and a b that nobody started is
// dropped and never runs (the goroutine that was to run it is ending).
func Join(t *Task, a, b func(t *Task)) {
	if t == nil {
		nilTask("Join")
	}
	if a == nil || b == nil {
		panic("blitz: Join: nil function")
	}
	t.checkLive("Join")
	d0 := t.depth
	fb := closureJob.Fork(t, runClosure, b)
	// runtime.Goexit cannot be recovered: if a calls it, Join never reaches joinCatch,
	// and fb would stay on the frame stack until the next enclosing boundary unwinds it,
	// after the deferred calls of everything in between had run while a thief may still
	// be running b. So a runs under protectCallTo(a, d0), whose Goexit path unwinds fb
	// too: Join is not left while b runs, and the frame is never reused under a thief.
	// That is the only window: in joinCatch, fb is off the frame stack before b runs
	// here (under its own protectCall) or is waited for (waitStolen guards a Goexit of
	// the work run meanwhile). It costs nothing on the hot path, unlike a defer here.
	pa := t.protectCallTo(a, d0)
	pb, pj := joinCatch(t, fb)
	if p := firstPanic(pa, pb, pj); p != nil {
		panic(p)
	}
}

// Join2 is Join for two functions with results.
func Join2[A, B any](t *Task, a func(t *Task) A, b func(t *Task) B) (A, B) {
	if t == nil {
		nilTask("Join2")
	}
	if a == nil {
		nilFunc("Join2", "a")
	}
	if b == nil {
		nilFunc("Join2", "b")
	}
	t.checkLive("Join2")
	var ra A
	var rb B
	Join(t, func(t *Task) { ra = a(t) }, func(t *Task) { rb = b(t) })
	return ra, rb
}

// JoinN runs every fn, potentially in parallel, and returns when all have finished. It
// splits the list in halves recursively, so a thief takes half of the remaining work at
// a time. All functions run even if some panic; the panic of the lowest index is
// re-raised as a *PanicError after all finished. JoinN panics before running anything
// if t or one of the functions is nil. If a function calls runtime.Goexit, JoinN is left
// as Join is: only after the functions that other workers started have finished (those
// that nobody started never run).
func JoinN(t *Task, fns ...func(t *Task)) {
	if t == nil {
		nilTask("JoinN")
	}
	for _, f := range fns {
		if f == nil {
			nilFunc("JoinN", "in fns")
		}
	}
	t.checkLive("JoinN")
	// A runtime.Goexit guard, for the same reason as Join's protectCallTo (Goexit cannot
	// be recovered, so runAll never joins its forks): if a function run on the calling
	// goroutine calls Goexit, the forks that runAll's recursion left on the frame stack
	// are taken back (never run) or, when a thief runs them, waited for, before the
	// deferred calls of JoinN's callers run. One guard covers the whole recursion, a
	// single defer per JoinN: runAll itself defers nothing, so nothing runs between the
	// Goexit and this guard but the guards of the functions themselves (protectCall). A
	// runAll that a thief stole needs no guard: the boundary that runs the stolen job
	// (protect) unwinds its forks the same way, and no user code lies between the two.
	d0 := t.depth
	finished := false
	defer func() {
		if !finished {
			t.unwindTo(d0)
		}
	}()
	p := runAll(t, fns)
	finished = true
	if p != nil {
		panic(p)
	}
}

func runAll(t *Task, fns []func(*Task)) *PanicError {
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return t.protectCall(fns[0])
	}
	mid := len(fns) / 2
	hi := sliceJob.Fork(t, runAll, fns[mid:])
	plo := runAll(t, fns[:mid])
	phi, pj := joinCatch(t, hi)
	return firstPanic(plo, phi, pj)
}

// TryJoin runs every fn like JoinN and waits for all of them (an error does not stop
// the others). It returns the first non-nil error in argument order, or nil. Panics are
// re-raised as in JoinN, after all finished. Nil arguments panic as in JoinN.
//
// The same name means something else elsewhere: blitzio.TryJoin returns at the first
// error in time and drops the futures still running (as Tokio's try_join! does), and
// errgroup's Wait waits for all like TryJoin but returns the first error in time. Here
// the error returned does not depend on timing. To stop the other functions at the first
// error, use TryJoinContext.
func TryJoin(t *Task, fns ...func(t *Task) error) error {
	if t == nil {
		nilTask("TryJoin")
	}
	for _, f := range fns {
		if f == nil {
			nilFunc("TryJoin", "in fns")
		}
	}
	t.checkLive("TryJoin")
	errs := make([]error, len(fns))
	d0 := t.depth
	finished := false
	defer func() { // the runtime.Goexit guard of JoinN
		if !finished {
			t.unwindTo(d0)
		}
	}()
	p := runTry(t, tryArgs{fns, errs})
	finished = true
	if p != nil {
		panic(p)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runTry(t *Task, a tryArgs) *PanicError {
	switch len(a.fns) {
	case 0:
		return nil
	case 1:
		return t.protectErr(a.fns[0], &a.errs[0])
	}
	mid := len(a.fns) / 2
	hi := tryJob.Fork(t, runTry, tryArgs{a.fns[mid:], a.errs[mid:]})
	plo := runTry(t, tryArgs{a.fns[:mid], a.errs[:mid]})
	phi, pj := joinCatch(t, hi)
	return firstPanic(plo, phi, pj)
}

// protectErr runs f(t) like protectCall, storing its error in *err.
func (t *Task) protectErr(f func(*Task) error, err *error) (pe *PanicError) {
	d0 := t.depth
	defer func() {
		if r := recover(); r != nil {
			t.unwindTo(d0)
			pe = wrapPanic(r)
		}
	}()
	*err = f(t)
	if t.depth != d0 {
		panic(errUnjoined)
	}
	return nil
}

// TryJoinContext is TryJoin with cancellation, in the manner of errgroup.WithContext.
// Every fn receives a context derived from ctx that is cancelled as soon as one fn
// returns an error (or ctx is cancelled). A fn that has not started by then is skipped:
// it never runs. TryJoinContext waits for the functions that did start, then returns the
// first error to occur (in time; the one that cancelled the others), or ctx's error (its
// cause, see context.Cause, as TryForContext returns) if ctx was cancelled and no fn
// failed, or nil.
func TryJoinContext(ctx context.Context, t *Task, fns ...func(ctx context.Context, t *Task) error) error {
	if ctx == nil {
		panic("blitz: TryJoinContext: nil context.Context")
	}
	if t == nil {
		nilTask("TryJoinContext")
	}
	for _, f := range fns {
		if f == nil {
			nilFunc("TryJoinContext", "in fns")
		}
	}
	t.checkLive("TryJoinContext")
	ctx2, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var first atomic.Pointer[error]
	wrapped := make([]func(*Task) error, len(fns))
	for i, fn := range fns {
		wrapped[i] = func(t *Task) error {
			if ctx2.Err() != nil {
				return nil // cancelled before it started: skip
			}
			err := fn(ctx2, t)
			if err != nil {
				first.CompareAndSwap(nil, &err)
				cancel(err)
			}
			return err
		}
	}
	_ = TryJoin(t, wrapped...)
	if e := first.Load(); e != nil {
		return *e
	}
	// The cause rather than ctx.Err(), as TryForContext: for a ctx made with
	// context.WithCancelCause (or WithTimeoutCause...) it is the error its canceller
	// gave; otherwise the two are the same.
	return context.Cause(ctx)
}
