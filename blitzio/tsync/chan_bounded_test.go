package tsync

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestChannelTryFormsAndCapacityExact(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 5, 7, 8, 9, 100, 1000} {
		tx, rx := NewChannel[int](capacity)
		if tx.Cap() != capacity || rx.Cap() != capacity {
			t.Fatalf("Cap = %d/%d, want %d", tx.Cap(), rx.Cap(), capacity)
		}
		next, want := 0, 0
		// Several laps with a varying fill level: the ring never holds more than
		// capacity values and never refuses one while it has room.
		for round := 0; round < 5; round++ {
			for i := rx.Len(); i < capacity; i++ {
				if err := tx.TrySend(next); err != nil {
					t.Fatalf("cap %d: TrySend with %d of %d used: %v", capacity, i, capacity, err)
				}
				next++
			}
			if n := tx.Len(); n != capacity {
				t.Fatalf("cap %d: Len = %d after filling", capacity, n)
			}
			err := tx.TrySend(-1)
			var se *SendError[int]
			if !errors.Is(err, ErrFull) || !errors.As(err, &se) || se.Value != -1 {
				t.Fatalf("cap %d: TrySend on a full channel = %v, want ErrFull holding -1", capacity, err)
			}
			take := 1 + round%capacity
			for i := 0; i < take; i++ {
				v, err := rx.TryRecv()
				if err != nil || v != want {
					t.Fatalf("cap %d: TryRecv = %d, %v; want %d", capacity, v, err, want)
				}
				want++
			}
		}
		tx.Close()
		for ; want < next; want++ {
			if v, err := rx.TryRecv(); err != nil || v != want {
				t.Fatalf("drain after close: %d, %v; want %d", v, err, want)
			}
		}
		if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
			t.Fatalf("TryRecv after drain = %v, want ErrClosed", err)
		}
	}
}

func TestChannelTryRecvEmpty(t *testing.T) {
	tx, rx := NewChannel[string](4)
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("TryRecv on empty = %v, want ErrEmpty", err)
	}
	tx.Close()
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRecv after close = %v, want ErrClosed", err)
	}
}

func TestChannelBadCapacity(t *testing.T) {
	for _, c := range []int{0, -1, math.MinInt} {
		expectPanic(t, "capacity must be at least 1", func() { NewChannel[int](c) })
	}
	for _, c := range []int{math.MaxInt, math.MaxInt / 2, math.MaxInt / 8} {
		expectPanic(t, "too large", func() { NewChannel[int](c) })
	}
	expectPanic(t, "capacity must be at least 1", func() { NewBroadcast[int](0) })
	expectPanic(t, "capacity must be at least 1", func() { NewBroadcast[int](-5) })
	expectPanic(t, "too large", func() { NewBroadcast[int](math.MaxInt) })
	expectPanic(t, "too large", func() { NewBroadcast[[64]byte](math.MaxInt / 64) })
}

func TestChannelNilHandles(t *testing.T) {
	var s *Sender[int]
	var r *Receiver[int]
	expectPanic(t, "nil or zero Sender", func() { _ = s.Send(1) })
	expectPanic(t, "nil or zero Sender", func() { _ = s.TrySend(1) })
	expectPanic(t, "nil or zero Sender", func() { s.Close() })
	expectPanic(t, "nil or zero Receiver", func() { _, _ = r.Recv() })
	expectPanic(t, "nil or zero Receiver", func() { r.RecvAsync() })
	expectPanic(t, "nil or zero Receiver", func() { (&Receiver[int]{}).Close() })
	expectPanic(t, "zero SendFuture", func() { (&SendFuture[int]{}).Poll(blitzio.NewContext(nil, blitzio.Waker{})) })
	expectPanic(t, "zero RecvFuture", func() { (&RecvFuture[int]{}).Poll(blitzio.NewContext(nil, blitzio.Waker{})) })
}

