package blitz

import (
	"runtime"
	"sync/atomic"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// Task is the context every job receives: the worker (or guest caller) it runs on. All
// nested parallelism goes through it: Fork, Join, Scope. A Task belongs to one goroutine
// at a time; never keep it after the function that received it returns, and never hand
// it to another goroutine.
//
// A Task kept after its Call returned, or after its pool closed, is detected when it
// is next used by Join, Join2, JoinN, TryJoin, TryJoinContext, Scope, ScopeContext,
// Catch or a Fork that pushes: they panic with a message saying so. (Guest Tasks are
// reused: if another Call holds the same guest at that moment, the misuse is a data
// race the pool cannot see; a Task kept by a job on a worker is likewise valid until
// the pool closes.)
//
// # Lazy binary splitting
//
// Each Task has a Chase-Lev deque. A fork is pushed to it only while it holds fewer than
// SplitDepth jobs; otherwise the fork is not pushed at all and simply runs when it is
// joined (see Job.Fork). Thieves take the oldest job, which in divide-and-conquer code
// is the largest, and each theft makes room for the owner's next fork. So a worker that
// nobody steals from pushes only about one job per level of recursion it returns
// through, and every other fork costs one atomic load (Task.gate) and a compare, inlined
// at the call site: no atomic read-modify-write, no allocation. Rayon pushes every
// fork, about 30 ns here with Go's sequentially consistent atomics; this is why blitz
// does not.
//
// The trade-off: a job forked while the deque was full is never stealable, even if a
// worker turns idle before it is joined; thieves get the jobs that were pushed, plus
// the owner's next fork after each theft. Alone, that starves thieves in balanced
// recursions: after the first theft the owner is deep in the tree, so its next pushes
// are tiny leaves while the big right halves up its path ran lazily. So a fork is
// always pushed while the Task has fewer than EagerLevels unjoined eager forks (nest):
// on the leftmost path that is the top EagerLevels levels, elsewhere every path with
// fewer than EagerLevels left turns. Each worker then keeps a big job (a quarter of
// the tree, an eighth...) in its deque for the others. The cost is about d^E/E! pushes
// for a fork tree of depth d, whatever its size: 55 for a 1023-node tree with E = 2.
// (Measured on a 2^18-node tree sum with 2 workers: without eager forks the second
// worker did between 0% and 50% of the nodes, run to run.)
//
// Pushed frames are also kept in fork order on a small frame stack, so that a panic
// that skips joins can clean them up (unwindTo).
type Task struct {
	// gate decides Fork's fast path with one atomic load: a fork is pushed if and only
	// if gate > 0. It is the deque's room, SplitDepth minus the jobs it holds (the owner
	// subtracts one per push and adds one per job it pops back, a thief adds one after
	// each successful steal), plus eagerBonus while fewer than EagerLevels eager forks
	// are unjoined (the owner adds and removes the bonus when nest crosses EagerLevels).
	// A theft not yet counted only makes the deque look full for a moment (a fork runs
	// lazily that could have been pushed).
	//
	// It is the Task's first field, and read with atomic.LoadInt64, because that keeps
	// Job.Fork within the compiler's inlining budget (measured: 79 of 80; the
	// atomic.Int64 type or another offset costs a few points more), and an inlined
	// fork costs about a nanosecond less. The padding after it keeps the owner's other
	// fields off the line that thieves write.
	gate  int64
	_     lockfree.CachePad
	pool  *Pool
	deque *lockfree.Deque[job]
	split int
	eager int    // EagerLevels
	index int    // worker index, or -1 for a guest
	stack []*job // pushed, unjoined frames in fork order
	depth int
	nest  int   // unjoined frames pushed because of EagerLevels
	slabs []any // per Job id: *slab[In, Out]
	rng   lockfree.XorShift64Star

	sleeper *sleeper                    // workers only
	mail    lockfree.TreiberStack[*job] // jobs for this worker only (Broadcast)
	// guestSlot is a busy overflow guest's index in Pool.guestSlots, -1 otherwise
	// (guarded by Pool.guestMu).
	guestSlot int
	// pinnedGuest marks a pinned guest (see Pool.acquireGuest); set before the Task
	// is published, never changed.
	pinnedGuest bool
	count       struct {
		executed, stolen atomic.Uint64
	} // statistics
	// inUse is true while a Call (or a detached Go job) holds a guest Task, and while
	// a worker Task's pool runs. A pinned guest is claimed by a CAS of it from false to
	// true. Thieves never read it: it is written twice per Call, and on a line of its
	// own it moves between cores only with the Task's owner.
	inUse atomic.Bool
	_     lockfree.CachePad
}

// checkLive panics if t is not in use: a guest Task whose Call returned (it may be
// free, or already serving another Call), or a worker Task whose pool closed. op names
// the function for the message. The entry points that do more than a plain call check
// it (Fork when it pushes, the closure joins, Scope, Catch, the join of a stolen fork);
// the load is of a word only the Task's own users write.
func (t *Task) checkLive(op string) {
	if !t.inUse.Load() {
		staleTask(op)
	}
}

func staleTask(op string) {
	panic("blitz: " + op + ": the *Task is used after the Call or job that received it returned " +
		"(a Task is valid only inside the function it was given to, on that goroutine)")
}

// Pool returns the pool the Task belongs to.
func (t *Task) Pool() *Pool { return t.pool }

// WorkerIndex returns the index of the worker running the Task, in [0, NumWorkers), or
// -1 when the Task is a guest: a goroutine from outside the pool inside Pool.Call.
func (t *Task) WorkerIndex() int { return t.index }

// eagerBonus is added to Task.gate while the Task is within EagerLevels of nesting; it
// dwarfs any deque room, so gate > 0 holds whatever the deque contains.
const eagerBonus = int64(1) << 40

func newTask(p *Pool, index int, seed uint64) *Task {
	t := &Task{
		pool:      p,
		split:     p.split,
		eager:     p.eager,
		index:     index,
		stack:     make([]*job, 0, 64),
		guestSlot: -1,
		deque:     lockfree.NewDeque[job](0),
		rng:       lockfree.NewXorShift64Star(seed),
	}
	t.gate = int64(p.split) + eagerBonus // EagerLevels >= 1
	return t
}

// push pushes a frame: frame stack, deque, then the sleep manager's new-jobs step
// (which wakes a sleeper if no awake idle worker can take it).
func (t *Task) push(j *job) {
	// The frame may have been pushed and stolen before (frames are reused): reset its
	// latch before a thief can see it again. Safe: nobody else holds the frame now.
	j.latch.Reset()
	j.owner = t
	d := t.depth
	if d == len(t.stack) {
		t.stack = append(t.stack, j)
	} else {
		t.stack[d] = j
	}
	t.depth = d + 1
	wasEmpty := t.deque.IsEmpty()
	t.deque.PushGrow(j)
	t.pool.newJobs(1, wasEmpty)
}

func (t *Task) countExecuted() { t.count.executed.Add(1) }

// findWork looks for a job to run while the Task is idle or waiting for a stolen frame,
// in the order of Rayon's find_work: (own deque,) other workers, injected jobs.
//
// The Task's own deque is not popped here: whenever a Task looks for work its deque is
// empty. It holds only the Task's pushed, unjoined frames; a Task waits only for a
// pushed frame that a thief took, and that thief took every older one too (FIFO), while
// newer ones were joined already (LIFO). Popping an older frame here would run it out
// of its LIFO turn.
func (t *Task) findWork() *job {
	p := t.pool
	if t.sleeper != nil && !t.mail.Empty() {
		if j, ok := t.mail.Pop(); ok {
			return j
		}
	}
	// Guests first: they hold work from outside callers (as Rayon's injected jobs come
	// first for an idle worker). The pinned guests, busy or not, and the busy overflow
	// guests, guestSlots[0:nGuests] (see Pool.acquireGuest).
	for i := range int(p.nPinned.Load()) {
		g := p.pinned[i].Load()
		if g == t {
			continue
		}
		if j, ok := g.deque.StealLoop(); ok {
			atomic.AddInt64(&g.gate, 1)
			t.count.stolen.Add(1)
			return j
		}
	}
	if n := int(p.nGuests.Load()); n > 0 {
		slots := *p.guestSlots.Load()
		for i := range min(n, len(slots)) {
			g := slots[i].Load()
			if g == nil || g == t {
				continue
			}
			if j, ok := g.deque.StealLoop(); ok {
				atomic.AddInt64(&g.gate, 1)
				t.count.stolen.Add(1)
				return j
			}
		}
	}
	ws := p.workers
	n := len(ws)
	i := t.rng.Intn(n)
	for k := 0; k < n; k++ {
		w := ws[i]
		if w != t {
			if j, ok := w.deque.StealLoop(); ok {
				atomic.AddInt64(&w.gate, 1)
				t.count.stolen.Add(1)
				return j
			}
		}
		if i++; i == n {
			i = 0
		}
	}
	if j, ok := p.injected.Pop(); ok {
		return j
	}
	return nil
}

// execute runs a job taken from a deque, the injection queue or a mailbox, and signals
// its completion. A panic in the job is recovered here: the worker survives and the
// panic travels to whoever waits for the job. If the job calls runtime.Goexit, protect
// signals the completion (with ErrGoexit) on the goroutine's way out.
func (t *Task) execute(j *job) {
	t.countExecuted()
	t.complete(j, t.protect(j))
}

// runOther runs a job that a Task found while it waits inside other work (waitUntil,
// guestWait). A Go job (isolated) is not run here but on a goroutine of its own: run
// here, a Go job that blocks would hold up the wait, and one that panics or exits would
// unwind through the frames of the unrelated work below it (issue: a Call re-raised a
// Go job's panic while its own stolen fork still ran). Taking it off the queue and
// starting it elsewhere, rather than leaving it, keeps the sleep protocol unchanged: a
// posted job is taken by whoever finds it.
func (t *Task) runOther(j *job) {
	if j.isolated {
		t.pool.runDetached(j)
		return
	}
	t.execute(j)
}

// complete signals that j finished, with its panic or nil.
func (t *Task) complete(j *job, p *PanicError) {
	if j.done != nil {
		j.done(j, p)
		return
	}
	j.panic = p
	owner := j.owner
	// Nothing may touch j after SetDone: its owner may reuse the frame at once.
	j.latch.SetDone()
	// The owner may be asleep in waitUntil: set its CoreLatch after the frame's latch,
	// so it either sees the frame done or fails to (stay) asleep.
	if owner != nil {
		owner.notify()
	}
}

// notify tells a worker that a latch it may be waiting for in waitUntil was set: it
// sets the worker's CoreLatch and wakes it if it is asleep. Call it after setting the
// latch. A guest needs nothing: it parks on the latch itself.
func (t *Task) notify() {
	if t.sleeper != nil && t.sleeper.latch.Set() {
		t.pool.wakeSpecific(t.index)
	}
}

// protect runs j with panic recovery. Forks that a panic skipped past are cleaned up
// (unwindTo) so the frame stack is consistent again.
//
// runtime.Goexit cannot be recovered: the goroutine ends, and protect never returns to
// execute. So the deferred call also handles it: it unwinds the frames (a thief may
// still run one of them; the Task outlives the goroutine, a new worker goroutine takes
// it over) and completes j with ErrGoexit, so whoever waits for j is released.
func (t *Task) protect(j *job) (pe *PanicError) {
	d0 := t.depth
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		t.unwindTo(d0)
		if r != nil {
			pe = wrapPanic(r)
			return
		}
		j.goexited = true
		t.complete(j, goexitError())
	}()
	j.run(t, j)
	if t.depth != d0 {
		panic(errUnjoined)
	}
	finished = true
	return nil
}

