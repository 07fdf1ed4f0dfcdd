package tsync

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// h13BModel is the sequential specification of a broadcast channel, as NewBroadcast's
// doc (and Tokio's broadcast) states it: every value ever sent has a position; a receiver
// reads from its own position; one more than size (the capacity rounded up to a power of
// two) positions behind the sender, it gets a *LagError counting the values it missed and
// continues from the oldest value still held; ErrClosed once every sender closed and it
// read everything, or at once through a closed handle.
type h13BModel struct {
	size   uint64
	log    []int // log[p] is the value sent at position p
	closed bool  // every sender handle closed
}

type h13BRecv struct {
	r      *BroadcastReceiver[int]
	next   uint64
	closed bool
}

type h13BSend struct {
	s    *BroadcastSender[int]
	open bool
}

type h13BFut struct {
	f       *SourceFuture[int]
	rx      int // index of its receiver
	w       *h13Waker
	pending bool // its last poll returned pending: it waits, registered
}

// recv is the model's receive through r: the value or error, and whether anything was
// ready (false: ErrEmpty, pending, or ctx.Err()).
func (m *h13BModel) recv(r *h13BRecv) (int, error, bool) {
	if r.closed {
		return 0, ErrClosed, true
	}
	tail := uint64(len(m.log))
	if r.next == tail {
		if m.closed {
			return 0, ErrClosed, true
		}
		return 0, nil, false
	}
	if tail-r.next > m.size {
		oldest := tail - m.size
		missed := oldest - r.next
		r.next = oldest
		return 0, &LagError{Missed: missed}, true
	}
	v := m.log[r.next]
	r.next++
	return v, nil, true
}

// ready reports whether a receive through r would complete now, without receiving.
func (m *h13BModel) ready(r *h13BRecv) bool {
	cp := *r
	_, _, ok := m.recv(&cp)
	return ok
}

// h13BCheck compares a receive's outcome with the model's.
func h13BCheck(t *testing.T, what string, gotV int, gotErr error, wantV int, wantErr error) {
	t.Helper()
	var wantLag *LagError
	switch {
	case errors.As(wantErr, &wantLag):
		var lag *LagError
		if !errors.As(gotErr, &lag) || lag.Missed != wantLag.Missed || !errors.Is(gotErr, ErrLagged) {
			t.Fatalf("%s = %d, %v; model: lagged, missed %d", what, gotV, gotErr, wantLag.Missed)
		}
	case wantErr != nil:
		if !errors.Is(gotErr, wantErr) {
			t.Fatalf("%s = %d, %v; model: %v", what, gotV, gotErr, wantErr)
		}
	default:
		if gotErr != nil || gotV != wantV {
			t.Fatalf("%s = %d, %v; model: value %d", what, gotV, gotErr, wantV)
		}
	}
}

