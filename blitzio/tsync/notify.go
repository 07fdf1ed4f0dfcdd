package tsync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// Notify wakes tasks waiting for an event, like Tokio's Notify: a task waits with
// Notified, another calls NotifyOne (wakes one waiter, or stores a permit that the next
// Notified consumes at once) or NotifyWaiters (wakes every waiter registered now, stores
// nothing).
//
// Waiters are woken in arrival order. A NotifyOne handed to a waiter that is dropped
// before it sees it passes on to the next waiter (or becomes the stored permit), so a
// Select or a Timeout around Notified never loses a notification.
//
// The zero Notify is ready to use. A Notify must not be copied after first use.
type Notify struct {
	// permit is 1 when a NotifyOne found nobody waiting. It is read without mu on the
	// fast path of Notified; set and consumed under mu or by CAS.
	permit atomic.Uint32
	// calls counts NotifyWaiters calls: a Notified future made before a call completes
	// even if it was not polled yet (Tokio's rule), by comparing its snapshot.
	calls   atomic.Uint64
	mu      sync.Mutex
	waiters waitList
}

// waiter.kind of a Notify waiter: how it was woken.
const (
	kindNotifyOne uint8 = iota + 1
	kindNotifyAll
)

func nilNotify(op string) {
	panic("tsync: Notify." + op + " called on a nil *Notify")
}

// NotifyOne wakes the oldest waiter, or, if nobody waits, stores one permit for the next
// Notified (at most one is stored: notifying twice with nobody waiting stores one).
func (n *Notify) NotifyOne() { n.notifyOne(nil) }

// NotifyOneFrom is NotifyOne for a task being polled with cx: the woken task runs next
// on this worker.
func (n *Notify) NotifyOneFrom(cx *blitzio.Context) { n.notifyOne(cx) }

func (n *Notify) notifyOne(cx *blitzio.Context) {
	if n == nil {
		nilNotify("NotifyOne")
	}
	var wl wakeList
	n.mu.Lock()
	n.notifyOneLocked(&wl)
	n.mu.Unlock()
	wl.wake(cx)
}

func (n *Notify) notifyOneLocked(wl *wakeList) {
	w := n.waiters.popFront()
	if w == nil {
		n.permit.Store(1)
		return
	}
	w.notified = true
	w.kind = kindNotifyOne
	wl.add(w.waker)
}

// NotifyWaiters wakes every waiter registered now (every Notified future created before
// the call, polled or not). It stores no permit.
func (n *Notify) NotifyWaiters() {
	if n == nil {
		nilNotify("NotifyWaiters")
	}
	var wl wakeBuf
	n.mu.Lock()
	n.calls.Add(1)
	for w := n.waiters.popFront(); w != nil; w = n.waiters.popFront() {
		w.notified = true
		w.kind = kindNotifyAll
		wl.add(w.waker)
	}
	n.mu.Unlock()
	wl.wake(nil)
}

// TryWait consumes a stored permit if there is one, without waiting, and reports whether
// it did: the try-form of Notified.
func (n *Notify) TryWait() bool {
	if n == nil {
		nilNotify("TryWait")
	}
	return n.permit.CompareAndSwap(1, 0)
}

// Notified returns a future that is ready once the Notify is notified: by a stored
// permit, a NotifyOne, or a NotifyWaiters called after Notified returned.
func (n *Notify) Notified() *NotifiedFuture {
	if n == nil {
		nilNotify("Notified")
	}
	return &NotifiedFuture{n: n, calls: n.calls.Load()}
}

// Wait waits from a plain goroutine until the Notify is notified (a stored permit is
// consumed at once). Called from a task's code when it would have to wait, it panics (it
// would block a worker); await Notified there.
func (n *Notify) Wait() {
	f := n.Notified()
	if _, ok := f.Poll(probeContext); ok {
		return
	}
	refuseInRuntimeDrop("Notify.Wait", "Notified", f)
	blockOn[struct{}](f)
}

// WaitContext is Wait that gives up when ctx is done, returning ctx.Err(). A
// NotifyOne that reached it at that moment passes on.
func (n *Notify) WaitContext(ctx context.Context) error {
	f := n.Notified()
	if _, ok := f.Poll(probeContext); ok {
		return nil
	}
	if err := ctx.Err(); err != nil {
		// Nothing to wait for, so not refused in a task either (see waitForCtx). The
		// probe queued f: dropping it passes on a NotifyOne it was handed.
		f.Drop()
		return err
	}
	refuseInRuntimeDrop("Notify.WaitContext", "Notified", f)
	_, err := blockOnCtx[struct{}](ctx, f)
	return err
}

// NotifiedFuture is the future returned by Notify.Notified; its waiter node lives in it.
// Reset reuses it for another wait.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type NotifiedFuture struct {
	n     *Notify
	w     waiter
	calls uint64
	st    uint8
}

// Poll completes on a stored permit or a notification, or queues the future.
func (f *NotifiedFuture) Poll(cx *blitzio.Context) (struct{}, bool) {
	n := f.n
	switch f.st {
	case futDone:
		return struct{}{}, true
	case futDropped:
		panic("tsync: NotifiedFuture polled after Drop")
	case futIdle:
		if !cx.ConsumeBudget() {
			return struct{}{}, false
		}
		if n.calls.Load() != f.calls || n.permit.CompareAndSwap(1, 0) {
			f.st = futDone
			return struct{}{}, true
		}
		n.mu.Lock()
		// Again under mu: a NotifyOne between the CAS and the lock stored a permit.
		if n.calls.Load() != f.calls || n.permit.CompareAndSwap(1, 0) {
			n.mu.Unlock()
			f.st = futDone
			return struct{}{}, true
		}
		f.w.waker = cx.Waker()
		f.w.notified, f.w.kind = false, 0
		n.waiters.pushBack(&f.w)
		f.st = futWaiting
		n.mu.Unlock()
		return struct{}{}, false
	}
	n.mu.Lock()
	if f.w.notified {
		f.w.notified = false
		n.mu.Unlock()
		f.st = futDone
		return struct{}{}, true
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	n.mu.Unlock()
	return struct{}{}, false
}

// Drop gives up waiting. A NotifyOne handed to f but not yet seen passes on to the next
// waiter, or becomes the stored permit.
func (f *NotifiedFuture) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	n := f.n
	var wl wakeList
	n.mu.Lock()
	if f.w.queued {
		n.waiters.remove(&f.w)
	} else if f.w.notified {
		f.w.notified = false
		if f.w.kind == kindNotifyOne {
			n.notifyOneLocked(&wl)
		}
	}
	n.mu.Unlock()
	wl.wake(nil)
}

// Reset makes f wait for a new notification: it counts NotifyWaiters calls from now on.
// A waiting f is dropped first (so a notification it was handed passes on).
func (f *NotifiedFuture) Reset() {
	if f.st == futWaiting {
		f.Drop()
	}
	f.st = futIdle
	f.calls = f.n.calls.Load()
}
