package tsync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// ErrOnceCellSet is returned by OnceCell.Set when the cell already holds a value.
var ErrOnceCellSet = errors.New("tsync: OnceCell already set")

// ErrOnceCellBusy is returned by OnceCell.Set while an initialiser is running.
var ErrOnceCellBusy = errors.New("tsync: OnceCell is being initialised")

// OnceCell holds a value set at most once, like Tokio's OnceCell: the first GetOrInit
// runs its initialiser (a future), and the callers arriving meanwhile wait for it instead
// of running their own.
//
// If the initialiser fails (GetOrTryInit's future returns an error), panics, or is
// cancelled (its future dropped: the task aborted, a Timeout expired), the cell stays
// empty and the oldest waiting caller runs its own initialiser next: one failure does not
// fail everyone, and one cancellation does not strand the waiters. A panic reaches the
// caller that ran the initialiser (through Await, BlockOn, GetOrInitContext or its
// task's JoinHandle) after the turn has been handed on, so this holds whether or not
// anything drops the GetOrInit future afterwards.
//
// The zero OnceCell is empty and ready to use. A OnceCell must not be copied after first
// use.
type OnceCell[T any] struct {
	// state is onceEmpty, onceBusy (an initialiser runs) or onceSet. value is written
	// before state becomes onceSet and never after, so a reader that loads onceSet may
	// read value without mu.
	state   atomic.Uint32
	value   T
	mu      sync.Mutex
	waiters waitList
}

const (
	onceEmpty uint32 = iota
	onceBusy
	onceSet
)

//go:noinline
func nilOnceCell(op string) {
	panic("tsync: OnceCell." + op + " called on a nil *OnceCell")
}

// NewOnceCellWith returns a cell already holding v.
func NewOnceCellWith[T any](v T) *OnceCell[T] {
	c := &OnceCell[T]{value: v}
	c.state.Store(onceSet)
	return c
}

// Get returns the value and true if the cell is set.
func (c *OnceCell[T]) Get() (T, bool) {
	if c == nil {
		nilOnceCell("Get")
	}
	if c.state.Load() == onceSet {
		return c.value, true
	}
	var zero T
	return zero, false
}

// IsSet reports whether the cell holds a value.
func (c *OnceCell[T]) IsSet() bool {
	if c == nil {
		nilOnceCell("IsSet")
	}
	return c.state.Load() == onceSet
}

// Set stores v if the cell is empty and no initialiser runs; otherwise it returns
// ErrOnceCellSet or ErrOnceCellBusy.
func (c *OnceCell[T]) Set(v T) error {
	if c == nil {
		nilOnceCell("Set")
	}
	var wl wakeBuf
	c.mu.Lock()
	switch c.state.Load() {
	case onceSet:
		c.mu.Unlock()
		return ErrOnceCellSet
	case onceBusy:
		c.mu.Unlock()
		return ErrOnceCellBusy
	}
	c.setLocked(v, &wl)
	c.mu.Unlock()
	wl.wake(nil)
	return nil
}

// setLocked publishes v and releases every waiter.
func (c *OnceCell[T]) setLocked(v T, wl *wakeBuf) {
	c.value = v
	c.state.Store(onceSet)
	for w := c.waiters.popFront(); w != nil; w = c.waiters.popFront() {
		w.notified = true
		wl.add(w.waker)
	}
}

// passOnLocked gives up the initialiser's turn: to the oldest waiter (which runs its own
// initialiser when next polled), or back to empty.
func (c *OnceCell[T]) passOnLocked(wl *wakeBuf) {
	w := c.waiters.popFront()
	if w == nil {
		c.state.Store(onceEmpty)
		return
	}
	w.notified = true // with state still onceBusy: "your turn"
	wl.add(w.waker)
}

// GetOrInit returns a future ready with the cell's value, running init's future to set it
// if the cell is empty and no other caller is initialising it. init is called at most
// once per future, only if this caller's turn comes.
func (c *OnceCell[T]) GetOrInit(init func() blitzio.Future[T]) *OnceFuture[T] {
	if c == nil {
		nilOnceCell("GetOrInit")
	}
	if init == nil {
		panic("tsync: OnceCell.GetOrInit: init is nil")
	}
	return &OnceFuture[T]{once: onceWait[T]{c: c}, init: init}
}

// GetOrTryInit is GetOrInit with an initialiser that can fail: its error is this caller's
// result, the cell stays empty, and the next waiting caller tries its own initialiser.
func (c *OnceCell[T]) GetOrTryInit(init func() blitzio.Future[blitzio.Result[T]]) *OnceTryFuture[T] {
	if c == nil {
		nilOnceCell("GetOrTryInit")
	}
	if init == nil {
		panic("tsync: OnceCell.GetOrTryInit: init is nil")
	}
	return &OnceTryFuture[T]{once: onceWait[T]{c: c}, init: init}
}

