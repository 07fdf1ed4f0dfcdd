package tsync

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// ---- unbounded ----

func TestUnboundedOrderGrowthAndClose(t *testing.T) {
	tx, rx := NewUnbounded[int]()
	for i := 0; i < 1000; i++ { // grows through several doublings, with wrap-around
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if v, err := rx.TryRecv(); err != nil || v != i/3 {
				t.Fatalf("TryRecv = %d, %v; want %d", v, err, i/3)
			}
		}
	}
	want := 334
	tx2 := tx.Clone()
	tx.Close()
	tx.Close()
	if err := tx2.Send(1000); err != nil {
		t.Fatal(err)
	}
	tx2.Close()
	for ; want <= 1000; want++ {
		if v, err := rx.Recv(); err != nil || v != want {
			t.Fatalf("Recv = %d, %v; want %d", v, err, want)
		}
	}
	if _, err := rx.Recv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after drain: %v", err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRecv after drain: %v", err)
	}

	tx, rx = NewUnbounded[int]()
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatal(err)
	}
	_ = tx.Send(1)
	rx.Close()
	rx.Close()
	err := tx.Send(2)
	var se *SendError[int]
	if !errors.As(err, &se) || se.Value != 2 || !errors.Is(err, ErrClosed) || !tx.IsClosed() {
		t.Fatalf("send after receiver close = %v", err)
	}
	var nilS *UnboundedSender[int]
	expectPanic(t, "nil or zero UnboundedSender", func() { _ = nilS.Send(1) })
	expectPanic(t, "nil or zero UnboundedReceiver", func() { (&UnboundedReceiver[int]{}).Close() })
}

func TestUnboundedMPSCTasksAndGoroutines(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt1, rt2 := chanRT(t, 2), chanRT(t, 1)
	tx, rx := NewUnbounded[int]()
	const producers, per = 16, 2000
	var wg sync.WaitGroup
	var hs []blitzio.JoinHandle[struct{}]
	for p := 0; p < producers; p++ {
		s := tx.Clone()
		from := p * per
		if p%2 == 0 {
			rt := rt1
			if p%4 == 0 {
				rt = rt2
			}
			i := from
			hs = append(hs, blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (struct{}, bool) {
				for ; i < from+per; i++ {
					if err := s.SendFrom(cx, i); err != nil {
						panic(err)
					}
					if i%50 == 49 {
						i++
						cx.Yield()
						return struct{}{}, false
					}
				}
				s.Close()
				return struct{}{}, true
			})))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from; i < from+per; i++ {
				_ = s.Send(i)
			}
			s.Close()
		}()
	}
	tx.Close()
	seen := make([]int32, producers*per)
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	f := rx.RecvAsync()
	cnt := 0
	res, err := blitzio.BlockOn(rt1, blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
		for {
			r, ok := f.Poll(cx)
			if !ok {
				return 0, false
			}
			if r.Err != nil {
				return cnt, true
			}
			seen[r.Value]++
			p := r.Value / per
			if r.Value <= last[p] {
				panic("per-producer order broken")
			}
			last[p] = r.Value
			cnt++
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if res != producers*per {
		t.Fatalf("received %d of %d", res, producers*per)
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("value %d received %d times", v, c)
		}
	}
}

// ---- oneshot ----

func TestOneshotBasics(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewOneshot[string]()
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatal(err)
	}
	if tx.IsClosed() {
		t.Fatal("closed before send")
	}
	if err := tx.Send("hi"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Send("again"); !errors.Is(err, ErrClosed) {
		t.Fatalf("second send = %v", err)
	}
	if v, err := rx.Recv(); v != "hi" || err != nil {
		t.Fatalf("Recv = %q, %v", v, err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second receive = %v", err)
	}

	// Sender closes without sending: the receiver (a future) sees ErrClosed.
	tx2, rx2 := NewOneshot[int]()
	var w wakeCount
	if _, ok := rx2.Poll(w.cx()); ok {
		t.Fatal("ready before send")
	}
	tx2.Close()
	tx2.Close()
	if w.n.Load() != 1 {
		t.Fatal("close did not wake the receiver")
	}
	if r, ok := rx2.Poll(w.cx()); !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("after sender close: %v, %v", r, ok)
	}
	if r, ok := rx2.Poll(w.cx()); !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("polled again: %v, %v", r, ok)
	}

	// Receiver dropped (closed): the send fails and gives the value back.
	tx3, rx3 := NewOneshot[int]()
	rx3.Drop()
	err := tx3.Send(9)
	var se *SendError[int]
	if !errors.As(err, &se) || se.Value != 9 || !tx3.IsClosed() {
		t.Fatalf("send to a dropped receiver = %v", err)
	}

	// RecvContext gives up but leaves the receiver open.
	tx4, rx4 := NewOneshot[int]()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Millisecond)
	defer cancel()
	if _, err := rx4.RecvContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	go func() { time.Sleep(time.Millisecond); _ = tx4.Send(4) }()
	if v, err := rx4.Recv(); v != 4 || err != nil {
		t.Fatalf("Recv after a cancelled RecvContext = %d, %v", v, err)
	}
	var nilR *OneshotReceiver[int]
	expectPanic(t, "nil or zero OneshotReceiver", func() { _, _ = nilR.Recv() })
}

