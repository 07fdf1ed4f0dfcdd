package blitz

import (
	"context"
	"strconv"
	"sync"
)

// Group runs functions that may fail on a pool's workers and waits for them, in the
// manner of golang.org/x/sync/errgroup: Go starts a function, Wait waits for all of them
// and returns the first error. GroupContext adds a context that is cancelled at the first
// error, SetLimit bounds how many functions run at once. The functions take no *Task: use
// a Group for leaves that never fork (they may still call the parallel functions, For,
// Sort, MapReduce..., which reach the pool by themselves).
//
// The zero Group is ready to use and runs its functions on the default pool; NewGroup
// and GroupContext choose the pool. A Group may be used again after Wait: Go then starts
// new functions and the next Wait waits for those.
//
// How it differs from errgroup (golang.org/x/sync/errgroup):
//
//   - The functions run on the pool's workers (GOMAXPROCS goroutines by default), not on
//     a goroutine each; the goroutine that calls Wait runs queued functions too while it
//     waits. That suits CPU work: thousands of short functions cost thousands of queue
//     entries, not goroutines, and never more runnable goroutines than cores. It does not
//     suit blocking work (I/O, sleeps, locks held for long, channel waits on other
//     goroutines): a blocked function holds the worker running it, so a pool of N
//     workers runs about N of them at once (plus the goroutines in Wait, which run
//     functions too), and it delays every other job of the pool. Functions that wait
//     for one another (a producer and its consumers, a barrier) deadlock once the
//     waiting ones hold every worker and every Wait, where errgroup's goroutines would
//     not. Blocking work belongs in errgroup or plain goroutines.
//   - Wait, once no function is left to start, blocks its goroutine until the running
//     ones return; called from pool work, it holds that worker meanwhile without running
//     other jobs of the pool (Scope's wait does run them, as Rayon's scope does).
//   - Go never blocks, even with a limit: the functions beyond the limit wait in the
//     Group's queue, in the order of the Go calls, and start as the running ones finish.
//     (errgroup's Go blocks the caller until a slot is free, which deadlocks a function
//     that calls Go on its own full Group.) TryGo refuses once limit functions are
//     pending, queued or running.
//   - SetLimit(0) panics (errgroup's Go would then block forever), and SetLimit panics
//     whenever functions are pending, to remove the limit as well (errgroup only panics
//     when goroutines counted against a previous limit are active).
//   - A panic in a function is recovered, cancels the context like an error, and is
//     re-raised by Wait as a *PanicError carrying the value and the stack of the
//     panicking goroutine, after every function has finished: by every Wait in progress
//     then, or else by the next Wait. (errgroup lets the panic crash the program, from
//     the function's goroutine.) So a panic surfaces only when Wait is called and its
//     other functions return: one that waits for the function that panicked hangs Wait.
//   - A function that calls runtime.Goexit (t.Fatal does) ends the goroutine running it;
//     Wait re-raises that as a *PanicError wrapping ErrGoexit, and the other functions
//     still run. (errgroup's Wait counts such a function as one that returned nil.) The
//     goroutine that ends may be the one in Wait, which runs queued functions: then that
//     Wait never returns, and another or a later Wait re-raises ErrGoexit.
//
// While a Group has functions pending it counts as work in flight on its pool: Close
// waits for them. Go obeys the pool's rule for new work, as Pool.Go does (see
// Pool.Close): once Close has begun, Go panics with ErrClosed unless it is called from
// the pool's own work (such as a function of the Group running on a worker; a goroutine
// whose Wait runs queued functions is not the pool's), even if the Group has functions
// pending; once Close has finished waiting, it always does. A function refused this way
// never runs; one that Go accepted always runs, and Close waits for it.
//
// A Group must not be copied after first use. Its functions may call Go on it, but not
// Wait: Wait waits for every pending function, the caller included, so it would wait for
// itself forever (as with errgroup). A function may wait for another Group.
type Group struct {
	pool   *Pool                   // nil: the default pool, resolved by the first Go
	cancel context.CancelCauseFunc // GroupContext's; nil otherwise

	mu   sync.Mutex
	cond sync.Cond // L = &mu, set by the first Wait that waits; signals pending changes
	// limit is the most functions that run at once, 0 for no limit.
	limit int
	// queue holds the functions not started yet, in Go order, from queue[head].
	queue []func() error
	head  int
	// pending counts the functions queued or running; while it is above zero the Group
	// holds one entry of entered's in-flight count (see Go).
	pending int
	entered *Pool
	// running counts the functions being run: each runs in a runner (a Pool.Go job or a
	// Wait that helps) that holds one slot. starting counts the runner jobs started
	// but not yet begun; they take no slot until they begin, so that a Wait never waits
	// for a job the pool has not started (it takes the slot and runs the function
	// itself): with every worker blocked in some Wait, such a job would never start.
	running, starting int
	// waiters counts the Waits in progress.
	waiters  int
	err      error
	panicked *PanicError
	failed   bool // a function has returned an error or panicked: the context is cancelled
}

