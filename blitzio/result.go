package blitzio

import (
	"fmt"
	"sync"
)

// Helpers for futures of Result values and for state machines, so that asynchronous code
// is written by composing futures instead of by hand-written PollFn state machines.
//
// Their callbacks may return any concrete future type (a *SleepFuture, a JoinHandle, a
// Future[T] interface value...): the future type is a type parameter inferred from the
// callback, so func(struct{}) *SleepFuture is accepted as well as func(A) Future[B].

// AndThen returns a future that runs f, passes its value to fn, and then runs the future
// fn returns: sequencing two asynchronous steps. fn may return any future type, an
// interface or a concrete one; B is inferred from it:
//
//	blitzio.AndThen(first, func(struct{}) *blitzio.SleepFuture { return blitzio.Sleep(d) })
//	blitzio.AndThen(first, func(n int) blitzio.Future[string] { return blitzio.Ready(fmt.Sprint(n)) })
//
// The future fn returns is kept by value (no interface conversion). AndThen panics if f
// or fn is nil, or when polled after Drop.
func AndThen[A, B any, FB Future[B]](f Future[A], fn func(A) FB) Future[B] {
	if isNilFuture(f) || fn == nil {
		panic("blitzio: AndThen called with a nil future or function")
	}
	return &andThenF[A, B, FB]{first: f, fn: fn}
}

type andThenF[A, B any, FB Future[B]] struct {
	first   Future[A]
	fn      func(A) FB
	second  FB
	started bool // second holds fn's future
	done    bool
	dropped bool
	out     B
}

// errPolledAfterDrop is the panic of a composed future of this file polled after its
// Drop: its children are gone, so it could only hang or return a wrong value.
const errPolledAfterDrop = "blitzio: future polled after Drop (a dropped future must not be polled again)"

func (t *andThenF[A, B, FB]) Poll(cx *Context) (B, bool) {
	if t.dropped {
		panic(errPolledAfterDrop)
	}
	if t.done {
		return t.out, true
	}
	if !t.started {
		a, ok := t.first.Poll(cx)
		if !ok {
			var zero B
			return zero, false
		}
		t.first = nil
		fn := t.fn
		t.fn = nil
		t.second, t.started = fn(a), true // started first: a panicking fn is not called again
		if isNilFuture(t.second) {
			panic("blitzio: the function given to AndThen, Then or OrElse returned a nil future")
		}
	}
	v, ok := t.second.Poll(cx)
	if ok {
		var zero FB
		t.out, t.done, t.second = v, true, zero
	}
	return v, ok
}

func (t *andThenF[A, B, FB]) Drop() {
	if t.done || t.dropped {
		return // finished futures may be polled again; they hold nothing
	}
	t.dropped = true
	if t.started {
		Drop(t.second)
		var zero FB
		t.second = zero
	} else if t.first != nil {
		Drop(t.first)
		t.first = nil
	}
}

// Then chains a fallible step after a fallible future (Rust's and_then on a future of a
// Result): if f succeeds, fn receives its value and the result is that of the future fn
// returns; if f fails, fn is not called and the error is the result.
func Then[A, B any, FB Future[Result[B]]](f Future[Result[A]], fn func(A) FB) Future[Result[B]] {
	if isNilFuture(f) || fn == nil {
		panic("blitzio: Then called with a nil future or function")
	}
	return AndThen(f, func(r Result[A]) Future[Result[B]] {
		if r.Err != nil {
			return &readyFuture[Result[B]]{v: Result[B]{Err: r.Err}}
		}
		return fn(r.Value)
	})
}

// MapOk transforms the value of a successful Result; an error passes through and fn is
// not called.
func MapOk[A, B any](f Future[Result[A]], fn func(A) B) Future[Result[B]] {
	if isNilFuture(f) || fn == nil {
		panic("blitzio: MapOk called with a nil future or function")
	}
	return Map(f, func(r Result[A]) Result[B] {
		if r.Err != nil {
			return Result[B]{Err: r.Err}
		}
		return Result[B]{Value: fn(r.Value)}
	})
}

// MapErr transforms the error of a failed Result (to wrap it with context, say); a
// success passes through and fn is not called.
func MapErr[T any](f Future[Result[T]], fn func(error) error) Future[Result[T]] {
	if isNilFuture(f) || fn == nil {
		panic("blitzio: MapErr called with a nil future or function")
	}
	return Map(f, func(r Result[T]) Result[T] {
		if r.Err != nil {
			r.Err = fn(r.Err)
		}
		return r
	})
}

