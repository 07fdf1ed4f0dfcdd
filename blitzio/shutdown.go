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
// cancelled, and Wait runs the registered shutdown hooks (Runtime.Shutdown, a server's
// Shutdown, ...) and waits for the work in flight, each under the caller's deadline.
//
// A Shutdown is safe for concurrent use by tasks of any runtime and plain goroutines.
type Shutdown struct {
	mu        sync.Mutex
	triggered bool
	guards    int64
	hooks     []func(context.Context) error
	waiters   map[*shutdownWait]Waker
	idleCh    chan struct{} // closed when triggered and no guard is held
	trigCh    chan struct{} // closed when triggered
	ctx       context.Context
	cancel    context.CancelCauseFunc
	listener  *SignalListener
}

// NewShutdown returns a coordinator that has not been triggered.
func NewShutdown() *Shutdown {
	s := &Shutdown{waiters: map[*shutdownWait]Waker{}, idleCh: make(chan struct{}), trigCh: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// TriggerOn triggers the shutdown when the process receives one of the signals (for a
// server: SignalInterrupt and SignalTerminate). From the call on, those signals no longer end the
// process; a second one after the trigger is still caught (as a signal arriving during
// shutdown must not kill a process that is draining). It fails like ListenSignals.
func (s *Shutdown) TriggerOn(kinds ...SignalKind) error {
	l, err := ListenSignals(kinds...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.listener != nil {
		s.mu.Unlock()
		l.Close()
		return errors.New("blitzio: Shutdown.TriggerOn called twice")
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
func (s *Shutdown) Context() context.Context { return s.ctx }

// WorkGuard marks a piece of work in flight (a request being served): Wait waits for
// every guard to be released. Release it exactly once.
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

// Release ends the guarded work. Calls after the first do nothing.
func (g *WorkGuard) Release() {
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
// are left.
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

// Wait blocks the calling goroutine until the shutdown is triggered, then runs the
// hooks and waits for every guard to be released, all within ctx: give it a deadline.
// It returns nil when everything finished in time; otherwise ctx's error wrapped with
// the number of guards still held, joined with the hooks' errors. Call it from a plain
// goroutine (typically main), not from a task.
func (s *Shutdown) Wait(ctx context.Context) error {
	<-s.trigCh
	s.mu.Lock()
	hooks := append([]func(context.Context) error(nil), s.hooks...)
	l := s.listener
	s.mu.Unlock()
	var errs []error
	select {
	case <-s.idleCh:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("blitzio: shutdown: %d guarded operations still in flight: %w", s.InFlight(), ctx.Err()))
	}
	for _, h := range hooks {
		if err := h(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if l != nil {
		// Keep catching the signals until here: one arriving while draining must not end
		// the process with half the work done.
		l.Close()
	}
	return errors.Join(errs...)
}
