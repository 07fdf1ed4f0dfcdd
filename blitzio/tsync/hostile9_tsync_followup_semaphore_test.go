package tsync

import (
	"errors"
	"testing"
)

// An AcquireFuture polled again after it was ready returned the same Permit again: two
// copies of one set of permits, and releasing both gave the semaphore permits it never
// had. A permit has no identity to check at release (TryAcquire's fast path is one CAS),
// so the second copy is refused where it would be made: such a poll panics. Reset makes
// the future acquire again.

// TestHostile9FollowupAcquireRepollPanics: the re-poll panics, whether the acquire was
// ready at once, was granted from the queue, or failed on a closed semaphore, and the
// permits are counted once.
func TestHostile9FollowupAcquireRepollPanics(t *testing.T) {
	tc := newTestCx()
	s := NewSemaphore(2)

	f := s.AcquireAsync(2)
	r, ok := f.Poll(tc.cx)
	if !ok || r.Err != nil || r.Value.N() != 2 {
		t.Fatalf("acquire of free permits: %+v, %v", r, ok)
	}
	expectPanic(t, "polled again after it returned ready", func() { f.Poll(tc.cx) })
	r.Value.Release()
	if got := s.Available(); got != 2 {
		t.Fatalf("available after one release = %d, want 2", got)
	}

	// Granted through the queue.
	held, _ := s.TryAcquire(2)
	f.Reset()
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("acquire ready with no permits free")
	}
	held.Release()
	r, ok = f.Poll(tc.cx)
	if !ok || r.Err != nil || r.Value.N() != 2 {
		t.Fatalf("queued acquire after a release: %+v, %v", r, ok)
	}
	expectPanic(t, "polled again after it returned ready", func() { f.Poll(tc.cx) })
	r.Value.Release()
	if got := s.Available(); got != 2 {
		t.Fatalf("available = %d, want 2", got)
	}

	// A failed acquire too: one rule for every ready result.
	s.Close()
	f.Reset()
	if r, ok := f.Poll(tc.cx); !ok || !errors.Is(r.Err, ErrSemaphoreClosed) {
		t.Fatalf("acquire on a closed semaphore: %+v, %v", r, ok)
	}
	expectPanic(t, "polled again after it returned ready", func() { f.Poll(tc.cx) })

	// Drop after ready is still a no-op; the poll after it is still refused.
	s2 := NewSemaphore(1)
	f2 := s2.AcquireAsync(1)
	r2, _ := f2.Poll(tc.cx)
	f2.Drop()
	expectPanic(t, "polled again after it returned ready", func() { f2.Poll(tc.cx) })
	r2.Value.Release()
	if got := s2.Available(); got != 1 {
		t.Fatalf("available = %d, want 1", got)
	}
}

// TestHostile9FollowupAcquireResetAllocatesNothing: the reuse loop the panic points to
// (Reset, then Poll) still allocates nothing.
func TestHostile9FollowupAcquireResetAllocatesNothing(t *testing.T) {
	tc := newTestCx()
	s := NewSemaphore(1)
	f := s.AcquireAsync(1)
	if a := testing.AllocsPerRun(100, func() {
		f.Reset()
		r, ok := f.Poll(tc.cx)
		if !ok || r.Err != nil {
			panic("acquire failed")
		}
		r.Value.Release()
	}); a != 0 {
		t.Fatalf("Reset+Poll+Release: %v allocs", a)
	}
}