// OrElse recovers from an error: if f fails, fn receives the error and the result is
// that of the future fn returns (a fallback, a retry); a success passes through.
func OrElse[T any, F Future[Result[T]]](f Future[Result[T]], fn func(error) F) Future[Result[T]] {
	if isNilFuture(f) || fn == nil {
		panic("blitzio: OrElse called with a nil future or function")
	}
	return AndThen(f, func(r Result[T]) Future[Result[T]] {
		if r.Err == nil {
			return &readyFuture[Result[T]]{v: r}
		}
		return fn(r.Err)
	})
}

// Step is one iteration's outcome in a Loop: continue with a new state, or stop with the
// loop's value. Build it with Continue or Break.
type Step[S, T any] struct {
	State S    // the next iteration's state (when !Done)
	Value T    // the loop's value (when Done)
	Done  bool // stop the loop
}

// Continue returns a Step that runs the loop again with state s. Give T explicitly:
// Continue[T](s).
func Continue[T, S any](s S) Step[S, T] { return Step[S, T]{State: s} }

// Break returns a Step that ends the loop with v. Give S explicitly: Break[S](v).
func Break[S, T any](v T) Step[S, T] { return Step[S, T]{Value: v, Done: true} }

// Loop runs an asynchronous loop as one future, without a hand-written state machine:
// step(state) returns the future of one iteration, whose Step says whether to go on
// (with the next state) or stop (with the loop's value). A retry, a read loop, a
// protocol exchange are loops over a state.
//
// Each iteration consumes one unit of the task's cooperative budget, so a loop whose
// iterations are always ready still yields its worker. Dropping the loop drops the
// iteration in progress.
func Loop[S, T any, F Future[Step[S, T]]](init S, step func(S) F) Future[T] {
	if step == nil {
		panic("blitzio: Loop called with a nil step function")
	}
	return &loopFuture[S, T, F]{state: init, step: step}
}

type loopFuture[S, T any, F Future[Step[S, T]]] struct {
	state   S
	step    func(S) F
	cur     F
	has     bool // cur is the running iteration
	done    bool
	dropped bool
	out     T
}

func (l *loopFuture[S, T, F]) Poll(cx *Context) (T, bool) {
	if l.dropped {
		panic(errPolledAfterDrop)
	}
	var zero T
	for !l.done {
		if !l.has {
			l.cur, l.has = l.step(l.state), true
			if isNilFuture(l.cur) {
				l.has = false
				panic("blitzio: the step function given to Loop returned a nil future")
			}
		}
		st, ok := l.cur.Poll(cx)
		if !ok {
			return zero, false
		}
		var zf F
		l.cur, l.has = zf, false
		if st.Done {
			l.out, l.done = st.Value, true
			l.step = nil
			var zs S
			l.state = zs
			break
		}
		l.state = st.State
		if !cx.ConsumeBudget() {
			return zero, false // re-scheduled: the next poll starts the next iteration
		}
	}
	return l.out, true
}

func (l *loopFuture[S, T, F]) Drop() {
	if l.done || l.dropped {
		return
	}
	l.dropped = true
	if l.has {
		Drop(l.cur)
		var zf F
		l.cur, l.has = zf, false
	}
}

// MapLimit applies fn to every item and runs the resulting futures concurrently, at most
// limit at a time, inside the polling task (Rust's buffer_unordered, then collect):
// fan-out with a limit, fan-in in item order. The result's element i is the value of
// fn(items[i]). For failures, make R a Result (each error is kept where it occurred) and
// check them after; for CPU-parallel work, let fn return Spawn(co, ...) handles or
// SpawnBlocking ones, so the children run on other workers.
//
// A child is polled only when it wakes (each has its own waker), so a poll costs
// O(children woken), and no more than limit futures exist at a time. Dropping the
// future drops the children in progress and starts no more. MapLimit panics if limit
// < 1 or fn is nil.
func MapLimit[T, R any, F Future[R]](items []T, limit int, fn func(T) F) Future[[]R] {
	if limit < 1 {
		panic("blitzio: MapLimit called with limit < 1")
	}
	if fn == nil {
		panic("blitzio: MapLimit called with a nil function")
	}
	return &mapLimit[T, R, F]{items: items, limit: limit, fn: fn}
}

type mapLimit[T, R any, F Future[R]] struct {
	items   []T
	limit   int
	fn      func(T) F
	next    int // the next item to start
	left    int // items not yet finished
	slots   []limitSlot[F]
	free    []int32 // free slot indices
	sh      *limitShared
	batch   []int32
	out     []R
	done    bool
	dropped bool
}

type limitSlot[F any] struct {
	fut  F
	item int
	busy bool
	w    *limitWaker
}

// limitShared is what the children's wakers reach: the queue of woken slots and the
// parent's waker. A mutex is enough: at most limit children, and each wake takes it
// once.
type limitShared struct {
	mu     sync.Mutex
	ready  []int32
	queued []bool
	parent Waker
}