// GetOrInitContext is the blocking form for plain goroutines: it returns the value,
// waiting for another caller's initialiser if one runs, or runs init on the calling
// goroutine when its turn comes. An error from init is returned and lets the next caller
// try. If init panics, the panic goes on to the caller and, as with an error, the next
// caller runs its own initialiser. It gives up when ctx is done, returning ctx.Err(). It
// must not be called from a task: it would block the worker.
func (c *OnceCell[T]) GetOrInitContext(ctx context.Context, init func(ctx context.Context) (T, error)) (T, error) {
	if c == nil {
		nilOnceCell("GetOrInitContext")
	}
	if v, ok := c.Get(); ok {
		return v, nil
	}
	if init == nil {
		panic("tsync: OnceCell.GetOrInitContext: init is nil")
	}
	f := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[T]] {
		return blitzio.Lazy(func() blitzio.Result[T] {
			v, err := init(ctx)
			return blitzio.Result[T]{Value: v, Err: err}
		})
	})
	if r, ok := f.Poll(probeContext); ok {
		return r.Get() // our initialiser ran, or the value arrived meanwhile
	}
	if err := ctx.Err(); err != nil {
		// Nothing to wait for, so not refused in a task either (see waitForCtx). The
		// probe queued f: dropping it passes on a turn it was handed.
		f.Drop()
		var zero T
		return zero, err
	}
	refuseInRuntimeDrop("OnceCell.GetOrInitContext", "GetOrInit", f)
	r, err := blockOnCtx[blitzio.Result[T]](ctx, f)
	if err != nil {
		var zero T
		return zero, err
	}
	return r.Get()
}

// onceWait is the waiting part shared by OnceFuture and OnceTryFuture.
type onceWait[T any] struct {
	c  *OnceCell[T]
	w  waiter
	st uint8 // futIdle, futWaiting, onceRunning, futDone, futDropped
}

const onceRunning uint8 = 10

// poll reports (value, true, false) when the cell is set, (_, false, true) when it is
// this caller's turn to initialise (state onceBusy is then ours), or (_, false, false)
// when pending.
func (o *onceWait[T]) poll(cx *blitzio.Context) (v T, set, turn bool) {
	c := o.c
	if c.state.Load() == onceSet {
		return c.value, true, false
	}
	c.mu.Lock()
	if o.st == futWaiting {
		if !o.w.notified {
			if w := cx.Waker(); !o.w.waker.WillWake(w) {
				o.w.waker = w
			}
			c.mu.Unlock()
			return v, false, false
		}
		o.w.notified = false
		if c.state.Load() == onceSet {
			c.mu.Unlock()
			return c.value, true, false
		}
		c.mu.Unlock()
		return v, false, true // handed the turn
	}
	switch c.state.Load() {
	case onceSet:
		c.mu.Unlock()
		return c.value, true, false
	case onceEmpty:
		c.state.Store(onceBusy)
		c.mu.Unlock()
		return v, false, true
	}
	o.w.waker = cx.Waker()
	o.w.notified = false
	c.waiters.pushBack(&o.w)
	o.st = futWaiting
	c.mu.Unlock()
	return v, false, false
}

// drop leaves the queue, passing on a turn handed to us (or held by us as initialiser).
func (o *onceWait[T]) drop() {
	c := o.c
	var wl wakeBuf
	c.mu.Lock()
	switch o.st {
	case futWaiting:
		if o.w.queued {
			c.waiters.remove(&o.w)
		} else if o.w.notified && c.state.Load() == onceBusy {
			o.w.notified = false
			c.passOnLocked(&wl)
		}
	case onceRunning:
		c.passOnLocked(&wl)
	}
	o.st = futDropped
	c.mu.Unlock()
	wl.wake(nil)
}

// finishInit publishes the initialiser's outcome: set the value, or pass the turn on.
func (o *onceWait[T]) finishInit(cx *blitzio.Context, v T, err error) {
	c := o.c
	var wl wakeBuf
	c.mu.Lock()
	if err == nil {
		c.setLocked(v, &wl)
	} else {
		c.passOnLocked(&wl)
	}
	o.st = futDone
	c.mu.Unlock()
	wl.wake(cx)
}

// OnceFuture is the future returned by OnceCell.GetOrInit.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type OnceFuture[T any] struct {
	once  onceWait[T]
	init  func() blitzio.Future[T]
	inner blitzio.Future[T]
}