func TestChannelCloseCountsHandles(t *testing.T) {
	tx, rx := NewChannel[int](8)
	tx2 := tx.Clone()
	tx.Close()
	tx.Close() // twice: a no-op, must not close the channel for tx2's sake
	if err := tx.TrySend(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("send through a closed handle = %v, want ErrClosed", err)
	}
	if err := tx2.TrySend(2); err != nil {
		t.Fatalf("send through the open clone = %v", err)
	}
	tx2.Close()
	if v, err := rx.Recv(); err != nil || v != 2 {
		t.Fatalf("Recv = %d, %v; want 2", v, err)
	}
	if _, err := rx.Recv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after every sender closed = %v, want ErrClosed", err)
	}
	expectPanic(t, "Clone of a closed Sender", func() { tx.Clone() })

	tx, rx = NewChannel[int](8)
	rx2 := rx.Clone()
	rx.Close()
	rx.Close()
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("recv through a closed handle = %v, want ErrClosed", err)
	}
	if err := tx.Send(5); err != nil {
		t.Fatalf("send with one receiver left = %v", err)
	}
	rx2.Close()
	err := tx.Send(6)
	var se *SendError[int]
	if !errors.Is(err, ErrClosed) || !errors.As(err, &se) || se.Value != 6 {
		t.Fatalf("send after every receiver closed = %v, want ErrClosed holding 6", err)
	}
	if !tx.IsClosed() || tx.Len() != 0 {
		t.Fatalf("IsClosed = %v, Len = %d after the receivers closed", tx.IsClosed(), tx.Len())
	}
}

// A goroutine blocked in Send on a full channel gets its value back when the last
// receiver closes; one blocked in Recv gets ErrClosed when the last sender closes.
func TestChannelCloseWakesBlocked(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewChannel[int](1)
	if err := tx.Send(1); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- tx.Send(2) }()
	time.Sleep(5 * time.Millisecond) // let it block (the test holds either way)
	rx.Close()
	err := <-errc
	var se *SendError[int]
	if !errors.As(err, &se) || se.Value != 2 || !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Send after receiver close = %v", err)
	}

	tx, rx = NewChannel[int](1)
	go func() { _, err := rx.Recv(); errc <- err }()
	time.Sleep(5 * time.Millisecond)
	tx.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Recv after sender close = %v", err)
	}
}

func TestChannelContextForms(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewChannel[int](1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := rx.RecvContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RecvContext on empty = %v, want DeadlineExceeded", err)
	}
	if err := tx.SendContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel2()
	if err := tx.SendContext(ctx2, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendContext on full = %v, want DeadlineExceeded", err)
	}
	// The gave-up send sent nothing: exactly one value is there.
	if v, err := rx.RecvContext(context.Background()); v != 1 || err != nil {
		t.Fatalf("RecvContext = %d, %v", v, err)
	}
	if n := rx.Len(); n != 0 {
		t.Fatalf("Len = %d after the only value was received; the cancelled send leaked", n)
	}
	// The waiters the cancelled calls left were removed: a fresh pair still works.
	go func() { _ = tx.Send(3) }()
	if v, err := rx.Recv(); v != 3 || err != nil {
		t.Fatalf("Recv = %d, %v", v, err)
	}
}

func TestChannelAllIterator(t *testing.T) {
	defer chanWatchdog(t, 10*time.Second)()
	tx, rx := NewChannel[int](3)
	go func() {
		for i := 1; i <= 100; i++ {
			if err := tx.Send(i); err != nil {
				panic(err)
			}
		}
		tx.Close()
	}()
	sum := 0
	for v := range rx.All() {
		sum += v
	}
	if sum != 5050 {
		t.Fatalf("sum over All = %d, want 5050", sum)
	}
}