type limitWaker struct {
	sh   *limitShared
	slot int32
}

func (w *limitWaker) wake(cx *Context) {
	if w.sh.push(w.slot) {
		w.sh.mu.Lock()
		p := w.sh.parent
		w.sh.mu.Unlock()
		p.WakeFrom(cx)
	}
}

// push queues slot i unless it is queued already; it reports whether it queued it.
func (sh *limitShared) push(i int32) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.queued[i] {
		return false
	}
	sh.queued[i] = true
	sh.ready = append(sh.ready, i)
	return true
}

func (m *mapLimit[T, R, F]) Poll(cx *Context) ([]R, bool) {
	if m.dropped {
		panic(errPolledAfterDrop)
	}
	if m.done {
		return m.out, true
	}
	if m.sh == nil {
		n := min(m.limit, len(m.items))
		m.out = make([]R, len(m.items))
		m.left = len(m.items)
		m.sh = &limitShared{queued: make([]bool, n)}
		m.slots = make([]limitSlot[F], n)
		for i := range m.slots {
			m.slots[i].w = &limitWaker{sh: m.sh, slot: int32(i)}
			m.free = append(m.free, int32(n-1-i))
		}
	}
	sh := m.sh
	// The waker of this poll, cx.Waker(): under an n-ary combinator (JoinAll, SelectN)
	// it is the combinator's waker for this child, not the task's (cx.waker), and a wake
	// that skipped it would never get MapLimit polled again.
	parent := cx.Waker()
	sh.mu.Lock()
	if !sh.parent.WillWake(parent) {
		sh.parent = parent
	}
	// Take the woken children once per poll: a child that wakes itself when polled (a
	// yield) is polled again on the next poll, not in a loop here.
	m.batch, sh.ready = sh.ready, m.batch[:0]
	for _, i := range m.batch {
		sh.queued[i] = false
	}
	sh.mu.Unlock()
	// The slots are polled with their own wakers, and without the enclosing
	// combinator's child (cx.child): with it set, cx.Waker() inside a slot's future
	// would give the combinator's waker, not the slot's. Both are put back after.
	saved, savedChild, savedIdx := cx.waker, cx.child, cx.childIdx
	defer func() { cx.waker, cx.child, cx.childIdx = saved, savedChild, savedIdx }()
	cx.child = nil
	for k, i := range m.batch {
		if cx.budgetSpent() {
			// Every leaf would refuse now: put the rest back and yield.
			for _, j := range m.batch[k:] {
				sh.push(j)
			}
			cx.waker, cx.child, cx.childIdx = saved, savedChild, savedIdx
			cx.wakeSelfYield()
			return nil, false
		}
		m.pollSlot(cx, i, saved)
	}
	// Start items in the free slots, polling each at once; a child that finishes on its
	// first poll frees its slot for the next item (bounded by the number of items).
	for len(m.free) > 0 && m.next < len(m.items) {
		i := m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
		s := &m.slots[i]
		s.fut, s.item, s.busy = m.fn(m.items[m.next]), m.next, true
		m.next++
		if isNilFuture(s.fut) {
			s.busy = false
			panic(fmt.Sprintf("blitzio: the function given to MapLimit returned a nil future for item %d", s.item))
		}
		if cx.budgetSpent() {
			sh.push(i)
			cx.waker, cx.child, cx.childIdx = saved, savedChild, savedIdx
			cx.wakeSelfYield()
			return nil, false
		}
		m.pollSlot(cx, i, saved)
	}
	if m.left > 0 {
		return nil, false // every running child has arranged its wake-up
	}
	m.done = true
	m.items, m.fn, m.slots, m.free, m.sh, m.batch = nil, nil, nil, nil, nil, nil
	return m.out, true
}

// pollSlot polls the child in slot i with the slot's waker, and frees the slot if the
// child finished.
func (m *mapLimit[T, R, F]) pollSlot(cx *Context, i int32, saved Waker) {
	s := &m.slots[i]
	if !s.busy {
		return // a stale wake of a finished child
	}
	cx.waker = Waker{t: s.w}
	v, ok := s.fut.Poll(cx)
	cx.waker = saved
	if !ok {
		return
	}
	var zf F
	m.out[s.item], s.fut, s.busy = v, zf, false
	m.free = append(m.free, i)
	m.left--
}

func (m *mapLimit[T, R, F]) Drop() {
	if m.done || m.dropped {
		return
	}
	m.dropped = true
	for i := range m.slots {
		if s := &m.slots[i]; s.busy {
			s.busy = false
			Drop(s.fut)
		}
	}
	m.next = len(m.items)
}
