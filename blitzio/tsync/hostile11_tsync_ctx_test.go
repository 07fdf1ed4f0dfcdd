package tsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h11Timeout bounds every wait of the hostile11 tests: far beyond anything a loaded
// machine needs, short enough that a lost wake-up fails with a message, not a hang.
const h11Timeout = 10 * time.Second

// h11Recv receives from ch, failing the test (naming what) after h11Timeout.
func h11Recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(h11Timeout):
		t.Fatalf("%s: nothing after %v (lost wake-up or deadlock)", what, h11Timeout)
		panic("unreachable")
	}
}

// h11Go runs f on a new goroutine and returns a channel that receives its result.
func h11Go[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// h11Join waits for a task, failing the test after h11Timeout.
func h11Join[T any](t *testing.T, what string, h blitzio.JoinHandle[T]) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	r := h11Recv(t, what, h11Go(func() res { v, err := h.Wait(); return res{v, err} }))
	return r.v, r.err
}

// h11InTask runs f as a task's Poll (async false) or inside an Async function (async
// true) and returns its error, or the task's error if it panicked.
func h11InTask(t *testing.T, rt *blitzio.Runtime, what string, async bool, f func() error) (error, error) {
	t.Helper()
	var fut blitzio.Future[error]
	if async {
		fut = blitzio.Async(func(*blitzio.Co) error { return f() })
	} else {
		fut = blitzio.PollFn(func(*blitzio.Context) (error, bool) { return f(), true })
	}
	return h11Join(t, what, blitzio.Spawn(rt, fut))
}

// h11Race runs the functions at the same moment, as near as goroutines allow, and
// returns when all have returned.
func h11Race(fs ...func()) {
	var start, wg sync.WaitGroup
	start.Add(1)
	wg.Add(len(fs))
	for _, f := range fs {
		go func() {
			defer wg.Done()
			start.Wait()
			f()
		}()
	}
	start.Done()
	wg.Wait()
}

// h11RwQueued is the number of readers and writers queued on l.
func h11RwQueued(l *RwLock) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiters.n
}

