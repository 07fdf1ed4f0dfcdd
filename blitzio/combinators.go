package blitzio

import (
	"errors"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Combinators run several futures at once inside one task. Every combinator polls all of
// its unfinished children on each poll (not one after another, waiting for each in turn),
// so children make progress concurrently and a select sees whichever finishes first. The
// n-ary ones give each child its own waker and re-poll only the children that were woken
// (like Tokio's FuturesUnordered), and stop polling children when the task's budget is
// spent (the task yields and the next poll resumes where this one stopped), so a JoinAll
// of n futures costs O(n) child polls in all, however many are ready at once. JoinAll
// and All over JoinHandles read the handles in order instead, waiting for the first
// unfinished one, as a loop of Wait does: a task runs whether or not its handle is
// polled, so they finish as soon as the last task does, without a waker in every
// handle.
//
// Ordering: when several children are ready in the same poll, the one with the lowest
// index (among those polled) wins a select. Cancellation: a child that loses a select, or
// the rest of a TryJoin after an error, is dropped (its Drop runs) and never polled
// again; dropping a combinator drops its unfinished children (every one of them, even
// when the Drop of one panics: the panic goes on after the others were dropped). A
// finished combinator polled again returns the same result without polling any child.
//
// The n-ary combinators (JoinAll, TryJoin, All, SelectN, Race) take futures of any one
// type F: a []JoinHandle[T] is passed as it is, each handle polled without being boxed
// in an interface. They read the caller's slice of futures and never write to it; the
// caller must not change it until the combinator has finished or been dropped.

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

// dropEach calls drop(0), ..., drop(n-1). A drop that panics or calls runtime.Goexit
// does not keep the later ones from running: they run from a deferred call while it
// unwinds, then the panic (or Goexit) goes on. A combinator forgets the children it
// drops and is itself dropped once, so a child skipped here would never be dropped (a
// timer left in the wheel, a resource never released).
func dropEach(n int, drop func(i int)) { dropFrom(0, n, drop) }

// dropFrom calls drop(i), ..., drop(n-1), as dropEach does.
func dropFrom(i, n int, drop func(i int)) {
	for ; i < n; i++ {
		dropOne(i, n, drop)
	}
}

func dropOne(i, n int, drop func(i int)) {
	ok := false
	defer func() {
		if !ok { // unwinding from drop(i): drop the rest before the panic goes on
			dropFrom(i+1, n, drop)
		}
	}()
	drop(i)
	ok = true
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
	dropEach(2, func(i int) {
		switch {
		case i == 0 && !j.da:
			j.da = true
			Drop(j.a)
		case i == 1 && !j.db:
			j.db = true
			Drop(j.b)
		}
	})
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
	dropEach(3, func(i int) {
		switch {
		case i == 0 && !j.da:
			j.da = true
			Drop(j.a)
		case i == 1 && !j.db:
			j.db = true
			Drop(j.b)
		case i == 2 && !j.dc:
			j.dc = true
			Drop(j.c)
		}
	})
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
	fair selectFair
}

func (s *select2[A, B]) Poll(cx *Context) (Selected2[A, B], bool) {
	if s.done {
		return s.out, true
	}
	for k := range 2 {
		i := s.fair.next(cx, k, 2)
		if i == 0 {
			if v, ok := s.a.Poll(cx); ok {
				s.out = Selected2[A, B]{Index: 0, V1: v}
				s.finish(0)
				return s.out, true
			}
		} else if v, ok := s.b.Poll(cx); ok {
			s.out = Selected2[A, B]{Index: 1, V2: v}
			s.finish(1)
			return s.out, true
		}
	}
	s.fair.end()
	return Selected2[A, B]{}, false
}

// selectFair keeps Select2's and Select3's branches from starving one another through
// the cooperative budget. They poll their branches in order, so the first one wins when
// several are ready (as Tokio's select! with biased;). But a branch that spends the
// task's whole budget on every poll (a loop over always-ready work) would leave every
// later branch to find the budget spent, and a later branch that is a leaf (a Sleep
// past its deadline, a JoinHandle) then refuses to finish, poll after poll. So the first
// branch polled with the budget already spent goes first on the next poll; order goes
// back to normal on a poll where no branch was starved. (Tokio's select! starts at a
// random branch instead; SelectN resumes where the budget ran out.)
type selectFair struct {
	start   uint8 // the branch polled first in this poll
	starved int8  // the first branch polled with the budget spent, or -1; valid in a poll
}

// next returns the branch to poll k-th (k = 0 first) of n, and notes starvation.
func (f *selectFair) next(cx *Context, k, n int) int {
	if k == 0 {
		f.starved = -1
	}
	i := (int(f.start) + k) % n
	if f.starved < 0 && cx.budgetSpent() {
		f.starved = int8(i)
	}
	return i
}

// end records, after a poll that found no winner, where the next poll starts.
func (f *selectFair) end() {
	if f.starved >= 0 {
		f.start = uint8(f.starved)
	} else {
		f.start = 0
	}
}

// finish drops every child but the winner (-1: all of them) and forgets them all.
func (s *select2[A, B]) finish(winner int) {
	s.done = true
	a, b := s.a, s.b
	s.a, s.b = nil, nil
	dropEach(2, func(i int) {
		switch {
		case i == winner:
		case i == 0:
			Drop(a)
		default:
			Drop(b)
		}
	})
}

func (s *select2[A, B]) Drop() {
	if !s.done {
		s.finish(-1)
	}
}

// Select2 waits for the first of two futures; the other is dropped. The futures are
// polled in order, so a wins when both are ready at the same poll (Tokio's select! with
// biased;), except that a branch that found the task's cooperative budget spent is
// polled first next time, so that one future spending the whole budget on every poll
// cannot starve the other.
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
	fair selectFair         // see select2
}

