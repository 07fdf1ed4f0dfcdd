package tsync

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile2OnceCellPanicInAsyncStrandsWaiters: OnceCell's documentation promises that an
// initialiser that panics leaves the cell empty and hands the turn to the oldest waiting
// caller. The common way to use GetOrInit is to Await it inside an Async function. When
// the initialiser's future panics there, the panic goes up through OnceFuture.Poll and
// Await and ends the Async function. Nothing ever calls Drop on the OnceFuture, so the
// cell stays onceBusy for good and every other caller waits forever.
func TestHostile2OnceCellPanicInAsyncStrandsWaiters(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	var c OnceCell[int]
	started := make(chan struct{})
	release := make(chan struct{})

	// The first caller: its initialiser waits until the second caller is queued,
	// then panics.
	h1 := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		return blitzio.Await(co, c.GetOrInit(func() blitzio.Future[int] {
			return blitzio.Async(func(co *blitzio.Co) int {
				close(started)
				blitzio.Await(co, blitzio.PollFn(func(cx *blitzio.Context) (struct{}, bool) {
					select {
					case <-release:
						return struct{}{}, true
					default:
						cx.Yield()
						return struct{}{}, false
					}
				}))
				panic("init failed")
			})
		}))
	}))
	<-started
	// The second caller queues behind the running initialiser.
	h2 := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		return blitzio.Await(co, c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(42) }))
	}))
	// Wait until it is queued.
	for deadline := time.Now().Add(5 * time.Second); ; {
		c.mu.Lock()
		queued := !c.waiters.empty()
		c.mu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("second caller never queued")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if _, err := h1.Wait(); err == nil {
		t.Fatal("the panicking initialiser's task reported no error")
	}
	type res struct {
		v   int
		err error
	}
	done := make(chan res, 1)
	go func() { v, err := h2.Wait(); done <- res{v, err} }()
	select {
	case r := <-done:
		if r.err != nil || r.v != 42 {
			t.Fatalf("second caller: %v, %v; want 42, nil", r.v, r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("second caller stranded: the cell is still busy (state %d) after the initialiser "+
			"panicked inside an Async function; want its turn handed to the waiter", c.state.Load())
	}
	if v, ok := c.Get(); !ok || v != 42 {
		t.Fatalf("Get = %v, %v; want 42, true", v, ok)
	}
}

// TestHostile2OnceCellGetOrInitContextPanicBricksCell: GetOrInitContext runs init on the
// calling goroutine. If init panics (and the caller recovers, as an HTTP server's
// handler recovery does), the OnceTryFuture that held the cell's turn is never dropped:
// the cell stays busy, Set fails with ErrOnceCellBusy for ever, and every later
// GetOrInitContext waits until its context ends instead of running its own initialiser.
func TestHostile2OnceCellGetOrInitContextPanicBricksCell(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	var c OnceCell[int]
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("init's panic did not reach the caller")
			}
		}()
		c.GetOrInitContext(context.Background(), func(context.Context) (int, error) { panic("init failed") })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ran := false
	v, err := c.GetOrInitContext(ctx, func(context.Context) (int, error) { ran = true; return 7, nil })
	if err != nil || v != 7 || !ran {
		t.Fatalf("after a panicking init: GetOrInitContext = %v, %v (own init ran: %v); want 7, nil "+
			"(cell state %d: the panicked initialiser's turn was never given up)", v, err, ran, c.state.Load())
	}
}

// TestHostile2OnceCellInitPanicInAsyncDirect is the simplest form: init itself (not its
// future) panics inside an Async function; the next caller must get the turn.
func TestHostile2OnceCellInitPanicInAsyncDirect(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	var c OnceCell[int]
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		return blitzio.Await(co, c.GetOrInit(func() blitzio.Future[int] { panic("init failed") }))
	}))
	if _, err := h.Wait(); err == nil {
		t.Fatal("no error from the panicking task")
	}
	if err := c.Set(1); err != nil {
		t.Fatalf("Set after the only initialiser panicked: %v; want nil (the cell must be empty, "+
			"not busy for ever: state %d)", err, c.state.Load())
	}
}

// panicPoll is a hand-written initialiser future: pending while hold is set, then its
// Poll panics. It counts its Drops.
type panicPoll struct {
	hold  bool
	drops int
}

func (p *panicPoll) Poll(cx *blitzio.Context) (int, bool) {
	if p.hold {
		return 0, false
	}
	panic("init future failed")
}

func (p *panicPoll) Drop() { p.drops++ }

// pollPanics polls f and reports whether the poll panicked.
func pollPanics[T any](f blitzio.Future[T], cx *blitzio.Context) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f.Poll(cx)
	return false
}

