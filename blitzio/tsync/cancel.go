package tsync

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// CancelToken signals cancellation to tasks and goroutines, like tokio_util's
// CancellationToken. Tokens form a tree: Child makes a token that is cancelled when its
// parent is (and can be cancelled alone, without touching the parent).
//
// Tasks wait with Cancelled (a future), goroutines with Done (a channel) or Wait;
// Context bridges a token to a context.Context and FromContext the other way.
//
// Cancelling is permanent and idempotent. A child cancelled by itself leaves its parent's
// list of children, so the pattern
//
//	child := parent.Child()
//	defer child.Cancel()
//
// keeps a long-lived parent from accumulating children, as context.WithCancel's cancel
// does.
//
// The zero CancelToken is a root token, not cancelled, ready to use. A CancelToken must
// not be copied after first use.
type CancelToken struct {
	// root is the root of the tree, nil for a root itself. Its mu guards the whole
	// tree: children lists, waiter lists and done channels of every node.
	root      *CancelToken
	mu        sync.Mutex
	cancelled atomic.Bool
	parent    *CancelToken
	// children is an intrusive list through prevSib/nextSib.
	children         *CancelToken
	prevSib, nextSib *CancelToken
	waiters          waitList
	done             chan struct{}
	// afterFuncs lists the functions registered through the AfterFunc method of t's
	// Context, through afterFunc.prev/next.
	afterFuncs *afterFunc
}

// NewCancelToken returns a new root token.
func NewCancelToken() *CancelToken { return &CancelToken{} }

func (t *CancelToken) lock() *sync.Mutex {
	r := t.root
	if r == nil {
		r = t
	}
	r.mu.Lock()
	return &r.mu
}

func nilToken(op string) {
	panic("tsync: CancelToken." + op + " called on a nil *CancelToken")
}

// Child returns a new token that is cancelled when t is. If t is already cancelled, so is
// the child.
func (t *CancelToken) Child() *CancelToken {
	if t == nil {
		nilToken("Child")
	}
	c := &CancelToken{parent: t, root: t.root}
	if c.root == nil {
		c.root = t
	}
	mu := t.lock()
	if t.cancelled.Load() {
		c.cancelled.Store(true)
		c.parent = nil
	} else {
		c.nextSib = t.children
		if t.children != nil {
			t.children.prevSib = c
		}
		t.children = c
	}
	mu.Unlock()
	return c
}

// IsCancelled reports whether t (or an ancestor) has been cancelled.
func (t *CancelToken) IsCancelled() bool { return t.cancelled.Load() }

// Cancel cancels t and all its descendants: their Cancelled futures complete, their Done
// channels close, their contexts end. Cancelling again does nothing.
func (t *CancelToken) Cancel() {
	if t == nil {
		nilToken("Cancel")
	}
	if t.cancelled.Load() {
		return
	}
	var wl wakeBuf
	var run *afterFunc // the AfterFuncs to start, through next
	mu := t.lock()
	if t.cancelled.Load() {
		mu.Unlock()
		return
	}
	// Leave the parent's list: the parent no longer needs to reach t.
	if p := t.parent; p != nil {
		if t.prevSib != nil {
			t.prevSib.nextSib = t.nextSib
		} else {
			p.children = t.nextSib
		}
		if t.nextSib != nil {
			t.nextSib.prevSib = t.prevSib
		}
		t.prevSib, t.nextSib, t.parent = nil, nil, nil
	}
	// Walk the subtree without recursion (a deep chain of children must not overflow
	// anything): cancel a node, then move to its children.
	//
	// The Done channels are closed only once the whole subtree is marked cancelled, so
	// the cancel looks atomic: whoever sees any of them closed (a Done, a Context, a
	// WaitContext on an ancestor's context) finds every descendant cancelled too, not
	// the part the walk has not reached yet. Wakers and AfterFuncs run after the unlock
	// anyway. The nodes with a channel are listed through prevSib, which the walk has
	// cleared (a cancelled node is in no sibling list).
	var toClose *CancelToken
	for stack := t; stack != nil; {
		n := stack
		stack = n.nextSib
		if n != t {
			n.prevSib, n.nextSib, n.parent = nil, nil, nil
		}
		n.cancelled.Store(true)
		for w := n.waiters.popFront(); w != nil; w = n.waiters.popFront() {
			w.notified = true
			wl.add(w.waker)
		}
		if n.done != nil {
			n.prevSib, toClose = toClose, n
		}
		for a := n.afterFuncs; a != nil; {
			next := a.next
			a.linked, a.prev = false, nil
			a.next, run = run, a
			a = next
		}
		n.afterFuncs = nil
		// Push the children: the list is already linked through nextSib.
		if c := n.children; c != nil {
			n.children = nil
			last := c
			for last.nextSib != nil {
				last = last.nextSib
			}
			last.nextSib = stack
			stack = c
		}
	}
	for n := toClose; n != nil; {
		next := n.prevSib
		n.prevSib = nil
		close(n.done)
		n = next
	}
	mu.Unlock()
	wl.wake(nil)
	// Unlinked under the lock, so no stop touches them now.
	for a := run; a != nil; a = a.next {
		go a.f()
	}
}