// TestOneshotPollAgainAfterValue: the receiver keeps no copy of the value (it stays in
// the oneshot), so a Poll after the ready one, before or after Close, must still return
// the same value, while TryRecv and Recv report it as already received.
func TestOneshotPollAgainAfterValue(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewOneshot[*int]()
	var w wakeCount
	if _, ok := rx.Poll(w.cx()); ok {
		t.Fatal("ready before send")
	}
	v := new(int)
	*v = 7
	if err := tx.Send(v); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if r, ok := rx.Poll(w.cx()); !ok || r.Err != nil || r.Value != v {
			t.Fatalf("poll %d: %v, %v (want the sent pointer)", i, r, ok)
		}
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRecv after the value was polled = %v, want ErrClosed", err)
	}
	rx.Close()
	if r, ok := rx.Poll(w.cx()); !ok || r.Err != nil || r.Value != v {
		t.Fatalf("poll after Close: %v, %v (want the value received before)", r, ok)
	}
	if _, err := rx.Recv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after the value was polled = %v, want ErrClosed", err)
	}

	// The receiver closed first: ErrClosed, then ErrClosed again, even though the
	// late Send's value was discarded.
	tx2, rx2 := NewOneshot[int]()
	rx2.Close()
	if r, ok := rx2.Poll(w.cx()); !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("poll of a closed receiver: %v, %v", r, ok)
	}
	if err := tx2.Send(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("send to a closed receiver = %v", err)
	}
	if r, ok := rx2.Poll(w.cx()); !ok || !errors.Is(r.Err, ErrClosed) || r.Value != 0 {
		t.Fatalf("poll again of a closed receiver: %v, %v", r, ok)
	}
}

func TestOneshotRequestReplyTasks(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	type req struct {
		v     int
		reply *OneshotSender[int]
	}
	tx, rx := NewChannel[req](16)
	srv := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		f := rx.RecvAsync()
		for {
			r := blitzio.Await(co, blitzio.Future[blitzio.Result[req]](f))
			if r.Err != nil {
				return struct{}{}
			}
			_ = r.Value.reply.SendFrom(co.Context(), r.Value.v*2)
		}
	}))
	var clients []blitzio.JoinHandle[int]
	for c := 0; c < 20; c++ {
		s := tx.Clone()
		clients = append(clients, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			defer s.Close()
			sum := 0
			for i := 0; i < 200; i++ {
				otx, orx := NewOneshot[int]()
				if err := blitzio.Await(co, blitzio.Future[error](s.SendAsync(req{i, otx}))); err != nil {
					panic(err)
				}
				r := blitzio.Await(co, blitzio.Future[blitzio.Result[int]](orx))
				if r.Err != nil || r.Value != 2*i {
					panic("bad reply")
				}
				sum += r.Value
			}
			return sum
		})))
	}
	tx.Close()
	for _, h := range clients {
		if v, err := h.Wait(); err != nil || v != 2*199*200/2 {
			t.Fatalf("client: %d, %v", v, err)
		}
	}
	if _, err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
}

// ---- broadcast ----