// A receive future that was woken for a value and then dropped passes the wake to the
// next waiting receiver; a send future woken for room passes it to the next sender.
func TestChannelDroppedWokenWaiterPassesOn(t *testing.T) {
	tx, rx := NewChannel[int](1)
	var wa, wb wakeCount
	a, b := rx.RecvAsync(), rx.RecvAsync()
	if _, ok := a.Poll(wa.cx()); ok {
		t.Fatal("a ready on empty")
	}
	if _, ok := b.Poll(wb.cx()); ok {
		t.Fatal("b ready on empty")
	}
	if err := tx.TrySend(7); err != nil {
		t.Fatal(err)
	}
	if wa.n.Load() != 1 || wb.n.Load() != 0 {
		t.Fatalf("after one send: a woken %d, b woken %d; want 1, 0 (FIFO, one wake per value)", wa.n.Load(), wb.n.Load())
	}
	a.Drop() // woken, leaves without the value
	if wb.n.Load() != 1 {
		t.Fatal("the dropped waiter's wake was not passed on to b")
	}
	if r, ok := b.Poll(wb.cx()); !ok || r.Value != 7 {
		t.Fatalf("b = %v, %v; want 7", r, ok)
	}

	// Senders: full channel, two waiting send futures, one receive frees a slot.
	if err := tx.TrySend(1); err != nil {
		t.Fatal(err)
	}
	var sa, sb wakeCount
	fa, fb := tx.SendAsync(2), tx.SendAsync(3)
	if _, ok := fa.Poll(sa.cx()); ok {
		t.Fatal("send a ready on a full channel")
	}
	if _, ok := fb.Poll(sb.cx()); ok {
		t.Fatal("send b ready on a full channel")
	}
	if v, err := rx.TryRecv(); v != 1 || err != nil {
		t.Fatal(v, err)
	}
	if sa.n.Load() != 1 || sb.n.Load() != 0 {
		t.Fatalf("a woken %d, b %d", sa.n.Load(), sb.n.Load())
	}
	fa.Drop()
	if sb.n.Load() != 1 {
		t.Fatal("the dropped sender's wake was not passed on")
	}
	if err, ok := fb.Poll(sb.cx()); !ok || err != nil {
		t.Fatalf("send b = %v, %v", err, ok)
	}
	if v, err := rx.TryRecv(); v != 3 || err != nil {
		t.Fatalf("got %d, %v; want 3 (the dropped send of 2 must have sent nothing)", v, err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("extra value: %v", err)
	}
}

// Every receive and send future is dropped at every await point: registered and not
// woken, woken and not polled, and polled again after the wake (re-registered). No value
// is lost or duplicated.
func TestChannelDropAtEveryAwaitPoint(t *testing.T) {
	for stage := 0; stage < 3; stage++ {
		tx, rx := NewChannel[int](1)
		var w wakeCount
		f := rx.RecvAsync()
		if _, ok := f.Poll(w.cx()); ok {
			t.Fatal("ready on empty")
		}
		switch stage {
		case 1:
			_ = tx.TrySend(1)
		case 2:
			_ = tx.TrySend(1)
			if v, err := rx.TryRecv(); v != 1 || err != nil { // a barging receiver takes it
				t.Fatal(v, err)
			}
			if _, ok := f.Poll(w.cx()); ok {
				t.Fatal("ready after the value was taken")
			}
		}
		f.Drop()
		f.Drop() // idempotent
		if stage == 1 {
			if v, err := rx.TryRecv(); v != 1 || err != nil {
				t.Fatalf("stage %d: value lost by the dropped future: %d, %v", stage, v, err)
			}
		}
		if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
			t.Fatalf("stage %d: %v", stage, err)
		}
		// A new waiter is woken by the next send: the dropped one left the list.
		g := rx.RecvAsync()
		var w2 wakeCount
		g.Poll(w2.cx())
		_ = tx.TrySend(2)
		if w2.n.Load() != 1 {
			t.Fatalf("stage %d: the next waiter was not woken", stage)
		}
		if r, ok := g.Poll(w2.cx()); !ok || r.Value != 2 {
			t.Fatalf("stage %d: %v %v", stage, r, ok)
		}

		// The same for a send future on a full channel.
		_ = tx.TrySend(10)
		s := tx.SendAsync(11)
		if _, ok := s.Poll(w.cx()); ok {
			t.Fatal("send ready on full")
		}
		if stage >= 1 {
			if v, _ := rx.TryRecv(); v != 10 {
				t.Fatal(v)
			}
		}
		if stage == 2 {
			_ = tx.TrySend(12) // a barging sender takes the room
			if _, ok := s.Poll(w.cx()); ok {
				t.Fatal("send ready after the room was taken")
			}
		}
		s.Drop()
		got := []int{}
		for {
			v, err := rx.TryRecv()
			if err != nil {
				break
			}
			got = append(got, v)
		}
		for _, v := range got {
			if v == 11 {
				t.Fatalf("stage %d: the dropped send future sent its value: %v", stage, got)
			}
		}
	}
}

