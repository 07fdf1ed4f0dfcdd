package blitz

import (
	"context"
	"sync/atomic"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// Spawner is the handle of a Scope: a group of spawned tasks that all finish before the
// Scope call that created it returns. (Go cannot name both the function Scope and its
// handle type Scope, so the handle is the Spawner.) Spawn may be called any number of times (no fixed limit), from the body
// and from spawned tasks. A *Spawner must not be used after its Scope call returned.
type Spawner struct {
	pool  *Pool
	owner *Task // waits in Scope; woken by the task that finishes last
	count lockfree.CountLatch
	first atomic.Pointer[PanicError]
	ctx   context.Context // nil for Scope
}

// Scope runs body, which may Spawn tasks, and returns when body and every spawned task
// have finished. While it waits, the calling goroutine runs other work of the pool
// (including the spawned tasks). A panic in body or in a spawned task is re-raised as a
// *PanicError after everything finished (body's panic first, else the first spawned
// task's to panic).
//
// Each Spawn allocates its job and goes through the pool's injection queue: spawned
// tasks may come from any goroutine, so they cannot use the caller's frame stack. For
// fine-grained recursive parallelism use Join or a Job.
//
// Scope panics with a message naming the argument if t or body is nil.
func Scope(t *Task, body func(s *Spawner)) {
	if t == nil {
		nilTask("Scope")
	}
	if body == nil {
		nilFunc("Scope", "body")
	}
	t.checkLive("Scope")
	s := &Spawner{pool: t.pool, owner: t}
	if p := s.run(t, body); p != nil {
		panic(p)
	}
}

// ScopeContext is Scope with cancellation: once ctx is cancelled, spawned tasks that
// have not started yet are skipped (they never run), and ScopeContext returns ctx's
// error (its cause, see context.Cause, as TryForContext returns) after the tasks already
// running have finished. It returns nil if ctx was not cancelled before the scope ended.
// Panics are re-raised as in Scope.
//
// body is not a spawned task: it always runs, even when ctx is already cancelled (unlike
// TryForContext, which then runs nothing), so that it can set up and tear down what its
// tasks share; a body with work of its own to skip checks s.Context().
func ScopeContext(ctx context.Context, t *Task, body func(s *Spawner)) error {
	if ctx == nil {
		panic("blitz: ScopeContext: nil context.Context")
	}
	if t == nil {
		nilTask("ScopeContext")
	}
	if body == nil {
		nilFunc("ScopeContext", "body")
	}
	t.checkLive("ScopeContext")
	s := &Spawner{pool: t.pool, owner: t, ctx: ctx}
	if p := s.run(t, body); p != nil {
		panic(p)
	}
	// The cause rather than ctx.Err(), as TryForContext (they differ only for a ctx
	// made with context.WithCancelCause or the like).
	return context.Cause(ctx)
}

func (s *Spawner) run(t *Task, body func(*Spawner)) *PanicError {
	s.count.Add(1) // body itself
	returned := false
	defer func() {
		if !returned {
			// runtime.Goexit in body: the goroutine ends, but the scope still ends after
			// its tasks, as it promises (they may use what body set up); the enclosing
			// job's joiner then sees ErrGoexit.
			s.count.Decrement()
			t.waitUntil(&s.count)
		}
	}()
	pb := t.protectCall(func(*Task) { body(s) })
	returned = true
	s.count.Decrement()
	t.waitUntil(&s.count)
	if pb != nil {
		return pb
	}
	return s.first.Load()
}

// Context returns the scope's context: the one given to ScopeContext, or
// context.Background() for Scope.
func (s *Spawner) Context() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// Spawn starts f on the pool as part of the scope. It returns at once; the Scope call
// waits for f. Spawn panics if the scope has already ended.
func (s *Spawner) Spawn(f func(t *Task)) {
	if s == nil {
		panic("blitz: Scope.Spawn: nil *Spawner")
	}
	if f == nil {
		panic("blitz: Scope.Spawn: nil function")
	}
	if s.count.Probe() {
		panic("blitz: Scope.Spawn: the scope has already ended")
	}
	s.count.Increment()
	run := f
	if s.ctx != nil {
		ctx := s.ctx
		run = func(t *Task) {
			if ctx.Err() == nil {
				f(t)
			}
		}
	}
	h := newHeapJob(run, func(pe *PanicError) {
		if pe != nil {
			s.first.CompareAndSwap(nil, pe)
		}
		s.count.Decrement()
		if s.count.Probe() {
			// The owner may be asleep in waitUntil: the latch is set, now wake it (the
			// regression test TestScopeOwnerWorkerSleepsAndIsWoken).
			s.owner.notify()
		}
	})
	s.pool.inject(&h.job)
}