func TestBroadcastLagCountExact(t *testing.T) {
	tx, rx := NewBroadcast[int](4)
	slow := tx.Subscribe()
	for i := 0; i < 10; i++ {
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
	}
	_, err := slow.TryRecv()
	var lag *LagError
	if !errors.As(err, &lag) || lag.Missed != 6 || !errors.Is(err, ErrLagged) {
		t.Fatalf("first receive after 10 sends into 4 slots = %v, want a LagError missing 6", err)
	}
	for want := 6; want < 10; want++ {
		if v, err := slow.TryRecv(); err != nil || v != want {
			t.Fatalf("after lag: %d, %v; want %d", v, err, want)
		}
	}
	if _, err := slow.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatal(err)
	}
	// A second lag, counted from where the receiver is now.
	for i := 10; i < 15; i++ {
		_ = tx.Send(i)
	}
	if _, err := slow.TryRecv(); !errors.As(err, &lag) || lag.Missed != 1 {
		t.Fatalf("second lag = %v, want 1 missed", err)
	}
	if v, _ := slow.TryRecv(); v != 11 {
		t.Fatalf("after the second lag got %d, want 11", v)
	}
	_ = rx
	// Capacity is rounded up to a power of two: 5 holds 8.
	tx5, rx5 := NewBroadcast[int](5)
	for i := 0; i < 8; i++ {
		_ = tx5.Send(i)
	}
	if v, err := rx5.TryRecv(); v != 0 || err != nil {
		t.Fatalf("capacity 5 (8) lost a value: %d, %v", v, err)
	}
}

func TestBroadcastCloseAndReceivers(t *testing.T) {
	tx, rx := NewBroadcast[string](8)
	rx2 := rx.Clone()
	_ = tx.Send("a")
	late := tx.Subscribe() // sees only what is sent from now on
	_ = tx.Send("b")
	tx.Close()
	tx.Close()
	for _, c := range []struct {
		r    *BroadcastReceiver[string]
		want []string
	}{{rx, []string{"a", "b"}}, {rx2, []string{"a", "b"}}, {late, []string{"b"}}} {
		var got []string
		for v := range c.r.All() {
			got = append(got, v)
		}
		if len(got) != len(c.want) || got[0] != c.want[0] {
			t.Fatalf("got %v, want %v", got, c.want)
		}
		if _, err := c.r.Recv(); !errors.Is(err, ErrClosed) {
			t.Fatal(err)
		}
	}
	tx2, rx3 := NewBroadcast[int](2)
	rx3.Close()
	rx3.Close()
	if err := tx2.Send(1); !errors.Is(err, ErrClosed) || tx2.ReceiverCount() != 0 {
		t.Fatalf("send with no receivers = %v", err)
	}
	r := tx2.Subscribe()
	if err := tx2.Send(2); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.TryRecv(); v != 2 {
		t.Fatal(v)
	}
	expectPanic(t, "Clone of a closed BroadcastReceiver", func() { rx3.Clone() })
}