// h13BroadcastRun drives a broadcast channel and h13BModel with the operations ops
// encodes and fails at the first difference: in a value, a lag count, an error, a receiver
// count, a missed wake-up (a waiting future the model says can now complete whose waker
// did not run), or a value the channel keeps after every open receiver has read it.
func h13BroadcastRun(t *testing.T, ops []byte) {
	if len(ops) == 0 {
		return
	}
	in := &h13Ops{b: ops}
	capacity := in.next()%5 + 1
	tx, rx := NewBroadcast[int](capacity)
	m := &h13BModel{size: uint64(len(tx.c.buf))}
	if m.size < uint64(capacity) || m.size&(m.size-1) != 0 {
		t.Fatalf("capacity %d: ring of %d, want the next power of two", capacity, m.size)
	}
	senders := []*h13BSend{{s: tx, open: true}}
	recvs := []*h13BRecv{{r: rx}}
	var futs []*h13BFut
	var tr h13Trace
	defer func() {
		if t.Failed() {
			t.Logf("capacity %d (ring %d), ops:\n%s", capacity, m.size, &tr)
		}
	}()
	nextVal := 1 // values are never zero: a zero read is a cleared slot
	openRecvs := func() int {
		n := 0
		for _, r := range recvs {
			if !r.closed {
				n++
			}
		}
		return n
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	pollFut := func(k int) {
		t.Helper()
		fu := futs[k]
		rcv := recvs[fu.rx]
		wantV, wantErr, ready := m.recv(rcv)
		fu.w.polled()
		res, ok := fu.f.Poll(fu.w.cx)
		if !ready {
			if ok {
				t.Fatalf("future %d on receiver %d ready (%d, %v); model: nothing to receive",
					k, fu.rx, res.Value, res.Err)
			}
			fu.pending = true
			return
		}
		if !ok {
			t.Fatalf("future %d on receiver %d pending; model: %d, %v", k, fu.rx, wantV, wantErr)
		}
		fu.pending = false
		h13BCheck(t, "future poll", res.Value, res.Err, wantV, wantErr)
	}

	for in.more() {
		op := in.next() % 14
		switch op {
		case 0, 1: // Send, SendFrom
			k := in.pick(len(senders))
			h := senders[k]
			v := nextVal
			nextVal++
			var err error
			if op == 0 {
				err = h.s.Send(v)
			} else {
				err = h.s.SendFrom(newH13Waker().cx, v)
			}
			tr.add("send %d via sender %d (open %v, receivers %d): %v", v, k, h.open, openRecvs(), err)
			if !h.open || openRecvs() == 0 {
				var se *SendError[int]
				if !errors.Is(err, ErrClosed) || !errors.As(err, &se) || se.Value != v {
					t.Fatalf("send %d: %v; model: a *SendError holding it, ErrClosed", v, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("send %d: %v; model: sent", v, err)
			}
			m.log = append(m.log, v)
		case 2: // TryRecv
			k := in.pick(len(recvs))
			v, err := recvs[k].r.TryRecv()
			wantV, wantErr, ready := m.recv(recvs[k])
			tr.add("TryRecv on receiver %d: %d, %v", k, v, err)
			if !ready {
				wantErr = ErrEmpty
			}
			h13BCheck(t, "TryRecv", v, err, wantV, wantErr)
		case 3: // a new RecvAsync future, polled once
			k := in.pick(len(recvs))
			if len(futs) >= 8 {
				break
			}
			futs = append(futs, &h13BFut{f: recvs[k].r.RecvAsync(), rx: k, w: newH13Waker()})
			tr.add("RecvAsync on receiver %d: future %d", k, len(futs)-1)
			pollFut(len(futs) - 1)
		case 4: // poll a future again (a ready one is reusable: it receives the next value)
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			tr.add("poll future %d (receiver %d)", k, futs[k].rx)
			pollFut(k)
		case 5: // drop a future
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			tr.add("drop future %d", k)
			futs[k].f.Drop()
			futs[k].f.Drop() // idempotent
			futs = append(futs[:k], futs[k+1:]...)
		case 6: // Subscribe, through any handle (a closed one too)
			k := in.pick(len(senders))
			if len(recvs) >= 8 {
				break
			}
			recvs = append(recvs, &h13BRecv{r: senders[k].s.Subscribe(), next: uint64(len(m.log))})
			tr.add("subscribe via sender %d: receiver %d", k, len(recvs)-1)
		case 7: // Clone a receiver
			k := in.pick(len(recvs))
			if len(recvs) >= 8 {
				break
			}
			src := recvs[k]
			var c *BroadcastReceiver[int]
			msg := h13Panics(func() { c = src.r.Clone() })
			tr.add("clone receiver %d (closed %v): panic %q", k, src.closed, msg)
			if src.closed {
				if !strings.Contains(msg, "Clone of a closed BroadcastReceiver") {
					t.Fatalf("Clone of a closed receiver: panic %q", msg)
				}
				break
			}
			if msg != "" {
				t.Fatalf("Clone of an open receiver panicked: %s", msg)
			}
			recvs = append(recvs, &h13BRecv{r: c, next: src.next})
		case 8: // Close a receiver (twice: the second is a no-op)
			k := in.pick(len(recvs))
			recvs[k].r.Close()
			recvs[k].r.Close()
			recvs[k].closed = true
			tr.add("close receiver %d", k)
		case 9: // Clone a sender
			k := in.pick(len(senders))
			if len(senders) >= 6 {
				break
			}
			h := senders[k]
			var c *BroadcastSender[int]
			msg := h13Panics(func() { c = h.s.Clone() })
			tr.add("clone sender %d (open %v): panic %q", k, h.open, msg)
			if !h.open {
				if !strings.Contains(msg, "Clone of a closed BroadcastSender") {
					t.Fatalf("Clone of a closed sender: panic %q", msg)
				}
				break
			}
			if msg != "" {
				t.Fatalf("Clone of an open sender panicked: %s", msg)
			}
			senders = append(senders, &h13BSend{s: c, open: true})
		case 10, 12: // Close one sender handle, or every one
			lo, hi := 0, len(senders)
			if op == 10 {
				lo = in.pick(len(senders))
				hi = lo + 1
			}
			for _, h := range senders[lo:hi] {
				h.s.Close()
				h.s.Close()
				h.open = false
			}
			m.closed = true
			for _, h := range senders {
				m.closed = m.closed && !h.open
			}
			tr.add("close senders [%d,%d): every sender closed: %v", lo, hi, m.closed)
		case 11: // RecvContext with a context already done: takes what is there
			k := in.pick(len(recvs))
			v, err := recvs[k].r.RecvContext(canceled)
			wantV, wantErr, ready := m.recv(recvs[k])
			tr.add("RecvContext(done) on receiver %d: %d, %v", k, v, err)
			if !ready {
				wantErr = context.Canceled
			}
			h13BCheck(t, "RecvContext(done)", v, err, wantV, wantErr)
		case 13: // Recv (blocking), only when the model says it will not block
			k := in.pick(len(recvs))
			if !m.ready(recvs[k]) {
				break
			}
			v, err := recvs[k].r.Recv()
			wantV, wantErr, _ := m.recv(recvs[k])
			tr.add("Recv on receiver %d: %d, %v", k, v, err)
			h13BCheck(t, "Recv", v, err, wantV, wantErr)
		}

		if got, want := tx.ReceiverCount(), openRecvs(); got != want {
			t.Fatalf("ReceiverCount = %d; model %d", got, want)
		}
		// A waiting future whose receive the model says would now complete must have been
		// woken since it last polled: nothing else will poll it again.
		for k, fu := range futs {
			if fu.pending && m.ready(recvs[fu.rx]) && !fu.w.woken() {
				t.Fatalf("future %d on receiver %d: a receive is ready but its waker was not called", k, fu.rx)
			}
		}
		// NewBroadcast's promise: once every open receiver read every value sent (or
		// closed), the channel lets go of the values it held.
		allRead := true
		for _, r := range recvs {
			if !r.closed && r.next != uint64(len(m.log)) {
				allRead = false
			}
		}
		if allRead {
			for i, v := range tx.c.buf {
				if v != 0 {
					t.Fatalf("every open receiver has read everything, but slot %d still holds %d", i, v)
				}
			}
		}
	}
	for _, fu := range futs {
		fu.f.Drop()
	}
	for _, r := range recvs {
		r.r.Close()
	}
	if n := queuedIn(&tx.c.recvQ); n != 0 {
		t.Fatalf("%d waiters still queued after every future was dropped", n)
	}
}

// FuzzHostile13Broadcast checks a broadcast channel against h13BModel (see
// h13BroadcastRun). ops[0] chooses the capacity (1..5); every later byte is an operation
// followed by its argument bytes.
func FuzzHostile13Broadcast(f *testing.F) {
	// send; try-recv; future; lag; close senders; subscribe after close.
	f.Add([]byte{0, 0, 0, 2, 0, 2, 0, 2, 0, 12, 2, 0, 6, 0, 2, 1})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0})
	f.Add([]byte{2, 3, 0, 0, 0, 4, 0, 4, 0, 0, 0, 4, 0, 8, 0, 2, 0})
	f.Add([]byte{0, 6, 0, 7, 1, 0, 0, 3, 1, 3, 2, 0, 0, 4, 0, 4, 1, 5, 0, 8, 2, 2, 2})
	f.Add([]byte{4, 9, 0, 3, 0, 10, 0, 4, 0, 10, 1, 4, 0, 2, 0, 11, 0, 13, 0})
	f.Add([]byte{0, 8, 0, 0, 0, 6, 0, 0, 0, 1, 0, 2, 1, 2, 1, 7, 0, 7, 1, 2, 2})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 0, 11, 0, 13, 0, 13, 0, 12, 13, 0, 2, 0})
	f.Add([]byte{1, 6, 0, 6, 0, 3, 1, 3, 2, 3, 0, 1, 0, 4, 0, 4, 1, 4, 2, 5, 1, 8, 0, 0, 0, 4, 0})
	f.Fuzz(h13BroadcastRun)
}