func (s *select3[A, B, C]) Poll(cx *Context) (Selected3[A, B, C], bool) {
	if s.done {
		return s.out, true
	}
	for k := range 3 {
		switch s.fair.next(cx, k, 3) {
		case 0:
			if v, ok := s.a.Poll(cx); ok {
				s.out = Selected3[A, B, C]{Index: 0, V1: v}
				s.finish(0)
				return s.out, true
			}
		case 1:
			if v, ok := s.b.Poll(cx); ok {
				s.out = Selected3[A, B, C]{Index: 1, V2: v}
				s.finish(1)
				return s.out, true
			}
		default:
			if v, ok := s.c.Poll(cx); ok {
				s.out = Selected3[A, B, C]{Index: 2, V3: v}
				s.finish(2)
				return s.out, true
			}
		}
	}
	s.fair.end()
	return Selected3[A, B, C]{}, false
}

// finish drops every child but the winner (-1: all of them) and forgets them all.
func (s *select3[A, B, C]) finish(winner int) {
	s.done = true
	a, b, c := s.a, s.b, s.c
	s.a, s.b, s.c = nil, nil, nil
	dropEach(3, func(i int) {
		switch {
		case i == winner:
		case i == 0:
			Drop(a)
		case i == 1:
			Drop(b)
		default:
			Drop(c)
		}
	})
}

func (s *select3[A, B, C]) Drop() {
	if !s.done {
		s.finish(-1)
	}
}

// Select3 waits for the first of three futures; the others are dropped. Order and
// budget are as for Select2.
func Select3[A, B, C any](a Future[A], b Future[B], c Future[C]) Future[Selected3[A, B, C]] {
	return &select3[A, B, C]{a: a, b: b, c: c}
}

// ---- n-ary combinators ----

// group gives each child of an n-ary combinator its own waker: waking child i queues i
// (once until the next take) and wakes the parent task (once until the next take), so
// the next poll polls only the woken children.
//
// The queue is lock-free (Tokio's FuturesUnordered keeps an MPSC queue the same way),
// because wakes come from the workers completing the children: a mutex there would be
// taken by every completion, contended between workers, on their critical path. A wake
// is one atomic OR on the queued bitmap, one CAS to push i on an intrusive Treiber
// stack (links in next, head holds index+1), and one swap of notified; the poller takes
// the whole stack with one swap (so, popping nothing singly, it has no ABA problem).
type group struct {
	// parent is the waker of the task polling the combinator, stored by the poller
	// (boxed, replaced only when the polling task changes) and loaded by wakers.
	parent atomic.Pointer[Waker]
	head   atomic.Int32    // the last child pushed, plus 1; 0 when the stack is empty
	next   []int32         // next[i]: the child pushed before i, plus 1 (written before i's push)
	queued []atomic.Uint64 // bit i: child i is in the stack or in a list being taken
	// notified: the parent was woken since the last take. The poll that follows that
	// wake takes the stack (every poll takes unless it yields, and a yield re-polls), so
	// the children pushed meanwhile need no wake of their own: one parent wake per poll,
	// not one per child.
	notified atomic.Bool
	// gone is set once the combinator has finished or been dropped: its children's
	// wakers are then useless to whoever keeps them (see childSlot.waiterGone).
	gone   atomic.Bool
	chunks []childChunk // the children's wakers: child i's is chunks[i/64].slots[i%64]
	n      int32        // the number of children (next, queued and chunks are made lazily)
}

