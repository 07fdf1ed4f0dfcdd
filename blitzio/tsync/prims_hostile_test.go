package tsync

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestBlockingFormsRefuseTasks: a blocking form that would park, called from a task's
// Poll or from an Async function (on either of two runtimes), panics with a message naming the future form, instead
// of blocking a worker; what its probe queued is dropped (nothing is lost), and a blocking
// form that need not wait works anywhere. This also fails if blitzio renames the entry
// functions refuseInRuntime looks for.
func TestBlockingFormsRefuseTasks(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt, rt2 := newRT(t, 2), newRT(t, 1)
	var m Mutex
	var n Notify
	var l RwLock
	s := NewSemaphore(0)
	b := NewBarrier(2)
	tok := NewCancelToken()
	var c OnceCell[int]
	g := m.Lock()
	w := l.Write()
	checks := map[string]func(){
		"Mutex.Lock":        func() { m.Lock() },
		"Notify.Wait":       func() { n.Wait() },
		"RwLock.Read":       func() { l.Read() },
		"Semaphore.Acquire": func() { s.Acquire(1) },
		"Barrier.Wait":      func() { b.Wait() },
		"CancelToken.Wait":  func() { tok.Wait() },
		"OnceCell.GetOrInitContext": func() {
			c.GetOrInitContext(context.Background(), func(context.Context) (int, error) { return 0, nil })
		},
	}
	// An initialiser that never finishes keeps the cell busy.
	hold := c.GetOrInit(func() blitzio.Future[int] { return blitzio.Pending[int]() })
	hold.Poll(newTestCx().cx)
	for name, call := range checks {
		for k, async := range []bool{false, true, false, true} {
			on := rt
			if k >= 2 {
				on = rt2 // the same values, from a second runtime's tasks
			}
			var fut blitzio.Future[int]
			if async {
				fut = blitzio.Async(func(*blitzio.Co) int { call(); return 0 })
			} else {
				fut = blitzio.PollFn(func(*blitzio.Context) (int, bool) { call(); return 0, true })
			}
			_, err := blitzio.Spawn(on, fut).Wait()
			if err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime: "+name) {
				t.Fatalf("%s from a task (async=%v): err = %v", name, async, err)
			}
		}
	}
	// Nothing the refused calls queued is left behind.
	if !m.waiters.empty() || !n.waiters.empty() || !l.waiters.empty() || !s.waiters.empty() || b.arrived != 0 {
		t.Fatal("a refused blocking call left a waiter queued")
	}
	if !c.waiters.empty() {
		t.Fatal("a refused GetOrInitContext left a waiter queued")
	}
	hold.Drop()
	g.Unlock()
	w.Unlock()
	// Calls that need not wait are fine from a task.
	n.NotifyOne()
	tok.Cancel()
	h := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (int, bool) {
		g := m.Lock()
		g.Unlock()
		n.Wait()
		tok.Wait()
		return 1, true
	}))
	if v, err := h.Wait(); err != nil || v != 1 {
		t.Fatalf("non-blocking uses of blocking forms from a task: %v %v", v, err)
	}
}

// TestPanickingWakerStrandsNobody: a waker that panics (a WakerFunc breaking its
// contract) while a group is released does not leave the rest of the group asleep, and
// its panic still reaches the caller.
func TestPanickingWakerStrandsNobody(t *testing.T) {
	bad := blitzio.NewContext(nil, blitzio.WakerFunc(func() { panic("bad waker") }))
	for _, size := range []int{2, 4, 9} {
		var n Notify
		var woken atomic.Int64
		good := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woken.Add(1) }))
		n.Notified().Poll(bad)
		for range size - 1 {
			n.Notified().Poll(good)
		}
		expectPanic(t, "bad waker", n.NotifyWaiters)
		if woken.Load() != int64(size-1) {
			t.Fatalf("group of %d: %d of %d good waiters woken", size, woken.Load(), size-1)
		}
	}
	// The same for a Barrier generation, with the bad waker last.
	b := NewBarrier(4)
	var woken atomic.Int64
	good := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woken.Add(1) }))
	b.WaitAsync().Poll(good)
	b.WaitAsync().Poll(good)
	b.WaitAsync().Poll(bad)
	expectPanic(t, "bad waker", func() { b.WaitAsync().Poll(good) })
	if woken.Load() != 2 {
		t.Fatalf("barrier: %d of 2 good parties woken", woken.Load())
	}
}

// TestBlockingFormsFromBlockingPool: SpawnBlocking jobs are where blocking belongs; the
// blocking forms work there, joined by tasks awaiting the future forms.
func TestBlockingFormsFromBlockingPool(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	s := NewSemaphore(1)
	counter := 0
	var hs []blitzio.JoinHandle[int]
	for i := range 8 {
		if i%2 == 0 {
			hs = append(hs, blitzio.SpawnBlocking(rt, func() int {
				for range 200 {
					p, err := s.Acquire(1)
					if err != nil {
						panic(err)
					}
					g := m.Lock()
					counter++
					g.Unlock()
					p.Release()
				}
				return i
			}))
			continue
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			for range 200 {
				r := blitzio.Await(co, s.AcquireAsync(1))
				g := blitzio.Await(co, m.LockAsync())
				counter++
				g.Unlock()
				r.Value.Release()
			}
			return i
		})))
	}
	waitAll(t, hs)
	if counter != 8*200 {
		t.Fatalf("counter = %d", counter)
	}
}

// TestNilReceivers: the entry points of every primitive panic with a message naming the
// type when called on a nil pointer, instead of a bare nil dereference deep inside (or,
// worse, a future that fails later on another goroutine).
func TestNilReceivers(t *testing.T) {
	var (
		m  *Mutex
		l  *RwLock
		s  *Semaphore
		n  *Notify
		b  *Barrier
		c  *OnceCell[int]
		tk *CancelToken
	)
	for want, calls := range map[string][]func(){
		"nil *Mutex":       {func() { m.Lock() }, func() { m.TryLock() }, func() { m.LockAsync() }},
		"nil *RwLock":      {func() { l.ReadAsync() }, func() { l.WriteAsync() }, func() { l.TryRead() }, func() { l.TryWrite() }},
		"nil *Semaphore":   {func() { s.AcquireAsync(1) }, func() { s.TryAcquire(1) }, func() { s.AddPermits(1) }, func() { s.Close() }},
		"nil *Notify":      {func() { n.NotifyOne() }, func() { n.NotifyWaiters() }, func() { n.Notified() }, func() { n.TryWait() }},
		"nil *Barrier":     {func() { b.WaitAsync() }},
		"nil *OnceCell":    {func() { c.GetOrInit(nil) }, func() { c.GetOrTryInit(nil) }},
		"nil *CancelToken": {func() { tk.Child() }, func() { tk.Cancel() }, func() { tk.Cancelled() }, func() { tk.Done() }, func() { tk.Context() }},
	} {
		for _, call := range calls {
			expectPanic(t, want, call)
		}
	}
}
