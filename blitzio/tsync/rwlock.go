package tsync

import (
	"context"
	"sync"

	"github.com/blitzgo/blitz/blitzio"
)

// RwLock is a reader-writer lock for tasks, like Tokio's RwLock: any number of readers or
// one writer.
//
// It is fair in both directions: requests are served in arrival order, a reader arriving
// while a writer waits queues behind that writer (so a stream of readers cannot starve
// writers), and when a writer unlocks, every reader queued before the next writer enters
// together (so writers cannot starve readers either).
//
// The zero RwLock is unlocked and ready to use. An RwLock must not be copied after first
// use.
type RwLock struct {
	mu      sync.Mutex
	readers int64 // readers holding the lock
	writer  bool  // a writer holds the lock
	// gen counts write unlocks, so a write guard unlocked twice is caught (MutexGuard's
	// rule).
	gen     uint64
	waiters waitList // readers and writers, in arrival order (waiter.kind)
}

const (
	kindReader uint8 = iota + 1
	kindWriter
)

// RwLockReadGuard is a read hold on an RwLock. Unlock it once; unlocking more read
// guards than were issued panics.
type RwLockReadGuard struct{ l *RwLock }

// RwLockWriteGuard is the write hold on an RwLock. Unlocking it twice panics.
type RwLockWriteGuard struct {
	l   *RwLock
	gen uint64
}

func nilRwLock(op string) {
	panic("tsync: RwLock." + op + " called on a nil *RwLock")
}

// TryRead takes a read hold if no writer holds or waits for the lock.
func (l *RwLock) TryRead() (RwLockReadGuard, bool) {
	if l == nil {
		nilRwLock("TryRead")
	}
	l.mu.Lock()
	ok := !l.writer && l.waiters.empty()
	if ok {
		l.readers++
	}
	l.mu.Unlock()
	if !ok {
		return RwLockReadGuard{}, false
	}
	return RwLockReadGuard{l}, true
}

// TryWrite takes the write hold if the lock is free and nobody waits.
func (l *RwLock) TryWrite() (RwLockWriteGuard, bool) {
	if l == nil {
		nilRwLock("TryWrite")
	}
	l.mu.Lock()
	ok := !l.writer && l.readers == 0 && l.waiters.empty()
	if ok {
		l.writer = true
	}
	gen := l.gen
	l.mu.Unlock()
	if !ok {
		return RwLockWriteGuard{}, false
	}
	return RwLockWriteGuard{l, gen}, true
}

// ReadAsync returns a future ready with a read guard once the lock can be shared: the
// form for tasks.
func (l *RwLock) ReadAsync() *RwLockFuture[RwLockReadGuard] {
	if l == nil {
		nilRwLock("ReadAsync")
	}
	f := &RwLockFuture[RwLockReadGuard]{l: l}
	f.w.kind = kindReader
	return f
}

// WriteAsync returns a future ready with the write guard once the lock is free for it:
// the form for tasks.
func (l *RwLock) WriteAsync() *RwLockFuture[RwLockWriteGuard] {
	if l == nil {
		nilRwLock("WriteAsync")
	}
	f := &RwLockFuture[RwLockWriteGuard]{l: l}
	f.w.kind = kindWriter
	return f
}

// Read takes a read hold from a plain goroutine, parking it until the lock can be
// shared. Called from a task's code when it would have to wait, it panics (it would
// block a worker); use ReadAsync there.
func (l *RwLock) Read() RwLockReadGuard {
	if g, ok := l.TryRead(); ok {
		return g
	}
	refuseInRuntime("RwLock.Read", "ReadAsync")
	return blockOn[RwLockReadGuard](l.ReadAsync())
}

// Write takes the write hold from a plain goroutine, parking it until the lock is free.
// Called from a task's code when it would have to wait, it panics; use WriteAsync there.
func (l *RwLock) Write() RwLockWriteGuard {
	if g, ok := l.TryWrite(); ok {
		return g
	}
	refuseInRuntime("RwLock.Write", "WriteAsync")
	return blockOn[RwLockWriteGuard](l.WriteAsync())
}

// ReadContext is Read that gives up when ctx is done, returning ctx.Err().
func (l *RwLock) ReadContext(ctx context.Context) (RwLockReadGuard, error) {
	if err := ctx.Err(); err != nil {
		return RwLockReadGuard{}, err
	}
	if g, ok := l.TryRead(); ok {
		return g, nil
	}
	refuseInRuntime("RwLock.ReadContext", "ReadAsync")
	return blockOnCtx[RwLockReadGuard](ctx, l.ReadAsync())
}

// WriteContext is Write that gives up when ctx is done, returning ctx.Err().
func (l *RwLock) WriteContext(ctx context.Context) (RwLockWriteGuard, error) {
	if err := ctx.Err(); err != nil {
		return RwLockWriteGuard{}, err
	}
	if g, ok := l.TryWrite(); ok {
		return g, nil
	}
	refuseInRuntime("RwLock.WriteContext", "WriteAsync")
	return blockOnCtx[RwLockWriteGuard](ctx, l.WriteAsync())
}

