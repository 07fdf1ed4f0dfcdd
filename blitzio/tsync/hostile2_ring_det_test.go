package tsync

import (
	"testing"
	"time"
)

// TestHostile2RingClaimedSlotStrandsReceiver replays, step by step, the interleaving
// behind TestHostile2RingUnpublishedSlotLosesWake. Sender A has claimed slot 0 (its CAS
// on tail succeeded) but not yet stored the stamp that publishes it: ring.push does
// exactly these two steps with nothing in between but the copy of the value, so a
// preemption there is all it takes. The test performs A's two steps itself, the same way
// push does, and drives everything else through the public API:
//
//  1. Receivers R1 and R2 wait (RecvAsync, queued in that order).
//  2. A claims slot 0.
//  3. Sender B's TrySend fills slot 1 and wakes R1.
//  4. R1 polls: the head slot 0 read as empty, so R1 queued again (behind R2), its
//     wake spent.
//  5. A publishes slot 0 and wakes one receiver: R2, which takes A's value.
//
// B's value was then in the buffer, and R1 slept with no wake coming. Now R2, having
// taken A's value, sees B's ready behind it while R1 waits, and wakes R1 (the chain).
func TestHostile2RingClaimedSlotStrandsReceiver(t *testing.T) {
	defer watchdog(t, 10*time.Second)()
	tx, rx := NewChannel[int](4)
	c := tx.c
	var w1, w2 wakeCount
	r1, r2 := rx.RecvAsync(), rx.RecvAsync()
	if _, ok := r1.Poll(w1.cx()); ok {
		t.Fatal("R1 ready on an empty channel")
	}
	if _, ok := r2.Poll(w2.cx()); ok {
		t.Fatal("R2 ready on an empty channel")
	}

	// Sender A, first half of ring.push: claim slot 0.
	tail := c.r.tail.Load()
	slot := &c.r.buf[tail&(c.r.markBit-1)]
	if slot.stamp.Load() != tail || !c.r.tail.CompareAndSwap(tail, c.r.next(tail)) {
		t.Fatal("could not claim slot 0")
	}

	// Sender B: a whole TrySend into slot 1.
	if err := tx.TrySend(2); err != nil {
		t.Fatal(err)
	}
	if w1.n.Load() != 1 {
		t.Fatalf("B's send woke R1 %d times, want 1", w1.n.Load())
	}
	// R1 runs while slot 0 is claimed and not published: it reads empty and waits
	// again (queued behind R2), its wake spent.
	if r, ok := r1.Poll(w1.cx()); ok {
		t.Fatalf("R1 got %v while the head slot is unpublished", r)
	}
	woken := w1.n.Load()
	// A finishes its push: the second half of ring.push, then trySend's wake, which
	// goes to R2, now the oldest waiter.
	slot.val = 1
	slot.stamp.Store(tail + 1)
	c.recvQ.notifyOne(nil)
	if w2.n.Load() != 1 {
		t.Fatalf("A's send woke R2 %d times, want 1", w2.n.Load())
	}
	if r, ok := r2.Poll(w2.cx()); !ok || r.Value != 1 {
		t.Fatalf("R2 = %v, %v; want A's value 1", r, ok)
	}
	// R2 took slot 0 and saw B's value ready behind it with R1 waiting: it woke R1
	// (the chain), which takes it.
	if w1.n.Load() == woken {
		t.Fatalf("lost wake-up: %d value(s) in the buffer, R1 queued and never woken again", rx.Len())
	}
	if r, ok := r1.Poll(w1.cx()); !ok || r.Value != 2 {
		t.Fatalf("R1 = %v, %v; want B's value 2", r, ok)
	}
}
