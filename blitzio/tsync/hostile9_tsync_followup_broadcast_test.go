package tsync

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/blitzgo/blitz/blitzio"
)

// A broadcast channel kept every value in its ring until a later send overwrote it, even
// after every receiver had read it: a channel that carried a large value and then went
// quiet kept the value alive for as long as the channel lived. The channel now counts
// the receivers that have read everything sent, and clears the values it holds when
// that count reaches the number of receivers (the last reader catching up, or a
// receiver that had not read them closing). Tokio's per-value count of readers was
// measured too: every receive then writes to a shared slot, and BenchmarkBroadcast got
// a fifth slower.

// bcastPayload is a value worth letting go of: a kilobyte, besides its id.
type bcastPayload struct {
	id  int
	pad [1 << 10]byte
}

// size keeps pad in use.
func (p *bcastPayload) size() int { return len(p.pad) }

// collectable reports whether the value behind w has been collected, after a few
// collections (a finalizer-free weak pointer is cleared by the cycle that frees it).
func collectable[T any](w weak.Pointer[T]) bool {
	for range 5 {
		runtime.GC()
		if w.Value() == nil {
			return true
		}
	}
	return false
}

// bcastSendTracked sends a new payload with the given id and returns a weak pointer to
// it; the caller keeps no strong reference.
func bcastSendTracked(t *testing.T, tx *BroadcastSender[*bcastPayload], id int) weak.Pointer[bcastPayload] {
	t.Helper()
	p := &bcastPayload{id: id}
	if p.size() == 0 {
		t.Fatal("empty payload")
	}
	w := weak.Make(p)
	if err := tx.Send(p); err != nil {
		t.Fatal(err)
	}
	return w
}

func bcastRecvID(t *testing.T, rx *BroadcastReceiver[*bcastPayload], want int) {
	t.Helper()
	p, err := rx.TryRecv()
	if err != nil || p == nil || p.id != want {
		t.Fatalf("TryRecv = %v, %v; want payload %d", p, err, want)
	}
}

// TestHostile9FollowupBroadcastReleasesReadValues: a value becomes collectable once every
// receiver read it (by TryRecv or by a RecvAsync future), not before; receivers that
// close unread, clones and late subscribers count correctly.
func TestHostile9FollowupBroadcastReleasesReadValues(t *testing.T) {
	tx, rx1 := NewBroadcast[*bcastPayload](8)
	rx2 := tx.Subscribe()

	w := bcastSendTracked(t, tx, 1)
	late := tx.Subscribe() // subscribed after the send: not waited for
	bcastRecvID(t, rx1, 1)
	if collectable(w) {
		t.Fatal("value collected while a receiver had still to read it")
	}
	f := rx2.RecvAsync()
	if r, ok := f.Poll(newTestCx().cx); !ok || r.Err != nil || r.Value.id != 1 {
		t.Fatalf("RecvAsync: %+v, %v", r, ok)
	}
	if !collectable(w) {
		t.Fatal("value still held by the channel after every receiver read it")
	}

	// A receiver closing without reading lets go of its share.
	w = bcastSendTracked(t, tx, 2)
	bcastRecvID(t, rx1, 2)
	bcastRecvID(t, late, 2)
	if collectable(w) {
		t.Fatal("value collected while rx2 had still to read it")
	}
	rx2.Close()
	if !collectable(w) {
		t.Fatal("value still held after the last receiver that had not read it closed")
	}

	// A clone waits for the value too; each of the two must read it.
	w = bcastSendTracked(t, tx, 3)
	clone := rx1.Clone()
	bcastRecvID(t, rx1, 3)
	bcastRecvID(t, late, 3)
	if collectable(w) {
		t.Fatal("value collected while a clone had still to read it")
	}
	bcastRecvID(t, clone, 3)
	if !collectable(w) {
		t.Fatal("value still held after the original, the clone and the late subscriber read it")
	}
	clone.Close()
	late.Close()

	// A receiver that lagged past overwritten values skips them and still releases
	// what it reads.
	ws := make([]weak.Pointer[bcastPayload], 20)
	for i := range ws {
		ws[i] = bcastSendTracked(t, tx, 100+i)
	}
	if _, err := rx1.TryRecv(); !errors.As(err, new(*LagError)) {
		t.Fatalf("TryRecv after 20 sends into 8 slots: %v, want a *LagError", err)
	}
	for i := 12; i < 20; i++ {
		bcastRecvID(t, rx1, 100+i)
	}
	for i, w := range ws {
		if !collectable(w) {
			t.Fatalf("value %d still held after it was overwritten or read by the only receiver", i)
		}
	}
	if _, err := rx1.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("TryRecv on a drained channel: %v", err)
	}
	// The channel still works after all that.
	bcastSendTracked(t, tx, 7)
	bcastRecvID(t, rx1, 7)
	tx.Close()
	if _, err := rx1.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRecv after the sender closed: %v", err)
	}
}

