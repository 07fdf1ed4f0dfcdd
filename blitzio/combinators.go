package blitzio

import (
	"errors"
	"sync"
)

// Combinators run several futures at once inside one task. Every combinator polls all of
// its unfinished children on each poll (not one after another, waiting for each in turn),
// so children make progress concurrently and a select sees whichever finishes first. The
// n-ary ones give each child its own waker and re-poll only the children that were woken,
// so a JoinAll of 10,000 futures costs O(woken) per poll, not O(n).
//
// Ordering: when several children are ready in the same poll, the one with the lowest
// index (among those polled) wins a select. Cancellation: a child that loses a select, or
// the rest of a TryJoin after an error, is dropped (its Drop runs) and never polled
// again; dropping a combinator drops its unfinished children.

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
	done bool
}

func (s *select2[A, B]) Poll(cx *Context) (Selected2[A, B], bool) {
	if v, ok := s.a.Poll(cx); ok {
		s.done = true
		Drop(s.b)
		return Selected2[A, B]{Index: 0, V1: v}, true
	}
	if v, ok := s.b.Poll(cx); ok {
		s.done = true
		Drop(s.a)
		return Selected2[A, B]{Index: 1, V2: v}, true
	}
	return Selected2[A, B]{}, false
}

func (s *select2[A, B]) Drop() {
	if !s.done {
		Drop(s.a)
		Drop(s.b)
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
	done bool
}

func (s *select3[A, B, C]) Poll(cx *Context) (Selected3[A, B, C], bool) {
	if v, ok := s.a.Poll(cx); ok {
		s.finish(0)
		return Selected3[A, B, C]{Index: 0, V1: v}, true
	}
	if v, ok := s.b.Poll(cx); ok {
		s.finish(1)
		return Selected3[A, B, C]{Index: 1, V2: v}, true
	}
	if v, ok := s.c.Poll(cx); ok {
		s.finish(2)
		return Selected3[A, B, C]{Index: 2, V3: v}, true
	}
	return Selected3[A, B, C]{}, false
}

func (s *select3[A, B, C]) finish(winner int) {
	s.done = true
	if winner != 0 {
		Drop(s.a)
	}
	if winner != 1 {
		Drop(s.b)
	}
	if winner != 2 {
		Drop(s.c)
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
// and wakes the parent task, so the next poll polls only the woken children.
type group struct {
	mu       sync.Mutex
	parent   Waker
	ready    []int32
	spare    []int32
	queued   []bool
	children []childWaker
}

type childWaker struct {
	g *group
	i int32
}

func (c *childWaker) wake(cx *Context) {
	g := c.g
	g.mu.Lock()
	if !g.queued[c.i] {
		g.queued[c.i] = true
		g.ready = append(g.ready, c.i)
	}
	p := g.parent
	g.mu.Unlock()
	p.WakeFrom(cx)
}

func newGroup(n int) *group {
	g := &group{
		ready:    make([]int32, n),
		queued:   make([]bool, n),
		children: make([]childWaker, n),
	}
	for i := range g.children {
		g.children[i] = childWaker{g: g, i: int32(i)}
		g.ready[i] = int32(i) // the first poll polls every child, in index order
		g.queued[i] = true
	}
	return g
}

// take records the parent's waker and returns the children to poll now. The returned
// slice is valid until the next take.
func (g *group) take(w Waker) []int32 {
	g.mu.Lock()
	if !g.parent.WillWake(w) {
		g.parent = w
	}
	r := g.ready
	g.ready = g.spare[:0]
	g.spare = r
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
}

func newNary[T any](fs []Future[T]) nary[T] {
	return nary[T]{fs: fs, done: make([]bool, len(fs)), left: len(fs)}
}

// poll polls the woken children, calling onReady for each that finishes; onReady
// returns false to stop (a select has its winner, a TryJoin its error).
func (n *nary[T]) poll(cx *Context, onReady func(i int, v T) bool) {
	if n.g == nil {
		n.g = newGroup(len(n.fs))
	}
	saved := cx.waker
	defer func() { cx.waker = saved }()
	for _, i := range n.g.take(saved) {
		if n.done[i] {
			continue
		}
		cx.waker = Waker{t: &n.g.children[i]}
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
