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
// # Publish on demand
//
// Each Task keeps a private LIFO stack of forked frames, split at an index pub:
// frames[0:pub] are published (pushed, in fork order, to the Task's Chase-Lev deque,
// where thieves can take them), frames[pub:depth] are private (plain memory, owner only).
// A fork pushes a private frame; only when some worker is hungry (the pool's hungry
// count, one atomic load) does it publish the OLDEST private frames, at most one per
// hungry worker, and run the sleep protocol's new-jobs step. A join of a private frame is
// a plain function call; a join of a published frame pops the deque (it is either the
// bottom item or was stolen, because published frames are a prefix in fork order and
// thieves take the oldest first).
//
// The trade-off against pushing every fork (Rayon, the seeds): work forked while every
// worker was busy becomes stealable at the owner's next fork, not at once. In exchange a
// fork that nobody steals costs no atomic read-modify-write, which on this machine is the
// difference between about 30 ns and about 2 ns per fork.
type Task struct {
	pool   *Pool
	hungry *atomic.Int32 // &pool.hungry.Int32, one load per fork
	index  int           // worker index, or -1 for a guest
	stack  []*job        // the frame stack: [0:pub] published, [pub:depth] private
	depth  int
	pub    int
	slabs  []any // per Job id: *slab[In, Out]
	deque  *lockfree.Deque[job]
	rng    lockfree.XorShift64Star

	sleeper *sleeper                                 // workers only
	mail    lockfree.TreiberStack[*job]              // jobs for this worker only (Broadcast)
	busy    atomic.Bool                              // guests: in use by a Call
	count   struct{ executed, stolen atomic.Uint64 } // statistics
}

// Pool returns the pool the Task belongs to.
func (t *Task) Pool() *Pool { return t.pool }

// WorkerIndex returns the index of the worker running the Task, in [0, NumWorkers), or
// -1 when the Task is a guest: a goroutine from outside the pool inside Pool.Call.
func (t *Task) WorkerIndex() int { return t.index }

// paddedInt32 is an atomic.Int32 on a cache line of its own.
type paddedInt32 struct {
	_ lockfree.CachePad
	atomic.Int32
	_ lockfree.CachePad
}

func newTask(p *Pool, index int, seed uint64) *Task {
	t := &Task{
		pool:   p,
		hungry: &p.hungry.Int32,
		index:  index,
		stack:  make([]*job, 0, 64),
		deque:  lockfree.NewDeque[job](0),
		rng:    lockfree.NewXorShift64Star(seed),
	}
	return t
}

// pushFrame puts a forked frame on top of the frame stack and publishes the oldest
// private frames if a worker is hungry.
func (t *Task) pushFrame(j *job) {
	d := t.depth
	if d == len(t.stack) {
		t.stack = append(t.stack, j)
	} else {
		t.stack[d] = j
	}
	t.depth = d + 1
	if t.hungry.Load() != 0 {
		t.publish()
	}
}

// publish moves the oldest private frames to the deque, at most until the deque holds
// one frame per hungry worker, and tells the sleep manager about them.
//
//go:noinline
func (t *Task) publish() {
	h := int(t.hungry.Load())
	wasEmpty := t.deque.IsEmpty()
	n := uint32(0)
	for t.pub < t.depth && t.deque.Len() < h {
		j := t.stack[t.pub]
		// The frame may have been published and stolen before (frames are reused):
		// reset its latch before a thief can see it again. Safe: the frame is private,
		// nobody else holds it now.
		j.latch.Reset()
		j.owner = t
		t.pub++
		t.deque.PushGrow(j)
		n++
	}
	if n > 0 {
		t.pool.newJobs(n, wasEmpty)
	}
}

func (t *Task) countExecuted() { t.count.executed.Add(1) }

