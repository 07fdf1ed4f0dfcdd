package blitz

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// job is the header every unit of work starts with: a forked frame, an injected call, a
// spawned scope task, a broadcast share: Rayon's JobRef (a handler pointer) plus what
// Go needs because a job cannot live on a goroutine stack (Go moves stacks).
//
// The typed containers embed job as their FIRST field, so a *job converts back to its
// container with unsafe.Pointer (a container-of conversion).
type job struct {
	// run executes the work with the Task of whoever runs it. A panic escapes run; the
	// runner (Task.execute) recovers it.
	run func(t *Task, j *job)
	// done, when not nil, is called by a runner after run returned or panicked (with the
	// recovered panic, or nil). Frames leave it nil: their completion is latch.SetDone.
	done func(j *job, p *PanicError)
	// latch is set by a thief once it ran a pushed frame; the owner probes it in
	// Future.Join. It is reset when the frame is pushed.
	latch lockfree.OnceLatch
	// panic is the panic a thief recovered from run, re-raised by the joiner.
	panic *PanicError
	// owner is the Task that pushed the frame, to wake it when a thief finishes.
	owner *Task
	// eager is true when the frame was pushed because of EagerLevels (see Task).
	eager bool
	// isolated marks a Go job: it runs only at the bottom of a goroutine, never
	// beneath other work (see Task.runOther).
	isolated bool
	// goexited is set by Task.protect when the goroutine running the job exited
	// (runtime.Goexit) before run returned, just before it completes the job. A
	// *PanicError whose Value is ErrGoexit does not tell that apart from a panic that
	// carries a re-raised ErrGoexit (the job joined a fork whose goroutine exited): the
	// job's own goroutine is alive and the job failed like any panicking one (see
	// Pool.goEntered).
	goexited bool
	// release gives a frame's slot back to its slab (frames only); used when a panic
	// unwinds past a fork that was never joined.
	release func(j *job)
}

// frame is the storage of one fork of a Job[In, Out]: Rayon's StackJob, moved off
// the stack. Frames live in a per-Task slab and are reused in LIFO order.
type frame[In, Out any] struct {
	job
	fn   func(*Task, In) Out
	in   In
	out  Out
	gen  uint32 // incremented by every Fork of this frame; detects stale Futures
	slab *slab[In, Out]
}

// slab is one Task's frames for one Job: frames[0:top] are forked and not yet joined.
// Each frame is allocated once (its address must stay fixed while a deque holds it), so
// a fork that does not grow the slab allocates nothing.
type slab[In, Out any] struct {
	frames []*frame[In, Out]
	top    int
}

// runFrame is frame.job.run: a thief runs it. (An owner that pops its frame back does
// not: Future.Stolen reports false and the caller runs the function itself.)
func runFrame[In, Out any](t *Task, j *job) {
	f := (*frame[In, Out])(unsafe.Pointer(j))
	f.out = f.fn(t, f.in)
}

// releaseFrame is frame.job.release.
func releaseFrame[In, Out any](j *job) {
	f := (*frame[In, Out])(unsafe.Pointer(j))
	var zi In
	var zo Out
	f.in, f.out, f.job.panic = zi, zo, nil
	f.slab.top--
}

func (s *slab[In, Out]) grow() {
	f := &frame[In, Out]{slab: s}
	f.job.run = runFrame[In, Out]
	f.job.release = releaseFrame[In, Out]
	s.frames = append(s.frames, f)
}

// jobTypes numbers the distinct [In, Out] type pairs of the Jobs in use, so that each
// Task finds its slab for a Job by index. The slab belongs to the type pair, not to
// the Job value: a Task's pushed frames are joined in LIFO order whatever Job they
// came from, so the frames of every Job[In, Out] can share one LIFO slab. Numbering
// Job values instead (one slab per Job ever used) made a Task's slab table grow with
// every Job a generic function declared per call, and the int32 numbers wrap. The
// type pairs of a program are fixed at compile time, so the table is bounded by them.
var jobTypes struct {
	ids sync.Map // any((*frame[In, Out])(nil)) -> int32; its dynamic type is the key
	mu  sync.Mutex
	n   int32 // guarded by mu
}

// jobTypeIndex returns the index of the type pair [In, Out], numbering it on first use.
func jobTypeIndex[In, Out any]() int32 {
	key := any((*frame[In, Out])(nil))
	if v, ok := jobTypes.ids.Load(key); ok {
		return v.(int32)
	}
	jobTypes.mu.Lock()
	defer jobTypes.mu.Unlock()
	if v, ok := jobTypes.ids.Load(key); ok {
		return v.(int32)
	}
	id := jobTypes.n
	jobTypes.n++
	jobTypes.ids.Store(key, id)
	return id
}

