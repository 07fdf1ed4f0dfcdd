package blitzio

import (
	"errors"
	"slices"
	"sync"
)

// Combinators run several futures at once inside one task. Every combinator polls all of
// its unfinished children on each poll (not one after another, waiting for each in turn),
// so children make progress concurrently and a select sees whichever finishes first. The
// n-ary ones give each child its own waker and re-poll only the children that were woken
// (like Tokio's FuturesUnordered), and stop polling children when the task's budget is
// spent (the task yields and the next poll resumes where this one stopped), so a JoinAll
// of n futures costs O(n) child polls in all, however many are ready at once.
//
// Ordering: when several children are ready in the same poll, the one with the lowest
// index (among those polled) wins a select. Cancellation: a child that loses a select, or
// the rest of a TryJoin after an error, is dropped (its Drop runs) and never polled
// again; dropping a combinator drops its unfinished children. A finished combinator
// polled again returns the same result without polling any child.
//
// The n-ary combinators keep their own copy of the slice of futures: the caller's slice
// is not modified.

// Tuple2 is the value of Join2.
type Tuple2[A, B any] struct {
	V1 A
	V2 B
}

// Tuple3 is the value of Join3.
type Tuple3[A, B, C any] struct {
	V1 A
	V2 B
	V3 C
}

type join2[A, B any] struct {
	a      Future[A]
	b      Future[B]
	out    Tuple2[A, B]
	da, db bool
}

func (j *join2[A, B]) Poll(cx *Context) (Tuple2[A, B], bool) {
	if !j.da {
		j.out.V1, j.da = j.a.Poll(cx)
	}
	if !j.db {
		j.out.V2, j.db = j.b.Poll(cx)
	}
	return j.out, j.da && j.db
}

func (j *join2[A, B]) Drop() {
	if !j.da {
		Drop(j.a)
	}
	if !j.db {
		Drop(j.b)
	}
}

// Join2 waits for both futures, polling them concurrently, and returns both values.
func Join2[A, B any](a Future[A], b Future[B]) Future[Tuple2[A, B]] {
	return &join2[A, B]{a: a, b: b}
}

type join3[A, B, C any] struct {
	a          Future[A]
	b          Future[B]
	c          Future[C]
	out        Tuple3[A, B, C]
	da, db, dc bool
}

func (j *join3[A, B, C]) Poll(cx *Context) (Tuple3[A, B, C], bool) {
	if !j.da {
		j.out.V1, j.da = j.a.Poll(cx)
	}
	if !j.db {
		j.out.V2, j.db = j.b.Poll(cx)
	}
	if !j.dc {
		j.out.V3, j.dc = j.c.Poll(cx)
	}
	return j.out, j.da && j.db && j.dc
}

func (j *join3[A, B, C]) Drop() {
	if !j.da {
		Drop(j.a)
	}
	if !j.db {
		Drop(j.b)
	}
	if !j.dc {
		Drop(j.c)
	}
}

// Join3 waits for three futures, polling them concurrently.
func Join3[A, B, C any](a Future[A], b Future[B], c Future[C]) Future[Tuple3[A, B, C]] {
	return &join3[A, B, C]{a: a, b: b, c: c}
}

// Selected2 is the value of Select2: Index (0 or 1) says which future won, and the
// matching field holds its value.
type Selected2[A, B any] struct {
	Index int
	V1    A
	V2    B
}

type select2[A, B any] struct {
	a    Future[A]
	b    Future[B]
	out  Selected2[A, B] // the winner, returned again if polled after it finished
	done bool            // finished (out is set) or dropped
}

func (s *select2[A, B]) Poll(cx *Context) (Selected2[A, B], bool) {
	if s.done {
		return s.out, true
	}
	if v, ok := s.a.Poll(cx); ok {
		s.out = Selected2[A, B]{Index: 0, V1: v}
		s.finish(0)
		return s.out, true
	}
	if v, ok := s.b.Poll(cx); ok {
		s.out = Selected2[A, B]{Index: 1, V2: v}
		s.finish(1)
		return s.out, true
	}
	return Selected2[A, B]{}, false
}

// finish drops every child but the winner (-1: all of them) and forgets them all.
func (s *select2[A, B]) finish(winner int) {
	s.done = true
	a, b := s.a, s.b
	s.a, s.b = nil, nil
	if winner != 0 {
		Drop(a)
	}
	if winner != 1 {
		Drop(b)
	}
}

func (s *select2[A, B]) Drop() {
	if !s.done {
		s.finish(-1)
	}
}

// Select2 waits for the first of two futures; the other is dropped.
func Select2[A, B any](a Future[A], b Future[B]) Future[Selected2[A, B]] {
	return &select2[A, B]{a: a, b: b}
}

// Selected3 is the value of Select3.
type Selected3[A, B, C any] struct {
	Index int
	V1    A
	V2    B
	V3    C
}

type select3[A, B, C any] struct {
	a    Future[A]
	b    Future[B]
	c    Future[C]
	out  Selected3[A, B, C] // the winner, returned again if polled after it finished
	done bool               // finished (out is set) or dropped
}