// NewGroup returns an empty Group whose functions run on p (the default pool if p is nil).
func NewGroup(p *Pool) *Group { return &Group{pool: p} }

// GroupContext returns a Group whose functions run on p (the default pool if p is nil),
// and a context derived from ctx that is cancelled when a function first returns an
// error or panics (with that error, or the *PanicError, as its cause; see
// context.Cause), or when Wait returns, whichever happens first. It is errgroup's
// WithContext. The context is not renewed: functions started after Wait returned (a
// Group used again) see it cancelled, as with errgroup. GroupContext panics if ctx is
// nil.
func GroupContext(ctx context.Context, p *Pool) (*Group, context.Context) {
	if ctx == nil {
		parNil("GroupContext", "ctx")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	return &Group{pool: p, cancel: cancel}, ctx
}

// SetLimit makes the Group run at most n of its functions at once; a negative n removes
// the limit (the default). Functions started with Go beyond the limit are queued, not
// refused. SetLimit panics if n is 0 (nothing could ever run; errgroup's Go would block
// forever) or if the Group has functions pending (queued or running), as errgroup's does
// while goroutines it counts are active (see Group for the difference).
func (g *Group) SetLimit(n int) {
	if n == 0 {
		panic("blitz: Group.SetLimit: limit 0 would never run anything (use a negative n for no limit)")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending != 0 {
		panic("blitz: Group.SetLimit: called while " + strconv.Itoa(g.pending) + " functions are pending; set the limit before Go")
	}
	g.limit = max(n, 0)
}

// Go runs f on the Group's pool. It returns at once: f starts when a worker (or a Wait)
// takes it and, with a limit, once fewer than the limit are running. The first non-nil
// error any function returns is what Wait returns (and it cancels GroupContext's
// context). f may call Go on the same Group. Go panics if f is nil, and with ErrClosed if
// the pool refuses new work from the caller (see Pool.Close): then f never runs.
func (g *Group) Go(f func() error) {
	if f == nil {
		parNil("Group.Go", "f")
	}
	g.mu.Lock()
	g.goLocked(f) // unlocks
}

// TryGo starts f as Go does, but only if the Group is below its limit: it reports false,
// and drops f, when limit functions are already pending (queued or running). Without a
// limit it is Go and returns true.
func (g *Group) TryGo(f func() error) bool {
	if f == nil {
		parNil("Group.TryGo", "f")
	}
	g.mu.Lock()
	if g.limit > 0 && g.pending >= g.limit {
		g.mu.Unlock()
		return false
	}
	g.goLocked(f) // unlocks
	return true
}

// goLocked queues f and starts a runner job for it if a slot may be free. g.mu is held
// on entry and released before it returns (before the runner job is injected, which may
// wake workers).
//
// Go is admitted by the pool's rule for new work (Pool.enter): once Close has begun, only
// the pool's own work may add work, so that Close cannot be kept waiting forever by an
// outside goroutine that calls Go in a loop. The check is made here, under g.mu and
// before f is queued, for every call, even when the Group already has functions pending
// (they hold the pool open, but f would be new work): a refused f is never queued, so it
// never runs, with or without a limit. Once admitted, f is run: the entry taken here
// becomes the Group's (the first pending function), the runner job's, or is given back
// when neither needs it; the runner job of an admitted f takes its entry with
// enterMore, which cannot be refused (the Group's entry keeps Close from draining).
func (g *Group) goLocked(f func() error) {
	p := g.entered
	if p == nil {
		p = g.pool
		if p == nil {
			p = Default()
		}
	}
	if err := p.enter(); err != nil {
		g.mu.Unlock()
		panic(err)
	}
	held := true // the entry just taken, until it is handed on
	if g.pending == 0 {
		// The first pending function's entry is the Group's, as work in flight, and the
		// last one to finish exits it (finish): Close waits for the pending functions.
		g.entered = p
		held = false
	}
	g.queue = append(g.queue, f)
	g.pending++
	spawn := g.limit == 0 || g.running+g.starting < g.limit
	if spawn {
		g.starting++
		if held {
			held = false // the runner job's entry
		} else {
			p.enterMore()
		}
	}
	g.mu.Unlock()
	if spawn {
		p.goEntered(g.runnerJob)
	} else if held {
		// f waits for a running runner; the Group's entry covers it. This cannot be the
		// last entry: the Group's is held.
		p.exit()
	}
}

// runnerJob is the body of the Group's Pool.Go jobs: it takes a slot if one is free and
// runs queued functions until the queue is empty.
func (g *Group) runnerJob(*Task) {
	g.mu.Lock()
	g.starting--
	if g.head == len(g.queue) || (g.limit > 0 && g.running >= g.limit) {
		// Nothing left (a Wait or another runner took it), or every slot is taken by
		// runners that keep taking functions until the queue is empty.
		g.mu.Unlock()
		return
	}
	g.running++
	g.mu.Unlock()
	g.runQueue()
}

// runQueue runs queued functions one by one until the queue is empty, then gives up the
// slot its caller took. If a function ends the goroutine (runtime.Goexit), the deferred
// function gives the slot up and, if functions are still queued and no runner could take
// them, starts a runner job for them.
func (g *Group) runQueue() {
	normal := false
	defer func() {
		if normal {
			return
		}
		g.mu.Lock()
		g.running--
		spawn := g.head < len(g.queue) && (g.limit == 0 || g.running+g.starting < g.limit)
		p := g.entered // still entered: the queued functions are pending
		if spawn {
			g.starting++
			// The queued functions were admitted and Close waits for them, so their
			// runner must not be refused: this goroutine may be one that Close refuses
			// (a Wait's caller runs functions too), and a refused runner would leave
			// them queued, and Close waiting, forever.
			p.enterMore()
		}
		g.mu.Unlock()
		if spawn {
			p.goEntered(g.runnerJob)
		}
	}()
	for {
		g.mu.Lock()
		if g.head == len(g.queue) {
			g.running--
			g.mu.Unlock()
			normal = true
			return
		}
		f := g.queue[g.head]
		g.queue[g.head] = nil // let f be collected once it has run
		g.head++
		if g.head == len(g.queue) {
			g.queue, g.head = g.queue[:0], 0
		}
		g.mu.Unlock()
		g.call(f)
	}
}

// call runs one function and records how it ended. A panic is recovered here, so the
// runner goes on with the next function; for runtime.Goexit, which cannot be stopped, the
// function is still counted as finished (with ErrGoexit) before the goroutine ends.
func (g *Group) call(f func() error) {
	var err error
	normal := false
	defer func() {
		var pe *PanicError
		if !normal {
			r := recover()
			if r == nil {
				r = ErrGoexit // nothing to recover: the goroutine is exiting
			}
			pe = wrapPanic(r)
		}
		g.finish(err, pe)
	}()
	err = f()
	normal = true
}

// finish records the end of one function: the first error or panic, the cancellation of
// the context, and the exit from the pool when it was the last pending one. The context
// is cancelled with its cause before the function stops counting as pending, as
// errgroup's is: a Wait cannot return (and cancel with its own, nil, cause) in between.
// cancel is called without g.mu held: it may run code of the parent context.
func (g *Group) finish(err error, pe *PanicError) {
	var cause error
	g.mu.Lock()
	if err != nil && g.err == nil {
		g.err = err
	}
	if pe != nil && g.panicked == nil {
		g.panicked = pe
	}
	if (err != nil || pe != nil) && !g.failed {
		// Only the first failure cancels, so that it is the context's cause even if a
		// later one's cancel would run first.
		g.failed = true
		cause = err
		if pe != nil {
			cause = pe
		}
	}
	if cause != nil && g.cancel != nil {
		cancel := g.cancel
		g.mu.Unlock()
		cancel(cause)
		g.mu.Lock()
	}
	g.pending--
	var p *Pool
	if g.pending == 0 {
		p, g.entered = g.entered, nil
	}
	if g.cond.L != nil {
		g.cond.Broadcast()
	}
	g.mu.Unlock()
	if p != nil {
		p.exit()
	}
}

// Wait waits until every function started with Go (including those started meanwhile by
// the functions themselves) has returned, running queued ones on the calling goroutine
// while it waits (within the limit), and returns the first error any of them returned
// since the Group was made (as errgroup, the error stays: a later Wait returns it again),
// or nil. If a function panicked, Wait re-raises the first panic as a *PanicError once all
// have returned: every Wait in progress then re-raises it (or, if none was, the next
// Wait does), and the Group forgets it once no Wait is in progress: a later Wait, or the
// Wait of the Group's next functions, does not re-raise it again. Wait cancels
// GroupContext's context before it returns. Wait with no function started returns at
// once. Several goroutines may Wait at the same time; all return when the Group is idle.
func (g *Group) Wait() error {
	g.mu.Lock()
	g.waiters++
	normal := false
	defer func() {
		if !normal {
			// A function run here called runtime.Goexit: this Wait ends with the
			// goroutine and delivers nothing; the panic stays for the other Waits.
			g.mu.Lock()
			g.waiters--
			g.mu.Unlock()
		}
	}()
	for g.pending > 0 {
		if g.head < len(g.queue) && (g.limit == 0 || g.running < g.limit) {
			// Run queued functions here rather than wait for a runner job that the pool
			// may not start soon (or ever, if every worker is blocked in a Wait).
			g.running++
			g.mu.Unlock()
			g.runQueue()
			g.mu.Lock()
			continue
		}
		// Every function not queued is running on another goroutine (runners take a
		// slot only once they have begun), so it finishes without this one's help.
		g.cond.L = &g.mu
		g.cond.Wait()
	}
	normal = true
	err, pe := g.err, g.panicked
	g.waiters--
	if g.waiters == 0 {
		// Delivered to every Wait in progress: forget it.
		g.panicked = nil
	}
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel(err) // nil: context.Canceled
	}
	if pe != nil {
		panic(pe)
	}
	return err
}
