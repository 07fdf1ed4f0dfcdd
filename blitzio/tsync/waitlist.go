package tsync

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// waiter is one waiting future's node in a waitList. It is embedded in the future (or
// in the blocking call's frame-owned parker), so waiting allocates nothing once the
// future exists: the intrusive design of Tokio's batch semaphore and Notify.
//
// Every field is guarded by the mutex of the primitive that owns the list.
type waiter struct {
	prev, next *waiter
	waker      blitzio.Waker
	// queued is true while the node is linked into a list.
	queued bool
	// notified is set by whoever hands the waiter what it waited for (a permit, the
	// lock, a notification) and unlinks it. A waiter dropped while notified must pass
	// what it was given on (see each primitive's Drop).
	notified bool
	// want is what the waiter asks for (permits, a reader or writer slot); got what it
	// was handed.
	want, got int64
	// kind distinguishes waiters in a shared list (RwLock readers and writers).
	kind uint8
	// handed is set, after notified and got, by a hand-off that lets the owner see it
	// without taking the primitive's mutex (Mutex's re-poll): the atomic store and
	// load order the plain writes before it. Optional: a primitive that does not set
	// it checks notified under its mutex.
	handed atomic.Bool
}

// waitList is a FIFO of waiters, intrusive and doubly linked so a dropped waiter leaves
// from the middle in O(1).
type waitList struct {
	head, tail *waiter
	n          int
}

// pushBack links w at the tail.
func (l *waitList) pushBack(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	w.queued = true
	l.n++
}

// pushFront links w at the head of l: where a woken Mutex waiter that lost the race for
// the lock goes back, so it is the next one woken.
func (l *waitList) pushFront(w *waiter) {
	w.prev, w.next = nil, l.head
	if l.head != nil {
		l.head.prev = w
	} else {
		l.tail = w
	}
	l.head = w
	w.queued = true
	l.n++
}

// remove unlinks w, which must be queued in l.
func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	w.queued = false
	l.n--
}

// popFront unlinks and returns the oldest waiter, or nil.
func (l *waitList) popFront() *waiter {
	w := l.head
	if w != nil {
		l.remove(w)
	}
	return w
}

// empty reports whether no waiter is queued.
func (l *waitList) empty() bool { return l.head == nil }

// wakeList collects wakers to call after the owner's mutex is released: a waker may run
// arbitrary code (a WakerFunc), and must never run under a primitive's lock.
type wakeList struct {
	one  blitzio.Waker
	more []blitzio.Waker
}

func (wl *wakeList) add(w blitzio.Waker) {
	if wl.one.IsZero() {
		wl.one = w
		return
	}
	wl.more = append(wl.more, w)
}

// wake calls every collected waker, the first from cx when the caller is being polled
// (so a task handing a lock or a message to another runs it next on the same worker).
func (wl *wakeList) wake(cx *blitzio.Context) {
	if cx != nil {
		wl.one.WakeFrom(cx)
	} else {
		wl.one.Wake()
	}
	for _, w := range wl.more {
		w.Wake()
	}
}

// wakeBuf is the wakeList of the primitives: it holds up to four wakers inline, so
// releasing a small group (a Barrier generation, the readers a write unlock admits, the
// waiters a large Release completes) allocates nothing; more go to a slice. Its wake
// survives a waker that panics or calls runtime.Goexit (a WakerFunc breaking its
// contract): the waiters were unlinked already, so one left unwoken would sleep forever
// (see wakeAll).
type wakeBuf struct {
	few  [4]blitzio.Waker
	n    int
	more []blitzio.Waker
}

func (wb *wakeBuf) add(w blitzio.Waker) {
	if wb.n < len(wb.few) {
		wb.few[wb.n] = w
		wb.n++
		return
	}
	wb.more = append(wb.more, w)
}

// wake calls every collected waker, the first from cx (see wakeList.wake).
func (wb *wakeBuf) wake(cx *blitzio.Context) {
	switch {
	case wb.n == 0:
		return
	case wb.n == 1:
		// One waiter: nobody else to strand if its waker panics.
		if cx != nil {
			wb.few[0].WakeFrom(cx)
		} else {
			wb.few[0].Wake()
		}
		return
	}
	wakeAll(wb.few[:wb.n], wb.more, cx)
}

// wakeAll calls the wakers of few and then more, the first from cx, so that every one
// of them is called even if some panic or call runtime.Goexit (a WakerFunc breaking its
// contract): the waiters were unlinked already, so one left unwoken would sleep forever.
// A panic is recovered and the first one re-raised once all ran. runtime.Goexit cannot be
// stopped, but it runs deferred calls: the deferred call below hands the wakers still
// left to a new goroutine (which does the same if another of them exits), and the
// calling goroutine goes on exiting. So the common case pays one deferred call per
// waker and nothing escapes: the copy for the new goroutine is made only when a waker
// exited.
func wakeAll(few, more []blitzio.Waker, cx *blitzio.Context) {
	var first any
	panicked := false
	i, total := 0, len(few)+len(more)
	defer func() {
		if i < total { // a waker called runtime.Goexit
			rest := make([]blitzio.Waker, 0, total-i)
			for ; i < total; i++ {
				if i < len(few) {
					rest = append(rest, few[i])
				} else {
					rest = append(rest, more[i-len(few)])
				}
			}
			go wakeAll(rest, nil, nil)
		}
	}()
	call := func(w blitzio.Waker, from *blitzio.Context) {
		defer func() {
			if r := recover(); r != nil && !panicked {
				panicked, first = true, r
			}
		}()
		if from != nil {
			w.WakeFrom(from)
		} else {
			w.Wake()
		}
	}
	for i < total {
		var w blitzio.Waker
		if i < len(few) {
			w = few[i]
		} else {
			w = more[i-len(few)]
		}
		from := cx
		if i > 0 {
			from = nil
		}
		i++
		call(w, from)
	}
	if panicked {
		panic(first)
	}
}

