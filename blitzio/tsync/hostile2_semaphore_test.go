package tsync

import (
	"context"
	"testing"
	"time"
)

// TestHostile2SemaphoreAcquireZeroBehindWaiter: AcquireAsync's documentation says that
// acquiring 0 permits is ready at once unless the semaphore is closed. With a waiter
// queued, a 0-permit acquire is pending.
func TestHostile2SemaphoreAcquireZeroBehindWaiter(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	s := NewSemaphore(0)
	tc := newTestCx()
	big := s.AcquireAsync(1)
	if _, ok := big.Poll(tc.cx); ok {
		t.Fatal("acquire of 1 from an empty semaphore is ready")
	}
	zero := s.AcquireAsync(0)
	r, ok := zero.Poll(tc.cx)
	if !ok {
		t.Fatal("AcquireAsync(0) is pending behind a waiter; the documentation says it is ready at once unless closed")
	}
	if r.Err != nil || r.Value.N() != 0 {
		t.Fatalf("AcquireAsync(0) = %v, %v", r.Value.N(), r.Err)
	}
	big.Drop()
}

// TestHostile2SemaphoreZeroWaiterStrandedAfterHeadDrops: whatever one thinks of a
// 0-permit acquire queueing behind a waiter, once that waiter is dropped the 0-permit
// acquire is at the head and needs nothing. AcquireFuture.Drop only runs addLocked when
// it returns permits or the queue becomes empty, so nobody wakes the 0-permit waiter: it
// sleeps until some unrelated Release or AddPermits, and TryAcquire(0) keeps failing
// with ErrNoPermits meanwhile (semWaiters stays set).
func TestHostile2SemaphoreZeroWaiterStrandedAfterHeadDrops(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	s := NewSemaphore(0)
	tc := newTestCx()
	big := s.AcquireAsync(1)
	if _, ok := big.Poll(tc.cx); ok {
		t.Fatal("acquire of 1 from an empty semaphore is ready")
	}
	zero := s.AcquireAsync(0)
	if _, ok := zero.Poll(tc.cx); ok {
		zero.Drop()
		big.Drop()
		t.Skip("AcquireAsync(0) is ready at once: nothing to strand")
	}
	wakesBefore := tc.wakes.Load()
	big.Drop()
	r, ok := zero.Poll(tc.cx)
	if !ok || tc.wakes.Load() == wakesBefore {
		t.Fatalf("0-permit acquire left at the head of the queue: woken %v, ready %v; TryAcquire(0) = %v",
			tc.wakes.Load() != wakesBefore, ok, func() error { _, err := s.TryAcquire(0); return err }())
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
}

// TestHostile2SemaphoreZeroPermitForms: every acquire form takes 0 permits at once, even
// behind a queued waiter (as Tokio's acquire_many(0) does), without disturbing that
// waiter; once the semaphore is closed, every form fails with ErrSemaphoreClosed.
func TestHostile2SemaphoreZeroPermitForms(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	s := NewSemaphore(0)
	tc := newTestCx()
	big := s.AcquireAsync(2)
	if _, ok := big.Poll(tc.cx); ok {
		t.Fatal("acquire of 2 from an empty semaphore is ready")
	}
	check := func(form string, p Permit, err error) {
		t.Helper()
		if err != nil || p.N() != 0 {
			t.Fatalf("%s(0) behind a waiter = %d permits, %v; want 0, nil", form, p.N(), err)
		}
		p.Release() // releasing nothing wakes nobody
	}
	p, err := s.TryAcquire(0)
	check("TryAcquire", p, err)
	p, err = s.Acquire(0)
	check("Acquire", p, err)
	p, err = s.AcquireContext(context.Background(), 0)
	check("AcquireContext", p, err)
	r, ok := s.AcquireAsync(0).Poll(newTestCx().cx)
	if !ok {
		t.Fatal("AcquireAsync(0) is pending behind a waiter")
	}
	check("AcquireAsync", r.Value, r.Err)
	if tc.wakes.Load() != 0 {
		t.Fatal("a 0-permit acquire woke the queued waiter")
	}
	// The waiter still comes first: it gets the next permits.
	if _, err := s.TryAcquire(1); err != ErrNoPermits {
		t.Fatalf("TryAcquire(1) behind a waiter: %v; want ErrNoPermits", err)
	}
	s.AddPermits(2)
	if r, ok := big.Poll(tc.cx); !ok || r.Err != nil || r.Value.N() != 2 {
		t.Fatalf("the waiter after AddPermits(2): %v, %v, %v; want 2 permits", ok, r.Value.N(), r.Err)
	}

	s.Close()
	if _, err := s.TryAcquire(0); err != ErrSemaphoreClosed {
		t.Fatalf("TryAcquire(0) on a closed semaphore: %v; want ErrSemaphoreClosed", err)
	}
	if _, err := s.Acquire(0); err != ErrSemaphoreClosed {
		t.Fatalf("Acquire(0) on a closed semaphore: %v; want ErrSemaphoreClosed", err)
	}
	if _, err := s.AcquireContext(context.Background(), 0); err != ErrSemaphoreClosed {
		t.Fatalf("AcquireContext(0) on a closed semaphore: %v; want ErrSemaphoreClosed", err)
	}
	if r, ok := s.AcquireAsync(0).Poll(newTestCx().cx); !ok || r.Err != ErrSemaphoreClosed {
		t.Fatalf("AcquireAsync(0) on a closed semaphore: %v, %v; want ErrSemaphoreClosed", ok, r.Err)
	}
}

// TestHostile2SemaphoreDropWakesNewHead: dropping a queued acquire serves the waiters
// behind it as far as the permits it had collected go, waking each one completed and no
// other; dropping one in the middle of the queue changes nothing for the others; and
// dropping the last waiter lets TryAcquire succeed again.
func TestHostile2SemaphoreDropWakesNewHead(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	s := NewSemaphore(2)
	type acq struct {
		f  *AcquireFuture
		tc *testCx
	}
	queue := func(n int64) acq {
		t.Helper()
		a := acq{s.AcquireAsync(n), newTestCx()}
		if _, ok := a.f.Poll(a.tc.cx); ok {
			t.Fatalf("acquire of %d is ready; want it queued", n)
		}
		return a
	}
	head := queue(3) // takes the 2 free permits as a down payment
	mid := queue(5)
	b, c, d := queue(1), queue(1), queue(1)

	mid.f.Drop() // from the middle: nobody behind the head moves
	for _, a := range []acq{head, b, c, d} {
		if a.tc.wakes.Load() != 0 {
			t.Fatal("dropping a waiter in the middle of the queue woke another")
		}
	}
	// The head's 2 permits go to b and c, the new heads in turn; d stays queued.
	head.f.Drop()
	for name, a := range map[string]acq{"b": b, "c": c} {
		if a.tc.wakes.Load() != 1 {
			t.Fatalf("%s woken %d times after the head dropped its 2 permits; want 1", name, a.tc.wakes.Load())
		}
		if r, ok := a.f.Poll(a.tc.cx); !ok || r.Err != nil || r.Value.N() != 1 {
			t.Fatalf("%s = %v, %d, %v; want 1 permit", name, ok, r.Value.N(), r.Err)
		}
	}
	if d.tc.wakes.Load() != 0 {
		t.Fatal("d woken though no permit is left for it")
	}
	if _, err := s.TryAcquire(0); err != nil {
		t.Fatalf("TryAcquire(0) with a waiter queued: %v", err)
	}
	// d, the last waiter, collected nothing: dropping it must still clear the waiters'
	// mark, so that a released permit goes to the pool and TryAcquire finds it.
	d.f.Drop()
	s.AddPermits(1)
	if p, err := s.TryAcquire(1); err != nil || p.N() != 1 {
		t.Fatalf("TryAcquire(1) after the last waiter dropped and a permit was added: %d, %v", p.N(), err)
	}
}

// TestHostile2SemaphoreNilReceiver: every Semaphore method called on a nil *Semaphore
// panics with a message naming the type, instead of a bare nil dereference.
func TestHostile2SemaphoreNilReceiver(t *testing.T) {
	var s *Semaphore
	for name, call := range map[string]func(){
		"Forget":         func() { s.Forget(1) },
		"Available":      func() { s.Available() },
		"IsClosed":       func() { s.IsClosed() },
		"TryAcquire":     func() { s.TryAcquire(0) },
		"AddPermits":     func() { s.AddPermits(1) },
		"Close":          func() { s.Close() },
		"AcquireAsync":   func() { s.AcquireAsync(0) },
		"Acquire":        func() { s.Acquire(0) },
		"AcquireContext": func() { s.AcquireContext(context.Background(), 0) },
	} {
		expectPanic(t, "Semaphore."+name+" called on a nil *Semaphore", call)
	}
}