// TestHostile2OnceCellPanicHandsTurnOnOnce: when the initialiser's future panics in Poll,
// the OnceFuture drops it and hands the turn to the oldest waiter before the panic goes
// on. A later Drop of the same future (as a runtime does with a task's future that
// panicked) must not hand a second turn to the next waiter, nor drop the initialiser's
// future again.
func TestHostile2OnceCellPanicHandsTurnOnOnce(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	var c OnceCell[int]
	init1 := &panicPoll{hold: true}
	f1 := c.GetOrInit(func() blitzio.Future[int] { return init1 })
	tc1, tc2, tc3 := newTestCx(), newTestCx(), newTestCx()
	if _, ok := f1.Poll(tc1.cx); ok {
		t.Fatal("the first initialiser is ready")
	}
	init2 := &panicPoll{hold: true} // the second caller's initialiser stays pending
	f2 := c.GetOrInit(func() blitzio.Future[int] { return init2 })
	f3 := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(3) })
	if _, ok := f2.Poll(tc2.cx); ok {
		t.Fatal("second caller ready while the first initialises")
	}
	if _, ok := f3.Poll(tc3.cx); ok {
		t.Fatal("third caller ready while the first initialises")
	}

	init1.hold = false
	if !pollPanics[int](f1, tc1.cx) {
		t.Fatal("the initialiser's panic did not reach the caller")
	}
	if init1.drops != 1 {
		t.Fatalf("the panicked initialiser's future was dropped %d times; want 1", init1.drops)
	}
	if tc2.wakes.Load() != 1 || tc3.wakes.Load() != 0 {
		t.Fatalf("wakes after the panic: second caller %d, third %d; want 1, 0", tc2.wakes.Load(), tc3.wakes.Load())
	}
	f1.Drop() // what a runtime does with a task's future that panicked
	f1.Drop()
	if init1.drops != 1 {
		t.Fatalf("the panicked initialiser's future was dropped %d times; want 1", init1.drops)
	}
	if tc3.wakes.Load() != 0 {
		t.Fatal("a later Drop of the panicked future handed the turn on a second time")
	}
	expectPanic(t, "polled after Drop", func() { f1.Poll(tc1.cx) })

	// The second caller runs its own initialiser (pending): the cell is busy, the third
	// caller still waits.
	if _, ok := f2.Poll(tc2.cx); ok {
		t.Fatal("second caller ready with a pending initialiser")
	}
	if err := c.Set(9); err != ErrOnceCellBusy {
		t.Fatalf("Set while the second caller initialises: %v; want ErrOnceCellBusy", err)
	}
	if _, ok := f3.Poll(tc3.cx); ok {
		t.Fatal("third caller ready while the second initialises")
	}
	// The second caller gives up: the turn goes to the third, which sets 3.
	f2.Drop()
	if init2.drops != 1 || tc3.wakes.Load() != 1 {
		t.Fatalf("after the second caller's Drop: its initialiser dropped %d times, third caller woken %d times; want 1, 1",
			init2.drops, tc3.wakes.Load())
	}
	if v, ok := f3.Poll(tc3.cx); !ok || v != 3 {
		t.Fatalf("third caller = %v, %v; want 3, true", v, ok)
	}
	if v, ok := c.Get(); !ok || v != 3 {
		t.Fatalf("Get = %v, %v; want 3, true", v, ok)
	}
}

// TestHostile2OnceCellTryInitPanicAndGoexit: GetOrTryInit's future gives the turn back
// whether init itself panics, its future's Poll panics, or the initialiser ends the
// polling goroutine with runtime.Goexit.
func TestHostile2OnceCellTryInitPanicAndGoexit(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	var c OnceCell[int]
	tc := newTestCx()

	f := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] { panic("init failed") })
	if !pollPanics[blitzio.Result[int]](f, tc.cx) {
		t.Fatal("init's panic did not reach the caller")
	}
	if c.state.Load() != onceEmpty {
		t.Fatalf("after init panicked: cell state %d; want empty", c.state.Load())
	}

	f = c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		return blitzio.PollFn(func(*blitzio.Context) (blitzio.Result[int], bool) { panic("poll failed") })
	})
	if !pollPanics[blitzio.Result[int]](f, tc.cx) {
		t.Fatal("the initialiser future's panic did not reach the caller")
	}
	f.Drop() // idempotent
	if c.state.Load() != onceEmpty {
		t.Fatalf("after the initialiser's future panicked: cell state %d; want empty", c.state.Load())
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		f := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
			return blitzio.Lazy(func() blitzio.Result[int] { runtime.Goexit(); return blitzio.Result[int]{} })
		})
		f.Poll(tc.cx)
		t.Error("Poll returned after runtime.Goexit")
	}()
	<-done
	if err := c.Set(5); err != nil {
		t.Fatalf("Set after the initialiser called runtime.Goexit: %v; want nil (state %d)", err, c.state.Load())
	}
}

