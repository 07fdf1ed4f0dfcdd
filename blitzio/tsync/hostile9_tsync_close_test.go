package tsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// queuedIn is the number of waiters linked in s.
func queuedIn(s *waitSet) int {
	_, n := waitSetCount(s)
	return n
}

// waitParked waits until s holds n waiters, failing after 10 s.
func waitParked(t *testing.T, what string, s *waitSet, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); queuedIn(s) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d waiters registered, want %d", what, queuedIn(s), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// collect gathers the outcomes of parked waiters and fails the test if they do not all
// arrive within 10 s.
type collect struct {
	mu   sync.Mutex
	errs []error
}

func (c *collect) add(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *collect) wait(t *testing.T, what string, n int, check func(i int, err error) error) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		c.mu.Lock()
		got := len(c.errs)
		c.mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d parked waiters woke", what, got, n)
		}
	}
	for i, err := range c.errs {
		if e := check(i, err); e != nil {
			t.Fatalf("%s: waiter %d: %v", what, i, e)
		}
	}
}

func wantClosed(_ int, err error) error {
	if !errors.Is(err, ErrClosed) {
		return fmt.Errorf("err = %v, want one matching ErrClosed", err)
	}
	return nil
}

// TestHostile9CloseWakesEveryParkedWaiter: closing a channel end wakes every waiter
// parked on it, in every form at once (task futures, RecvAny, blocking calls, Context
// forms on goroutines), each with the documented error, and errors.Is(err, ErrClosed)
// holds; a send gives its own value back. Closing one handle of several wakes the waiters
// through that handle with ErrClosed and leaves the others waiting.
func TestHostile9CloseWakesEveryParkedWaiter(t *testing.T) {
	rt := newRT(t, 2)
	const each = 4

	t.Run("bounded receivers, last sender closes", func(t *testing.T) {
		tx, rx := NewChannel[int](2)
		var c collect
		for range each {
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				c.add(blitzio.Await(co, rx.RecvAsync()).Err)
				return 0
			})).Detach()
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				c.add(blitzio.Await(co, blitzio.Future[Received[int]](RecvAny[int](rx, nil, rx))).Err)
				return 0
			})).Detach()
			go func() { _, err := rx.Recv(); c.add(err) }()
			go func() { _, err := rx.RecvContext(context.Background()); c.add(err) }()
		}
		waitParked(t, "bounded recv", &rx.c.recvQ, 5*each) // RecvAny registers twice
		tx2 := tx.Clone()
		tx.Close()
		time.Sleep(time.Millisecond)
		if n := queuedIn(&rx.c.recvQ); n != 5*each {
			t.Fatalf("closing one of two senders woke receivers: %d still queued", n)
		}
		tx2.Close()
		c.wait(t, "bounded recv", 4*each, wantClosed)
	})

	t.Run("bounded senders, last receiver closes", func(t *testing.T) {
		tx, rx := NewChannel[int](1)
		_ = tx.TrySend(-1)
		var c collect
		var mu sync.Mutex
		values := map[error]int{}
		note := func(v int, err error) {
			mu.Lock()
			values[err] = v
			mu.Unlock()
			c.add(err)
		}
		for k := range each {
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				note(10+k, blitzio.Await(co, blitzio.Future[error](tx.SendAsync(10+k))))
				return 0
			})).Detach()
			go func() { note(20+k, tx.Send(20+k)) }()
			go func() { note(30+k, tx.SendContext(context.Background(), 30+k)) }()
		}
		waitParked(t, "bounded send", &rx.c.sendQ, 3*each)
		rx2 := rx.Clone()
		rx.Close()
		time.Sleep(time.Millisecond)
		if n := queuedIn(&rx.c.sendQ); n != 3*each {
			t.Fatalf("closing one of two receivers woke senders: %d still queued", n)
		}
		rx2.Close()
		c.wait(t, "bounded send", 3*each, func(_ int, err error) error {
			var se *SendError[int]
			if !errors.As(err, &se) || !errors.Is(err, ErrClosed) {
				return fmt.Errorf("err = %v, want a *SendError matching ErrClosed", err)
			}
			if mu.Lock(); se.Value != values[err] {
				mu.Unlock()
				return fmt.Errorf("SendError holds %d, the send was of %d", se.Value, values[err])
			}
			mu.Unlock()
			return nil
		})
	})

	t.Run("bounded senders through a closed handle", func(t *testing.T) {
		tx, rx := NewChannel[int](1)
		defer rx.Close()
		_ = tx.TrySend(-1)
		other := tx.Clone()
		defer other.Close()
		var c, o collect
		for range each {
			go func() { c.add(tx.Send(1)) }()
			go func() { o.add(other.Send(2)) }()
		}
		waitParked(t, "send via handle", &rx.c.sendQ, 2*each)
		tx.Close()
		c.wait(t, "sends through the closed handle", each, wantClosed)
		waitParked(t, "send via the open handle", &rx.c.sendQ, each)
		for range each {
			if _, err := rx.Recv(); err != nil {
				t.Fatal(err)
			}
		}
		o.wait(t, "sends through the open handle", each, func(_ int, err error) error { return err })
	})

	t.Run("unbounded receivers, sender closes", func(t *testing.T) {
		tx, rx := NewUnbounded[int]()
		var c collect
		for range each {
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				c.add(blitzio.Await(co, rx.RecvAsync()).Err)
				return 0
			})).Detach()
			go func() { _, err := rx.Recv(); c.add(err) }()
		}
		waitParked(t, "unbounded recv", &rx.c.recvQ, 2*each)
		tx.Close()
		c.wait(t, "unbounded recv", 2*each, wantClosed)
	})

	t.Run("broadcast receivers, sender and one receiver close", func(t *testing.T) {
		tx, rx := NewBroadcast[int](4)
		others := tx.Subscribe()
		var mine, theirs collect
		for range each {
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				mine.add(blitzio.Await(co, rx.RecvAsync()).Err)
				return 0
			})).Detach()
			go func() { _, err := rx.Recv(); mine.add(err) }()
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				theirs.add(blitzio.Await(co, others.RecvAsync()).Err)
				return 0
			})).Detach()
		}
		waitParked(t, "broadcast recv", &rx.c.recvQ, 3*each)
		rx.Close()
		mine.wait(t, "receives through the closed receiver", 2*each, wantClosed)
		waitParked(t, "broadcast recv, other receiver", &rx.c.recvQ, each)
		tx.Close()
		theirs.wait(t, "receives after the sender closed", each, wantClosed)
	})

	t.Run("watch receivers, sender closes", func(t *testing.T) {
		tx, rx := NewWatch(0)
		var c collect
		for range each {
			blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				c.add(blitzio.Await(co, blitzio.Future[error](rx.ChangedAsync())))
				return 0
			})).Detach()
			go func() { c.add(rx.Changed()) }()
			go func() { c.add(rx.ChangedContext(context.Background())) }()
		}
		waitParked(t, "watch changed", &rx.c.recvQ, 3*each)
		tx.Close()
		c.wait(t, "watch changed", 3*each, wantClosed)
	})

	t.Run("oneshot receiver, sender closes", func(t *testing.T) {
		var c collect
		var txs []*OneshotSender[int]
		for k := range 2 * each {
			tx, rx := NewOneshot[int]()
			txs = append(txs, tx)
			if k%2 == 0 {
				blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
					c.add(blitzio.Await(co, blitzio.Future[blitzio.Result[int]](rx)).Err)
					return 0
				})).Detach()
			} else {
				go func() { _, err := rx.Recv(); c.add(err) }()
			}
		}
		time.Sleep(2 * time.Millisecond) // let them park (the test holds either way)
		for _, tx := range txs {
			tx.Close()
		}
		c.wait(t, "oneshot", 2*each, wantClosed)
	})
}
