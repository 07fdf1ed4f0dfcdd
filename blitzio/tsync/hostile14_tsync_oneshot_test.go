package tsync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h14WaitMore waits until a second wait on rx has gone to the side table (osMore).
func h14WaitMore[T any](t *testing.T, rx *OneshotReceiver[T]) {
	t.Helper()
	h13WaitState(t, rx, osMore, "the second receive never waited in the side table")
}

// h14TableEmpty fails the test if the side table still holds waiters of rx's oneshot.
func h14TableEmpty[T any](t *testing.T, rx *OneshotReceiver[T]) {
	t.Helper()
	oneshotWaiters.mu.Lock()
	n := len(oneshotWaiters.m[&rx.c.state])
	oneshotWaiters.mu.Unlock()
	if n != 0 {
		t.Fatalf("the side table still holds %d waiters of a finished oneshot", n)
	}
}

// h14Results counts the values and ErrClosed among the receives' results, and fails on
// anything else.
func h14Results(t *testing.T, results []error) (values, closed int) {
	t.Helper()
	for _, err := range results {
		switch {
		case err == nil:
			values++
		case errors.Is(err, ErrClosed):
			closed++
		default:
			t.Fatalf("a receive ended with %v; want the value or ErrClosed", err)
		}
	}
	return values, closed
}

// TestHostile14OneshotManyRecvs: n goroutines wait on one receiver at once; one Send
// ends every wait, exactly one with the value, the rest with ErrClosed, and leaves
// nothing in the side table.
func TestHostile14OneshotManyRecvs(t *testing.T) {
	for _, n := range []int{2, 3, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			var got atomic.Int64
			done := make([]<-chan error, n)
			done[0] = h11Go(func() error { v, err := rx.Recv(); got.Add(int64(v)); return err })
			h13WaitWaker(t, rx)
			for i := 1; i < n; i++ {
				done[i] = h11Go(func() error { v, err := rx.Recv(); got.Add(int64(v)); return err })
			}
			h14WaitMore(t, rx)
			time.Sleep(time.Millisecond) // let the rest register too
			if err := tx.Send(7); err != nil {
				t.Fatal(err)
			}
			results := make([]error, n)
			for i, ch := range done {
				results[i] = h11Recv(t, fmt.Sprintf("Recv %d of %d", i, n), ch)
			}
			if v, c := h14Results(t, results); v != 1 || c != n-1 || got.Load() != 7 {
				t.Fatalf("%d receives: %d values (sum %d), %d ErrClosed; want 1 (7), %d", n, v, got.Load(), c, n-1)
			}
			h14TableEmpty(t, rx)
		})
	}
}

// TestHostile14OneshotCloseWakesAll: the sender's Close, the receiver's Close and the
// receiver's Drop each end every concurrent wait with ErrClosed.
func TestHostile14OneshotCloseWakesAll(t *testing.T) {
	for _, how := range []string{"sender Close", "receiver Close", "receiver Drop"} {
		t.Run(how, func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			a := h11Go(func() error { _, err := rx.Recv(); return err })
			h13WaitWaker(t, rx)
			b := h11Go(func() error { _, err := rx.RecvContext(context.Background()); return err })
			h14WaitMore(t, rx)
			switch how {
			case "sender Close":
				tx.Close()
			case "receiver Close":
				rx.Close()
			case "receiver Drop":
				rx.Drop()
			}
			results := []error{h11Recv(t, "first Recv", a), h11Recv(t, "second Recv", b)}
			if v, c := h14Results(t, results); v != 0 || c != 2 {
				t.Fatalf("after %s: %v; want ErrClosed twice", how, results)
			}
			h14TableEmpty(t, rx)
		})
	}
}

// TestHostile14OneshotGiveUpThenSend: of two concurrent waits, the one that gave up
// (RecvContext cancelled) leaves the other waiting, and the Send reaches it, whichever of
// the two held the waker slot.
func TestHostile14OneshotGiveUpThenSend(t *testing.T) {
	for _, quitter := range []string{"slot holder", "table waiter"} {
		t.Run(quitter, func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var first, second <-chan error
			var quit <-chan error
			if quitter == "slot holder" {
				first = h11Go(func() error { _, err := rx.RecvContext(ctx); return err })
				h13WaitWaker(t, rx)
				second = h11Go(func() error { _, err := rx.Recv(); return err })
				quit = first
			} else {
				first = h11Go(func() error { _, err := rx.Recv(); return err })
				h13WaitWaker(t, rx)
				second = h11Go(func() error { _, err := rx.RecvContext(ctx); return err })
				quit = second
			}
			h14WaitMore(t, rx)
			cancel()
			if err := h11Recv(t, "the cancelled RecvContext", quit); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled RecvContext: %v; want context.Canceled", err)
			}
			if err := tx.Send(5); err != nil {
				t.Fatal(err)
			}
			stay := first
			if quit == first {
				stay = second
			}
			if err := h11Recv(t, "the remaining Recv", stay); err != nil {
				t.Fatalf("the remaining Recv: %v; want the value", err)
			}
			h14TableEmpty(t, rx)
		})
	}
}

// TestHostile14OneshotTaskAndGoroutine: a task awaiting the receiver and a goroutine in
// Recv at the same time both end when the value is sent: neither waits for ever.
func TestHostile14OneshotTaskAndGoroutine(t *testing.T) {
	rt := newRT(t, 2)
	for i := range 50 {
		tx, rx := NewOneshot[int]()
		h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
			return blitzio.Await(co, rx).Err
		}))
		g := h11Go(func() error { _, err := rx.Recv(); return err })
		if i%2 == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
		ge := h11Recv(t, "goroutine Recv", g)
		te := h11Recv(t, "task awaiting the receiver", h11Go(func() error {
			err, jerr := h.Wait()
			return errors.Join(err, jerr)
		}))
		if _, c := h14Results(t, []error{ge, te}); c > 1 {
			t.Fatalf("round %d: task %v, goroutine %v; want the value in at least one", i, te, ge)
		}
		h14TableEmpty(t, rx)
	}
}

// TestHostile14OneshotRecvStorm races several receives (some giving up at random) with
// the Send or a Close: every receive ends, at most one Recv gets the value, and the side
// table is left empty.
func TestHostile14OneshotRecvStorm(t *testing.T) {
	for round := range 300 {
		tx, rx := NewOneshot[int]()
		ctx, cancel := context.WithCancel(context.Background())
		const n = 4
		done := make([]<-chan error, n)
		for i := range n {
			if i%2 == 0 {
				done[i] = h11Go(func() error { _, err := rx.Recv(); return err })
			} else {
				done[i] = h11Go(func() error { _, err := rx.RecvContext(ctx); return err })
			}
		}
		if round%3 == 0 {
			cancel()
		}
		var sent bool
		switch round % 4 {
		case 0, 1:
			sent = tx.Send(round) == nil
		case 2:
			tx.Close()
		case 3:
			rx.Close()
		}
		values := 0
		for i, ch := range done {
			switch err := h11Recv(t, fmt.Sprintf("round %d receive %d", round, i), ch); {
			case err == nil:
				values++
			case errors.Is(err, ErrClosed), errors.Is(err, context.Canceled):
			default:
				t.Fatalf("round %d receive %d: %v", round, i, err)
			}
		}
		cancel()
		if values > 1 || values == 1 && !sent {
			t.Fatalf("round %d: %d receives got a value (sent %v)", round, values, sent)
		}
		if sent && values == 0 && round%3 != 0 {
			t.Fatalf("round %d: the value was sent and no receive that could not give up got it", round)
		}
		h14TableEmpty(t, rx)
	}
}