func h11WaitRwQueued(t *testing.T, l *RwLock, n int) {
	t.Helper()
	for deadline := time.Now().Add(h11Timeout); h11RwQueued(l) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d RwLock waiters queued, want %d", h11RwQueued(l), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestHostile11ContextFormsDoneContextInTask: the package's rule is that a blocking form
// called from a task panics when it would have to wait. With a context that is already
// done nothing waits: every Context form returns ctx.Err() at once, from a task's Poll and
// from an Async function alike (Mutex, RwLock, Semaphore and Barrier always did; the
// channels, Notify.WaitContext, CancelToken.WaitContext and OnceCell.GetOrInitContext
// panicked), and leaves nothing queued. With a live
// context the same calls are refused, naming the future form.
func TestHostile11ContextFormsDoneContextInTask(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := newRT(t, 2)
	done, cancel := context.WithCancel(context.Background())
	cancel()

	var m Mutex
	gm := m.Lock()
	defer gm.Unlock()
	mo := NewMutexOf(7)
	gmo := mo.Lock()
	defer gmo.Unlock()
	var l RwLock
	wl := l.Write()
	defer wl.Unlock()
	sem := NewSemaphore(0)
	bar := NewBarrier(2)
	tok := NewCancelToken()
	var ntf Notify
	var cell OnceCell[int]
	hold := cell.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
	hold.Poll(newTestCx().cx) // the cell stays busy: GetOrInitContext would wait
	defer hold.Drop()
	_, brx := NewChannel[int](1)
	btx, _ := NewChannel[int](1)
	if err := btx.TrySend(1); err != nil {
		t.Fatal(err)
	}
	_, urx := NewUnbounded[int]()
	_, bcrx := NewBroadcast[int](4)
	_, orx := NewOneshot[int]()
	_, wrx := NewWatch(0)

	forms := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Mutex.LockContext", func(ctx context.Context) error { _, err := m.LockContext(ctx); return err }},
		{"Mutex.LockContext", func(ctx context.Context) error { _, err := mo.LockContext(ctx); return err }},
		{"RwLock.ReadContext", func(ctx context.Context) error { _, err := l.ReadContext(ctx); return err }},
		{"RwLock.WriteContext", func(ctx context.Context) error { _, err := l.WriteContext(ctx); return err }},
		{"Semaphore.AcquireContext", func(ctx context.Context) error { _, err := sem.AcquireContext(ctx, 1); return err }},
		{"Barrier.WaitContext", func(ctx context.Context) error { _, err := bar.WaitContext(ctx); return err }},
		{"CancelToken.WaitContext", func(ctx context.Context) error { return tok.WaitContext(ctx) }},
		{"Notify.WaitContext", func(ctx context.Context) error { return ntf.WaitContext(ctx) }},
		{"OnceCell.GetOrInitContext", func(ctx context.Context) error {
			_, err := cell.GetOrInitContext(ctx, func(context.Context) (int, error) { return 1, nil })
			return err
		}},
		{"Receiver.RecvContext", func(ctx context.Context) error { _, err := brx.RecvContext(ctx); return err }},
		{"Sender.SendContext", func(ctx context.Context) error { return btx.SendContext(ctx, 2) }},
		{"UnboundedReceiver.RecvContext", func(ctx context.Context) error { _, err := urx.RecvContext(ctx); return err }},
		{"BroadcastReceiver.RecvContext", func(ctx context.Context) error { _, err := bcrx.RecvContext(ctx); return err }},
		{"OneshotReceiver.RecvContext", func(ctx context.Context) error { _, err := orx.RecvContext(ctx); return err }},
		{"WatchReceiver.ChangedContext", func(ctx context.Context) error { return wrx.ChangedContext(ctx) }},
		{"RecvAnyContext", func(ctx context.Context) error {
			_, err := RecvAnyContext[int](ctx, urx, bcrx)
			return err
		}},
	}
	for _, f := range forms {
		for _, async := range []bool{false, true} {
			what := fmt.Sprintf("%s from a task (async=%v)", f.name, async)
			got, terr := h11InTask(t, rt, what, async, func() error { return f.call(done) })
			if terr != nil {
				t.Errorf("%s with a done context: the task failed: %v (want ctx.Err() at once: nothing "+
					"would wait)", what, terr)
				continue
			}
			if !errors.Is(got, context.Canceled) {
				t.Errorf("%s with a done context = %v, want context.Canceled", what, got)
			}
			_, terr = h11InTask(t, rt, what, async, func() error { return f.call(context.Background()) })
			if terr == nil || !strings.Contains(terr.Error(), "cannot block from within a runtime: "+f.name) {
				t.Errorf("%s with a live context: task error %v, want the refusal naming %s", what, terr, f.name)
			}
		}
	}
	// Nothing the calls queued stayed behind.
	if mutexQueued(&m) != 0 || mutexQueued(&mo.mu) != 0 || h11RwQueued(&l) != 0 || !sem.waiters.empty() ||
		bar.arrived != 0 || !tok.waiters.empty() || !ntf.waiters.empty() || !cell.waiters.empty() {
		t.Fatal("a Context form left a waiter queued on a primitive")
	}
	for name, q := range map[string]*waitSet{
		"bounded recv": &brx.c.recvQ, "bounded send": &btx.c.sendQ, "unbounded": &urx.c.recvQ,
		"broadcast": &bcrx.c.recvQ, "watch": &wrx.c.recvQ,
	} {
		if n := queuedIn(q); n != 0 {
			t.Fatalf("%s: %d waiters left registered", name, n)
		}
	}
}