// Every receiver sees every value, in order, with the sender paced so nobody lags; and
// receivers waiting in futures are all woken by each send.
func TestBroadcastEveryReceiverSeesEveryValue(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	const n, receivers = 5000, 6
	tx, rx := NewBroadcast[int](64)
	acks, ackRx := NewUnbounded[int]()
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < receivers; i++ {
		r := rx.Clone()
		a := acks.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			f := r.RecvAsync()
			next := 0
			for {
				res := blitzio.Await(co, blitzio.Future[blitzio.Result[int]](f))
				if errors.Is(res.Err, ErrClosed) {
					a.Close()
					return next
				}
				if res.Err != nil || res.Value != next {
					panic("out of order or lagged")
				}
				next++
				if next%32 == 0 {
					_ = a.Send(next)
				}
			}
		})))
	}
	rx.Close()
	acks.Close()
	// The sender is a goroutine that waits for every receiver's ack every 32 values.
	for i := 0; i < n; i++ {
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
		if (i+1)%32 == 0 {
			for k := 0; k < receivers; k++ {
				if _, err := ackRx.Recv(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tx.Close()
	for _, h := range hs {
		if got, err := h.Wait(); err != nil || got != n {
			t.Fatalf("receiver got %d of %d (%v)", got, n, err)
		}
	}
}

// ---- watch ----

func TestWatchBasics(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewWatch(1)
	if ch, err := rx.HasChanged(); ch || err != nil {
		t.Fatal("changed before any send")
	}
	rx.Borrow(func(v *int) {
		if *v != 1 {
			t.Fatalf("initial %d", *v)
		}
	})
	var w wakeCount
	f := rx.ChangedAsync()
	if _, ok := f.Poll(w.cx()); ok {
		t.Fatal("Changed ready without a send")
	}
	_ = tx.Send(2)
	_ = tx.Send(3)
	if w.n.Load() != 1 {
		t.Fatalf("woken %d times, want 1", w.n.Load())
	}
	if err, ok := f.Poll(w.cx()); !ok || err != nil {
		t.Fatal(err, ok)
	}
	if v := rx.Get(); v != 3 {
		t.Fatalf("latest = %d, want 3", v)
	}
	if _, ok := f.Poll(w.cx()); ok { // reused: waits for the next change
		t.Fatal("ready again without a new send")
	}
	f.Drop()
	tx.SendModify(func(v *int) { *v *= 10 })
	tx.Borrow(func(v *int) {
		if *v != 30 {
			t.Fatal(*v)
		}
	})
	if ch, _ := rx.HasChanged(); !ch {
		t.Fatal("SendModify not seen as a change")
	}
	rx.BorrowAndUpdate(func(*int) {})
	if ch, _ := rx.HasChanged(); ch {
		t.Fatal("BorrowAndUpdate did not mark seen")
	}
	late := tx.Subscribe()
	if ch, _ := late.HasChanged(); ch {
		t.Fatal("a new subscriber sees the current value as a change")
	}
	tx.Close()
	if err := rx.Changed(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Changed after the sender closed = %v", err)
	}
	if rx.Get() != 30 {
		t.Fatal("value lost at close")
	}

	tx2, rx2 := NewWatch("x")
	rx2.Close()
	err := tx2.Send("y")
	var se *SendError[string]
	if !errors.As(err, &se) || se.Value != "y" {
		t.Fatalf("send with no receivers = %v", err)
	}
	if old := tx2.SendReplace("z"); old != "x" {
		t.Fatal(old)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	r3 := tx2.Subscribe()
	if err := r3.ChangedContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

// The receiver always ends with the latest value, and never sees values go backwards,
// while a sender sends as fast as it can.
func TestWatchSeesLatest(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	tx, rx := NewWatch(0)
	const n = 100_000
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < 4; i++ {
		r := rx.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			f := r.ChangedAsync()
			last := 0
			for {
				if err := blitzio.Await(co, blitzio.Future[error](f)); err != nil {
					return r.Get()
				}
				var v int
				r.Borrow(func(p *int) { v = *p })
				if v < last {
					panic("watch went backwards")
				}
				last = v
			}
		})))
	}
	var last atomic.Int64
	go func() {
		for i := 1; i <= n; i++ {
			_ = tx.Send(i)
			last.Store(int64(i))
		}
		tx.Close()
	}()
	for _, h := range hs {
		if v, err := h.Wait(); err != nil || v != n {
			t.Fatalf("receiver ended with %d (%v), want the latest %d", v, err, n)
		}
	}
}

// ---- RecvAny ----

func TestRecvAny(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	txA, rxA := NewChannel[int](4)
	txB, rxB := NewUnbounded[int]()
	txC, rxC := NewBroadcast[int](4)
	srcs := []Source[int]{rxA, rxB, rxC}
	var w wakeCount
	f := RecvAny(srcs...)
	if _, ok := f.Poll(w.cx()); ok {
		t.Fatal("ready with nothing sent")
	}
	_ = txB.Send(20)
	if w.n.Load() != 1 {
		t.Fatal("RecvAny not woken by a send to its second source")
	}
	if r, ok := f.Poll(w.cx()); !ok || r.Index != 1 || r.Value != 20 || r.Err != nil {
		t.Fatalf("got %+v, %v", r, ok)
	}
	// Fairness: with all three ready, successive polls take them in turn.
	for i := 0; i < 3; i++ {
		_ = txA.TrySend(10 + i)
		_ = txB.Send(20 + i)
		_ = txC.Send(30 + i)
	}
	counts := [3]int{}
	for i := 0; i < 9; i++ {
		r, ok := f.Poll(w.cx())
		if !ok || r.Err != nil {
			t.Fatalf("poll %d: %+v %v", i, r, ok)
		}
		counts[r.Index]++
	}
	if counts != [3]int{3, 3, 3} {
		t.Fatalf("per-source counts %v, want 3 each (round robin)", counts)
	}
	// A closed source is ready with ErrClosed; a nil entry is skipped.
	txA.Close()
	srcs[1] = nil
	srcs[2] = (*BroadcastReceiver[int])(nil)
	if r, ok := f.Poll(w.cx()); !ok || r.Index != 0 || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("closed source: %+v %v", r, ok)
	}
	srcs[0] = nil
	if r, ok := f.Poll(w.cx()); !ok || r.Index != -1 || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("no live source: %+v %v", r, ok)
	}
	_ = txC
}