// closedChan is the Done channel of tokens cancelled before anyone asked for it.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Done returns a channel closed when t is cancelled: the goroutine form of Cancelled.
func (t *CancelToken) Done() <-chan struct{} {
	if t == nil {
		nilToken("Done")
	}
	if t.cancelled.Load() {
		// A Cancel may still be walking the tree (t marked, its descendants not yet):
		// wait for it to end, so that whoever sees this channel closed finds every
		// descendant cancelled too, as with a channel that existed before the Cancel.
		t.lock().Unlock()
		return closedChan
	}
	mu := t.lock()
	defer mu.Unlock()
	if t.cancelled.Load() {
		return closedChan
	}
	if t.done == nil {
		t.done = make(chan struct{})
	}
	return t.done
}

// Wait waits from a plain goroutine until t is cancelled. Called from a task's code
// before the cancellation, it panics (it would block a worker); await Cancelled there.
func (t *CancelToken) Wait() {
	if t == nil {
		nilToken("Wait")
	}
	if t.IsCancelled() {
		return
	}
	refuseInRuntime("CancelToken.Wait", "Cancelled")
	<-t.Done()
}

// WaitContext waits until t is cancelled (nil) or ctx is done (ctx.Err()); a token
// already cancelled wins over a context already done. Called from a task's code when it
// would have to wait (neither is), it panics; await Cancelled there.
func (t *CancelToken) WaitContext(ctx context.Context) error {
	if t == nil {
		nilToken("WaitContext")
	}
	if t.IsCancelled() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		// Nothing to wait for: not refused in a task either (see waitForCtx).
		return t.cancelledOr(err)
	}
	refuseInRuntime("CancelToken.WaitContext", "Cancelled")
	select {
	case <-t.Done():
		return nil
	case <-ctx.Done():
		return t.cancelledOr(ctx.Err())
	}
}

// cancelledOr returns nil if t is cancelled, else err. It waits for a Cancel that is
// walking t's tree to end first: ctx may be the context of an ancestor that this Cancel
// has marked already (so ctx is done) while t is not marked yet, and the token
// cancelled by the same call must win over the context, as it does when the Cancel has
// ended.
func (t *CancelToken) cancelledOr(err error) error {
	if !t.IsCancelled() {
		t.lock().Unlock()
	}
	if t.IsCancelled() {
		return nil
	}
	return err
}

// Cancelled returns a future that is ready when t is cancelled.
func (t *CancelToken) Cancelled() *CancelledFuture {
	if t == nil {
		nilToken("Cancelled")
	}
	return &CancelledFuture{t: t}
}

// CancelledFuture is the future returned by CancelToken.Cancelled; its waiter node lives
// in it.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type CancelledFuture struct {
	t  *CancelToken
	w  waiter
	st uint8
}

// Poll is ready once the token is cancelled.
func (f *CancelledFuture) Poll(cx *blitzio.Context) (struct{}, bool) {
	t := f.t
	switch f.st {
	case futDone:
		return struct{}{}, true
	case futDropped:
		panic("tsync: CancelledFuture polled after Drop")
	}
	if t.cancelled.Load() {
		return f.ready(cx)
	}
	mu := t.lock()
	if t.cancelled.Load() {
		mu.Unlock()
		return f.ready(cx)
	}
	if f.st == futIdle {
		f.w.waker = cx.Waker()
		t.waiters.pushBack(&f.w)
		f.st = futWaiting
	} else if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	mu.Unlock()
	return struct{}{}, false
}