// Many producers and consumers, tasks on two runtimes and plain goroutines at once,
// through small channels: every value arrives exactly once.
func TestChannelMPMCExactlyOnce(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	const (
		perProducer = 5000
		taskProd    = 6
		goProd      = 4
		taskCons    = 6
		goCons      = 4
	)
	n := (taskProd + goProd) * perProducer
	for _, capacity := range []int{1, 3, 64} {
		rt1, rt2 := chanRT(t, 2), chanRT(t, 1)
		tx, rx := NewChannel[int](capacity)
		var sum, cnt atomic.Int64
		seen := make([]atomic.Int32, n)
		var prodH []blitzio.JoinHandle[struct{}]
		var consH []blitzio.JoinHandle[struct{}]
		var wg sync.WaitGroup
		for p := 0; p < taskProd+goProd; p++ {
			s := tx.Clone()
			from := p * perProducer
			if p < taskProd {
				rt := rt1
				if p%2 == 1 {
					rt = rt2
				}
				prodH = append(prodH, blitzio.Spawn(rt, &sendLoop{s: s, next: from, to: from + perProducer, yieldMod: 1 + p}))
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from; i < from+perProducer; i++ {
					if err := s.Send(i); err != nil {
						panic(err)
					}
					if i%97 == 0 {
						runtime.Gosched()
					}
				}
				s.Close()
			}()
		}
		tx.Close()
		for c := 0; c < taskCons+goCons; c++ {
			r := rx.Clone()
			if c < taskCons {
				rt := rt1
				if c%2 == 0 {
					rt = rt2
				}
				consH = append(consH, blitzio.Spawn(rt, &recvLoop{f: r.RecvAsync(), sum: &sum, cnt: &cnt, seen: seen}))
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for v := range r.All() {
					sum.Add(int64(v))
					cnt.Add(1)
					seen[v].Add(1)
				}
			}()
		}
		rx.Close()
		for _, h := range append(prodH, consH...) {
			if _, err := h.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		if cnt.Load() != int64(n) || sum.Load() != int64(n)*int64(n-1)/2 {
			t.Fatalf("cap %d: received %d values summing to %d; want %d summing to %d",
				capacity, cnt.Load(), sum.Load(), n, int64(n)*int64(n-1)/2)
		}
		for v := range seen {
			if c := seen[v].Load(); c != 1 {
				t.Fatalf("cap %d: value %d received %d times", capacity, v, c)
			}
		}
	}
}

// 10^6 messages between two tasks through a channel of capacity 1 (every message may
// need a wake in each direction) finish: no wake-up is lost.
func TestChannelNoLostWakeupMillion(t *testing.T) {
	defer chanWatchdog(t, 90*time.Second)()
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 100_000 // the race detector slows each operation ~20x
	}
	for _, workers := range []int{1, 2} {
		rt := chanRT(t, workers)
		tx, rx := NewChannel[int](1)
		var sum, cnt atomic.Int64
		hp := blitzio.Spawn(rt, &sendLoop{s: tx, next: 0, to: n})
		hc := blitzio.Spawn(rt, &recvLoop{f: rx.RecvAsync(), sum: &sum, cnt: &cnt})
		if _, err := hp.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := hc.Wait(); err != nil {
			t.Fatal(err)
		}
		if cnt.Load() != int64(n) || sum.Load() != int64(n)*int64(n-1)/2 {
			t.Fatalf("workers %d: %d values, sum %d", workers, cnt.Load(), sum.Load())
		}
	}
	// And between two plain goroutines (the parker path).
	tx, rx := NewChannel[int](1)
	go func() {
		for i := 0; i < n/4; i++ {
			_ = tx.Send(i)
		}
		tx.Close()
	}()
	got := 0
	for range rx.All() {
		got++
	}
	if got != n/4 {
		t.Fatalf("goroutines: %d of %d", got, n/4)
	}
}