// A RecvAny woken by a source whose value it does not take (it was dropped, or took
// another source's value) passes the wake to the next receiver of that source.
func TestRecvAnyDropPassesOn(t *testing.T) {
	tx, rx := NewChannel[int](4)
	_, rx2 := NewChannel[int](4)
	var wa, wb wakeCount
	a := RecvAny[int](rx, rx2)
	b := rx.RecvAsync()
	if _, ok := a.Poll(wa.cx()); ok {
		t.Fatal("ready")
	}
	if _, ok := b.Poll(wb.cx()); ok {
		t.Fatal("ready")
	}
	_ = tx.TrySend(5)
	if wa.n.Load() != 1 || wb.n.Load() != 0 {
		t.Fatal("FIFO wake order broken")
	}
	a.Drop()
	if wb.n.Load() != 1 {
		t.Fatal("a dropped RecvAny kept the wake")
	}
	if r, ok := b.Poll(wb.cx()); !ok || r.Value != 5 {
		t.Fatal(r, ok)
	}
	expectPanic(t, "polled after Drop", func() { a.Poll(wa.cx()) })
}

func TestRecvAnyTasksAndContext(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	const k, per = 4, 2000
	var srcs []Source[int]
	var hs []blitzio.JoinHandle[struct{}]
	for i := 0; i < k; i++ {
		tx, rx := NewChannel[int](2)
		srcs = append(srcs, rx)
		hs = append(hs, blitzio.Spawn(rt, &sendLoop{s: tx, next: i * per, to: (i + 1) * per, yieldMod: 3}))
	}
	sum, cnt := 0, 0
	live := k
	for live > 0 {
		r, err := RecvAnyContext(context.Background(), srcs...)
		if err != nil {
			t.Fatal(err)
		}
		if r.Err != nil {
			srcs[r.Index] = nil // finished with it, as with a nil Go channel
			live--
			continue
		}
		sum += r.Value
		cnt++
	}
	n := k * per
	if cnt != n || sum != n*(n-1)/2 {
		t.Fatalf("%d values, sum %d", cnt, sum)
	}
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	_, rx := NewChannel[int](1)
	if _, err := RecvAnyContext[int](ctx, rx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

// Under concurrency a lagging broadcast receiver accounts for every value: what it
// received plus what its lag errors say it missed is exactly what was sent, and what it
// received is in order.
func TestBroadcastLagAccountingConcurrent(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	const n = 20000
	tx, rx := NewBroadcast[int](8)
	var hs []blitzio.JoinHandle[[2]int]
	for i := 0; i < 4; i++ {
		r := rx.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) [2]int {
			f := r.RecvAsync()
			got, missed, last := 0, 0, -1
			for k := 0; ; k++ {
				res := blitzio.Await(co, blitzio.Future[blitzio.Result[int]](f))
				var lag *LagError
				switch {
				case errors.As(res.Err, &lag):
					missed += int(lag.Missed)
					continue
				case res.Err != nil:
					return [2]int{got, missed}
				}
				if res.Value <= last {
					panic("broadcast out of order")
				}
				if got+missed != res.Value {
					panic("a value was neither received nor counted as missed")
				}
				last = res.Value
				got++
				if k%(i*50+7) == 0 {
					blitzio.Await(co, blitzio.YieldNow()) // receivers of different speeds
				}
			}
		})))
	}
	rx.Close()
	for i := 0; i < n; i++ {
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
	}
	tx.Close()
	for _, h := range hs {
		c, err := h.Wait()
		if err != nil || c[0]+c[1] != n {
			t.Fatalf("received %d + missed %d != sent %d (%v)", c[0], c[1], n, err)
		}
		t.Logf("received %d, missed %d", c[0], c[1])
	}
}