// TestHostile11MutexLockContextRaceUnlockCancel: a LockContext parked behind the holder,
// a plain Lock queued behind it, and the context ending at the very moment the holder
// unlocks. Whatever the interleaving, the LockContext either returns the lock (and it is
// exclusive) or context.Canceled; the Lock behind it is never stranded, and the lock ends
// free: nothing handed to the giving-up waiter is lost.
func TestHostile11MutexLockContextRaceUnlockCancel(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	var inside atomic.Int32
	enter := func(who string) {
		if n := inside.Add(1); n != 1 {
			t.Errorf("%s: %d holders of the Mutex at once", who, n)
		}
		inside.Add(-1)
	}
	got, gaveUp := 0, 0
	for i := range stressScale(150) {
		var m Mutex
		g := m.Lock()
		ctx, cancel := context.WithCancel(context.Background())
		a := h11Go(func() error {
			ga, err := m.LockContext(ctx)
			if err == nil {
				enter("LockContext")
				ga.Unlock()
			}
			return err
		})
		waitMutexQueued(t, &m, 1)
		b := h11Go(func() struct{} {
			gb := m.Lock()
			enter("Lock")
			gb.Unlock()
			return struct{}{}
		})
		waitMutexQueued(t, &m, 2)
		var steal MutexGuard
		switch i % 3 {
		case 0:
			h11Race(cancel, g.Unlock)
		case 1:
			// Unlock wakes the LockContext waiter; a running goroutine takes the lock
			// before the woken one runs (normal mode allows it), and then the context
			// ends: the waiter's last poll loses, and it gives up with the wake, which
			// must reach the Lock behind it when the lock is free again.
			g.Unlock()
			if s, ok := m.TryLock(); ok {
				steal = s
			}
			cancel()
		default:
			cancel()
			g.Unlock()
		}
		err := h11Recv(t, fmt.Sprintf("iteration %d: LockContext", i), a)
		if steal.m != nil {
			steal.Unlock()
		}
		switch {
		case err == nil:
			got++
		case errors.Is(err, context.Canceled):
			gaveUp++
		default:
			t.Fatalf("iteration %d: LockContext = %v", i, err)
		}
		h11Recv(t, fmt.Sprintf("iteration %d: the Lock queued behind a LockContext that gave up", i), b)
		g2, ok := m.TryLock()
		if !ok {
			t.Fatalf("iteration %d: the lock is held after every holder unlocked: %s", i, m.debugState())
		}
		g2.Unlock()
	}
	t.Logf("LockContext got the lock %d times, gave up %d times", got, gaveUp)
}

// TestHostile11MutexOf: MutexOf's forms hand out guards to the protected value; TryLock
// fails while held, LockContext gives up with the context (the value untouched), and a
// LockAsync future waits and then gets a guard through which a change is seen by the next
// holder. A nil *MutexOf is named in the panic.
func TestHostile11MutexOf(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	mo := NewMutexOf([]int{1})
	g := mo.Lock()
	if _, ok := mo.TryLock(); ok {
		t.Fatal("MutexOf.TryLock succeeded while held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if g2, err := mo.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) || g2.Value() != nil {
		t.Fatalf("MutexOf.LockContext on a held lock = %v, %v; want DeadlineExceeded and no value", g2.Value(), err)
	}
	f := mo.LockAsync()
	tc := newTestCx()
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("LockAsync ready while held")
	}
	*g.Value() = append(*g.Value(), 2)
	g.Unlock()
	if tc.wakes.Load() == 0 {
		t.Fatal("Unlock did not wake the queued LockAsync")
	}
	ga, ok := f.Poll(tc.cx)
	if !ok {
		t.Fatal("LockAsync not ready after the unlock")
	}
	if v := *ga.Value(); len(v) != 2 || v[1] != 2 {
		t.Fatalf("value under the lock = %v, want [1 2]", v)
	}
	ga.Unlock()
	gc, err := mo.LockContext(context.Background())
	if err != nil || len(*gc.Value()) != 2 {
		t.Fatalf("MutexOf.LockContext on a free lock = %v, %v", gc.Value(), err)
	}
	gc.Unlock()
	if gt, ok := mo.TryLock(); !ok {
		t.Fatal("MutexOf.TryLock failed on a free lock")
	} else {
		gt.Unlock()
	}
	var nilMo *MutexOf[int]
	expectPanic(t, "nil *Mutex", func() { nilMo.LockAsync() })
}

