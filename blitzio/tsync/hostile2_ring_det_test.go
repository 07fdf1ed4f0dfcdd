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
// B's value was then in the buffer, and R1 slept with no wake coming. Now the ring waits
// for A at step 4, so R1 takes A's value and A's wake reaches R2, which takes B's.
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
	// R1 runs while slot 0 is claimed and not published: the ring waits for A rather
	// than report empty (which would spend R1's wake and strand B's value). A finishes
	// its push on another goroutine: the second half of ring.push, then trySend's wake.
	go func() {
		time.Sleep(time.Millisecond) // let R1 find the slot in flight first (either order is correct)
		slot.val = 1
		slot.stamp.Store(tail + 1)
		c.recvQ.notifyOne(nil)
	}()
	r, ok := r1.Poll(w1.cx())
	if !ok || r.Value != 1 {
		t.Fatalf("R1 = %v, %v; want A's value 1 once A published it", r, ok)
	}
	// A's wake went to R2 (R1 is no longer queued), which takes B's value.
	deadline := time.Now().Add(5 * time.Second)
	for w2.n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if w2.n.Load() == 0 {
		t.Fatalf("lost wake-up: %d value(s) in the buffer and R2 never woken", rx.Len())
	}
	if r, ok := r2.Poll(w2.cx()); !ok || r.Value != 2 {
		t.Fatalf("R2 = %v, %v; want B's value 2", r, ok)
	}
}