// Job is the zero-allocation fork/join (Rayon's join with a StackJob): a slab key
// declared once, usually as a package-level variable, and used with the function to run:
//
//	var fibJob blitz.Job[int, int]
//
//	func fib(t *blitz.Task, n int) int {
//		if n < 2 {
//			return n
//		}
//		f := fibJob.Fork(t, fib, n-1) // maybe run by another worker
//		b := fib(t, n-2)
//		return f.Join(t) + b
//	}
//
// Joining with Future.Stolen instead of Join lets the caller run an unstolen fork with a
// direct call, the cheapest form (see Stolen).
//
// Each Task keeps, per Job, a slab of frames reused in LIFO order, so Fork and Join
// allocate nothing once a Task has reached its deepest nesting for that Job. A frame
// cannot live on the goroutine stack as in Rayon (Go moves stacks), hence
// the slab. (The function is an argument of Fork rather than a field set by a
// constructor because a recursive function that refers to its own Job variable would be
// an initialisation cycle in Go.)
//
// Each Task's frames belong to the Job's type pair [In, Out], not to the Job value:
// Jobs of the same types share them (joins are LIFO per Task whatever the Job), so a
// Task's memory is bounded by the type pairs in use and its deepest nesting, however
// many Job values are made (a generic function may declare a Job per call).
//
// The zero value is ready to use. A Job is safe for concurrent use by any number of
// Tasks and pools; it must not be copied after first use.
type Job[In, Out any] struct {
	id atomic.Int32 // slab index + 1; 0 until first use
}

// slabIndex returns the Job's slab index: its type pair's (see jobTypes), cached in
// the Job after the first use.
func (jb *Job[In, Out]) slabIndex() int {
	if id := jb.id.Load(); id != 0 {
		return int(id) - 1
	}
	return jb.firstUse()
}

//go:noinline
func (jb *Job[In, Out]) firstUse() int {
	id := jobTypeIndex[In, Out]()
	jb.id.Store(id + 1) // racing first uses store the same value
	return int(id)
}

// Future is the handle of one fork of a Job: join it exactly once, with the Task that
// forked it, in LIFO order (the most recent unjoined fork of that Task first). It is a
// small value; copying it is fine, joining a copy twice is not.
type Future[In, Out any] struct {
	f   *frame[In, Out] // nil when the fork was not pushed
	fn  func(*Task, In) Out
	in  In
	gen uint32
}

// slabOf returns t's slab for jb, creating it on first use.
func slabOf[In, Out any](t *Task, jb *Job[In, Out]) *slab[In, Out] {
	id := jb.slabIndex()
	if id < len(t.slabs) {
		if s, ok := t.slabs[id].(*slab[In, Out]); ok {
			return s
		}
	}
	return newSlab[In, Out](t, id)
}

//go:noinline
func newSlab[In, Out any](t *Task, id int) *slab[In, Out] {
	for len(t.slabs) <= id {
		t.slabs = append(t.slabs, nil)
	}
	s := &slab[In, Out]{}
	t.slabs[id] = s
	return s
}

// Fork starts fn(t, in) as a job that another worker may steal, and returns its Future.
// The caller must Join the Future with the same Task before its own function returns.
//
// Fork pushes the forks of the top EagerLevels levels of nesting, so thieves always find
// the big jobs near the root, and below that uses lazy binary splitting: when the
// Task's deque already holds SplitDepth jobs that thieves have not taken, more jobs
// would only wait behind them, so Fork does not push: the Future just remembers fn and
// in, and Join runs them. Such a fork costs one atomic load and a compare, inlined into
// the caller. Otherwise Fork pushes a frame to the deque, where a thief takes the oldest
// (largest) job first; thieves taking jobs make room, so the next fork is pushed again.
// Fork never allocates once the Task's slab for jb is deep enough.
//
// Fork panics if fn is nil: at once when it pushes the fork, otherwise when Join would
// run it, so that the unpushed path stays one load and a compare. (Stolen never calls
// fn when it reports false, so with Stolen an unpushed nil fn is never reported; it is
// never called either.) A nil t is not checked: the inlined fast path has no room for
// the compare within the compiler's inlining budget, and Fork faults with a nil
// pointer dereference instead.
func (jb *Job[In, Out]) Fork(t *Task, fn func(t *Task, in In) Out, in In) Future[In, Out] {
	// Push while fewer than EagerLevels eager forks are unjoined, or while the deque
	// holds fewer than SplitDepth jobs: both in one load (see Task.gate).
	if atomic.LoadInt64(&t.gate) > 0 {
		return jb.push(t, fn, in)
	}
	return Future[In, Out]{fn: fn, in: in}
}