// The futures of the unbounded, broadcast and watch channels, dropped while waiting or
// after being woken, take nothing and leave nothing behind.
func TestOtherFuturesDropAtAwaitPoints(t *testing.T) {
	utx, urx := NewUnbounded[int]()
	var w wakeCount
	f := urx.RecvAsync()
	f.Poll(w.cx())
	_ = utx.Send(1)
	if w.n.Load() != 1 {
		t.Fatal("unbounded receive not woken")
	}
	f.Drop()
	f.Drop()
	if v, err := urx.TryRecv(); v != 1 || err != nil {
		t.Fatalf("value lost by a dropped unbounded receive: %d, %v", v, err)
	}
	expectPanic(t, "polled after Drop", func() { f.Poll(w.cx()) })

	btx, brx := NewBroadcast[int](4)
	bf := brx.RecvAsync()
	bf.Poll(w.cx())
	_ = btx.Send(2)
	bf.Drop()
	if v, err := brx.TryRecv(); v != 2 || err != nil {
		t.Fatalf("value lost by a dropped broadcast receive: %d, %v", v, err)
	}

	wtx, wrx := NewWatch(0)
	cf := wrx.ChangedAsync()
	cf.Poll(w.cx())
	_ = wtx.Send(3)
	cf.Drop()
	if ch, _ := wrx.HasChanged(); !ch {
		t.Fatal("a dropped Changed consumed the change")
	}

	// A oneshot receiver dropped after the value was sent discards it; the sender saw
	// the value accepted (it was sent before the drop).
	otx, orx := NewOneshot[int]()
	orx.Poll(w.cx())
	if err := otx.Send(4); err != nil {
		t.Fatal(err)
	}
	orx.Drop()
	if _, err := orx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

func TestWatchAll(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewWatch(0)
	done := make(chan []int)
	step := make(chan struct{})
	go func() {
		var got []int
		for v := range rx.All() {
			got = append(got, v)
			step <- struct{}{}
		}
		done <- got
	}()
	<-step // the current value
	for i := 1; i <= 3; i++ {
		_ = tx.Send(i)
		<-step // seen before the next send, so every value is observed
	}
	tx.Close()
	got := <-done
	if len(got) != 4 || got[0] != 0 || got[3] != 3 {
		t.Fatalf("All yielded %v, want [0 1 2 3]", got)
	}
}

// RecvAny futures abandoned at random (each wait races a short sleep) while producers
// send on two channels: every value is received exactly once.
func TestRecvAnyRandomDropsLoseNothing(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	const per = 1500
	txA, rxA := NewChannel[int](2)
	txB, rxB := NewUnbounded[int]()
	go func() {
		for i := 0; i < per; i++ {
			_ = txA.Send(i)
		}
		txA.Close()
	}()
	go func() {
		for i := per; i < 2*per; i++ {
			_ = txB.Send(i)
			if i%16 == 0 {
				time.Sleep(10 * time.Microsecond)
			}
		}
		txB.Close()
	}()
	seen := make([]atomic.Int32, 2*per)
	var hs []blitzio.JoinHandle[int]
	for c := 0; c < 3; c++ {
		a := rxA.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			// rxB has one receiver: consumer 0 takes it, the others only rxA.
			srcs := []Source[int]{a, nil}
			if c == 0 {
				srcs[1] = rxB
			}
			live, got := 0, 0
			for _, s := range srcs {
				if !srcIsNil(s) {
					live++
				}
			}
			for k := 0; live > 0; k++ {
				sel := blitzio.Await(co, blitzio.Select2[Received[int], struct{}](RecvAny(srcs...),
					blitzio.Sleep(time.Duration(k%5)*time.Microsecond)))
				if sel.Index != 0 {
					continue // the receive was dropped
				}
				r := sel.V1
				if r.Err != nil {
					srcs[r.Index] = nil
					live--
					continue
				}
				seen[r.Value].Add(1)
				got++
			}
			return got
		})))
	}
	rxA.Close()
	total := 0
	for _, h := range hs {
		n, err := h.Wait()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 2*per {
		t.Fatalf("received %d of %d", total, 2*per)
	}
	for v := range seen {
		if c := seen[v].Load(); c != 1 {
			t.Fatalf("value %d received %d times", v, c)
		}
	}
}

