package blitzio

import (
	"errors"
	"sync"
	"unsafe"
)

// ErrCancelled is the error of a task that was aborted (JoinHandle.Abort, AbortHandle.Abort)
// or dropped by Runtime.Shutdown before it finished, and of a task spawned on a closed
// runtime.
var ErrCancelled = errors.New("blitzio: task cancelled")

// ErrGoexit is the error of a task whose code called runtime.Goexit (t.Fatal, t.FailNow
// or t.SkipNow in a test, for instance) in its Poll, in its future's Drop, or, for
// SpawnBlocking, in the blocking function. Goexit cannot be stopped: the goroutine that
// ran the code exits, so the task cannot finish normally. The runtime completes the task
// with this error (test for it with errors.Is), and replaces the worker or blocking-pool
// goroutine that exited, so the other tasks keep running and Close still returns.
var ErrGoexit = errors.New("blitzio: task's goroutine exited (runtime.Goexit)")

// header is the type-independent part of a task: what queues, wakers and the owned-task
// list handle. It is embedded in core[T], which is embedded in task[F, T], so one
// allocation holds header, result and future (Tokio's Cell<T, S>).
type header struct {
	state taskState
	next  *header // link in the injection queue and in batches moved between queues
	// ownIdx is the task's index in its shard of the runtime's owned-task list (so
	// Shutdown can find idle tasks that are in no queue), or -1 when it is in none.
	// Guarded by the shard's mutex. An index into a slice instead of list links keeps the
	// header small: a task with an empty future fits the 80-byte size class.
	ownIdx int32
	rt     *Runtime
	vt     taskVTable // the enclosing *task[F, T], for the type-specific work
	// joinWaker is written by a JoinHandle poller only while it holds JOIN_LOCK and
	// JOIN_WAKER is clear, and read by the completer only after it saw JOIN_WAKER set;
	// once JOIN_MULTI is set it is a *joinWaiters and never changes (see
	// taskState.lockJoin and JoinHandle.Poll).
	joinWaker Waker
}

// taskVTable is the type-specific part of a task, implemented by *task[F, T]. The
// scheduler sees only headers and calls through this interface (Tokio's raw vtable).
type taskVTable interface {
	// poll polls the future once; it reports true when the task has finished (value or
	// panic stored). The caller owns the task (state running).
	poll(cx *Context) bool
	// cancel drops the future and stores ErrCancelled (joined with the Drop's panic, if
	// it panics). The caller owns the task and completes it (finish) afterwards. If Drop
	// calls runtime.Goexit, cancel completes the task itself before the goroutine ends,
	// since the caller's code will not run.
	cancel(cx *Context)
	// release drops the stored output once nobody can read it.
	release()
}

// core is the part of a task that the JoinHandle[T] reads: the header and the output.
type core[T any] struct {
	header
	out T
	err error
}

// task is one spawned future: header, output and future in one allocation. The future
// comes first so that an empty future is not padded at the end of the struct (Go pads a
// trailing zero-size field): a task of an empty future is 80 bytes.
type task[F Future[T], T any] struct {
	fut F
	core[T]
}

func (t *task[F, T]) poll(cx *Context) (done bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			t.err = newPanicError(r, false)
			t.dropAfterFailure(cx)
			done = true
			return
		}
		// runtime.Goexit in Poll: the goroutine ends once the deferred calls have run,
		// so the worker's code after this poll never runs. Complete the task here, or it
		// would stay "running" forever; worker.run replaces the worker.
		t.err = ErrGoexit
		t.dropAfterFailure(cx)
		t.header.finish(cx)
	}()
	v, ok := t.fut.Poll(cx)
	returned = true
	if ok {
		t.out = v
		var zero F
		t.fut = zero // release what the future references even if the task object lives on
	}
	return ok
}

// dropFuture abandons an unfinished future: its Drop runs, then it is released.
func (t *task[F, T]) dropFuture() {
	f := t.fut
	var zero F
	t.fut = zero
	if d, ok := any(f).(Dropper); ok {
		d.Drop()
	}
}

func (t *task[F, T]) cancel(cx *Context) {
	t.err = ErrCancelled
	t.dropAfterFailure(cx)
}