// Child wakers. A Waker must point at something that identifies the child and its
// group; a {group, index} pair per child would be 16 bytes, which for a join of 100,000
// ready handles is 1.6 MB to allocate (and fault in) for wakers mostly never used, more
// than the join's own work. So the wakers of 64 children share one chunk holding the
// group pointer, and child k's waker points at a byte of the chunk holding k: the wake
// finds the chunk from the byte's address. About 1.1 bytes per child.
const chunkSize = 64

type childChunk struct {
	g     *group
	base  int32
	slots [chunkSize]childSlot
}

// childSlot is the target of one child's Waker; its value is its own index in slots.
type childSlot uint8

var slotsOffset = unsafe.Offsetof(childChunk{}.slots)

func (s *childSlot) wake(cx *Context) {
	k := *s
	// s is &c.slots[k] for the chunk c that holds it: step back to c (pointer arithmetic
	// within one allocated object, which unsafe.Pointer's rules allow).
	c := (*childChunk)(unsafe.Add(unsafe.Pointer(s), -int(slotsOffset)-int(k)))
	c.g.wakeChild(c.base+int32(k), cx)
}

// waker returns child i's Waker. Only the poller calls it (through Context.Waker, while it
// polls child i), so the first call can allocate the wakers' storage without a lock: a
// join whose children are all ready at once never calls it and allocates none. Wakers
// reach that storage only through a Waker made here, whose hand-over to another
// goroutine (a JoinHandle's CAS, a mutex) orders our writes before their reads.
// waiterGone reports that this child's waker need not be kept by what it waits on (a
// JoinHandle prunes such entries from its list of waiters): the combinator has finished
// or been dropped, or the task (or outer combinator) polling it is gone, which covers a
// combinator abandoned without Drop.
func (s *childSlot) waiterGone() bool {
	c := (*childChunk)(unsafe.Add(unsafe.Pointer(s), -int(slotsOffset)-int(*s)))
	return c.g.waiterGone()
}

func (g *group) waiterGone() bool {
	if g.gone.Load() {
		return true
	}
	p := g.parent.Load()
	if p == nil {
		return false
	}
	w, ok := p.t.(interface{ waiterGone() bool })
	return ok && w.waiterGone()
}

func (g *group) waker(i int32) Waker {
	if g.chunks == nil {
		g.alloc()
	}
	return Waker{t: &g.chunks[uint32(i)/chunkSize].slots[uint32(i)%chunkSize]}
}

func (g *group) wakeChild(i int32, cx *Context) {
	bit := uint64(1) << (uint32(i) % 64)
	if g.queued[uint32(i)/64].Or(bit)&bit != 0 {
		return // queued already: the poll that takes it has not begun taking yet
	}
	for {
		h := g.head.Load()
		g.next[i] = h // ours alone until the push: i was not queued
		if g.head.CompareAndSwap(h, i+1) {
			break
		}
	}
	// After the push: a take that cleared notified before our push takes us (its swap
	// of head comes after), or we see notified clear and wake the parent.
	if !g.notified.Load() && !g.notified.Swap(true) {
		g.parent.Load().WakeFrom(cx)
	}
}

func newGroup(n int) *group { return &group{n: int32(n)} }

// alloc makes the storage of the children's wakers and of the woken-children stack.
func (g *group) alloc() {
	n := int(g.n)
	g.next = make([]int32, n)
	g.queued = make([]atomic.Uint64, (n+63)/64)
	chunks := make([]childChunk, (n+chunkSize-1)/chunkSize)
	for c := range chunks {
		ch := &chunks[c]
		ch.g, ch.base = g, int32(c*chunkSize)
		for k := range ch.slots {
			ch.slots[k] = childSlot(k)
		}
	}
	g.chunks = chunks
}

// setParent records the parent's waker, when it changed.
func (g *group) setParent(w Waker) {
	if p := g.parent.Load(); p == nil || !p.WillWake(w) {
		box := w // a fresh variable: only a changed waker is moved to the heap
		g.parent.Store(&box)
	}
}