// Send, sender Close, receive (blocking and as a task's future) and receiver Close race
// each other: every outcome is consistent, and a value is received only if its send
// succeeded, and received at most once.
func TestOneshotRaces(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	n := 20000
	if raceEnabled {
		n = 4000
	}
	for i := 0; i < n; i++ {
		tx, rx := NewOneshot[int]()
		var sendErr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%5 == 0 {
				tx.Close()
				sendErr = ErrClosed
				return
			}
			sendErr = tx.Send(i)
		}()
		var v int
		var err error
		closedRx := false
		switch i % 3 {
		case 0:
			v, err = rx.Recv()
		case 1:
			res, e := blitzio.Spawn(rt, blitzio.Future[blitzio.Result[int]](rx)).Wait()
			v, err = res.Value, errors.Join(res.Err, e)
		case 2:
			if i%7 == 0 {
				rx.Close()
				closedRx = true
				err = ErrClosed
			} else {
				v, err = rx.Recv()
			}
		}
		wg.Wait()
		switch {
		case err == nil:
			if sendErr != nil || v != i {
				t.Fatalf("iteration %d: received %d though the send returned %v", i, v, sendErr)
			}
		case closedRx:
			var se *SendError[int]
			if i%5 != 0 && sendErr != nil && (!errors.As(sendErr, &se) || se.Value != i) {
				t.Fatalf("iteration %d: a failed send did not return its value: %v", i, sendErr)
			}
		default: // the receive saw ErrClosed: the sender closed without sending
			if !errors.Is(err, ErrClosed) || i%5 != 0 {
				t.Fatalf("iteration %d: receive error %v, send %v", i, err, sendErr)
			}
		}
		if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
			t.Fatalf("iteration %d: the value could be received twice: %v", i, err)
		}
	}
}

// A waker that panics (a broken WakerFunc) does not keep the other waiters asleep: they
// are all woken, then the panic reaches the sender.
func TestPanickingWakerDoesNotStrandOthers(t *testing.T) {
	tx, rx := NewBroadcast[int](4)
	rx2 := tx.Subscribe()
	bad := blitzio.NewContext(nil, blitzio.WakerFunc(func() { panic("broken waker") }))
	var good wakeCount
	f1, f2 := rx.RecvAsync(), rx2.RecvAsync()
	f1.Poll(bad)
	f2.Poll(good.cx())
	expectPanic(t, "broken waker", func() { _ = tx.Send(1) })
	if good.n.Load() != 1 {
		t.Fatal("the waiter after the panicking waker was not woken")
	}
	if r, ok := f2.Poll(good.cx()); !ok || r.Value != 1 {
		t.Fatal(r, ok)
	}
}

func TestWatchSendFromTask(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	rt := chanRT(t, 2)
	tx, rx := NewWatch(0)
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		for rx.Get() != 5 {
			if err := blitzio.Await(co, blitzio.Future[error](rx.ChangedAsync())); err != nil {
				return -1
			}
		}
		return 5
	}))
	blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (struct{}, bool) {
		for i := 1; i <= 5; i++ {
			if err := tx.SendFrom(cx, i); err != nil {
				panic(err)
			}
		}
		return struct{}{}, true
	})).Detach()
	if v, err := h.Wait(); err != nil || v != 5 {
		t.Fatalf("watcher: %d, %v", v, err)
	}
	tx.Close()
	if err := tx.SendFrom(nil, 6); !errors.Is(err, ErrClosed) {
		t.Fatalf("SendFrom through a closed handle = %v", err)
	}
}

// TestOneshotAllocationSize checks that NewOneshot of a word-sized value is one
// allocation in the 48-byte size class: the receiver keeps what a ready Poll returned
// in the shared state word (osKept) instead of a field of its own, which would push the
// allocation into the 64-byte class.
func TestOneshotAllocationSize(t *testing.T) {
	const n = 10000
	keep := make([]*OneshotReceiver[int], n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		_, keep[i] = NewOneshot[int]()
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	objs := after.Mallocs - before.Mallocs
	perOne := float64(after.TotalAlloc-before.TotalAlloc) / n
	// A little slack for whatever else the process allocates meanwhile.
	if objs > n+n/10 || perOne > 52 {
		t.Fatalf("NewOneshot[int]: %d objects and %.1f bytes per call, want 1 object of 48 bytes", objs, perOne)
	}
}