// Unlock releases the read hold. It panics if no read hold is outstanding (an unlock too
// many) or on the zero guard.
func (g RwLockReadGuard) Unlock() {
	l := g.l
	if l == nil {
		panic("tsync: Unlock of a zero RwLockReadGuard")
	}
	var wl wakeBuf
	l.mu.Lock()
	if l.readers == 0 {
		l.mu.Unlock()
		panic("tsync: RwLockReadGuard unlocked more times than read holds were taken")
	}
	l.readers--
	l.grantLocked(&wl)
	l.mu.Unlock()
	wl.wake(nil)
}

// Unlock releases the write hold. It panics if the guard was already unlocked (through
// this copy or another) or is the zero guard.
func (g RwLockWriteGuard) Unlock() {
	l := g.l
	if l == nil {
		panic("tsync: Unlock of a zero RwLockWriteGuard")
	}
	var wl wakeBuf
	l.mu.Lock()
	if !l.writer || l.gen != g.gen {
		l.mu.Unlock()
		panic("tsync: RwLockWriteGuard unlocked twice (the guard, or a copy of it, was already unlocked)")
	}
	l.writer = false
	l.gen++
	l.grantLocked(&wl)
	l.mu.Unlock()
	wl.wake(nil)
}

// grantLocked hands the lock to the waiters at the head that can have it now: a writer if
// the lock is free, or every reader before the next writer if no writer holds it.
func (l *RwLock) grantLocked(wl *wakeBuf) {
	for w := l.waiters.head; w != nil && !l.writer; w = l.waiters.head {
		if w.kind == kindWriter {
			if l.readers != 0 {
				return
			}
			l.writer = true
			w.got = int64(l.gen)
		} else {
			l.readers++
		}
		l.waiters.remove(w)
		w.notified = true
		wl.add(w.waker)
	}
}

// RwLockFuture is the future returned by RwLock.ReadAsync (G = RwLockReadGuard) and
// RwLock.WriteAsync (G = RwLockWriteGuard); its waiter node lives in it.
//
// A waiting future is linked into the primitive's queue: do not copy it once polled.
type RwLockFuture[G RwLockReadGuard | RwLockWriteGuard] struct {
	l     *RwLock
	w     waiter
	guard G
	st    uint8
}

func (f *RwLockFuture[G]) makeGuard(gen uint64) G {
	var g G
	switch p := any(&g).(type) {
	case *RwLockReadGuard:
		*p = RwLockReadGuard{f.l}
	case *RwLockWriteGuard:
		*p = RwLockWriteGuard{f.l, gen}
	}
	return g
}

// Poll takes the hold, or queues the future and returns pending.
func (f *RwLockFuture[G]) Poll(cx *blitzio.Context) (G, bool) {
	var zero G
	l := f.l
	switch f.st {
	case futDone:
		return f.guard, true
	case futDropped:
		panic("tsync: RwLockFuture polled after Drop")
	case futIdle:
		if !cx.ConsumeBudget() {
			return zero, false
		}
		l.mu.Lock()
		free := !l.writer && l.waiters.empty() && (f.w.kind == kindReader || l.readers == 0)
		if free {
			if f.w.kind == kindReader {
				l.readers++
			} else {
				l.writer = true
			}
			gen := l.gen
			l.mu.Unlock()
			return f.finish(f.makeGuard(gen))
		}
		f.w.waker = cx.Waker()
		f.w.notified = false
		l.waiters.pushBack(&f.w)
		f.st = futWaiting
		l.mu.Unlock()
		return zero, false
	}
	l.mu.Lock()
	if f.w.notified {
		f.w.notified = false
		gen := uint64(f.w.got)
		l.mu.Unlock()
		return f.finish(f.makeGuard(gen))
	}
	if w := cx.Waker(); !f.w.waker.WillWake(w) {
		f.w.waker = w
	}
	l.mu.Unlock()
	return zero, false
}

func (f *RwLockFuture[G]) finish(g G) (G, bool) {
	f.guard, f.st = g, futDone
	return g, true
}

// Drop gives up waiting. A hold granted to the future but not yet returned by Poll is
// released, and the lock passes on to the waiters it now admits. Leaving the queue can
// admit others too (readers queued behind a dropped writer).
func (f *RwLockFuture[G]) Drop() {
	if f.st != futWaiting {
		if f.st != futDone {
			f.st = futDropped
		}
		return
	}
	f.st = futDropped
	l := f.l
	var wl wakeBuf
	l.mu.Lock()
	if f.w.queued {
		l.waiters.remove(&f.w)
	} else if f.w.notified {
		f.w.notified = false
		if f.w.kind == kindReader {
			l.readers--
		} else {
			l.writer = false
			l.gen++
		}
	}
	l.grantLocked(&wl)
	l.mu.Unlock()
	wl.wake(nil)
}