// TestHostile2OnceCellPanicAsTaskFuture: a GetOrInit future spawned as a task by itself
// (not awaited), whose initialiser panics: the future hands the turn on as the panic
// leaves its Poll, and the runtime's Drop of it afterwards changes nothing. The waiting
// task initialises the cell.
func TestHostile2OnceCellPanicAsTaskFuture(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	var c OnceCell[int]
	release := make(chan struct{})
	drops := 0
	h1 := blitzio.Spawn(rt, c.GetOrInit(func() blitzio.Future[int] {
		return &dropCounter[int]{drops: &drops, f: blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
			select {
			case <-release:
				panic("init failed")
			default:
				cx.Yield()
				return 0, false
			}
		})}
	}))
	for deadline := time.Now().Add(5 * time.Second); c.state.Load() != onceBusy; {
		if time.Now().After(deadline) {
			t.Fatal("the first task never started initialising")
		}
		time.Sleep(time.Millisecond)
	}
	h2 := blitzio.Spawn(rt, c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(42) }))
	h3 := blitzio.Spawn(rt, c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(43) }))
	for deadline := time.Now().Add(5 * time.Second); ; {
		c.mu.Lock()
		n := c.waiters.n
		c.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other tasks never queued")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if _, err := h1.Wait(); err == nil {
		t.Fatal("the panicking initialiser's task reported no error")
	}
	v2, err2 := h2.Wait()
	v3, err3 := h3.Wait()
	if err2 != nil || err3 != nil || v2 != 42 || v3 != 42 {
		t.Fatalf("waiting tasks: %v, %v and %v, %v; want 42, nil for both", v2, err2, v3, err3)
	}
	if drops != 1 {
		t.Fatalf("the panicked initialiser's future was dropped %d times; want 1", drops)
	}
}

// dropCounter wraps a future and counts its Drops.
type dropCounter[T any] struct {
	drops *int
	f     blitzio.Future[T]
}

func (d *dropCounter[T]) Poll(cx *blitzio.Context) (T, bool) { return d.f.Poll(cx) }
func (d *dropCounter[T]) Drop()                              { *d.drops++ }

// TestHostile2OnceCellNilReceiver: every OnceCell method called on a nil *OnceCell panics
// with a message naming the type, as the other primitives do, instead of a bare nil
// dereference.
func TestHostile2OnceCellNilReceiver(t *testing.T) {
	var c *OnceCell[int]
	for name, call := range map[string]func(){
		"Get":              func() { c.Get() },
		"IsSet":            func() { c.IsSet() },
		"Set":              func() { c.Set(1) },
		"GetOrInit":        func() { c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(1) }) },
		"GetOrTryInit":     func() { c.GetOrTryInit(nil) },
		"GetOrInitContext": func() { c.GetOrInitContext(context.Background(), nil) },
	} {
		expectPanic(t, "OnceCell."+name+" called on a nil *OnceCell", call)
	}
}

// panicTwice is an initialiser future whose Poll and Drop both panic.
type panicTwice struct{}

func (panicTwice) Poll(*blitzio.Context) (int, bool) { panic("poll failed") }
func (panicTwice) Drop()                             { panic("drop failed") }

// TestHostile2OnceCellInitDropPanics: when the initialiser's future panics in Poll and
// again in the Drop that follows, the turn is still handed on, and the caller sees the
// first panic (what went wrong), not the second.
func TestHostile2OnceCellInitDropPanics(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	var c OnceCell[int]
	tc0, tc, tc2 := newTestCx(), newTestCx(), newTestCx()
	// f0 holds the turn while f and f2 queue behind it, then gives it up to f.
	f0 := c.GetOrInit(func() blitzio.Future[int] { return &panicPoll{hold: true} })
	f := c.GetOrInit(func() blitzio.Future[int] { return panicTwice{} })
	f2 := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Ready(2) })
	for _, p := range []struct {
		f  *OnceFuture[int]
		cx *blitzio.Context
	}{{f0, tc0.cx}, {f, tc.cx}, {f2, tc2.cx}} {
		if _, ok := p.f.Poll(p.cx); ok {
			t.Fatal("a caller is ready before any initialiser finished")
		}
	}
	f0.Drop()
	if tc.wakes.Load() != 1 {
		t.Fatalf("the caller handed the turn was woken %d times; want 1", tc.wakes.Load())
	}

	var got any
	func() {
		defer func() { got = recover() }()
		f.Poll(tc.cx)
	}()
	if got != "poll failed" {
		t.Fatalf("recovered %v; want the initialiser's first panic, \"poll failed\"", got)
	}
	f.Drop()
	if tc2.wakes.Load() != 1 {
		t.Fatalf("second caller woken %d times; want 1", tc2.wakes.Load())
	}
	if v, ok := f2.Poll(tc2.cx); !ok || v != 2 {
		t.Fatalf("second caller = %v, %v; want 2, true", v, ok)
	}
}
