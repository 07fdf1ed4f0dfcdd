package tsync

import (
	"context"
	"errors"
	"testing"
)

// A Context form that takes something, given a context already done, returns ctx.Err()
// and takes nothing, even when it is free (the package doc's rule, as x/sync/semaphore):
// Mutex and Semaphore used to take a free lock or free permits, where RwLock and Barrier
// refused, so the same cancelled caller could end up holding a Mutex but not an RwLock.
func TestHostile11ContextDoneTakesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	var m Mutex
	if g, err := m.LockContext(ctx); !errors.Is(err, context.Canceled) {
		if err == nil {
			g.Unlock()
		}
		t.Errorf("Mutex.LockContext(done ctx) on a free lock = %v, want context.Canceled", err)
	}
	if m.IsLocked() {
		t.Error("Mutex.LockContext with a done ctx left the lock held")
	}

	mo := NewMutexOf(7)
	if _, err := mo.LockContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("MutexOf.LockContext(done ctx) = %v, want context.Canceled", err)
	}

	var rw RwLock
	if _, err := rw.ReadContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("RwLock.ReadContext(done ctx) = %v, want context.Canceled", err)
	}
	if _, err := rw.WriteContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("RwLock.WriteContext(done ctx) = %v, want context.Canceled", err)
	}

	s := NewSemaphore(3)
	if p, err := s.AcquireContext(ctx, 2); !errors.Is(err, context.Canceled) {
		p.Release()
		t.Errorf("Semaphore.AcquireContext(done ctx) with permits free = %v, want context.Canceled", err)
	}
	if got := s.Available(); got != 3 {
		t.Errorf("after a refused AcquireContext the semaphore has %d permits, want 3", got)
	}
	// A bad count is still the caller's bug, whatever the context says.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("AcquireContext(done ctx, -1) did not panic")
			}
		}()
		s.AcquireContext(ctx, -1)
	}()

	// With a live context both still take what is free.
	g, err := m.LockContext(context.Background())
	if err != nil {
		t.Fatalf("LockContext(live ctx) on a free lock: %v", err)
	}
	g.Unlock()
	p, err := s.AcquireContext(context.Background(), 3)
	if err != nil || p.N() != 3 {
		t.Fatalf("AcquireContext(live ctx, 3) = %v, %v", p.N(), err)
	}
	p.Release()
}