// Receive and send futures raced against Timeout-style drops (each wait is a select
// against a short sleep): whatever was sent is received exactly once.
func TestChannelRandomDropsLoseNothing(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rt := chanRT(t, 2)
	tx, rx := NewChannel[int](2)
	const n = 3000
	var cnt, sum atomic.Int64
	var sent atomic.Int64
	var sentSum atomic.Int64
	prod := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < n; {
			sel := blitzio.Await(co, blitzio.Select2[error, struct{}](tx.SendAsync(i), blitzio.Sleep(time.Duration(rng.IntN(20))*time.Microsecond)))
			if sel.Index == 0 {
				if sel.V1 != nil {
					panic(sel.V1)
				}
				sent.Add(1)
				sentSum.Add(int64(i))
				i++
			}
		}
		tx.Close()
		return struct{}{}
	}))
	var cons []blitzio.JoinHandle[struct{}]
	for c := 0; c < 4; c++ {
		r := rx.Clone()
		cons = append(cons, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			for {
				sel := blitzio.Await(co, blitzio.Select2[blitzio.Result[int], struct{}](r.RecvAsync(), blitzio.Sleep(time.Duration(rng.IntN(30))*time.Microsecond)))
				if sel.Index == 0 {
					if sel.V1.Err != nil {
						return struct{}{}
					}
					cnt.Add(1)
					sum.Add(int64(sel.V1.Value))
				}
			}
		})))
	}
	rx.Close()
	if _, err := prod.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, h := range cons {
		if _, err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if cnt.Load() != sent.Load() || sum.Load() != sentSum.Load() || sent.Load() != n {
		t.Fatalf("sent %d (sum %d), received %d (sum %d)", sent.Load(), sentSum.Load(), cnt.Load(), sum.Load())
	}
}

// Receivers closing while senders send: a send either succeeded or returned its own
// value in a *SendError; nothing is duplicated or corrupted, and nobody hangs.
func TestChannelCloseRacesSendRecv(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	for iter := 0; iter < 50; iter++ {
		tx, rx := NewChannel[int](4)
		var wg sync.WaitGroup
		var okSum, errSum, recvSum atomic.Int64
		total := int64(0)
		for p := 0; p < 4; p++ {
			s := tx.Clone()
			from := p * 1000
			for i := from; i < from+200; i++ {
				total += int64(i)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.Close()
				for i := from; i < from+200; i++ {
					err := s.Send(i)
					var se *SendError[int]
					switch {
					case err == nil:
						okSum.Add(int64(i))
					case errors.As(err, &se) && se.Value == i && errors.Is(err, ErrClosed):
						errSum.Add(int64(i))
					default:
						panic(err)
					}
				}
			}()
		}
		tx.Close()
		for c := 0; c < 3; c++ {
			r := rx.Clone()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 50+c*40+iter; k++ {
					v, err := r.Recv()
					if err != nil {
						break
					}
					recvSum.Add(int64(v))
				}
				r.Close()
			}()
		}
		rx.Close()
		wg.Wait()
		if okSum.Load()+errSum.Load() != total {
			t.Fatalf("iteration %d: accepted %d + returned %d != attempted %d", iter, okSum.Load(), errSum.Load(), total)
		}
		if recvSum.Load() > okSum.Load() {
			t.Fatalf("received more (%d) than was accepted (%d)", recvSum.Load(), okSum.Load())
		}
	}
}