// TestHostile9FollowupBroadcastSlowReader: values every receiver has read, while one
// receiver still has later values to read, go once that one catches up.
func TestHostile9FollowupBroadcastSlowReader(t *testing.T) {
	tx, fast := NewBroadcast[*bcastPayload](8)
	slow := tx.Subscribe()
	w1 := bcastSendTracked(t, tx, 1)
	w2 := bcastSendTracked(t, tx, 2)
	bcastRecvID(t, fast, 1)
	bcastRecvID(t, fast, 2)
	bcastRecvID(t, slow, 1)
	if collectable(w2) {
		t.Fatal("value 2 collected before the slow receiver read it")
	}
	bcastRecvID(t, slow, 2)
	if !collectable(w1) || !collectable(w2) {
		t.Fatal("values still held after every receiver read every value")
	}
	tx.Close()
	fast.Close()
	slow.Close()
}

// TestHostile9FollowupBroadcastNoEarlyClear: receivers in tasks and goroutines, with
// clones made and closed on the way, never see a value cleared before they read it (a
// nil or another payload than the one sent at that position).
func TestHostile9FollowupBroadcastNoEarlyClear(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := newRT(t, 2)
	const values = 3000
	n := stressScale(values)
	tx, rx := NewBroadcast[*bcastPayload](16)
	type result struct {
		read int
		err  string
	}
	check := func(p *bcastPayload, err error, last *int) string {
		if err != nil {
			var lag *LagError
			if errors.As(err, &lag) {
				*last += int(lag.Missed)
				return ""
			}
			return err.Error()
		}
		if p == nil {
			return "read a cleared value (nil)"
		}
		if p.id != *last+1 {
			return "read payload out of order"
		}
		*last = p.id
		return ""
	}
	results := make(chan result, 16)
	start := func(r *BroadcastReceiver[*bcastPayload], task bool) {
		run := func(recv func() (*bcastPayload, error)) result {
			defer r.Close()
			last, read := -1, 0
			for {
				p, err := recv()
				if errors.Is(err, ErrClosed) {
					return result{read: read}
				}
				if msg := check(p, err, &last); msg != "" {
					return result{read: read, err: msg}
				}
				if err == nil {
					read++
					if read%97 == 0 {
						// A clone made mid-stream reads on from here, and closes.
						c := r.Clone()
						p, err := c.TryRecv()
						if err == nil && p == nil {
							return result{read: read, err: "clone read a cleared value (nil)"}
						}
						if err != nil && !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrClosed) &&
							!errors.As(err, new(*LagError)) {
							return result{read: read, err: "clone: " + err.Error()}
						}
						c.Close()
					}
				}
			}
		}
		if task {
			f := r.RecvAsync()
			h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) result {
				return run(func() (*bcastPayload, error) { res := blitzio.Await(co, f); return res.Value, res.Err })
			}))
			go func() { res, _ := h.Wait(); results <- res }()
			return
		}
		go func() { results <- run(r.Recv) }()
	}
	const receivers = 6
	for i := range receivers {
		start(tx.Subscribe(), i%2 == 0)
	}
	rx.Close()
	for i := range n {
		if err := tx.Send(&bcastPayload{id: i}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			runtime.Gosched()
		}
	}
	tx.Close()
	for range receivers {
		if res := <-results; res.err != "" {
			t.Fatalf("receiver after %d values: %s", res.read, res.err)
		}
	}
}