// take returns the children woken since the last take, in wake order, in buf's storage
// (buf's old contents are discarded), and un-queues them.
func (g *group) take(buf []int32) []int32 {
	// Clear notified before taking the stack: a wake pushing after our swap then finds it
	// clear and wakes the parent; one pushing before it is in what we take.
	g.notified.Store(false)
	r := buf[:0]
	for h := g.head.Swap(0); h != 0; {
		i := h - 1
		h = g.next[i] // read before i is un-queued: then its waker may push it again
		g.queued[uint32(i)/64].And(^(uint64(1) << (uint32(i) % 64)))
		r = append(r, i)
	}
	slices.Reverse(r) // the stack is last-woken first
	return r
}

// nary holds the children of an n-ary combinator. fs is the caller's slice: it is read,
// never written (done says which children are finished or dropped). F is the children's
// type: a concrete F (a []JoinHandle[int]) is polled without boxing each child in an
// interface.
type nary[T any, F Future[T]] struct {
	fs   []F
	done []uint64 // bit i: child i finished or was dropped
	left int
	g    *group
	// first is the next child of the first pass, which polls every child once in index
	// order. After it, batch is the list of woken children this combinator is working
	// through and pos the next one to poll. A poll that stops because the task's budget is
	// spent leaves the rest for the next poll, instead of re-queuing them (which would
	// make a join of n ready futures cost O(n) per poll, O(n^2) in all).
	first int
	batch []int32
	pos   int
	out   []T // where a nil onReady stores values
	// ordered: stop the first pass at the first pending child (see inOrder).
	ordered bool
}

func newNary[T any, F Future[T]](fs []F) nary[T, F] {
	return nary[T, F]{fs: fs, done: make([]uint64, (len(fs)+63)/64), left: len(fs)}
}

// inOrder makes the first pass of a join that waits for every child (JoinAll, All)
// stop at the first pending child when the children are JoinHandles. A handle's task
// runs whether or not anyone polls the handle, so polling the later ones now gains
// nothing: it would only register a waker with each (two CAS) and take a wake from each
// (more atomics, and a re-poll), where waiting for the first pending one and then
// reading on, as a loop of Wait does, finds most of them finished. The join still
// finishes when the last task does; it only notices the others later.
func (n *nary[T, F]) inOrder() {
	var zero F
	if _, ok := any(zero).(handleBatch); ok {
		n.ordered = true
	}
}

// handleBatch is implemented by JoinHandle types. It marks them for nary.inOrder and lets
// JoinAll read a run of finished handles in one monomorphic loop, where the generic poll
// makes an indirect call per handle (through the instantiation's dictionary) and checks
// the budget twice: with 100k finished handles that overhead made JoinAll a third slower
// than a plain loop of Wait.
type handleBatch interface {
	// readFinished stores into out[i] the results of the handles hs[i], i = from, from+1,
	// ..., while they have finished, at most max of them, and returns how many it read.
	// hs and out are a []JoinHandle[T] and a []Result[T] of the handle's own T.
	readFinished(hs, out any, from, max int) int
}

func (JoinHandle[T]) readFinished(hs, out any, from, max int) int {
	handles, results := hs.([]JoinHandle[T]), out.([]Result[T])
	end := min(len(handles), from+max)
	i := from
	for ; i < end; i++ {
		c := handles[i].c
		if c == nil {
			break // the generic poll panics with the message for a zero handle
		}
		cur := c.state.v.Load()
		if life(cur) != stComplete || cur&flagJoinInterest == 0 {
			break // pending, or detached: the generic poll handles both
		}
		results[i] = Result[T]{Value: c.out, Err: c.err}
	}
	return i - from
}

// readFinishedHandles is the fast path of JoinAll's first pass over JoinHandles: it takes
// the run of finished handles starting at n.first, spending one unit of budget each, as
// polling them would.
func (n *nary[T, F]) readFinishedHandles(cx *Context) {
	if n.first >= len(n.fs) || n.out == nil {
		return
	}
	hb, ok := any(n.fs[n.first]).(handleBatch)
	if !ok {
		return
	}
	limit := len(n.fs)
	if cx.budget >= 0 {
		limit = int(cx.budget)
	}
	k := hb.readFinished(any(n.fs), any(n.out), n.first, limit)
	if cx.budget >= 0 {
		cx.budget -= int32(k)
	}
	for i := n.first; i < n.first+k; i++ {
		n.done[uint32(i)/64] |= 1 << (uint32(i) % 64)
	}
	n.first += k
	n.left -= k
}

