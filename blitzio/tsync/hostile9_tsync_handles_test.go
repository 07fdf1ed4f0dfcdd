package tsync

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHostile9FromContextAlreadyDone: FromContext of a context that is done already
// returns a token that is cancelled, as context.WithCancel of such a context returns a
// context that is done. context.AfterFunc runs its function on a new goroutine even then,
// so the token used to be live when FromContext returned: a task checking IsCancelled, or
// Cancelled's first poll, went on with work the caller had cancelled.
func TestHostile9FromContextAlreadyDone(t *testing.T) {
	for _, mk := range []func() context.Context{
		func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		},
		func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
			_ = cancel
			return ctx
		},
	} {
		tok, stop := FromContext(mk())
		if !tok.IsCancelled() {
			t.Fatal("FromContext of a done context returned a live token")
		}
		if _, ok := tok.Cancelled().Poll(newTestCx().cx); !ok {
			t.Fatal("Cancelled of FromContext's token of a done context is pending")
		}
		if err := tok.Context().Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("token's Context().Err() = %v", err)
		}
		stop()
	}
	// A live context still gives a live token, cancelled when the context ends.
	ctx, cancel := context.WithCancel(context.Background())
	tok, stop := FromContext(ctx)
	defer stop()
	if tok.IsCancelled() {
		t.Fatal("FromContext of a live context returned a cancelled token")
	}
	cancel()
	select {
	case <-tok.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("token not cancelled after its context ended")
	}
}

// TestHostile9WatchSendThroughClosedHandle: a watch channel whose last sender closed
// has told its receivers (Changed returned ErrClosed) that no change will come. Send
// through the closed handle fails, but SendReplace and SendModify, which have no error to
// return, stored the value and bumped the version anyway: the next Changed then reported a
// change after it had reported the close. They now panic, as a send on a closed Go channel
// does, and change nothing.
func TestHostile9WatchSendThroughClosedHandle(t *testing.T) {
	tx, rx := NewWatch(1)
	tx2 := tx.Clone()
	tx2.Close() // a closed handle while the channel stays open
	expectPanic(t, "WatchSender.SendReplace through a closed WatchSender", func() { tx2.SendReplace(5) })
	expectPanic(t, "WatchSender.SendModify through a closed WatchSender", func() {
		tx2.SendModify(func(v *int) { *v = 6 })
	})
	if ch, err := rx.HasChanged(); ch || err != nil {
		t.Fatalf("HasChanged after refused sends = %v, %v", ch, err)
	}
	tx.Close()
	if err := rx.Changed(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Changed after the last sender closed = %v", err)
	}
	expectPanic(t, "WatchSender.SendReplace through a closed WatchSender", func() { tx.SendReplace(2) })
	expectPanic(t, "WatchSender.SendModify through a closed WatchSender", func() {
		tx.SendModify(func(v *int) { *v = 3 })
	})
	if err := rx.Changed(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Changed after a refused SendReplace through the closed handle = %v, want ErrClosed", err)
	}
	if v := rx.Get(); v != 1 {
		t.Fatalf("value %d after refused sends, want 1", v)
	}
	// Through an open handle with every receiver closed, SendReplace and SendModify still
	// store (Tokio's send_replace and send_modify).
	tx3, rx3 := NewWatch(0)
	rx3.Close()
	if old := tx3.SendReplace(4); old != 0 {
		t.Fatal(old)
	}
	tx3.SendModify(func(v *int) { *v++ })
	tx3.Borrow(func(v *int) {
		if *v != 5 {
			t.Fatalf("value %d, want 5", *v)
		}
	})
}

// TestHostile9ChannelOrderIsPlaceOrder: NewChannel said values are received "in the
// order their sends completed". They are received in the order the sends took their
// places in the ring: a send that took its place and has not yet stored its value (a
// goroutine preempted inside Send) holds back a later send that has already returned.
// Replayed deterministically, as ring.push does it: sender A claims slot 0, sender B's
// TrySend completes into slot 1, and B's value is not receivable (TryRecv: ErrEmpty, Len:
// 2) until A publishes, after which A's value comes first. The doc now says so.
func TestHostile9ChannelOrderIsPlaceOrder(t *testing.T) {
	tx, rx := NewChannel[int](4)
	c := tx.c
	tail := c.r.tail.Load()
	slot := &c.r.buf[tail&(c.r.markBit-1)]
	if slot.stamp.Load() != tail || !c.r.tail.CompareAndSwap(tail, c.r.next(tail)) {
		t.Fatal("could not claim slot 0")
	}
	if err := tx.TrySend(2); err != nil { // B's send completes
		t.Fatal(err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("TryRecv behind an unpublished slot = %v, want ErrEmpty", err)
	}
	if n := rx.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2 (both places taken)", n)
	}
	slot.val = 1 // A completes
	slot.stamp.Store(tail + 1)
	c.recvQ.notifyOne(nil)
	for _, want := range []int{1, 2} {
		if v, err := rx.TryRecv(); err != nil || v != want {
			t.Fatalf("TryRecv = %d, %v; want %d", v, err, want)
		}
	}
}