// TestHostile11RwLockContextForms: ReadContext and WriteContext give up when the context
// ends before or while they wait, leaving no hold behind; a writer that gives up admits
// the readers queued behind it at once (they no longer wait behind anyone but readers);
// Write from a plain goroutine waits for the readers and then holds the lock alone.
func TestHostile11RwLockContextForms(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	var l RwLock
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()

	// A done context while a writer holds the lock: both forms give up, nothing queued.
	w := l.Write()
	if _, err := l.ReadContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadContext(done) under a writer = %v", err)
	}
	if _, err := l.WriteContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteContext(done) under a writer = %v", err)
	}
	// Ending while parked.
	ctx, cancel := context.WithCancel(context.Background())
	rd := h11Go(func() error { _, err := l.ReadContext(ctx); return err })
	h11WaitRwQueued(t, &l, 1)
	cancel()
	if err := h11Recv(t, "ReadContext parked under a writer", rd); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadContext cancelled while parked = %v", err)
	}
	if h11RwQueued(&l) != 0 {
		t.Fatal("a cancelled ReadContext stayed queued")
	}
	w.Unlock()
	if w2, ok := l.TryWrite(); !ok {
		t.Fatal("the lock is not free after the writer unlocked: a cancelled ReadContext left a read hold")
	} else {
		w2.Unlock()
	}

	// A reader holds; a writer waits with WriteContext; a reader queues behind the writer
	// (fairness). The writer gives up: the queued reader gets in while the first reader
	// still holds the lock.
	r1 := l.Read()
	ctx, cancel = context.WithCancel(context.Background())
	wr := h11Go(func() error { _, err := l.WriteContext(ctx); return err })
	h11WaitRwQueued(t, &l, 1)
	if _, ok := l.TryRead(); ok {
		t.Fatal("TryRead succeeded while a writer waits (readers must queue behind it)")
	}
	r2 := h11Go(func() RwLockReadGuard { return l.Read() })
	h11WaitRwQueued(t, &l, 2)
	cancel()
	if err := h11Recv(t, "WriteContext parked behind a reader", wr); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteContext cancelled while parked = %v", err)
	}
	g2 := h11Recv(t, "the reader queued behind a writer that gave up", r2)
	rwRefusesWriter(t, &l, "two readers hold")
	g2.Unlock()
	r1.Unlock()

	// Write from a plain goroutine: parks behind a reader, then holds alone.
	r1 = l.Read()
	wch := h11Go(func() RwLockWriteGuard { return l.Write() })
	h11WaitRwQueued(t, &l, 1)
	r1.Unlock()
	wg := h11Recv(t, "Write parked behind a reader", wch)
	if _, ok := l.TryRead(); ok {
		t.Fatal("TryRead succeeded while Write's guard holds the lock")
	}
	wg.Unlock()
	// A free lock: both forms with a live context take it at once.
	rg, err := l.ReadContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rwRefusesWriter(t, &l, "ReadContext's hold")
	rg.Unlock()
	wg, err = l.WriteContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wg.Unlock()
}

// TestHostile11RwLockContextRaceUnlockCancel: a WriteContext parked behind a reader and a
// plain Read queued behind it, the context ending at the moment the reader unlocks;
// then the mirror image, a ReadContext parked behind a writer. The giving-up caller
// either holds the lock (exclusively, for the writer) or got context.Canceled, the
// waiter behind it always gets in, and the lock ends free.
func TestHostile11RwLockContextRaceUnlockCancel(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for i := range stressScale(100) {
		var l RwLock
		r := l.Read()
		ctx, cancel := context.WithCancel(context.Background())
		a := h11Go(func() error {
			g, err := l.WriteContext(ctx)
			if err == nil {
				if _, ok := l.TryRead(); ok {
					t.Errorf("iteration %d: a reader got in beside WriteContext's hold", i)
				}
				g.Unlock()
			}
			return err
		})
		h11WaitRwQueued(t, &l, 1)
		b := h11Go(func() struct{} { l.Read().Unlock(); return struct{}{} })
		h11WaitRwQueued(t, &l, 2)
		h11Race(cancel, r.Unlock)
		if err := h11Recv(t, "WriteContext", a); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("iteration %d: WriteContext = %v", i, err)
		}
		h11Recv(t, fmt.Sprintf("iteration %d: the Read queued behind a WriteContext that gave up", i), b)
		if g, ok := l.TryWrite(); !ok {
			t.Fatalf("iteration %d: the lock is held after every holder unlocked", i)
		} else {
			g.Unlock()
		}

		w := l.Write()
		ctx, cancel = context.WithCancel(context.Background())
		c := h11Go(func() error {
			g, err := l.ReadContext(ctx)
			if err == nil {
				g.Unlock()
			}
			return err
		})
		h11WaitRwQueued(t, &l, 1)
		d := h11Go(func() struct{} { l.Write().Unlock(); return struct{}{} })
		h11WaitRwQueued(t, &l, 2)
		h11Race(cancel, w.Unlock)
		if err := h11Recv(t, "ReadContext", c); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("iteration %d: ReadContext = %v", i, err)
		}
		h11Recv(t, fmt.Sprintf("iteration %d: the Write queued behind a ReadContext that gave up", i), d)
		if g, ok := l.TryWrite(); !ok {
			t.Fatalf("iteration %d: the lock is held after every holder unlocked (a read hold leaked)", i)
		} else {
			g.Unlock()
		}
	}
}