// goexitError is the *PanicError of a job cut short by runtime.Goexit. Called from a
// deferred function during the Goexit, its stack shows where Goexit was called.
func goexitError() *PanicError {
	return wrapPanic(ErrGoexit)
}

// protectCall runs f(t) like protect runs a job. On runtime.Goexit it unwinds the frames
// f left and lets the goroutine exit.
func (t *Task) protectCall(f func(*Task)) *PanicError { return t.protectCallTo(f, t.depth) }

// protectCallTo is protectCall for a caller with forks of its own still unjoined (Join's
// fork of b): if f calls runtime.Goexit, it also unwinds the caller's frames down to
// depth goexitTo, taking back the forks nobody started and waiting for those a thief
// runs, before the deferred calls of f's callers run. Goexit cannot be recovered, so the
// caller never gets to join them itself, and the next enclosing boundary that would
// unwind them (protect, a Call) is reached only after the deferred calls of everything
// in between have run, while a thief may still be running a fork they wait for. A panic
// unwinds only f's frames: it is recovered and returned, and the caller joins its forks.
func (t *Task) protectCallTo(f func(*Task), goexitTo int) (pe *PanicError) {
	d0 := t.depth
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		if r != nil {
			t.unwindTo(d0)
			pe = wrapPanic(r)
			return
		}
		t.unwindTo(goexitTo) // runtime.Goexit
	}()
	f(t)
	if t.depth != d0 {
		panic(errUnjoined)
	}
	finished = true
	return nil
}

