package tsync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile11UnboundedAll: All drains what was sent and ends once every sender closed;
// a loop that breaks takes nothing more than it yielded; a loop parked for the next value
// ends when the senders close, or when the receiver itself is closed from another
// goroutine; from a task, All yields what is buffered, and asking for more refuses to
// park the worker without losing a value sent afterwards.
func TestHostile11UnboundedAll(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	tx, rx := NewUnbounded[int]()
	for i := 1; i <= 5; i++ {
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
	}
	tx.Close()
	if got := slices.Collect(rx.All()); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("All after the sender closed = %v", got)
	}

	// Breaking early consumes nothing beyond the values yielded.
	tx, rx = NewUnbounded[int]()
	for i := 1; i <= 5; i++ {
		_ = tx.Send(i)
	}
	for v := range rx.All() {
		if v == 2 {
			break
		}
	}
	if v, err := rx.TryRecv(); v != 3 || err != nil {
		t.Fatalf("TryRecv after breaking out of All at 2 = %d, %v; want 3", v, err)
	}

	// Parked for the next value: the senders close (a clone last) and the loop ends
	// after the values sent meanwhile.
	tx2 := tx.Clone()
	got := h11Go(func() []int { return slices.Collect(rx.All()) })
	// 4 and 5 are buffered already: the loop takes them and parks.
	waitParked(t, "All parked", &rx.c.recvQ, 1)
	_ = tx2.Send(6)
	tx.Close()
	if tx2.IsClosed() {
		t.Fatal("IsClosed on an open clone after the original closed")
	}
	tx2.Close()
	if v := h11Recv(t, "All parked until the senders close", got); !slices.Equal(v, []int{4, 5, 6}) {
		t.Fatalf("All = %v, want [4 5 6]", v)
	}

	// The receiver closed from another goroutine while its All is parked.
	tx, rx = NewUnbounded[int]()
	ended := h11Go(func() int {
		n := 0
		for range rx.All() {
			n++
		}
		return n
	})
	waitParked(t, "All parked", &rx.c.recvQ, 1)
	rx.Close()
	if n := h11Recv(t, "All whose receiver was closed", ended); n != 0 {
		t.Fatalf("All yielded %d values from an empty channel", n)
	}
	var se *SendError[int]
	if err := tx.Send(9); !errors.As(err, &se) || se.Value != 9 || !errors.Is(err, ErrClosed) ||
		!strings.Contains(err.Error(), "not sent") {
		t.Fatalf("Send after the receiver closed = %v", err)
	}
	if !tx.IsClosed() {
		t.Fatal("IsClosed = false after the receiver closed")
	}

	// From a task.
	rt := newRT(t, 2)
	tx, rx = NewUnbounded[int]()
	_ = tx.Send(1)
	_ = tx.Send(2)
	first, err := h11Join(t, "All with break in a task", blitzio.Spawn(rt, blitzio.PollFn(
		func(*blitzio.Context) (int, bool) {
			for v := range rx.All() {
				return v, true
			}
			return -1, true
		})))
	if first != 1 || err != nil {
		t.Fatalf("All with break in a task = %d, %v", first, err)
	}
	n := 0
	_, err = h11Join(t, "All past the buffer in a task", blitzio.Spawn(rt, blitzio.Async(
		func(*blitzio.Co) int {
			for range rx.All() {
				n++
			}
			return n
		})))
	if err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime: UnboundedReceiver.Recv") {
		t.Fatalf("All waiting in an Async function: err = %v, want the refusal", err)
	}
	if n != 1 {
		t.Fatalf("All in the task yielded %d values before the refusal, want the 1 buffered", n)
	}
	if queuedIn(&rx.c.recvQ) != 0 {
		t.Fatal("the refused All left its waiter registered")
	}
	_ = tx.Send(3)
	if v, err := rx.TryRecv(); v != 3 || err != nil {
		t.Fatalf("TryRecv after the refused All = %d, %v", v, err)
	}
}