func (s *select3[A, B, C]) Poll(cx *Context) (Selected3[A, B, C], bool) {
	if s.done {
		return s.out, true
	}
	if v, ok := s.a.Poll(cx); ok {
		s.out = Selected3[A, B, C]{Index: 0, V1: v}
		s.finish(0)
		return s.out, true
	}
	if v, ok := s.b.Poll(cx); ok {
		s.out = Selected3[A, B, C]{Index: 1, V2: v}
		s.finish(1)
		return s.out, true
	}
	if v, ok := s.c.Poll(cx); ok {
		s.out = Selected3[A, B, C]{Index: 2, V3: v}
		s.finish(2)
		return s.out, true
	}
	return Selected3[A, B, C]{}, false
}

// finish drops every child but the winner (-1: all of them) and forgets them all.
func (s *select3[A, B, C]) finish(winner int) {
	s.done = true
	a, b, c := s.a, s.b, s.c
	s.a, s.b, s.c = nil, nil, nil
	if winner != 0 {
		Drop(a)
	}
	if winner != 1 {
		Drop(b)
	}
	if winner != 2 {
		Drop(c)
	}
}

func (s *select3[A, B, C]) Drop() {
	if !s.done {
		s.finish(-1)
	}
}

// Select3 waits for the first of three futures; the others are dropped.
func Select3[A, B, C any](a Future[A], b Future[B], c Future[C]) Future[Selected3[A, B, C]] {
	return &select3[A, B, C]{a: a, b: b, c: c}
}

// ---- n-ary combinators ----

// group gives each child of an n-ary combinator its own waker: waking child i queues i
// (once until the next take) and wakes the parent task, so the next poll polls only the
// woken children.
type group struct {
	mu sync.Mutex
	// parent is the waker of the task polling the combinator. Only the poller writes it
	// (under mu); wakers read it under mu.
	parent   Waker
	ready    []int32 // children woken since the last take, in wake order
	queued   []bool  // queued[i]: i is in ready
	children []childWaker
}

type childWaker struct {
	g *group
	i int32
}

func (c *childWaker) wake(cx *Context) {
	g := c.g
	g.mu.Lock()
	if g.queued[c.i] {
		// Already queued, and the parent was woken when it was: the poll that takes it
		// has not happened yet (every poll takes unless it yields, and a yield re-polls).
		g.mu.Unlock()
		return
	}
	g.queued[c.i] = true
	g.ready = append(g.ready, c.i)
	p := g.parent
	g.mu.Unlock()
	p.WakeFrom(cx)
}

func newGroup(n int) *group {
	g := &group{queued: make([]bool, n), children: make([]childWaker, n)}
	for i := range g.children {
		g.children[i] = childWaker{g: g, i: int32(i)}
	}
	return g
}

// setParent records the parent's waker, when it changed.
func (g *group) setParent(w Waker) {
	// Reading parent without the lock is safe: only this goroutine (the poller) writes it.
	if !g.parent.WillWake(w) {
		g.mu.Lock()
		g.parent = w
		g.mu.Unlock()
	}
}

// take returns the children woken since the last take, in buf's storage (buf's old
// contents are discarded), and un-queues them.
func (g *group) take(buf []int32) []int32 {
	g.mu.Lock()
	r := g.ready
	g.ready = buf[:0]
	for _, i := range r {
		g.queued[i] = false
	}
	g.mu.Unlock()
	return r
}

// nary holds the children of an n-ary combinator.
type nary[T any] struct {
	fs   []Future[T]
	done []bool
	left int
	g    *group
	// batch is the list of children this combinator is working through, pos the next one
	// to poll: a poll that stops because the task's budget is spent leaves the rest here
	// for the next poll, instead of re-queuing them (which would make a join of n ready
	// futures cost O(n) per poll, O(n^2) in all).
	batch []int32
	pos   int
}

func newNary[T any](fs []Future[T]) nary[T] {
	return nary[T]{fs: slices.Clone(fs), done: make([]bool, len(fs)), left: len(fs)}
}

// poll polls the woken children, calling onReady for each that finishes; onReady
// returns false to stop (a select has its winner, a TryJoin its error).
//
// Cost: each child poll is paid for by a wake of that child (or the first poll), so a
// combinator's polls cost O(n + wakes) in all. Two things keep it so: when the task's
// budget is spent the loop stops at once (every leaf would refuse and re-wake its child,
// O(n) per poll) and the task yields; and a poll takes the queue of woken children at
// most once, so a child that wakes itself when polled (a yield) runs once per poll.
func (n *nary[T]) poll(cx *Context, onReady func(i int, v T) bool) {
	saved := cx.waker
	if n.g == nil {
		n.g = newGroup(len(n.fs))
		n.batch = make([]int32, len(n.fs))
		for i := range n.batch {
			n.batch[i] = int32(i) // the first poll polls every child, in index order
		}
	}
	g := n.g
	g.setParent(saved)
	defer func() { cx.waker = saved }()
	took := false
	for {
		if n.pos == len(n.batch) {
			if took {
				return
			}
			n.batch, n.pos, took = g.take(n.batch), 0, true
			if len(n.batch) == 0 {
				return
			}
		}
		if cx.budgetSpent() {
			// Every leaf would refuse now. Yield: the next poll resumes at n.pos.
			cx.waker = saved
			cx.wakeSelfYield()
			return
		}
		i := n.batch[n.pos]
		n.pos++
		if n.done[i] {
			continue
		}
		cx.waker = Waker{t: &g.children[i]}
		v, ok := n.fs[i].Poll(cx)
		if !ok {
			continue
		}
		n.done[i] = true
		n.fs[i] = nil
		n.left--
		if !onReady(int(i), v) {
			return
		}
	}
}