// A receiving task that panics (or exits with Goexit) while its receive is registered
// is dropped by the runtime; the value sent afterwards reaches another receiver.
func TestChannelReceiverTaskPanicsOrExits(t *testing.T) {
	defer chanWatchdog(t, 20*time.Second)()
	for _, how := range []string{"panic", "goexit"} {
		rt := chanRT(t, 2)
		tx, rx := NewChannel[int](1)
		started := make(chan struct{})
		h := blitzio.Spawn(rt, blitzio.Select2[blitzio.Result[int], struct{}](rx.RecvAsync(),
			blitzio.PollFn(func(cx *blitzio.Context) (struct{}, bool) {
				close(started) // the receive was polled (and registered) before this
				if how == "panic" {
					panic("user panic")
				}
				runtime.Goexit()
				return struct{}{}, true
			})))
		<-started
		_, err := h.Wait()
		if how == "panic" && err == nil || how == "goexit" && !errors.Is(err, blitzio.ErrGoexit) {
			t.Fatalf("%s: task error %v", how, err)
		}
		// Another receiver waits, then the value is sent: it must be woken.
		got := make(chan int)
		go func() { v, _ := rx.Recv(); got <- v }()
		time.Sleep(2 * time.Millisecond)
		_ = tx.Send(42)
		if v := <-got; v != 42 {
			t.Fatalf("%s: got %d", how, v)
		}
	}
}

// Blocking forms called from a plain goroutine while tasks of two runtimes use the same
// channel, and many more goroutines than cores.
func TestChannelManyGoroutinesAndTasks(t *testing.T) {
	defer chanWatchdog(t, 60*time.Second)()
	rtA, rtB := chanRT(t, 1), chanRT(t, 2)
	tx, rx := NewChannel[int](8)
	const per = 300
	var wg sync.WaitGroup
	var sum, cnt atomic.Int64
	var hs []blitzio.JoinHandle[struct{}]
	for g := 0; g < 64; g++ {
		s := tx.Clone()
		switch g % 3 {
		case 0:
			hs = append(hs, blitzio.Spawn(rtA, &sendLoop{s: s, next: g * per, to: (g + 1) * per, yieldMod: 7}))
		case 1:
			hs = append(hs, blitzio.Spawn(rtB, &sendLoop{s: s, next: g * per, to: (g + 1) * per}))
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g * per; i < (g+1)*per; i++ {
					_ = s.Send(i)
				}
				s.Close()
			}()
		}
	}
	tx.Close()
	for c := 0; c < 48; c++ {
		r := rx.Clone()
		switch c % 3 {
		case 0:
			hs = append(hs, blitzio.Spawn(rtA, &recvLoop{f: r.RecvAsync(), sum: &sum, cnt: &cnt}))
		case 1:
			hs = append(hs, blitzio.Spawn(rtB, &recvLoop{f: r.RecvAsync(), sum: &sum, cnt: &cnt}))
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				for v := range r.All() {
					sum.Add(int64(v))
					cnt.Add(1)
				}
			}()
		}
	}
	rx.Close()
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	n := int64(64 * per)
	if cnt.Load() != n || sum.Load() != n*(n-1)/2 {
		t.Fatalf("%d values summing to %d; want %d summing to %d", cnt.Load(), sum.Load(), n, n*(n-1)/2)
	}
}

