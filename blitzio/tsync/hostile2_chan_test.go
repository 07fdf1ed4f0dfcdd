package tsync

import (
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile2RefusedBlockingRecvLeavesDeadWaiter: Receiver.Recv called (by mistake)
// from a task on an empty channel panics with the cannot-block message, as documented.
// But waitFor has already polled the RecvFuture once with probeContext, which registered
// its node in the channel's receive queue with the zero Waker. The panic leaves that node
// queued, where nothing can wake it. The next value's notifyOne goes to the dead node,
// and a real receiver queued behind it sleeps forever with the value in the buffer.
// (The primitives use refuseInRuntimeDrop for this; the channels' waitFor does not.)
func TestHostile2RefusedBlockingRecvLeavesDeadWaiter(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 1)
	tx, rx := NewChannel[int](4)
	_, err := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (struct{}, bool) {
		_, _ = rx.Recv() // empty: refuses to block a worker
		return struct{}{}, true
	})).Wait()
	if err == nil || !strings.Contains(err.Error(), "cannot block") {
		t.Fatalf("Recv in a task: %v, want the cannot-block panic", err)
	}
	before := rx.c.recvQ.state.Load() >> 1 // the refused Recv left a node here before the fix
	// A well-behaved receiver task.
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) blitzio.Result[int] {
		return blitzio.Await(co, rx.RecvAsync())
	}))
	waitQueued(t, &rx.c.recvQ, before+1) // it queued (behind the dead node)
	if err := tx.TrySend(7); err != nil {
		t.Fatal(err)
	}
	done := make(chan blitzio.Result[int], 1)
	go func() { r, _ := h.Wait(); done <- r }()
	select {
	case r := <-done:
		if r.Err != nil || r.Value != 7 {
			t.Fatalf("receiver got %v, %v; want 7", r.Value, r.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("receiver task never woken: the value sits in the buffer (Len %d) while the wake "+
			"went to the node the refused Recv left queued", rx.Len())
	}
}

// TestHostile2RefusedBlockingSendLeavesDeadWaiter is the same for Sender.Send on a full
// channel: the refused Send leaves a dead node in the send queue, which swallows the
// wake of the slot a receive frees, and a real sender waiting for room sleeps forever.
func TestHostile2RefusedBlockingSendLeavesDeadWaiter(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 1)
	tx, rx := NewChannel[int](1)
	if err := tx.TrySend(1); err != nil {
		t.Fatal(err)
	}
	_, err := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (struct{}, bool) {
		_ = tx.Send(2) // full: refuses to block a worker
		return struct{}{}, true
	})).Wait()
	if err == nil || !strings.Contains(err.Error(), "cannot block") {
		t.Fatalf("Send in a task: %v, want the cannot-block panic", err)
	}
	before := tx.c.sendQ.state.Load() >> 1
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		return blitzio.Await(co, tx.SendAsync(3))
	}))
	waitQueued(t, &tx.c.sendQ, before+1)
	if v, err := rx.TryRecv(); err != nil || v != 1 {
		t.Fatalf("TryRecv = %v, %v", v, err)
	}
	done := make(chan error, 1)
	go func() { _, err := h.Wait(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("sender task never woken although the channel has room (Len %d of %d)", rx.Len(), rx.Cap())
	}
}

// waitQueued waits until the wait set s holds n waiters.
func waitQueued(t *testing.T, s *waitSet, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.state.Load()>>1 != n; {
		if time.Now().After(deadline) {
			t.Fatalf("wait set holds %d waiters, want %d", s.state.Load()>>1, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
