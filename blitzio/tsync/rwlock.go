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

	// holds records each read hold, one slot per hold, so that a read guard unlocked
	// twice (or a copy of one already unlocked) is caught even while other readers hold
	// the lock. A guard carries its slot's index and the slot's generation at the time;
	// a free slot links to the next free one. The slots start in inline and move to the
	// heap only if more readers than that ever hold the lock at once; they are reused,
	// never freed, so a steady number of readers allocates nothing.
	holds  []readSlot
	free   uint32 // 1 + index of the first free slot; 0: none
	inline [4]readSlot
}

// readSlot records one read hold of an RwLock.
type readSlot struct {
	gen  uint32 // bumped by each hold that takes the slot
	next uint32 // slotHeld while held; else 1 + index of the next free slot, 0 for none
}

const slotHeld = ^uint32(0)

const (
	kindReader uint8 = iota + 1
	kindWriter
)

// RwLockReadGuard is a read hold on an RwLock. Unlocking it twice panics, through the
// guard or a copy of it, even while other readers hold the lock.
type RwLockReadGuard struct {
	l   *RwLock
	tok uint64 // the hold's slot index << 32 | the slot's generation
}

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
	if l.writer || !l.waiters.empty() {
		l.mu.Unlock()
		return RwLockReadGuard{}, false
	}
	tok := l.takeReadLocked()
	l.mu.Unlock()
	return RwLockReadGuard{l, tok}, true
}

// takeReadLocked adds a read hold and returns its token. Called with l.mu held.
func (l *RwLock) takeReadLocked() uint64 {
	var i uint32
	if l.free != 0 {
		i = l.free - 1
		l.free = l.holds[i].next
	} else {
		if l.holds == nil {
			l.holds = l.inline[:0]
		}
		// Each slot is a hold outstanding, so the count stays far below 2^32-1.
		i = uint32(len(l.holds))
		l.holds = append(l.holds, readSlot{})
	}
	s := &l.holds[i]
	s.gen++
	s.next = slotHeld
	l.readers++
	return uint64(i)<<32 | uint64(s.gen)
}

// dropReadLocked ends the read hold tok and reports true, or reports false if tok is
// not held (its guard was unlocked already). Called with l.mu held.
func (l *RwLock) dropReadLocked(tok uint64) bool {
	i := tok >> 32
	if i >= uint64(len(l.holds)) {
		return false
	}
	s := &l.holds[i]
	if s.next != slotHeld || s.gen != uint32(tok) {
		return false
	}
	s.next = l.free
	l.free = uint32(i) + 1
	l.readers--
	return true
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

// Unlock releases the read hold. It panics if the guard was already unlocked (through
// this copy or another, such as the copy a ReadAsync future polled again after it was
// ready returns) or is the zero guard; the lock is left as it was then, so the other
// readers keep their holds.
func (g RwLockReadGuard) Unlock() {
	l := g.l
	if l == nil {
		panic("tsync: Unlock of a zero RwLockReadGuard")
	}
	var wl wakeBuf
	l.mu.Lock()
	if !l.dropReadLocked(g.tok) {
		l.mu.Unlock()
		panic("tsync: RwLockReadGuard unlocked twice: the guard, or a copy of it, was already unlocked (unlocked more times than read holds were taken)")
	}
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
			w.got = int64(l.takeReadLocked())
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

// makeGuard makes the guard of a hold: tok is a read hold's token, or the write
// generation.
func (f *RwLockFuture[G]) makeGuard(tok uint64) G {
	var g G
	switch p := any(&g).(type) {
	case *RwLockReadGuard:
		*p = RwLockReadGuard{f.l, tok}
	case *RwLockWriteGuard:
		*p = RwLockWriteGuard{f.l, tok}
	}
	return g
}

// Poll takes the hold, or queues the future and returns pending. Polled again after it
// was ready, it returns the same guard: still one hold, to be unlocked once through one
// of the copies (unlocking a second copy panics).
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
			var tok uint64
			if f.w.kind == kindReader {
				tok = l.takeReadLocked()
			} else {
				l.writer = true
				tok = l.gen
			}
			l.mu.Unlock()
			return f.finish(f.makeGuard(tok))
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
		tok := uint64(f.w.got)
		l.mu.Unlock()
		return f.finish(f.makeGuard(tok))
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
			l.dropReadLocked(uint64(f.w.got))
		} else {
			l.writer = false
			l.gen++
		}
	}
	l.grantLocked(&wl)
	l.mu.Unlock()
	wl.wake(nil)
}