// dropAfterFailure drops the future of a task whose t.err is already set (cancelled, or
// its Poll panicked or exited). A panic in Drop is joined to t.err, so that it is seen
// on the JoinHandle instead of vanishing, and neither the worker nor Shutdown dies of
// it. A runtime.Goexit in Drop cannot be stopped: then we join ErrGoexit to t.err and
// complete the task in a deferred call, since our caller will not get to do it.
func (t *task[F, T]) dropAfterFailure(cx *Context) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			t.err = errors.Join(t.err, newPanicError(r, true))
			return
		}
		t.err = errors.Join(t.err, ErrGoexit)
		t.header.finish(cx)
	}()
	t.dropFuture()
	returned = true
}

func (t *task[F, T]) release() {
	var zero T
	t.out = zero
}

// wake implements wakeTarget for task wakers.
func (h *header) wake(cx *Context) {
	if h.state.wake() {
		h.rt.schedule(h, cx, false)
	}
}

// finish completes a task its caller owns (running) whose output, panic or
// cancellation is stored: publish completion, wake the JoinHandle, leave the owned list.
//
// The task leaves the owned list before it is marked complete: we own it, so Shutdown has
// nothing to do for it, and the runtime's reference is then dropped by the same CAS that
// completes it (one atomic write fewer per task).
func (h *header) finish(cx *Context) {
	h.rt.owned.remove(h)
	prev := h.state.toComplete()
	if prev&flagJoinInterest == 0 || refs(prev) == 1 {
		h.vt.release() // detached, or the last reference: nobody will read the output
	}
	if prev&flagJoinWaker != 0 {
		// Wake the waiters even if the handle was detached meanwhile: one that blocked
		// before another copy's Detach would otherwise sleep forever; woken, it sees the
		// detachment and panics (JoinHandle.Poll).
		wakeJoinWaker(h.joinWaker, cx)
	}
}

// cancelOwned drops a task the caller owns and completes it with ErrCancelled.
func (h *header) cancelOwned(cx *Context) {
	h.vt.cancel(cx)
	h.finish(cx)
}

// ---- owned tasks ----

const ownedShards = 16

type ownedShard struct {
	mu     sync.Mutex
	tasks  []*header
	closed bool
	_      [64 - 8 - 24 - 8]byte // keep shards on separate cache lines
}

// ownedTasks is the set of a runtime's live tasks (Tokio's OwnedTasks), sharded by task
// address so spawns on different workers rarely share a mutex. Each shard is a slice;
// removal moves the last task into the hole, so insert and remove are O(1).
type ownedTasks struct {
	shards [ownedShards]ownedShard
}

func (o *ownedTasks) shard(h *header) *ownedShard {
	// Heap objects do not move in Go, so the address is a stable hash. Drop the low
	// bits, which are the same for every object of a size class.
	return &o.shards[(uintptr(unsafe.Pointer(h))>>7)%ownedShards]
}

// insert adds h; it fails once the runtime is closed, so no task can slip in after
// Shutdown's final walk.
func (o *ownedTasks) insert(h *header) bool {
	s := o.shard(h)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		h.ownIdx = -1
		return false
	}
	h.ownIdx = int32(len(s.tasks))
	s.tasks = append(s.tasks, h)
	s.mu.Unlock()
	return true
}

func (o *ownedTasks) remove(h *header) {
	s := o.shard(h)
	s.mu.Lock()
	if i := h.ownIdx; i >= 0 {
		last := len(s.tasks) - 1
		if int(i) != last {
			moved := s.tasks[last]
			s.tasks[i] = moved
			moved.ownIdx = i
		}
		s.tasks[last] = nil
		s.tasks = s.tasks[:last]
		h.ownIdx = -1
		if cap(s.tasks) > 1024 && len(s.tasks) < cap(s.tasks)/4 {
			// Give memory back after a burst of tasks has finished.
			s.tasks = append([]*header(nil), s.tasks...)
		}
	}
	s.mu.Unlock()
}

// closeAndTake closes every shard to inserts and returns every remaining task.
func (o *ownedTasks) closeAndTake() []*header {
	var all []*header
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		s.closed = true
		for _, h := range s.tasks {
			h.ownIdx = -1
		}
		all = append(all, s.tasks...)
		s.tasks = nil
		s.mu.Unlock()
	}
	return all
}

// len returns the number of live tasks (racy snapshot, for tests and metrics).
func (o *ownedTasks) len() int {
	n := 0
	for i := range o.shards {
		s := &o.shards[i]
		s.mu.Lock()
		n += len(s.tasks)
		s.mu.Unlock()
	}
	return n
}