// poll polls the woken children, calling onReady for each that finishes; onReady
// returns false to stop (a select has its winner, a TryJoin its error). A nil onReady
// stores each value in n.out (JoinAll: no indirect call per child).
//
// Cost: each child poll is paid for by a wake of that child (or the first pass), so a
// combinator's polls cost O(n + wakes) in all. Two things keep it so: when the task's
// budget is spent the loop stops at once (every leaf would refuse and re-wake its child,
// O(n) per poll) and the task yields; and a poll takes the queue of woken children at
// most once, so a child that wakes itself when polled (a yield) runs once per poll.
func (n *nary[T, F]) poll(cx *Context, onReady func(i int, v T) bool) {
	if n.g == nil {
		n.g = newGroup(len(n.fs))
	}
	g := n.g
	g.setParent(cx.Waker())
	// Children see their own waker through cx.child and cx.childIdx (see Context), which
	// we restore however we leave, a panic or Goexit in a child included: the Context
	// is the task's, reused after us.
	savedG, savedI := cx.child, cx.childIdx
	defer func() { cx.child, cx.childIdx = savedG, savedI }()
	cx.child = g
	// The first pass, in a loop of its own: for a join of finished handles it is nearly
	// all the work, so it keeps to a budget check, the poll and the bookkeeping.
	for i := n.first; i < len(n.fs); i++ {
		if cx.budgetSpent() {
			n.first = i
			cx.child, cx.childIdx = savedG, savedI
			cx.wakeSelfYield()
			return
		}
		n.first = i + 1 // before the poll: a child that panics is not polled again
		cx.childIdx = int32(i)
		v, ok := n.fs[i].Poll(cx)
		if !ok {
			if n.ordered {
				// Resume here when child i wakes us. Take the woken queue, which holds
				// only children up to i (none after it has been polled), so that its
				// notified flag is clear: the next child to wake must wake us again.
				n.first = i
				n.batch = g.take(n.batch)
				woke := len(n.batch) > 0
				n.batch, n.pos = n.batch[:0], 0
				if woke {
					// A wake arrived after child i registered its waker (a JoinHandle
					// that flushed its waiter list, the task completing): the take
					// consumed it, so nothing would wake us again. Poll child i again.
					i--
					continue
				}
				return
			}
			continue
		}
		n.done[uint32(i)/64] |= 1 << (uint32(i) % 64)
		n.left--
		if onReady == nil {
			n.out[i] = v
		} else if !onReady(i, v) {
			return
		}
	}
	took := false
	for {
		var i int32
		switch {
		case n.pos < len(n.batch):
			i = n.batch[n.pos]
		case took:
			return
		default:
			n.batch, n.pos, took = g.take(n.batch), 0, true
			continue
		}
		if cx.budgetSpent() {
			// Every leaf would refuse now. Yield: the next poll resumes here.
			cx.child, cx.childIdx = savedG, savedI
			cx.wakeSelfYield()
			return
		}
		n.pos++
		if n.isDone(i) {
			continue
		}
		cx.childIdx = i
		v, ok := n.fs[i].Poll(cx)
		if !ok {
			continue
		}
		n.done[uint32(i)/64] |= 1 << (uint32(i) % 64)
		n.left--
		if onReady == nil {
			n.out[i] = v
		} else if !onReady(int(i), v) {
			return
		}
	}
}

// isDone reports whether child i has finished or been dropped.
func (n *nary[T, F]) isDone(i int32) bool { return n.done[uint32(i)/64]&(1<<(uint32(i)%64)) != 0 }

// finished marks the children's wakers gone once every child is done.
func (n *nary[T, F]) finished() {
	if n.g != nil {
		n.g.gone.Store(true)
	}
}

// dropRest drops every unfinished child.
func (n *nary[T, F]) dropRest() {
	n.finished()
	n.left = 0
	n.first, n.batch, n.pos = len(n.fs), nil, 0
	dropEach(len(n.fs), func(i int) {
		if !n.isDone(int32(i)) {
			n.done[uint32(i)/64] |= 1 << (uint32(i) % 64)
			Drop(n.fs[i])
		}
	})
}

type joinAll[T any, F Future[T]] struct {
	n   nary[T, F]
	out []T
}