// TestHostile11CancelTokenWaitContext: WaitContext returns nil for a token cancelled
// before (even with a done context), during or racing with the context, and ctx.Err()
// when only the context ended; the token is untouched by a context that ends.
func TestHostile11CancelTokenWaitContext(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	tok := NewCancelToken()
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer tcancel()
	if err := tok.WaitContext(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitContext on a live token, context expiring = %v", err)
	}
	if err := tok.WaitContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitContext on a live token, done context = %v", err)
	}
	if tok.IsCancelled() {
		t.Fatal("a context that ended cancelled the token")
	}
	// Cancelled while parked.
	ch := h11Go(func() error { return tok.WaitContext(context.Background()) })
	ch2 := h11Go(func() error { return tok.WaitContext(tctx) }) // tctx is done by now: may return at once
	time.Sleep(time.Millisecond)
	tok.Cancel()
	if err := h11Recv(t, "WaitContext parked until Cancel", ch); err != nil {
		t.Fatalf("WaitContext on a token cancelled while parked = %v", err)
	}
	if err := h11Recv(t, "WaitContext with an expired context", ch2); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitContext = %v", err)
	}
	if err := tok.WaitContext(done); err != nil {
		t.Fatalf("WaitContext on a cancelled token with a done context = %v, want nil (cancelled wins)", err)
	}
	// The token cancelled first, then the context, while a goroutine waits on both: it
	// may wake on either, but the token was cancelled first, so the answer is nil.
	for i := range stressScale(500) {
		tok := NewCancelToken()
		ctx, cancel := context.WithCancel(context.Background())
		ch := h11Go(func() error { return tok.WaitContext(ctx) })
		tok.Cancel()
		cancel()
		if err := h11Recv(t, "WaitContext", ch); err != nil {
			t.Fatalf("iteration %d: the token was cancelled before the context, WaitContext = %v", i, err)
		}
	}
}

// TestHostile11CancelTreeLooksAtomic: Cancel cancels a token "and all its descendants".
// Someone who sees the token's Done channel closed (its Context done, its Cancelled
// future ready) must also see every descendant cancelled: otherwise a goroutine waiting
// with child.WaitContext(parent.Context()) wakes on the parent's channel while the walk
// has not yet reached the child, and gets context.Canceled although the child is
// cancelled by the very same call (and WaitContext's own rule is that a cancelled token
// wins). Many siblings make the walk long enough to catch that window.
func TestHostile11CancelTreeLooksAtomic(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	const siblings = 20000
	for i := range 10 {
		root := NewCancelToken()
		child := root.Child() // first child: the last the walk reaches
		grandchild := child.Child()
		for range siblings {
			root.Child()
		}
		wait := h11Go(func() error { return grandchild.WaitContext(root.Context()) })
		seen := h11Go(func() bool {
			<-root.Done()
			return child.IsCancelled() && grandchild.IsCancelled()
		})
		time.Sleep(time.Millisecond)
		root.Cancel()
		if !h11Recv(t, "Done observer", seen) {
			t.Fatalf("iteration %d: root's Done closed while a descendant was not yet cancelled", i)
		}
		if err := h11Recv(t, "WaitContext", wait); err != nil {
			t.Fatalf("iteration %d: grandchild.WaitContext(root.Context()) = %v after root.Cancel(), want nil: "+
				"the grandchild was cancelled by the same call", i, err)
		}
	}
}

