package tsync

import (
	"errors"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// A SendFuture polled after Drop returned a plain ErrClosed (not even a *SendError), as
// if the channel had closed, where every other future of the package panics: polling a
// dropped future is misuse, and a plausible-looking error hid it. It panics now; Reset
// still makes a dropped future send again.

// TestHostile9FollowupSendFuturePollAfterDrop: dropped while waiting, or before its
// first poll, a SendFuture panics when polled; dropped after it was ready, it still
// returns its result; Reset after Drop still works.
func TestHostile9FollowupSendFuturePollAfterDrop(t *testing.T) {
	cx := blitzio.NewContext(nil, blitzio.Waker{})
	tx, rx := NewChannel[int](1)
	if err := tx.TrySend(1); err != nil {
		t.Fatal(err)
	}

	// Dropped while waiting for room.
	f := tx.SendAsync(2)
	if _, ok := f.Poll(cx); ok {
		t.Fatal("send ready on a full channel")
	}
	f.Drop()
	expectPanic(t, "SendFuture polled after Drop", func() { f.Poll(cx) })
	f.Drop() // still idempotent
	expectPanic(t, "SendFuture polled after Drop", func() { f.Poll(cx) })

	// Dropped before its first poll.
	g := tx.SendAsync(3)
	g.Drop()
	expectPanic(t, "SendFuture polled after Drop", func() { g.Poll(cx) })

	// Reset revives a dropped future, which then sends.
	if v, err := rx.TryRecv(); err != nil || v != 1 {
		t.Fatalf("TryRecv = %d, %v", v, err)
	}
	f.Reset(4)
	if err, ok := f.Poll(cx); !ok || err != nil {
		t.Fatalf("send after Reset of a dropped future: %v, %v", err, ok)
	}
	// Dropped after it was ready: Drop does nothing, and a poll returns the result again.
	f.Drop()
	if err, ok := f.Poll(cx); !ok || err != nil {
		t.Fatalf("poll after ready and Drop: %v, %v; want the same result (nil, true)", err, ok)
	}
	if v, err := rx.TryRecv(); err != nil || v != 4 {
		t.Fatalf("TryRecv = %d, %v; want 4 (the dropped 2 and 3 must not have been sent)", v, err)
	}

	// A send that failed on a closed channel keeps its *SendError on a re-poll, Drop or
	// not.
	rx.Close()
	h := tx.SendAsync(5)
	err, ok := h.Poll(cx)
	var se *SendError[int]
	if !ok || !errors.As(err, &se) || se.Value != 5 {
		t.Fatalf("send on a closed channel: %v, %v", err, ok)
	}
	h.Drop()
	if err2, ok := h.Poll(cx); !ok || err2 != err {
		t.Fatalf("re-poll of a failed send: %v, %v; want %v", err2, ok, err)
	}
}