// push is the pushing half of Fork: take the next frame of the slab, fill it, push it.
func (jb *Job[In, Out]) push(t *Task, fn func(t *Task, in In) Out, in In) (fu Future[In, Out]) {
	if fn == nil {
		panic(errNilFork)
	}
	t.checkLive("Job.Fork")
	fu.fn, fu.in = fn, in
	s := slabOf(t, jb)
	if s.top == len(s.frames) {
		s.grow()
	}
	f := s.frames[s.top]
	s.top++
	f.fn = fu.fn
	f.in = fu.in
	f.gen++
	fu.f, fu.gen = f, f.gen
	delta := int64(-1) // one job more in the deque
	f.job.eager = t.nest < t.eager
	if f.job.eager {
		t.nest++
		if t.nest == t.eager {
			delta -= eagerBonus
		}
	}
	atomic.AddInt64(&t.gate, delta)
	t.push(&f.job)
	return fu
}

// Fork is jb.Fork(t, fn, in), for readers who prefer the function form.
func Fork[In, Out any](t *Task, jb *Job[In, Out], fn func(t *Task, in In) Out, in In) Future[In, Out] {
	return jb.Fork(t, fn, in)
}

// Join waits for the forked job and returns its result. If the fork was not pushed, or
// nobody stole it, Join runs it now on the calling goroutine; if a thief took it, Join
// runs other work while it waits (as Rayon's join does, see Task.waitUntil).
//
// A panic in the job, when a thief ran it, is re-raised here as a *PanicError carrying
// the thief's stack. When the job runs here its panic simply propagates; the nearest
// enclosing blitz boundary (Call, Join, Scope, Catch, a worker) wraps it into a
// *PanicError.
//
// Join panics if the Future is not the Task's most recent unjoined pushed fork (joins
// must be LIFO), was already joined, or belongs to another Task.
func (fu Future[In, Out]) Join(t *Task) Out {
	if out, ok := fu.Stolen(t); ok {
		return out
	}
	// Not pushed or not stolen: run it here. Fork checks fn only when it pushes (to
	// stay inlined), so a nil fn of an unpushed fork is reported here.
	if fu.fn == nil {
		panic(errNilFork)
	}
	if t == nil {
		panic(errNilJoinTask)
	}
	return fu.fn(t, fu.in)
}

// Stolen is the fastest form of Join, a join that returns an optional result: it returns the
// job's result and true if a thief ran it (waiting for it as Join does), or false if
// nobody started it, in which case the caller must run the job itself, typically with
// a direct call that the compiler can inline:
//
//	f := fibJob.Fork(t, fib, n-1)
//	b := fib(t, n-2)
//	a, ok := f.Stolen(t)
//	if !ok {
//		a = fib(t, n-1)
//	}
//
// After false the job is gone from the deque and will never run unless the caller runs
// it. The rules of Join apply.
func (fu Future[In, Out]) Stolen(t *Task) (out Out, ok bool) {
	if fu.f != nil {
		out, ok = joinPushed(t, fu.f, fu.gen)
	}
	return
}

// joinPushed joins a frame that was pushed to t's deque: either it is still there (then
// it is the bottom item: pushes and joins are LIFO) and we take it back, or a thief took
// it and we wait.
func joinPushed[In, Out any](t *Task, f *frame[In, Out], gen uint32) (Out, bool) {
	if t == nil {
		panic(errNilJoinTask)
	}
	d := t.depth - 1
	if d < 0 || t.stack[d] != &f.job || f.gen != gen {
		panic(errJoinOrder)
	}
	t.depth = d
	var delta int64
	if f.job.eager {
		t.nest--
		if t.nest == t.eager-1 {
			delta = eagerBonus
		}
	}
	// A stolen frame that is already done needs only the latch
	// probe. Otherwise pop: the frame is either the deque's bottom item or was stolen.
	if !f.job.latch.Probe() {
		if got := t.deque.Pop(); got != nil {
			if got != &f.job {
				panic("blitz: internal error: deque bottom is not the frame being joined")
			}
			atomic.AddInt64(&t.gate, delta+1) // the deque has one job less
			t.countExecuted()
			f.job.release(&f.job)
			var zero Out
			return zero, false
		}
		// Stolen (the thief added the room back): wait for it.
		t.checkLive("Future.Join")
		if delta != 0 {
			atomic.AddInt64(&t.gate, delta)
			delta = 0
		}
		t.waitStolen(&f.job)
	}
	if delta != 0 {
		atomic.AddInt64(&t.gate, delta)
	}
	return finishStolen(f)
}

// finishStolen takes the result of a frame a thief ran, frees the frame, and re-raises
// the thief's panic if there was one.
func finishStolen[In, Out any](f *frame[In, Out]) (Out, bool) {
	out, p := f.out, f.job.panic
	f.job.release(&f.job)
	if p != nil {
		panic(p)
	}
	return out, true
}

// Unit is the empty result of jobs that return nothing.
type Unit = struct{}