func (f *CancelledFuture) ready(cx *blitzio.Context) (struct{}, bool) {
	if !cx.ConsumeBudget() {
		return struct{}{}, false
	}
	if f.st == futWaiting {
		// The node may still be linked: Cancel sets the flag before it unlinks the
		// waiters, under the tree's lock, which we take to look.
		mu := f.t.lock()
		if f.w.queued {
			f.t.waiters.remove(&f.w)
		}
		mu.Unlock()
	}
	f.st = futDone
	return struct{}{}, true
}

// Drop leaves the token's waiter list. Cancellation is permanent, so there is nothing to
// pass on.
func (f *CancelledFuture) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	mu := f.t.lock()
	if f.w.queued {
		f.t.waiters.remove(&f.w)
	}
	mu.Unlock()
}

// Context returns a context.Context that is done when t is cancelled, with Err
// context.Canceled. It has no deadline and no values. It costs no goroutine and no
// registration: its Done is t's Done. Contexts derived from it (context.WithCancel,
// WithTimeout, WithDeadline, AfterFunc) cost no goroutine either while they wait: the
// context has the AfterFunc method through which the context package registers with
// the token instead of watching it from a goroutine.
func (t *CancelToken) Context() context.Context {
	if t == nil {
		nilToken("Context")
	}
	return tokenContext{t}
}

type tokenContext struct{ t *CancelToken }

func (c tokenContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c tokenContext) Done() <-chan struct{}       { return c.t.Done() }
func (c tokenContext) Value(any) any               { return nil }
func (c tokenContext) Err() error {
	if c.t.IsCancelled() {
		return context.Canceled
	}
	return nil
}
func (c tokenContext) String() string { return "tsync.CancelToken.Context" }

// AfterFunc arranges for f to run on a goroutine of its own once the token is
// cancelled, at once if it is already, as context.AfterFunc does; stop unregisters f,
// reporting whether that kept it from running. context.AfterFunc and the context
// package's derived contexts call it, so that waiting on the token costs them no
// goroutine.
func (c tokenContext) AfterFunc(f func()) (stop func() bool) {
	return c.t.afterFunc(f)
}

// afterFunc is a function registered through the AfterFunc method of a token's
// Context. Its links and linked are guarded by the tree's lock.
type afterFunc struct {
	f          func()
	t          *CancelToken
	prev, next *afterFunc
	linked     bool // in t's list: neither run nor stopped yet
}

func (t *CancelToken) afterFunc(f func()) func() bool {
	a := &afterFunc{f: f, t: t}
	mu := t.lock()
	if t.cancelled.Load() {
		mu.Unlock()
		// Not under the caller either: the context package calls this holding a lock
		// of its own that f takes.
		go f()
		return a.stop
	}
	a.linked = true
	a.next = t.afterFuncs
	if a.next != nil {
		a.next.prev = a
	}
	t.afterFuncs = a
	mu.Unlock()
	return a.stop
}

// stop unregisters a unless Cancel took it already; it reports whether it did.
func (a *afterFunc) stop() bool {
	t := a.t
	mu := t.lock()
	defer mu.Unlock()
	if !a.linked {
		return false
	}
	a.linked = false
	if a.prev != nil {
		a.prev.next = a.next
	} else {
		t.afterFuncs = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	}
	a.prev, a.next = nil, nil
	return true
}

// FromContext returns a root token cancelled when ctx is done, and a function that
// cancels the token and stops watching ctx (call it when done with the token, as with
// context.WithCancel's cancel, so ctx does not keep the registration). If ctx is done
// already, the token is cancelled when FromContext returns, as context.WithCancel's
// context would be.
func FromContext(ctx context.Context) (*CancelToken, func()) {
	t := NewCancelToken()
	stop := context.AfterFunc(ctx, t.Cancel)
	if ctx.Err() != nil {
		// AfterFunc runs t.Cancel on a goroutine of its own, even for a context that is
		// done already: the token would still be live for a while after we return.
		t.Cancel()
	}
	return t, func() {
		stop()
		t.Cancel()
	}
}
