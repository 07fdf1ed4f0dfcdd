package blitzio

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrShuttingDown is the cause of a Shutdown's Context once it is triggered, and what
// Guard's callers see when they are refused.
var ErrShuttingDown = errors.New("blitzio: shutting down")

// Shutdown coordinates a graceful stop, in the style of http.Server.Shutdown: something
// triggers it (a signal with TriggerOn, or code with Trigger); from then on new work is
// refused (Guard fails), loops that select on Done stop accepting, the Context is
// cancelled, and Wait waits for the work in flight, then runs the registered shutdown
// hooks (a server's Shutdown, Runtime.Shutdown, ...), all under the caller's deadline.
//
// The hooks run once, however many times and from however many goroutines Wait is
// called (like a sync.Once): the first Wait to get past the work in flight runs them, and
// the others wait for that run and report its outcome.
//
// A Shutdown is safe for concurrent use by tasks of any runtime and plain goroutines.
// The zero value is ready to use, like the one NewShutdown returns. A Shutdown must not
// be copied after first use.
type Shutdown struct {
	mu        sync.Mutex
	init      bool // the fields below are made (see setup)
	triggered bool
	guards    int64
	hooks     []func(context.Context) error
	waiters   map[*shutdownWait]Waker
	idleCh    chan struct{} // closed when triggered and no guard is held
	trigCh    chan struct{} // closed when triggered
	ctx       context.Context
	cancel    context.CancelCauseFunc
	listener  *SignalListener
	run       *hookRun // the run of the hooks, from the Wait that started it on
}

// hookRun is the one run of a Shutdown's hooks: done is closed when it has finished,
// after err is set.
type hookRun struct {
	done chan struct{}
	err  error
	// g is the id of the goroutine running the hooks: a Wait it makes (from a hook)
	// would wait for itself.
	g    uint64
	errs []error
}

// NewShutdown returns a coordinator that has not been triggered.
func NewShutdown() *Shutdown {
	s := &Shutdown{}
	s.mu.Lock()
	s.setup()
	s.mu.Unlock()
	return s
}

// setup makes the channels, the map and the context of a zero Shutdown. Called with
// s.mu held.
func (s *Shutdown) setup() {
	if s.init {
		return
	}
	s.init = true
	s.waiters = map[*shutdownWait]Waker{}
	s.idleCh, s.trigCh = make(chan struct{}), make(chan struct{})
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
}

// TriggerOn triggers the shutdown when the process receives one of the signals (for a
// server: SignalInterrupt and SignalTerminate). From the call on, those signals no longer end the
// process; a second one after the trigger is still caught (as a signal arriving during
// shutdown must not kill a process that is draining), until Wait has run the hooks. It
// fails like ListenSignals, when called a second time, and once Wait has started running
// the hooks (nothing would stop catching the signals then).
func (s *Shutdown) TriggerOn(kinds ...SignalKind) error {
	l, err := ListenSignals(kinds...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.setup()
	if s.listener != nil || s.run != nil {
		twice := s.listener != nil
		s.mu.Unlock()
		l.Close()
		if twice {
			return errors.New("blitzio: Shutdown.TriggerOn called twice")
		}
		return errors.New("blitzio: Shutdown.TriggerOn called after Wait ran the shutdown hooks")
	}
	s.listener = l
	s.mu.Unlock()
	go func() {
		p := make(chan struct{}, 1)
		cx := NewContext(nil, WakerFunc(func() {
			select {
			case p <- struct{}{}:
			default:
			}
		}))
		for {
			r, ok := l.Recv().Poll(cx)
			if !ok {
				<-p
				continue
			}
			if r.Err != nil {
				return // closed
			}
			s.Trigger()
		}
	}()
	return nil
}

// Trigger starts the shutdown. It is idempotent and never blocks.
func (s *Shutdown) Trigger() {
	s.mu.Lock()
	s.setup()
	if s.triggered {
		s.mu.Unlock()
		return
	}
	s.triggered = true
	close(s.trigCh)
	if s.guards == 0 {
		close(s.idleCh)
	}
	ws := make([]Waker, 0, len(s.waiters))
	for f, w := range s.waiters {
		ws = append(ws, w)
		delete(s.waiters, f)
	}
	s.mu.Unlock()
	s.cancel(ErrShuttingDown)
	for _, w := range ws {
		w.Wake()
	}
}

// Triggered reports whether the shutdown has started.
func (s *Shutdown) Triggered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.triggered
}

// Context returns a context cancelled, with cause ErrShuttingDown, when the shutdown is
// triggered: pass it to work that should stop then.
func (s *Shutdown) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup()
	return s.ctx
}

// WorkGuard marks a piece of work in flight (a request being served): Wait waits for
// every guard to be released. Release it once; later calls do nothing.
type WorkGuard struct {
	s    *Shutdown
	once sync.Once
}