func (j *joinAll[T, F]) Poll(cx *Context) ([]T, bool) {
	if j.n.left > 0 {
		if j.n.ordered {
			j.n.readFinishedHandles(cx)
		}
		j.n.poll(cx, nil)
		if j.n.left == 0 {
			j.n.finished()
		}
	}
	return j.out, j.n.left == 0
}

func (j *joinAll[T, F]) Drop() { j.n.dropRest() }

// JoinAll waits for every future and returns their values in argument order. The futures
// are polled concurrently; JoinHandles, whose tasks run whether polled or not, are read
// in order, each awaited only once the ones before it have finished.
//
// The futures may be of any one type F: JoinAll(hs...) with a []JoinHandle[int] awaits
// the handles directly, and JoinAll(Ready(1), Ready(2)) joins two Future[int]. Futures
// of different concrete types are joined as interface values: convert them, or give the
// type arguments, JoinAll[int, Future[int]](Sleep(d1), Map(...)). The same holds for
// TryJoin, All, SelectN and Race.
func JoinAll[T any, F Future[T]](fs ...F) Future[[]T] {
	out := make([]T, len(fs))
	n := newNary[T](fs)
	n.out = out
	n.inOrder()
	return &joinAll[T, F]{n: n, out: out}
}

type tryJoin[T any, F Future[Result[T]]] struct {
	n   nary[Result[T], F]
	out []T
	err error
}

func (j *tryJoin[T, F]) Poll(cx *Context) (Result[[]T], bool) {
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
	j.n.finished()
	return Result[[]T]{Value: j.out}, true
}

func (j *tryJoin[T, F]) Drop() { j.n.dropRest() }

// TryJoin waits for every future to succeed and returns their values in argument order.
// The first error wins: the remaining futures are dropped and the error is returned.
//
// First means first in time, as in Tokio's try_join!: TryJoin does not wait for the
// other futures, and when several fail, which error is returned can depend on timing.
// blitz.TryJoin, despite the name, waits for all of its functions and returns the first
// error in argument order; errgroup's Wait waits for all and returns the first error in
// time. To wait for every future and see every error, use All.
//
// TryJoin(hs...) with a []JoinHandle[T] awaits the handles directly (see JoinAll for
// futures of different types).
func TryJoin[T any, F Future[Result[T]]](fs ...F) Future[Result[[]T]] {
	return &tryJoin[T, F]{n: newNary[Result[T]](fs), out: make([]T, len(fs))}
}

type all[T any, F Future[Result[T]]] struct {
	n    nary[Result[T], F]
	out  []T
	errs []error
}

func (a *all[T, F]) Poll(cx *Context) (Result[[]T], bool) {
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
	a.n.finished()
	return Result[[]T]{Value: a.out, Err: errors.Join(a.errs...)}, true
}

func (a *all[T, F]) Drop() { a.n.dropRest() }

// All waits for every future, whether it fails or not (nothing is cancelled), and
// returns all values in argument order with the errors joined (errors.Join; nil if none
// failed). Use TryJoin to stop at the first error instead. See JoinAll for futures of
// different types.
func All[T any, F Future[Result[T]]](fs ...F) Future[Result[[]T]] {
	a := &all[T, F]{n: newNary[Result[T]](fs), out: make([]T, len(fs))}
	a.n.inOrder()
	return a
}

// Selected is the value of SelectN: the index of the winning future and its value.
type Selected[T any] struct {
	Index int
	Value T
}

type selectN[T any, F Future[T]] struct {
	n    nary[T, F]
	win  Selected[T]
	done bool
}

func (s *selectN[T, F]) Poll(cx *Context) (Selected[T], bool) {
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

func (s *selectN[T, F]) Drop() { s.n.dropRest() }

// SelectN waits for the first of fs to finish and returns its index and value; the others
// are dropped. It panics if fs is empty (it could never finish). See JoinAll for futures
// of different types.
func SelectN[T any, F Future[T]](fs ...F) Future[Selected[T]] {
	if len(fs) == 0 {
		panic("blitzio: SelectN of no futures")
	}
	return &selectN[T, F]{n: newNary[T](fs)}
}

// Race is SelectN without the index: the first value wins, the other futures are
// dropped. It panics if fs is empty.
func Race[T any, F Future[T]](fs ...F) Future[T] {
	return Map(SelectN[T](fs...), func(s Selected[T]) T { return s.Value })
}