// Closing one handle while a future waits through it (other handles still open) ends
// that future with ErrClosed instead of leaving it asleep.
func TestChannelCloseHandleWakesItsWaiters(t *testing.T) {
	tx, rx := NewChannel[int](1)
	rx2 := rx.Clone()
	var w wakeCount
	f := rx2.RecvAsync()
	if _, ok := f.Poll(w.cx()); ok {
		t.Fatal("ready on empty")
	}
	rx2.Close()
	if w.n.Load() == 0 {
		t.Fatal("closing the handle did not wake its waiting receive")
	}
	if r, ok := f.Poll(w.cx()); !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("receive through the closed handle = %v, %v", r, ok)
	}

	_ = tx.TrySend(1)
	tx2 := tx.Clone()
	s := tx2.SendAsync(2)
	var ws wakeCount
	if _, ok := s.Poll(ws.cx()); ok {
		t.Fatal("send ready on full")
	}
	tx2.Close()
	if ws.n.Load() == 0 {
		t.Fatal("closing the handle did not wake its waiting send")
	}
	err, ok := s.Poll(ws.cx())
	var se *SendError[int]
	if !ok || !errors.As(err, &se) || se.Value != 2 {
		t.Fatalf("send through the closed handle = %v, %v", err, ok)
	}
	// The channel itself is still open through tx and rx.
	if v, err := rx.TryRecv(); v != 1 || err != nil {
		t.Fatal(v, err)
	}

	btx, brx := NewBroadcast[int](2)
	b2 := brx.Clone()
	bf := b2.RecvAsync()
	var wb wakeCount
	bf.Poll(wb.cx())
	b2.Close()
	if r, ok := bf.Poll(wb.cx()); wb.n.Load() == 0 || !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("broadcast receive through a closed handle: woken %d, %v %v", wb.n.Load(), r, ok)
	}
	_ = btx
}

// A receive woken for a value, then finding its own handle closed, passes the wake on:
// the value reaches the next waiting receiver of another handle.
func TestChannelClosedHandlePassesOnItsWake(t *testing.T) {
	tx, rx := NewChannel[int](1)
	rx2 := rx.Clone()
	var wa, wb wakeCount
	a, b := rx2.RecvAsync(), rx.RecvAsync()
	a.Poll(wa.cx())
	b.Poll(wb.cx())
	_ = tx.TrySend(3) // wakes a (first in line)
	if wa.n.Load() != 1 || wb.n.Load() != 0 {
		t.Fatalf("woken a %d, b %d", wa.n.Load(), wb.n.Load())
	}
	rx2.closed.Store(true) // the handle closes between the wake and a's poll
	if r, ok := a.Poll(wa.cx()); !ok || !errors.Is(r.Err, ErrClosed) {
		t.Fatal(r, ok)
	}
	if wb.n.Load() != 1 {
		t.Fatal("the wake for the value was not passed on to b")
	}
	if r, ok := b.Poll(wb.cx()); !ok || r.Value != 3 {
		t.Fatal(r, ok)
	}
}

// A blocking form called from a task's code (a PollFn on a worker, or an Async function)
// would park a worker: it panics with a clear message instead, which the task's handle
// reports. A ready channel does not need to block, so it is allowed.
func TestChannelBlockingFormsRefuseWorkers(t *testing.T) {
	defer chanWatchdog(t, 20*time.Second)()
	rt := chanRT(t, 1)
	tx, rx := NewChannel[int](1)
	wtx, wrx := NewWatch(0)
	otx, orx := NewOneshot[int]()
	defer otx.Close()
	calls := map[string]func(){
		"Receiver.Recv":         func() { _, _ = rx.Recv() },
		"Receiver.RecvContext":  func() { _, _ = rx.RecvContext(context.Background()) },
		"WatchReceiver.Changed": func() { _ = wrx.Changed() },
		"OneshotReceiver.Recv":  func() { _, _ = orx.Recv() },
		"RecvAnyContext":        func() { _, _ = RecvAnyContext[int](context.Background(), rx) },
		"Sender.Send": func() {
			_ = tx.TrySend(0) // full: the next Send would block
			_ = tx.Send(1)
		},
	}
	for op, call := range calls {
		for _, kind := range []string{"PollFn", "Async"} {
			var f blitzio.Future[struct{}]
			if kind == "PollFn" {
				f = blitzio.PollFn(func(*blitzio.Context) (struct{}, bool) { call(); return struct{}{}, true })
			} else {
				f = blitzio.Async(func(*blitzio.Co) struct{} { call(); return struct{}{} })
			}
			_, err := blitzio.Spawn(rt, f).Wait()
			if err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime: "+op) {
				t.Fatalf("%s in a %s task: error %v, want the cannot-block panic naming it", op, kind, err)
			}
			for {
				if _, err := rx.TryRecv(); err != nil {
					break
				}
			}
		}
	}
	// Ready at once: no block, no panic.
	_ = tx.TrySend(5)
	_ = wtx.Send(1)
	v, err := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (int, bool) {
		v, _ := rx.Recv()
		_ = wrx.Changed()
		return v, true
	})).Wait()
	if err != nil || v != 5 {
		t.Fatalf("ready Recv in a task: %d, %v", v, err)
	}
}