// Guard registers a piece of work that the shutdown must wait for. It returns
// ErrShuttingDown, and no guard, once the shutdown is triggered: new work should not
// start then.
func (s *Shutdown) Guard() (*WorkGuard, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.triggered {
		return nil, ErrShuttingDown
	}
	s.guards++
	return &WorkGuard{s: s}, nil
}

// Release ends the guarded work. Calls after the first do nothing, and so does Release
// of a nil *WorkGuard (what Guard returns with its error) or of a zero WorkGuard, so
// `g, err := s.Guard()` followed by `defer g.Release()` is safe either way.
func (g *WorkGuard) Release() {
	if g == nil || g.s == nil {
		return
	}
	g.once.Do(func() {
		s := g.s
		s.mu.Lock()
		s.guards--
		var ws []Waker
		if s.guards == 0 && s.triggered {
			close(s.idleCh)
			for f, w := range s.waiters {
				ws = append(ws, w)
				delete(s.waiters, f)
			}
		}
		s.mu.Unlock()
		for _, w := range ws {
			w.Wake()
		}
	})
}

// InFlight returns the number of guards held.
func (s *Shutdown) InFlight() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.guards
}

// OnShutdown registers a hook that Wait runs, in registration order, once the work in
// flight has finished (every guard released) or Wait's context has expired, with that
// context: typically a server's Shutdown, then rt.Shutdown, which cancels whatever tasks
// are left. Each hook runs once (see Wait). A hook registered before the run of the
// hooks has finished runs in it, including one registered during the drain or by another
// hook; one registered later never runs (as with http.Server.RegisterOnShutdown after
// Shutdown). OnShutdown panics if hook is nil.
func (s *Shutdown) OnShutdown(hook func(ctx context.Context) error) {
	if hook == nil {
		panic("blitzio: Shutdown.OnShutdown with a nil hook")
	}
	s.mu.Lock()
	s.hooks = append(s.hooks, hook)
	s.mu.Unlock()
}

// shutdownWait is the future of Done (idle == false) and Idle (idle == true).
type shutdownWait struct {
	s    *Shutdown
	idle bool
}

// Poll implements Future.
func (f *shutdownWait) Poll(cx *Context) (struct{}, bool) {
	s := f.s
	s.mu.Lock()
	s.setup()
	if s.triggered && (!f.idle || s.guards == 0) {
		delete(s.waiters, f)
		s.mu.Unlock()
		return struct{}{}, true
	}
	s.waiters[f] = cx.Waker()
	s.mu.Unlock()
	return struct{}{}, false
}

// Drop implements Dropper: the waiter is forgotten, so a Done raced in a loop (a select
// with an accept) does not pile up.
func (f *shutdownWait) Drop() {
	f.s.mu.Lock()
	delete(f.s.waiters, f)
	f.s.mu.Unlock()
}

// Done returns a future that is ready when the shutdown is triggered: select on it
// beside an accept to stop accepting.
func (s *Shutdown) Done() Future[struct{}] { return &shutdownWait{s: s} }

// Idle returns a future that is ready when the shutdown is triggered and no guard is
// held.
func (s *Shutdown) Idle() Future[struct{}] { return &shutdownWait{s: s, idle: true} }