// TestHostile11UnboundedHandles: SendFrom from a task wakes a receiving task with the
// value; SendFrom and Clone through a closed handle fail as documented; nil and zero
// handles are named in the panic.
func TestHostile11UnboundedHandles(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	tx, rx := NewUnbounded[int]()
	recv := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) []int {
		var got []int
		for {
			r := blitzio.Await(co, rx.RecvAsync())
			if r.Err != nil {
				return got
			}
			got = append(got, r.Value)
		}
	}))
	waitParked(t, "RecvAsync task", &rx.c.recvQ, 1)
	if _, err := h11Join(t, "SendFrom task", blitzio.Spawn(rt, blitzio.PollFn(
		func(cx *blitzio.Context) (int, bool) {
			for i := range 3 {
				if err := tx.SendFrom(cx, i); err != nil {
					panic(err)
				}
			}
			tx.Close()
			return 0, true
		}))); err != nil {
		t.Fatal(err)
	}
	if got, err := h11Join(t, "receiving task", recv); err != nil || !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("the receiving task got %v, %v", got, err)
	}
	var se *SendError[int]
	if err := tx.SendFrom(nil, 7); !errors.As(err, &se) || se.Value != 7 || !errors.Is(err, ErrClosed) {
		t.Fatalf("SendFrom through a closed handle = %v", err)
	}
	if !tx.IsClosed() {
		t.Fatal("IsClosed on a closed handle = false")
	}
	expectPanic(t, "Clone of a closed UnboundedSender", func() { tx.Clone() })
	var nilTx *UnboundedSender[int]
	expectPanic(t, "nil or zero UnboundedSender", func() { _ = nilTx.Send(1) })
	expectPanic(t, "nil or zero UnboundedSender", func() { nilTx.IsClosed() })
	expectPanic(t, "nil or zero UnboundedReceiver", func() { (&UnboundedReceiver[int]{}).All() })
	expectPanic(t, "nil or zero UnboundedReceiver", func() { _, _ = (&UnboundedReceiver[int]{}).RecvContext(context.Background()) })
}

// TestHostile11BroadcastHandles: SendFrom from a task reaches every receiving task in
// order; a receiver's Clone starts where it is, including behind a lag (both get the same
// LagError, then the same values); ReceiverCount follows Subscribe, Clone and Close; a
// sender's Clone keeps the channel open after the original closes; closed and zero
// handles panic as documented.
func TestHostile11BroadcastHandles(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	tx, rx1 := NewBroadcast[int](8)
	rx2 := tx.Subscribe()
	recvAll := func(rx *BroadcastReceiver[int]) blitzio.JoinHandle[[]int] {
		return blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) []int {
			var got []int
			f := rx.RecvAsync()
			for {
				r := blitzio.Await(co, f)
				if r.Err != nil {
					if !errors.Is(r.Err, ErrClosed) {
						panic(r.Err)
					}
					return got
				}
				got = append(got, r.Value)
			}
		}))
	}
	h1, h2 := recvAll(rx1), recvAll(rx2)
	waitParked(t, "two broadcast receiving tasks", &rx1.c.recvQ, 2)
	tx2 := tx.Clone()
	if _, err := h11Join(t, "SendFrom task", blitzio.Spawn(rt, blitzio.PollFn(
		func(cx *blitzio.Context) (int, bool) {
			for i := range 4 {
				if err := tx2.SendFrom(cx, i); err != nil {
					panic(err)
				}
			}
			return 0, true
		}))); err != nil {
		t.Fatal(err)
	}
	tx.Close()
	if rx1.c.closed {
		t.Fatal("closing the original sender closed the channel while a clone is open")
	}
	tx2.Close()
	for i, h := range []blitzio.JoinHandle[[]int]{h1, h2} {
		if got, err := h11Join(t, "broadcast receiving task", h); err != nil || !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Fatalf("receiver %d got %v, %v", i+1, got, err)
		}
	}
	var se *SendError[int]
	if err := tx2.SendFrom(nil, 5); !errors.As(err, &se) || se.Value != 5 {
		t.Fatalf("SendFrom through a closed handle = %v", err)
	}
	expectPanic(t, "Clone of a closed BroadcastSender", func() { tx.Clone() })

	// Clone at a position, and behind a lag.
	tx, rx := NewBroadcast[int](2)
	for i := range 5 {
		_ = tx.Send(i)
	}
	c1 := rx.Clone()
	if n := tx.ReceiverCount(); n != 2 {
		t.Fatalf("ReceiverCount after Clone = %d", n)
	}
	for _, r := range []*BroadcastReceiver[int]{rx, c1} {
		_, err := r.TryRecv()
		var lag *LagError
		if !errors.As(err, &lag) || lag.Missed != 3 || !errors.Is(err, ErrLagged) ||
			!strings.Contains(err.Error(), "missed 3") {
			t.Fatalf("first receive of a lagging receiver (or its clone) = %v, want a LagError missing 3", err)
		}
	}
	if v, _ := rx.TryRecv(); v != 3 {
		t.Fatalf("after the lag rx got %d, want 3", v)
	}
	c2 := rx.Clone() // at 4, one behind the clone made before
	for name, r := range map[string]*BroadcastReceiver[int]{"rx": rx, "c2": c2} {
		if v, err := r.TryRecv(); v != 4 || err != nil {
			t.Fatalf("%s: TryRecv = %d, %v; want 4", name, v, err)
		}
	}
	if v, _ := c1.TryRecv(); v != 3 {
		t.Fatalf("the older clone got %d, want 3", v)
	}
	c2.Close()
	c2.Close()
	if n := tx.ReceiverCount(); n != 2 {
		t.Fatalf("ReceiverCount after closing a clone twice = %d, want 2", n)
	}
	expectPanic(t, "Clone of a closed BroadcastReceiver", func() { c2.Clone() })
	var nilTx *BroadcastSender[int]
	expectPanic(t, "nil or zero BroadcastSender", func() { _ = nilTx.SendFrom(nil, 1) })
	expectPanic(t, "nil or zero BroadcastReceiver", func() { (&BroadcastReceiver[int]{}).Clone() })
	expectPanic(t, "nil or zero BroadcastReceiver", func() { _, _ = (&BroadcastReceiver[int]{}).RecvContext(context.Background()) })
}