func TestSendFutureReset(t *testing.T) {
	tx, rx := NewChannel[int](1)
	f := tx.SendAsync(1)
	f.Reset(2) // new, never polled: allowed
	cx := blitzio.NewContext(nil, blitzio.Waker{})
	if err, ok := f.Poll(cx); !ok || err != nil {
		t.Fatal(err, ok)
	}
	f.Reset(3)
	if _, ok := f.Poll(cx); ok {
		t.Fatal("ready on a full channel")
	}
	expectPanic(t, "still sending", func() { f.Reset(4) })
	if v, _ := rx.TryRecv(); v != 2 {
		t.Fatalf("got %d, want 2", v)
	}
	if err, ok := f.Poll(cx); !ok || err != nil {
		t.Fatal(err, ok)
	}
	if v, _ := rx.TryRecv(); v != 3 {
		t.Fatalf("got %d, want 3", v)
	}
	f.Reset(5)
	f.Drop()
	f.Reset(6) // dropped: allowed
	if err, ok := f.Poll(cx); !ok || err != nil {
		t.Fatal(err, ok)
	}
	if v, _ := rx.TryRecv(); v != 6 {
		t.Fatalf("got %d, want 6 (the dropped 5 must not have been sent)", v)
	}
	expectPanic(t, "zero SendFuture", func() { (&SendFuture[int]{}).Reset(1) })
}

// Aborting tasks that wait in SendAsync and RecvAsync drops their futures: the aborted
// send never delivers its value, the aborted receive takes nothing, and the channel
// keeps working for everyone else.
func TestChannelAbortedWaitingTasks(t *testing.T) {
	defer chanWatchdog(t, 20*time.Second)()
	rt := chanRT(t, 2)
	tx, rx := NewChannel[int](1)
	_ = tx.TrySend(0) // full
	waiting := make(chan struct{}, 2)
	sender := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		waiting <- struct{}{}
		return blitzio.Await(co, blitzio.Future[error](tx.SendAsync(99)))
	}))
	<-waiting
	time.Sleep(2 * time.Millisecond) // most likely parked in the send by now; the test holds either way
	sender.Abort()
	if _, err := sender.Wait(); err != nil && !errors.Is(err, blitzio.ErrCancelled) {
		t.Fatal(err)
	}
	// Nobody received while the send waited, so it cannot have completed.
	if v, _ := rx.TryRecv(); v != 0 {
		t.Fatalf("first value %d, want 0", v)
	}
	if v, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("the aborted send delivered %d (%v)", v, err)
	}

	// A receiving task aborted while waiting leaves the next value to a goroutine.
	receiver := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) blitzio.Result[int] {
		waiting <- struct{}{}
		return blitzio.Await(co, blitzio.Future[blitzio.Result[int]](rx.RecvAsync()))
	}))
	<-waiting
	time.Sleep(2 * time.Millisecond)
	receiver.Abort()
	if _, err := receiver.Wait(); !errors.Is(err, blitzio.ErrCancelled) {
		t.Fatalf("aborted receiver: %v", err) // nothing was sent while it waited
	}
	got := make(chan int, 1)
	go func() { v, _ := rx.Recv(); got <- v }()
	_ = tx.Send(7)
	if v := <-got; v != 7 {
		t.Fatalf("the goroutine got %d, want 7", v)
	}
}