// TestHostile9FollowupBroadcastReleaseInTasks: receivers in tasks on a runtime read
// every value; afterwards none of the values is held by the channel.
func TestHostile9FollowupBroadcastReleaseInTasks(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	const receivers, values = 4, 200
	tx, rx := NewBroadcast[*bcastPayload](values) // no lag: every value is read
	var hs []blitzio.JoinHandle[int]
	for range receivers {
		r := tx.Subscribe()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			defer r.Close()
			n := 0
			f := r.RecvAsync()
			for n < values {
				if res := blitzio.Await(co, f); res.Err != nil || res.Value == nil || res.Value.id != n {
					return -1
				}
				n++
			}
			return n
		})))
	}
	rx.Close()
	ws := make([]weak.Pointer[bcastPayload], values)
	for i := range ws {
		ws[i] = bcastSendTracked(t, tx, i)
	}
	for i, h := range hs {
		if n, err := h.Wait(); err != nil || n != values {
			t.Fatalf("receiver %d: %d values in order, %v; want %d", i, n, err, values)
		}
	}
	// The sender is still open, so the channel and its ring are alive: only the
	// channel letting go of the values makes them collectable.
	for i, w := range ws {
		if !collectable(w) {
			t.Fatalf("value %d still held after every receiver read it", i)
		}
	}
	tx.Close()
}

// BenchmarkHostile9FollowupBroadcastPtr is BenchmarkBroadcast with pointer values: the
// case where the channel has to let go of what its receivers have read. One sender task,
// four receiver tasks, one op per value sent; the sender waits for every receiver each
// batch, so none lags.
func BenchmarkHostile9FollowupBroadcastPtr(b *testing.B) {
	rt := benchRuntime(b)
	tx, rx := NewBroadcast[*int](benchChanCap)
	ackTx, ackRx := NewUnbounded[int]()
	b.ReportAllocs()
	vals := make([]int, benchBroadcastBatch) // sent by address: no allocation per send
	var rs []*bcastPtrReceiver
	var hs []blitzio.JoinHandle[int]
	for range benchBroadcastReceivers {
		r := &bcastPtrReceiver{f: tx.Subscribe().RecvAsync(), ack: ackTx}
		rs = append(rs, r)
		hs = append(hs, blitzio.Spawn(rt, r))
	}
	rx.Close()
	s := &bcastPtrSender{b: b, tx: tx, vals: vals, acks: ackRx.RecvAsync()}
	if _, err := blitzio.Spawn(rt, s).Wait(); err != nil {
		b.Fatal(err)
	}
	for i, h := range hs {
		if n, err := h.Wait(); err != nil || rs[i].bad || n != s.i {
			b.Fatalf("receiver %d: %d of %d values, lagged or out of order: %v, %v", i, n, s.i, rs[i].bad, err)
		}
	}
}

type bcastPtrReceiver struct {
	f    *SourceFuture[*int]
	ack  *UnboundedSender[int]
	next int
	bad  bool
}

func (r *bcastPtrReceiver) Poll(cx *blitzio.Context) (int, bool) {
	for {
		res, ok := r.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if res.Err != nil {
			r.bad = res.Err != ErrClosed
			return r.next, true
		}
		if *res.Value != r.next%benchBroadcastBatch {
			r.bad = true
		}
		r.next++
		if r.next%benchBroadcastBatch == 0 {
			_ = r.ack.SendFrom(cx, r.next)
		}
	}
}

type bcastPtrSender struct {
	b     *testing.B
	tx    *BroadcastSender[*int]
	vals  []int
	acks  *SourceFuture[int]
	i     int
	owing int
}

func (s *bcastPtrSender) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		for s.owing > 0 {
			if _, ok := s.acks.Poll(cx); !ok {
				return struct{}{}, false
			}
			s.owing--
		}
		if !s.b.Loop() {
			s.tx.Close()
			return struct{}{}, true
		}
		k := s.i % benchBroadcastBatch
		s.vals[k] = k
		_ = s.tx.SendFrom(cx, &s.vals[k])
		s.i++
		if s.i%benchBroadcastBatch == 0 {
			s.owing = benchBroadcastReceivers
		}
	}
}

// BenchmarkHostile9FollowupBroadcastLockstep: one goroutine sends a value and four
// receivers each take it with TryRecv, so every receive catches up with the sender and
// every value is cleared: the most the clearing can cost per value (one op per value
// sent). Without the scheduling of BenchmarkBroadcast, it shows small differences.
func BenchmarkHostile9FollowupBroadcastLockstep(b *testing.B) {
	tx, rx := NewBroadcast[*int](benchChanCap)
	rxs := []*BroadcastReceiver[*int]{rx, tx.Subscribe(), tx.Subscribe(), tx.Subscribe()}
	v := new(int)
	b.ReportAllocs()
	for b.Loop() {
		if err := tx.Send(v); err != nil {
			b.Fatal(err)
		}
		for _, r := range rxs {
			if p, err := r.TryRecv(); err != nil || p != v {
				b.Fatal(p, err)
			}
		}
	}
}