// TestHostile11WatchAllAndCounts: All yields the current value, then every change it is
// woken for, and ends when the senders close; a loop that breaks leaves the receiver
// usable; a loop parked in All ends when its receiver is closed from another goroutine;
// in a task, All refuses to park. ReceiverCount and HasChanged follow Subscribe, Clone,
// Close and the senders' close.
func TestHostile11WatchAllAndCounts(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	tx, rx := NewWatch(0)
	acks := make(chan int)
	got := h11Go(func() []int {
		var got []int
		for v := range rx.All() {
			got = append(got, v)
			acks <- v
		}
		close(acks)
		return got
	})
	for i := 1; i <= 5; i++ {
		h11Recv(t, "All's value", acks)
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
	}
	h11Recv(t, "All's last value", acks)
	tx.Close()
	if v := h11Recv(t, "All ending at the close", got); !slices.Equal(v, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("All in lock step = %v, want every value", v)
	}
	if ch, err := rx.HasChanged(); ch || !errors.Is(err, ErrClosed) {
		t.Fatalf("HasChanged after the sender closed = %v, %v", ch, err)
	}

	tx, rx = NewWatch(10)
	if n := tx.ReceiverCount(); n != 1 {
		t.Fatalf("ReceiverCount = %d", n)
	}
	for v := range rx.All() {
		if v != 10 {
			t.Fatalf("All's first value = %d", v)
		}
		break
	}
	if ch, err := rx.HasChanged(); ch || err != nil {
		t.Fatalf("HasChanged after All yielded the current value = %v, %v", ch, err)
	}
	_ = tx.Send(11)
	if ch, err := rx.HasChanged(); !ch || err != nil {
		t.Fatalf("HasChanged after a send = %v, %v", ch, err)
	}
	sub := tx.Subscribe()
	cl := rx.Clone() // has not seen 11 either
	if n := tx.ReceiverCount(); n != 3 {
		t.Fatalf("ReceiverCount after Subscribe and Clone = %d", n)
	}
	if ch, _ := sub.HasChanged(); ch {
		t.Fatal("a new subscriber reports a change it has counted as seen")
	}
	if ch, _ := cl.HasChanged(); !ch {
		t.Fatal("a clone lost its original's unseen change")
	}
	cl.Close()
	cl.Close()
	if ch, err := cl.HasChanged(); ch || !errors.Is(err, ErrClosed) {
		t.Fatalf("HasChanged through a closed receiver = %v, %v", ch, err)
	}
	expectPanic(t, "Clone of a closed WatchReceiver", func() { cl.Clone() })
	sub.Close()
	if n := tx.ReceiverCount(); n != 1 {
		t.Fatalf("ReceiverCount after closing two = %d", n)
	}

	// A parked All ends when its receiver is closed from another goroutine.
	ended := h11Go(func() []int { return slices.Collect(rx.All()) })
	waitParked(t, "watch All parked", &rx.c.recvQ, 1)
	rx.Close()
	if v := h11Recv(t, "All whose receiver was closed", ended); !slices.Equal(v, []int{11}) {
		t.Fatalf("All = %v, want [11]", v)
	}
	if n := tx.ReceiverCount(); n != 0 {
		t.Fatalf("ReceiverCount with every receiver closed = %d", n)
	}
	var se *SendError[int]
	if err := tx.Send(12); !errors.As(err, &se) || se.Value != 12 {
		t.Fatalf("Send with no receiver = %v", err)
	}
	// A new subscriber revives sending, as in Tokio.
	late := tx.Subscribe()
	if err := tx.Send(13); err != nil || late.Get() != 13 {
		t.Fatalf("Send after a new Subscribe = %v", err)
	}

	// In a task: the current value is fine, waiting for a change is refused.
	rt := newRT(t, 1)
	_, err := h11Join(t, "watch All in a task", blitzio.Spawn(rt, blitzio.PollFn(
		func(*blitzio.Context) (int, bool) {
			for range late.All() {
			}
			return 0, true
		})))
	if err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime: WatchReceiver.Changed") {
		t.Fatalf("watch All waiting in a task: err = %v", err)
	}
	if queuedIn(&late.c.recvQ) != 0 {
		t.Fatal("the refused Changed left its waiter registered")
	}
	// A sender's Clone keeps the channel open after the original closes.
	tx2 := tx.Clone()
	tx.Close()
	expectPanic(t, "Clone of a closed WatchSender", func() { tx.Clone() })
	cf := late.ChangedAsync()
	tcx := newTestCx()
	if _, ok := cf.Poll(tcx.cx); ok {
		t.Fatal("ChangedAsync ready with no change")
	}
	if err := tx2.Send(14); err != nil {
		t.Fatalf("Send through a clone after the original closed = %v", err)
	}
	if err, ok := cf.Poll(tcx.cx); !ok || err != nil {
		t.Fatalf("ChangedAsync after the clone's send = %v, %v", err, ok)
	}
	cf.Drop()
	cf.Drop()
	tx2.Close()
	if err := late.Changed(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Changed after every sender closed = %v", err)
	}
	var nilTx *WatchSender[int]
	expectPanic(t, "nil or zero WatchSender", func() { nilTx.ReceiverCount() })
	expectPanic(t, "nil or zero WatchReceiver", func() { (&WatchReceiver[int]{}).HasChanged() })
}