// dropRest drops every unfinished child.
func (n *nary[T]) dropRest() {
	for i, f := range n.fs {
		if !n.done[i] && f != nil {
			n.done[i] = true
			n.fs[i] = nil
			Drop(f)
		}
	}
	n.left = 0
	n.batch, n.pos = nil, 0
}

type joinAll[T any] struct {
	n   nary[T]
	out []T
}

func (j *joinAll[T]) Poll(cx *Context) ([]T, bool) {
	if j.n.left > 0 {
		j.n.poll(cx, func(i int, v T) bool { j.out[i] = v; return true })
	}
	return j.out, j.n.left == 0
}

func (j *joinAll[T]) Drop() { j.n.dropRest() }

// JoinAll waits for every future and returns their values in argument order.
func JoinAll[T any](fs ...Future[T]) Future[[]T] {
	return &joinAll[T]{n: newNary(fs), out: make([]T, len(fs))}
}

type tryJoin[T any] struct {
	n   nary[Result[T]]
	out []T
	err error
}

func (j *tryJoin[T]) Poll(cx *Context) (Result[[]T], bool) {
	if j.err == nil && j.n.left > 0 {
		j.n.poll(cx, func(i int, r Result[T]) bool {
			if r.Err != nil {
				j.err = r.Err
				return false
			}
			j.out[i] = r.Value
			return true
		})
	}
	if j.err != nil {
		j.n.dropRest()
		return Result[[]T]{Err: j.err}, true
	}
	if j.n.left > 0 {
		return Result[[]T]{}, false
	}
	return Result[[]T]{Value: j.out}, true
}

func (j *tryJoin[T]) Drop() { j.n.dropRest() }

// TryJoin waits for every future to succeed and returns their values in argument order.
// The first error wins: the remaining futures are dropped and the error is returned.
func TryJoin[T any](fs ...Future[Result[T]]) Future[Result[[]T]] {
	return &tryJoin[T]{n: newNary(fs), out: make([]T, len(fs))}
}

type all[T any] struct {
	n    nary[Result[T]]
	out  []T
	errs []error
}

func (a *all[T]) Poll(cx *Context) (Result[[]T], bool) {
	if a.n.left > 0 {
		a.n.poll(cx, func(i int, r Result[T]) bool {
			a.out[i] = r.Value
			if r.Err != nil {
				a.errs = append(a.errs, r.Err)
			}
			return true
		})
	}
	if a.n.left > 0 {
		return Result[[]T]{}, false
	}
	return Result[[]T]{Value: a.out, Err: errors.Join(a.errs...)}, true
}

func (a *all[T]) Drop() { a.n.dropRest() }

// All waits for every future, whether it fails or not (nothing is cancelled), and
// returns all values in argument order with the errors joined (errors.Join; nil if none
// failed). Use TryJoin to stop at the first error instead.
func All[T any](fs ...Future[Result[T]]) Future[Result[[]T]] {
	return &all[T]{n: newNary(fs), out: make([]T, len(fs))}
}

// Selected is the value of SelectN: the index of the winning future and its value.
type Selected[T any] struct {
	Index int
	Value T
}

type selectN[T any] struct {
	n    nary[T]
	win  Selected[T]
	done bool
}

func (s *selectN[T]) Poll(cx *Context) (Selected[T], bool) {
	if !s.done {
		s.n.poll(cx, func(i int, v T) bool {
			s.win = Selected[T]{Index: i, Value: v}
			s.done = true
			return false
		})
		if !s.done {
			return Selected[T]{}, false
		}
		s.n.dropRest()
	}
	return s.win, true
}

func (s *selectN[T]) Drop() { s.n.dropRest() }

// SelectN waits for the first of fs to finish and returns its index and value; the others
// are dropped. It panics if fs is empty (it could never finish).
func SelectN[T any](fs ...Future[T]) Future[Selected[T]] {
	if len(fs) == 0 {
		panic("blitzio: SelectN of no futures")
	}
	return &selectN[T]{n: newNary(fs)}
}

// Race is SelectN without the index: the first value wins, the other futures are
// dropped. It panics if fs is empty.
func Race[T any](fs ...Future[T]) Future[T] {
	return Map(SelectN(fs...), func(s Selected[T]) T { return s.Value })
}