// TestHostile11UnboundedRecvContextNoLoss: a RecvContext parked on an empty unbounded
// channel while a value is sent and the context ends at the same moment: the value is
// either returned by RecvContext or still in the channel, never consumed and dropped,
// never received twice.
func TestHostile11UnboundedRecvContextNoLoss(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	type res struct {
		v   int
		err error
	}
	for i := range stressScale(300) {
		tx, rx := NewUnbounded[int]()
		ctx, cancel := context.WithCancel(context.Background())
		ch := h11Go(func() res { v, err := rx.RecvContext(ctx); return res{v, err} })
		waitParked(t, "RecvContext", &rx.c.recvQ, 1)
		h11Race(cancel, func() {
			if err := tx.Send(i); err != nil {
				t.Errorf("Send: %v", err)
			}
		})
		r := h11Recv(t, "RecvContext", ch)
		n := 0
		switch {
		case r.err == nil:
			if r.v != i {
				t.Fatalf("iteration %d: RecvContext = %d", i, r.v)
			}
			n++
		case !errors.Is(r.err, context.Canceled):
			t.Fatalf("iteration %d: RecvContext error %v", i, r.err)
		}
		if v, err := rx.TryRecv(); err == nil {
			if v != i {
				t.Fatalf("iteration %d: TryRecv = %d", i, v)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("iteration %d: the value was received %d times (RecvContext %v)", i, n, r.err)
		}
		if queuedIn(&rx.c.recvQ) != 0 {
			t.Fatalf("iteration %d: RecvContext left its waiter registered", i)
		}
	}
}

// TestHostile11BroadcastRecvContext: a goroutine receiving with RecvContext from a small
// broadcast channel while the sender outruns it: every value it gets is the one it
// expected, a *LagError accounts exactly for the values skipped, and the end is
// ErrClosed once the sender closed. A value racing with the context's end is returned or
// left for the next receive, never lost. A RecvContext parked when its own handle is
// closed returns ErrClosed.
func TestHostile11BroadcastRecvContext(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	const n = 200
	tx, rx := NewBroadcast[int](2)
	out := h11Go(func() error {
		next := 0
		for {
			v, err := rx.RecvContext(context.Background())
			var lag *LagError
			switch {
			case errors.As(err, &lag):
				if lag.Missed == 0 {
					return errors.New("a LagError that missed nothing")
				}
				next += int(lag.Missed)
			case errors.Is(err, ErrClosed):
				if next != n {
					return fmt.Errorf("ErrClosed after accounting for %d values, want %d", next, n)
				}
				return nil
			case err != nil:
				return err
			default:
				if v != next {
					return fmt.Errorf("received %d, want %d", v, next)
				}
				next++
			}
		}
	})
	for i := range n {
		if err := tx.Send(i); err != nil {
			t.Fatalf("Send(%d): %v", i, err)
		}
	}
	tx.Close()
	if err := h11Recv(t, "the lagging RecvContext loop", out); err != nil {
		t.Fatal(err)
	}
	rx.Close()

	type res struct {
		v   int
		err error
	}
	for i := range stressScale(200) {
		tx, rx := NewBroadcast[int](4)
		ctx, cancel := context.WithCancel(context.Background())
		ch := h11Go(func() res { v, err := rx.RecvContext(ctx); return res{v, err} })
		waitParked(t, "broadcast RecvContext", &rx.c.recvQ, 1)
		h11Race(cancel, func() { _ = tx.Send(i) })
		r := h11Recv(t, "broadcast RecvContext", ch)
		got := 0
		if r.err == nil {
			if r.v != i {
				t.Fatalf("iteration %d: RecvContext = %d", i, r.v)
			}
			got++
		} else if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("iteration %d: RecvContext error %v", i, r.err)
		}
		if v, err := rx.TryRecv(); err == nil {
			if v != i {
				t.Fatalf("iteration %d: TryRecv = %d", i, v)
			}
			got++
		}
		if got != 1 {
			t.Fatalf("iteration %d: the value was received %d times", i, got)
		}
	}

	// The handle closed under a parked RecvContext.
	tx, rx = NewBroadcast[int](4)
	ch := h11Go(func() error { _, err := rx.RecvContext(context.Background()); return err })
	waitParked(t, "broadcast RecvContext", &rx.c.recvQ, 1)
	rx.Close()
	if err := h11Recv(t, "RecvContext through a handle closed meanwhile", ch); !errors.Is(err, ErrClosed) {
		t.Fatalf("RecvContext through a handle closed meanwhile = %v, want ErrClosed", err)
	}
	if err := tx.Send(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send with every receiver closed = %v", err)
	}
}