// TestHostile11OneshotSendCloseRace: a Send racing with the receiver's Close either
// succeeds or fails with a *SendError giving the very value back; a zero sender is named
// in the panic.
func TestHostile11OneshotSendCloseRace(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	failed := 0
	for i := range stressScale(2000) {
		tx, rx := NewOneshot[int]()
		var err error
		send := func() { err = tx.Send(i) }
		if i%2 == 0 {
			h11Race(send, rx.Close)
		} else {
			h11Race(rx.Close, send)
		}
		if err != nil {
			var se *SendError[int]
			if !errors.As(err, &se) || se.Value != i || !errors.Is(err, ErrClosed) {
				t.Fatalf("iteration %d: Send racing Close = %v", i, err)
			}
			failed++
		}
		if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
			t.Fatalf("iteration %d: TryRecv through a closed receiver = %v", i, err)
		}
	}
	t.Logf("%d sends lost the race", failed)
	expectPanic(t, "nil or zero OneshotSender", func() { _ = (&OneshotSender[int]{}).Send(1) })
}

// TestHostile11BoundedReceiverClone: a Clone of a bounded channel's receiver keeps the
// channel open after the original closes and receives the values; Clone of a closed
// handle panics.
func TestHostile11BoundedReceiverClone(t *testing.T) {
	tx, rx := NewChannel[int](2)
	rx2 := rx.Clone()
	rx.Close()
	if err := tx.TrySend(1); err != nil {
		t.Fatalf("TrySend with a clone of the receiver open = %v", err)
	}
	if v, err := rx2.TryRecv(); v != 1 || err != nil {
		t.Fatalf("the clone received %d, %v", v, err)
	}
	expectPanic(t, "Clone of a closed Receiver", func() { rx.Clone() })
	rx2.Close()
	if err := tx.TrySend(2); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySend after every receiver closed = %v", err)
	}
}