// parker blocks a plain goroutine in the blocking forms (Lock, Acquire, Recv, ...). Its
// Waker is made once per parker and parkers are pooled, so a blocking call allocates
// nothing in the steady state. The goroutine parks on a channel receive: Go's scheduler
// reuses the thread meanwhile.
type parker struct {
	ch    chan struct{}
	waker blitzio.Waker
	cx    *blitzio.Context
}

var parkers = sync.Pool{New: func() any {
	p := &parker{ch: make(chan struct{}, 1)}
	p.waker = blitzio.WakerFunc(func() {
		select {
		case p.ch <- struct{}{}:
		default:
		}
	})
	p.cx = blitzio.NewContext(nil, p.waker)
	return p
}}

func getParker() *parker { return parkers.Get().(*parker) }

// put returns p to the pool, with no wake left pending in it.
func (p *parker) put() {
	select {
	case <-p.ch:
	default:
	}
	parkers.Put(p)
}

// blockOn polls f from a plain goroutine until it is ready, parking between polls.
// Blocking forms are this over the future form, so the two cannot disagree.
func blockOn[T any](f blitzio.Future[T]) T {
	p := getParker()
	for {
		if v, ok := f.Poll(p.cx); ok {
			p.put()
			return v
		}
		<-p.ch
	}
}

// blockOnCtx is blockOn that gives up when ctx is done: it drops f (so a dropped waiter
// passes on whatever it was handed, like any cancelled future) and returns ctx.Err().
func blockOnCtx[T any](ctx context.Context, f blitzio.Future[T]) (T, error) {
	done := ctx.Done()
	if done == nil {
		return blockOn(f), nil
	}
	p := getParker()
	for {
		if v, ok := f.Poll(p.cx); ok {
			p.put()
			return v, nil
		}
		select {
		case <-p.ch:
		case <-done:
			// One last poll: what was handed over meanwhile is taken, not dropped.
			if v, ok := f.Poll(p.cx); ok {
				p.put()
				return v, nil
			}
			blitzio.Drop(f)
			p.put()
			var zero T
			return zero, ctx.Err()
		}
	}
}

// probeContext polls a blocking form's future once before the caller is checked and
// parked, so a wait that is over at once (a stored permit, the last party of a barrier)
// costs no stack walk. Its Waker is the zero Waker: a wake aimed at a future queued by
// this poll is lost, which is harmless, because blockOn polls again (registering its
// parker's waker under the primitive's lock) before it parks. Polling only reads the
// Context, so one is shared.
var probeContext = blitzio.NewContext(nil, blitzio.Waker{})

// Entry functions of the blitzio goroutines that must not block: a worker, and the
// goroutine of an Async function (which its poller, usually a worker, waits on).
// TestBlockingFormsRefuseTasks fails if blitzio renames them.
const (
	workerEntryFunc    = "github.com/blitzgo/blitz/blitzio.(*worker).run"
	coroutineEntryFunc = "github.com/blitzgo/blitz/blitzio.runCoroutine"
)

// refuseInRuntime panics, naming op and the future form to use instead, if the caller
// runs on a blitzio worker or inside an Async function: a blocking form would park that
// goroutine, and a runtime whose workers all wait this way deadlocks (blitzio.BlockOn
// refuses the same mistake). Go has no goroutine-local storage, so we look at the bottom
// frames of the stack for the goroutine's entry function. The walk costs about a
// microsecond; blocking forms call it only when they are about to park.
func refuseInRuntime(op, futureForm string) {
	var buf [64]uintptr
	pcs := buf[:]
	n := runtime.Callers(2, pcs)
	for n == len(pcs) && len(pcs) < 1<<20 {
		pcs = make([]uintptr, 4*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	for _, pc := range pcs[max(0, n-6):n] {
		f := runtime.FuncForPC(pc - 1) // pc-1: a return address may start the next function
		if f == nil {
			continue
		}
		switch name := f.Name(); {
		case name == workerEntryFunc:
			panic("tsync: cannot block from within a runtime: " + op + " called by a task's code would " +
				"block its worker; await the future form (" + futureForm + ") instead")
		case name == coroutineEntryFunc || strings.HasPrefix(name, coroutineEntryFunc+"["):
			panic("tsync: cannot block from within a runtime: " + op + " called inside an Async function " +
				"would block the goroutine polling it; Await the future form (" + futureForm + ") instead")
		}
	}
}

// refuseInRuntimeDrop is refuseInRuntime for a caller that already queued f: f is dropped
// before the panic, so what it was handed passes on.
func refuseInRuntimeDrop(op, futureForm string, f any) {
	defer func() {
		if r := recover(); r != nil {
			blitzio.Drop(f)
			panic(r)
		}
	}()
	refuseInRuntime(op, futureForm)
}
