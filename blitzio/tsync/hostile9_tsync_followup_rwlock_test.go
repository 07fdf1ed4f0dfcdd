package tsync

import (
	"math/rand/v2"
	"testing"
)

// A read guard unlocked twice, or a copy of one unlocked after the original, used to
// pass unnoticed while other readers held the lock: the reader count only fell to zero
// early, and a writer got in beside a reader still reading. Each read hold now has its
// own token, so the second unlock panics and leaves the other holds alone.

// rwRefusesWriter fails the test if a writer can take l now.
func rwRefusesWriter(t *testing.T, l *RwLock, when string) {
	t.Helper()
	if w, ok := l.TryWrite(); ok {
		w.Unlock()
		t.Fatalf("%s: a writer got the lock while a reader still holds it", when)
	}
}

// TestHostile9FollowupReadGuardDoubleUnlock: the same read guard unlocked twice while
// another reader holds the lock.
func TestHostile9FollowupReadGuardDoubleUnlock(t *testing.T) {
	var l RwLock
	r1, _ := l.TryRead()
	r2, ok := l.TryRead()
	if !ok {
		t.Fatal("second reader refused")
	}
	r1.Unlock()
	expectPanic(t, "unlocked twice", r1.Unlock)
	rwRefusesWriter(t, &l, "after a read guard was unlocked twice")
	// The failed unlock changed nothing: r2 still unlocks once, then the lock is free.
	r2.Unlock()
	expectPanic(t, "unlocked twice", r2.Unlock)
	w, ok := l.TryWrite()
	if !ok {
		t.Fatal("writer refused once every reader unlocked")
	}
	w.Unlock()
}

// TestHostile9FollowupReadGuardStaleAfterReuse: a stale guard is caught even after its
// hold's record was reused by a later reader.
func TestHostile9FollowupReadGuardStaleAfterReuse(t *testing.T) {
	var l RwLock
	r1, _ := l.TryRead()
	stale := r1
	r1.Unlock()
	r2, _ := l.TryRead() // reuses the record r1 had
	expectPanic(t, "unlocked twice", stale.Unlock)
	rwRefusesWriter(t, &l, "after a stale read guard was unlocked")
	r2.Unlock()
	if _, ok := l.TryWrite(); !ok {
		t.Fatal("writer refused once every reader unlocked")
	}
}

// TestHostile9FollowupReadFutureRepoll: a ReadAsync future polled again after it was
// ready returns the same guard; unlocking both copies is caught.
func TestHostile9FollowupReadFutureRepoll(t *testing.T) {
	tc := newTestCx()
	var l RwLock
	other, _ := l.TryRead()
	f := l.ReadAsync()
	g1, ok := f.Poll(tc.cx)
	if !ok {
		t.Fatal("read refused beside a reader")
	}
	g2, ok := f.Poll(tc.cx)
	if !ok || g2 != g1 {
		t.Fatalf("re-poll after ready: (%v, %v), want the same guard", g2, ok)
	}
	g1.Unlock()
	expectPanic(t, "unlocked twice", g2.Unlock)
	rwRefusesWriter(t, &l, "after both copies of a re-polled guard were unlocked")
	other.Unlock()

	// The same through the queue: a read granted when a writer unlocks.
	w, _ := l.TryWrite()
	f = l.ReadAsync()
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("read beside a writer")
	}
	w.Unlock()
	g1, ok = f.Poll(tc.cx)
	if !ok {
		t.Fatal("queued read not granted by the writer's unlock")
	}
	g2, _ = f.Poll(tc.cx)
	other, _ = l.TryRead()
	g2.Unlock()
	expectPanic(t, "unlocked twice", g1.Unlock)
	rwRefusesWriter(t, &l, "after both copies of a granted guard were unlocked")
	other.Unlock()
	if _, ok := l.TryWrite(); !ok {
		t.Fatal("writer refused once every reader unlocked")
	}
}