// unwindTo drops the pushed frames above depth d0 after a panic skipped their joins. A
// frame still in the deque is popped back and discarded (it never runs); one a thief
// took is waited for: its slot cannot be reused while the thief uses it.
func (t *Task) unwindTo(d0 int) {
	for t.depth > d0 {
		d := t.depth - 1
		j := t.stack[d]
		t.depth = d
		var delta int64
		if j.eager {
			t.nest--
			if t.nest == t.eager-1 {
				delta = eagerBonus
			}
		}
		if t.deque.Pop() == j {
			delta++
		} else {
			t.waitFor(j)
		}
		if delta != 0 {
			atomic.AddInt64(&t.gate, delta)
		}
		if j.release != nil {
			j.release(j)
		}
	}
}

// waitFor runs other work until the stolen job j is done: Rayon's wait_until (a join
// that steals while it waits). See waitUntil.
func (t *Task) waitFor(j *job) { t.waitUntil(&j.latch) }

// waitStolen is waitFor for a frame that its join has already taken off the frame
// stack. If a job run while waiting calls runtime.Goexit, no unwindTo will see this
// frame, yet the thief may still be running it: the deferred call waits for it and
// releases it, so the Task never reuses a frame a thief still writes.
func (t *Task) waitStolen(j *job) {
	finished := false
	defer func() {
		if !finished {
			t.waitFor(j)
			j.release(j)
		}
	}()
	t.waitFor(j)
	finished = true
}