// findWork looks for a job to run while the Task is idle or waiting for a stolen frame,
// in the order of seed 004: (own deque,) other workers, injected jobs.
//
// The Task's own deque is not popped here: whenever a Task looks for work its deque is
// empty. Its deque holds only its published frames; a Task waits only for a published
// frame that was stolen, and a thief that took it took every older one too (FIFO), while
// newer frames were joined already (LIFO). Popping an older frame here would break the
// "published frames are a prefix" invariant that Future.Join relies on.
func (t *Task) findWork() *job {
	p := t.pool
	if t.sleeper != nil && !t.mail.Empty() {
		if j, ok := t.mail.Pop(); ok {
			return j
		}
	}
	// Guests first: like the seeds' main_worker, they hold work from outside callers.
	if gs := p.guests.Load(); gs != nil {
		for _, g := range *gs {
			if g == t {
				continue
			}
			if j, ok := g.deque.StealLoop(); ok {
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
// panic travels to whoever waits for the job.
func (t *Task) execute(j *job) {
	t.countExecuted()
	p := t.protect(j)
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
	if owner != nil && owner.sleeper != nil && owner.sleeper.latch.Set() {
		owner.pool.wakeSpecific(owner.index)
	}
}

// protect runs j with panic recovery. Forks that a panic skipped past are cleaned up
// (unwindTo) so the frame stack is consistent again.
func (t *Task) protect(j *job) (pe *PanicError) {
	d0 := t.depth
	defer func() {
		if r := recover(); r != nil {
			t.unwindTo(d0)
			pe = wrapPanic(r)
		}
	}()
	j.run(t, j)
	if t.depth != d0 {
		panic(errUnjoined)
	}
	return nil
}

// protectCall runs f(t) like protect runs a job.
func (t *Task) protectCall(f func(*Task)) (pe *PanicError) {
	d0 := t.depth
	defer func() {
		if r := recover(); r != nil {
			t.unwindTo(d0)
			pe = wrapPanic(r)
		}
	}()
	f(t)
	if t.depth != d0 {
		panic(errUnjoined)
	}
	return nil
}

// unwindTo drops the frames above depth d0 after a panic skipped their joins. A private
// frame is simply discarded (it never ran). A published one is popped back if it is
// still in the deque, else a thief runs it and we wait for it: its slot cannot be reused
// while the thief uses it.
func (t *Task) unwindTo(d0 int) {
	for t.depth > d0 {
		d := t.depth - 1
		j := t.stack[d]
		t.depth = d
		if d < t.pub {
			t.pub = d
			if t.deque.Pop() != j {
				t.waitFor(j)
			}
		}
		if j.release != nil {
			j.release(j)
		}
	}
}

// waitFor runs other work until the stolen job j is done: the seeds' hybrid join. See
// waitUntil.
func (t *Task) waitFor(j *job) { t.waitUntil(&j.latch) }

// latch is what waitUntil waits for: *lockfree.OnceLatch or *lockfree.CountLatch.
type latch interface {
	Probe() bool
	Wait()
}

// waitUntil runs other work until l is set. A waiting Task counts as hungry, so busy
// workers publish frames for it to steal.
//
// A worker waits exactly like an idle worker (Rayon's wait_until): it looks for work
// between yield rounds, then goes through the sleep protocol, so while it sleeps it is
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
	p.hungry.Add(1)
	p.counters.addInactive()
	var idle idleState
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
			p.hungry.Add(-1)
			p.wakeThreads(p.counters.subInactive())
			t.execute(x)
			p.hungry.Add(1)
			p.counters.addInactive()
			idle = idleState{}
			continue
		}
		p.noWorkFound(t, &idle)
	}
	p.hungry.Add(-1)
	p.counters.subInactive()
}

// guestWait is waitUntil for a guest Task.
func (t *Task) guestWait(l latch) {
	p := t.pool
	p.hungry.Add(1)
	var sw lockfree.SpinWait
	yields := 0
	for !l.Probe() {
		if x := t.findWork(); x != nil {
			p.hungry.Add(-1)
			t.execute(x)
			p.hungry.Add(1)
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
		p.hungry.Add(-1)
		l.Wait()
		return
	}
	p.hungry.Add(-1)
}