// Poll returns the value once the cell is set, running the initialiser when its turn
// comes.
func (f *OnceFuture[T]) Poll(cx *blitzio.Context) (T, bool) {
	var zero T
	o := &f.once
	switch o.st {
	case futDone:
		return o.c.value, true
	case futDropped:
		panic("tsync: OnceFuture polled after Drop (or after its initialiser panicked)")
	case onceRunning:
	default:
		v, set, turn := o.poll(cx)
		if set {
			o.st = futDone
			return v, true
		}
		if !turn {
			return zero, false
		}
		o.st = onceRunning
	}
	v, ok := f.runInit(cx)
	if !ok {
		return zero, false
	}
	f.inner = nil
	o.finishInit(cx, v, nil)
	return v, true
}

// runInit polls the initialiser's future, calling init first if this is our first poll
// since we got the turn. If init or the Poll does not return (a panic, runtime.Goexit),
// it drops this future, which drops the initialiser's future and hands the turn on, and
// lets the panic go on. A runtime drops a task's top-level future after a panic, but a
// caller that polls the future directly (GetOrInitContext, a hand-written future, a
// recovering caller) may never drop it: without this the cell would stay busy for good.
// Drop is idempotent, so whoever drops this future later changes nothing.
func (f *OnceFuture[T]) runInit(cx *blitzio.Context) (v T, ok bool) {
	returned := false
	defer func() {
		if !returned {
			dropUnwinding(f)
		}
	}()
	if f.inner == nil {
		f.inner = f.init()
	}
	v, ok = f.inner.Poll(cx)
	returned = true
	return v, ok
}

// Drop gives up: a waiting caller leaves the queue; an initialiser that has not finished
// is dropped, and the next waiting caller gets to initialise. Dropping again, or after
// the future completed, does nothing.
func (f *OnceFuture[T]) Drop() {
	o := &f.once
	if o.st == futDone || o.st == futDropped {
		return
	}
	if inner := f.inner; inner != nil {
		f.inner = nil
		defer o.drop() // even if the initialiser's Drop panics
		blitzio.Drop(inner)
		return
	}
	o.drop()
}

// OnceTryFuture is the future returned by OnceCell.GetOrTryInit.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type OnceTryFuture[T any] struct {
	once  onceWait[T]
	init  func() blitzio.Future[blitzio.Result[T]]
	inner blitzio.Future[blitzio.Result[T]]
	res   blitzio.Result[T]
}

// Poll returns the value once the cell is set, or the error of this caller's own
// initialiser.
func (f *OnceTryFuture[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	o := &f.once
	switch o.st {
	case futDone:
		return f.res, true
	case futDropped:
		panic("tsync: OnceTryFuture polled after Drop (or after its initialiser panicked)")
	case onceRunning:
	default:
		v, set, turn := o.poll(cx)
		if set {
			o.st = futDone
			f.res = blitzio.Result[T]{Value: v}
			return f.res, true
		}
		if !turn {
			return blitzio.Result[T]{}, false
		}
		o.st = onceRunning
	}
	r, ok := f.runInit(cx)
	if !ok {
		return blitzio.Result[T]{}, false
	}
	f.inner = nil
	o.finishInit(cx, r.Value, r.Err)
	if r.Err != nil {
		r.Value = *new(T)
	}
	f.res = r
	return r, true
}

// runInit is OnceFuture.runInit: a panic (or runtime.Goexit) in init or in its future's
// Poll drops f, handing the turn on, before it goes on.
func (f *OnceTryFuture[T]) runInit(cx *blitzio.Context) (r blitzio.Result[T], ok bool) {
	returned := false
	defer func() {
		if !returned {
			dropUnwinding(f)
		}
	}()
	if f.inner == nil {
		f.inner = f.init()
	}
	r, ok = f.inner.Poll(cx)
	returned = true
	return r, ok
}

// dropUnwinding drops f while a panic (or runtime.Goexit) in its initialiser unwinds. The
// turn is handed on even if the initialiser's future panics in its Drop (Drop defers
// that), and such a second panic is discarded: the first one, which goes on, says what
// went wrong.
func dropUnwinding(f blitzio.Dropper) {
	defer func() { recover() }()
	f.Drop()
}

// Drop is OnceFuture.Drop.
func (f *OnceTryFuture[T]) Drop() {
	o := &f.once
	if o.st == futDone || o.st == futDropped {
		return
	}
	if inner := f.inner; inner != nil {
		f.inner = nil
		defer o.drop()
		blitzio.Drop(inner)
		return
	}
	o.drop()
}