// latch is what waitUntil waits for: *lockfree.OnceLatch or *lockfree.CountLatch.
type latch interface {
	Probe() bool
	Wait()
}

// waitSpins is the number of busy-spin rounds (1, 2, 4, ... 64 iterations) a waiting
// worker makes before it starts yielding.
const waitSpins = 7

// waitUntil runs other work until l is set.
//
// A worker waits like an idle worker (Rayon's wait_until): it looks for work between a
// few short busy spins, then between yield rounds, then goes through the sleep protocol, so while it sleeps it is
// woken both by new jobs (the JEC protocol) and by the thief that finishes its frame
// (execute sets the owner's CoreLatch). So a worker never sleeps while there is work it
// could steal. A guest (a goroutine inside Pool.Call) is not part of the sleep protocol:
// it steals, spins, then yields SpinRounds times, and only then parks on l itself.
func (t *Task) waitUntil(l latch) {
	if l.Probe() {
		return
	}
	if t.sleeper == nil {
		t.guestWait(l)
		return
	}
	p := t.pool
	s := t.sleeper
	p.counters.AddInactive()
	var idle idleState
	var sw lockfree.SpinWait // a few short busy spins first: a thief is often almost done
	spins := 0
	for {
		if s.latch.Probe() {
			// Consume a Set (our frame finished, mail, stop); the checks below see why.
			// Set happens after the event it announces, so resetting first and then
			// checking cannot lose it.
			s.latch.Reset()
		}
		if l.Probe() {
			break
		}
		if x := t.findWork(); x != nil {
			if x.isolated {
				t.runOther(x)
				continue
			}
			p.wakeThreads(p.counters.SubInactive())
			t.execute(x)
			p.counters.AddInactive()
			idle = idleState{}
			sw.Reset()
			spins = 0
			continue
		}
		if spins < waitSpins {
			sw.Spin()
			spins++
			continue
		}
		p.noWorkFound(t, &idle)
	}
	p.counters.SubInactive()
}

// guestWait is waitUntil for a guest Task.
func (t *Task) guestWait(l latch) {
	p := t.pool
	var sw lockfree.SpinWait
	yields := 0
	for !l.Probe() {
		if x := t.findWork(); x != nil {
			t.runOther(x)
			sw.Reset()
			yields = 0
			continue
		}
		if !sw.IsCompleted() {
			sw.Snooze()
			continue
		}
		if yields < p.spinRounds {
			yields++
			runtime.Gosched()
			continue
		}
		// Nothing to do for a while: park until the latch is set.
		l.Wait()
		return
	}
}