// TestHostile9FollowupReadGuardsManyRandomOrder: many read holds (past the records kept
// inline in the lock) unlocked in a random order; every second unlock of each panics,
// and a writer gets in only after the last one.
func TestHostile9FollowupReadGuardsManyRandomOrder(t *testing.T) {
	var l RwLock
	for round := range 3 {
		gs := make([]RwLockReadGuard, 100)
		for i := range gs {
			g, ok := l.TryRead()
			if !ok {
				t.Fatal("reader refused")
			}
			gs[i] = g
		}
		for i, j := range rand.Perm(len(gs)) {
			gs[j].Unlock()
			expectPanic(t, "unlocked twice", gs[j].Unlock)
			if i < len(gs)-1 {
				rwRefusesWriter(t, &l, "with readers left")
			}
			if i%7 == 0 {
				// A new reader takes a freed record; it must not revive a stale guard.
				g, _ := l.TryRead()
				expectPanic(t, "unlocked twice", gs[j].Unlock)
				g.Unlock()
			}
		}
		w, ok := l.TryWrite()
		if !ok {
			t.Fatalf("round %d: writer refused once every reader unlocked", round)
		}
		w.Unlock()
	}
}

// TestHostile9FollowupReadDropGranted: a read granted to a future that is dropped before
// it returned the guard gives its hold back; the hold's record is free for others.
func TestHostile9FollowupReadDropGranted(t *testing.T) {
	tc := newTestCx()
	var l RwLock
	w, _ := l.TryWrite()
	fs := make([]*RwLockFuture[RwLockReadGuard], 6)
	for i := range fs {
		fs[i] = l.ReadAsync()
		fs[i].Poll(tc.cx)
	}
	w.Unlock() // grants every reader
	keep, ok := fs[0].Poll(tc.cx)
	if !ok {
		t.Fatal("granted read not ready")
	}
	for _, f := range fs[1:] {
		f.Drop()
	}
	rwRefusesWriter(t, &l, "with one granted reader left")
	keep.Unlock()
	w, ok = l.TryWrite()
	if !ok {
		t.Fatal("writer refused after the granted readers were dropped and the last unlocked")
	}
	w.Unlock()
}

// TestHostile9FollowupReadAllocatesNothing: taking and releasing read holds allocates
// nothing, with few readers (records inline) or, once grown, with many.
func TestHostile9FollowupReadAllocatesNothing(t *testing.T) {
	tc := newTestCx()
	var l RwLock
	if a := testing.AllocsPerRun(100, func() {
		g, _ := l.TryRead()
		g2, _ := l.TryRead()
		g.Unlock()
		g2.Unlock()
	}); a != 0 {
		t.Fatalf("TryRead+Unlock: %v allocs", a)
	}
	f := l.ReadAsync()
	if a := testing.AllocsPerRun(100, func() {
		*f = RwLockFuture[RwLockReadGuard]{l: &l}
		f.w.kind = kindReader
		g, _ := f.Poll(tc.cx)
		g.Unlock()
	}); a != 0 {
		t.Fatalf("ReadAsync's poll+Unlock: %v allocs", a)
	}
	gs := make([]RwLockReadGuard, 64)
	fill := func() {
		for i := range gs {
			gs[i], _ = l.TryRead()
		}
		for i := range gs {
			gs[i].Unlock()
		}
	}
	fill() // grows the records once
	if a := testing.AllocsPerRun(20, fill); a != 0 {
		t.Fatalf("64 read holds after the first time: %v allocs", a)
	}
}

// BenchmarkHostile9FollowupRwLockRead: the read path the per-hold records touch, with
// one goroutine (TryRead+Unlock, and a ReadAsync future's first poll+Unlock) and with
// every P taking read holds of one lock at once.
func BenchmarkHostile9FollowupRwLockRead(b *testing.B) {
	b.Run("TryRead", func(b *testing.B) {
		var l RwLock
		b.ReportAllocs()
		for b.Loop() {
			g, _ := l.TryRead()
			g.Unlock()
		}
	})
	b.Run("ReadAsync", func(b *testing.B) {
		tc := newTestCx()
		var l RwLock
		f := l.ReadAsync()
		b.ReportAllocs()
		for b.Loop() {
			*f = RwLockFuture[RwLockReadGuard]{l: &l}
			f.w.kind = kindReader
			g, _ := f.Poll(tc.cx)
			g.Unlock()
		}
	})
	b.Run("TryRead-parallel", func(b *testing.B) {
		var l RwLock
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g, _ := l.TryRead()
				g.Unlock()
			}
		})
	})
}