// Wait blocks the calling goroutine until the shutdown is triggered, then waits for
// every guard to be released and runs the hooks, all within ctx: give it a deadline. It
// returns nil when everything finished in time; otherwise an error that joins ctx's
// error (wrapped with the number of guards still held, or saying the shutdown was not
// triggered) and the hooks' errors. If ctx ends before the trigger, Wait returns without
// running the hooks: a later Wait runs them.
//
// The hooks run once, on the goroutine of the first Wait to get past the drain, with
// that Wait's ctx. Every Wait, concurrent or later, waits for that run to finish (within
// its own ctx: a Wait whose ctx ends first returns ctx's error) and reports the hooks'
// errors, the same for all. A hook that panics does not stop the others: Wait reports
// the panic as an error that errors.As finds a *PanicError in (with the value and the
// stack). A hook that calls runtime.Goexit (t.FailNow in a test) ends the goroutine
// that ran it, as Goexit says, but the hooks after it still run first, and the other
// Waits report an error matching ErrGoexit. A hook that calls Wait on its own Shutdown
// would wait for itself: that Wait panics, and the panic is reported as above.
//
// Wait blocks, so call it from a plain goroutine (typically main) or a SpawnBlocking
// job, not from a task: with a live ctx, a call on a worker goroutine or inside an Async
// function panics with "blitzio: cannot block from within a runtime", as BlockOn does.
// With a ctx that has already ended it does not wait (the hooks it may run excepted), so
// a task may make it. Wait panics if ctx is nil.
func (s *Shutdown) Wait(ctx context.Context) error {
	if ctx == nil {
		panic("blitzio: Shutdown.Wait called with a nil context.Context")
	}
	if ctx.Err() == nil {
		switch onRuntimeGoroutine() {
		case onWorker:
			panic("blitzio: cannot block from within a runtime: Shutdown.Wait called by a task's code " +
				"on a worker goroutine would block the worker; await Done or Idle in the task, and call " +
				"Wait from a goroutine of your own or a SpawnBlocking job")
		case onCoroutine:
			panic("blitzio: cannot block from within a runtime: Shutdown.Wait called inside an Async " +
				"function would block the goroutine polling it; await Done or Idle instead, and call " +
				"Wait from a goroutine of your own or a SpawnBlocking job")
		}
	}
	s.mu.Lock()
	s.setup()
	trigCh, idleCh := s.trigCh, s.idleCh
	s.mu.Unlock()
	if !ready(trigCh) {
		select {
		case <-trigCh:
		case <-ctx.Done():
			if !ready(trigCh) {
				return fmt.Errorf("blitzio: shutdown not triggered: %w", ctx.Err())
			}
		}
	}
	var errs []error
	if !ready(idleCh) {
		select {
		case <-idleCh:
		case <-ctx.Done():
			if n := s.InFlight(); n > 0 {
				errs = append(errs, fmt.Errorf("blitzio: shutdown: %d guarded operations still in flight: %w", n, ctx.Err()))
			}
		}
	}
	s.mu.Lock()
	run := s.run
	if run == nil {
		run = &hookRun{done: make(chan struct{}), g: goroutineID()}
		s.run = run
		s.mu.Unlock()
		s.runHooks(ctx, run, 0)
	} else {
		s.mu.Unlock()
		if !ready(run.done) {
			if run.g == goroutineID() {
				panic("blitzio: Shutdown.Wait called by its own hook would wait for itself")
			}
			select {
			case <-run.done:
			case <-ctx.Done():
				if !ready(run.done) {
					errs = append(errs, fmt.Errorf("blitzio: shutdown: the hooks (run by another Wait) are still running: %w", ctx.Err()))
					return errors.Join(errs...)
				}
			}
		}
	}
	if run.err != nil {
		errs = append(errs, run.err)
	}
	return errors.Join(errs...)
}

// ready reports whether ch is closed.
func ready(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// runHooks runs the hooks from index i on, then ends the run: it stops catching the
// signals of TriggerOn and releases the other Waits. A hook's panic is recovered and
// recorded. A hook that calls runtime.Goexit cannot be stopped from ending the
// goroutine, but the deferred call records it and runs the remaining hooks first (and so
// on, should another of them call Goexit too), so the run always ends.
func (s *Shutdown) runHooks(ctx context.Context, run *hookRun, i int) {
	returned := false
	defer func() {
		if !returned {
			run.errs = append(run.errs, &hookFailure{index: i + 1})
			s.runHooks(ctx, run, i+1)
		}
	}()
	for ; ; i++ {
		s.mu.Lock()
		if i >= len(s.hooks) {
			break // s.mu stays locked for the end of the run
		}
		h := s.hooks[i]
		s.mu.Unlock()
		if err := callHook(h, ctx, i); err != nil {
			run.errs = append(run.errs, err)
		}
	}
	l := s.listener
	s.listener = nil
	s.mu.Unlock()
	returned = true
	if l != nil {
		// Catch the signals until here: one arriving while draining must not end the
		// process with half the work done.
		l.Close()
	}
	run.err = errors.Join(run.errs...)
	close(run.done)
}

// callHook calls the hook at index i, turning a panic into a *hookFailure.
func callHook(h func(context.Context) error, ctx context.Context, i int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &hookFailure{index: i + 1, panic: newPanicError(r, false)}
		}
	}()
	return h(ctx)
}

// hookFailure is a hook that panicked (panic set) or called runtime.Goexit (panic nil),
// as Wait reports it.
type hookFailure struct {
	index int // from 1, in registration order
	panic *PanicError
}

// Error names the hook and its panic value and site, or its Goexit.
func (e *hookFailure) Error() string {
	if e.panic == nil {
		return fmt.Sprintf("blitzio: shutdown hook %d called runtime.Goexit", e.index)
	}
	msg := fmt.Sprintf("blitzio: shutdown hook %d panicked: %v", e.index, e.panic.Value)
	if at := panicSite(e.panic.pcs); at != "" {
		msg += " [at " + at + "]"
	}
	return msg
}

// Unwrap returns the *PanicError, or ErrGoexit.
func (e *hookFailure) Unwrap() error {
	if e.panic == nil {
		return ErrGoexit
	}
	return e.panic
}
