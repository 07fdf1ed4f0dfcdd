package tsync

import (
	"errors"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile13FromWakesAcrossRuntimes: the From forms (SendFrom, NotifyOneFrom) hand
// the woken task to the caller's worker as a hint; a waiter that is a task of another
// runtime must still be woken, on its own runtime, and receive what was sent.
func TestHostile13FromWakesAcrossRuntimes(t *testing.T) {
	rt1, rt2 := newRT(t, 1), newRT(t, 1)
	// from runs send as a task of rt1, passing it the task's Context.
	from := func(what string, send func(cx *blitzio.Context) error) {
		t.Helper()
		h := blitzio.Spawn(rt1, blitzio.PollFn(func(cx *blitzio.Context) (error, bool) {
			return send(cx), true
		}))
		if err, jerr := h11Join(t, what, h); err != nil || jerr != nil {
			t.Fatalf("%s: %v, %v", what, err, jerr)
		}
	}

	btx, brx := NewBroadcast[int](4)
	wtx, wrx := NewWatch(0)
	otx, orx := NewOneshot[int]()
	var n Notify
	hb := blitzio.Spawn(rt2, blitzio.Async(func(co *blitzio.Co) error {
		r := blitzio.Await(co, brx.RecvAsync())
		if r.Err != nil || r.Value != 1 {
			return errors.New("broadcast: wrong value")
		}
		return nil
	}))
	hw := blitzio.Spawn(rt2, blitzio.Async(func(co *blitzio.Co) error {
		if err := blitzio.Await(co, wrx.ChangedAsync()); err != nil {
			return err
		}
		if wrx.Get() != 2 {
			return errors.New("watch: wrong value")
		}
		return nil
	}))
	ho := blitzio.Spawn(rt2, blitzio.Async(func(co *blitzio.Co) error {
		r := blitzio.Await(co, orx)
		if r.Err != nil || r.Value != 3 {
			return errors.New("oneshot: wrong value")
		}
		return nil
	}))
	hn := blitzio.Spawn(rt2, blitzio.Async(func(co *blitzio.Co) error {
		blitzio.Await(co, n.Notified())
		return nil
	}))
	// Let every waiter register (a send before it would be taken without a wake-up,
	// which is fine but not what this tests).
	waitParked(t, "broadcast receiver", &btx.c.recvQ, 1)
	waitParked(t, "watch receiver", &wtx.c.recvQ, 1)
	h13WaitWaker(t, orx)
	for deadline := time.Now().Add(h11Timeout); h13NotifyQueued(&n) != 1; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Notify waiter never queued")
		}
	}

	from("broadcast SendFrom", func(cx *blitzio.Context) error { return btx.SendFrom(cx, 1) })
	from("watch SendFrom", func(cx *blitzio.Context) error { return wtx.SendFrom(cx, 2) })
	from("oneshot SendFrom", func(cx *blitzio.Context) error { return otx.SendFrom(cx, 3) })
	from("NotifyOneFrom", func(cx *blitzio.Context) error { n.NotifyOneFrom(cx); return nil })
	for name, h := range map[string]blitzio.JoinHandle[error]{"broadcast": hb, "watch": hw, "oneshot": ho, "notify": hn} {
		if err, jerr := h11Join(t, name+" waiter on the other runtime", h); err != nil || jerr != nil {
			t.Fatalf("%s waiter: %v, %v", name, err, jerr)
		}
	}
}

// h13NotifyQueued is the number of futures waiting on n.
func h13NotifyQueued(n *Notify) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.waiters.n
}
