package tsync

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// h13WModel is the sequential specification of a watch channel, as NewWatch's doc (and
// Tokio's watch) states it: one value and a version that every send bumps; each receiver
// remembers the version it has seen (a new one from NewWatch or Subscribe has seen the
// current value, a clone has seen what its origin has seen); Changed completes when the
// version differs from the one seen (even after every sender closed), and otherwise with
// ErrClosed once every sender closed, or at once through a closed handle.
type h13WModel struct {
	v       int
	version uint64
	closed  bool // every sender handle closed
}

type h13WRecv struct {
	r      *WatchReceiver[int]
	seen   uint64
	closed bool
}

type h13WSend struct {
	s    *WatchSender[int]
	open bool
}

type h13WFut struct {
	f       *ChangedFuture[int]
	rx      int
	w       *h13Waker
	pending bool
}

// changed is the model's Changed through r: (error, ready).
func (m *h13WModel) changed(r *h13WRecv) (error, bool) {
	switch {
	case r.closed:
		return ErrClosed, true
	case r.seen != m.version:
		r.seen = m.version
		return nil, true
	case m.closed:
		return ErrClosed, true
	}
	return nil, false
}

func (m *h13WModel) ready(r *h13WRecv) bool {
	cp := *r
	_, ok := m.changed(&cp)
	return ok
}

// h13WatchRun drives a watch channel and h13WModel with the operations ops encodes and
// fails at the first difference: in a value, a change seen or not, an error, a receiver
// count, or a missed wake-up of a waiting Changed.
func h13WatchRun(t *testing.T, ops []byte) {
	in := &h13Ops{b: ops}
	tx, rx := NewWatch(0)
	m := &h13WModel{}
	senders := []*h13WSend{{s: tx, open: true}}
	recvs := []*h13WRecv{{r: rx}}
	var futs []*h13WFut
	var tr h13Trace
	defer func() {
		if t.Failed() {
			t.Logf("ops:\n%s", &tr)
		}
	}()
	nextVal := 1
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
	wantErr := func(what string, got, want error) {
		t.Helper()
		if want == nil && got != nil || want != nil && !errors.Is(got, want) {
			t.Fatalf("%s: %v; model %v", what, got, want)
		}
	}
	checkValue := func(what string, got int) {
		t.Helper()
		if got != m.v {
			t.Fatalf("%s = %d; model %d", what, got, m.v)
		}
	}
	// closedSend checks a SendReplace or SendModify through a closed handle: it must
	// panic (like a send on a closed Go channel) and change nothing.
	closedSend := func(what, msg string) {
		t.Helper()
		if !strings.Contains(msg, "closed WatchSender") {
			t.Fatalf("%s through a closed sender: panic %q, want one naming the closed handle", what, msg)
		}
	}
	pollFut := func(k int) {
		t.Helper()
		fu := futs[k]
		want, ready := m.changed(recvs[fu.rx])
		fu.w.polled()
		err, ok := fu.f.Poll(fu.w.cx)
		if !ready {
			if ok {
				t.Fatalf("Changed future %d on receiver %d ready (%v); model: no change", k, fu.rx, err)
			}
			fu.pending = true
			return
		}
		if !ok {
			t.Fatalf("Changed future %d on receiver %d pending; model: ready with %v", k, fu.rx, want)
		}
		fu.pending = false
		wantErr("Changed future", err, want)
	}

	for in.more() {
		op := in.next() % 18
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
			wantErr("send", err, nil)
			m.v = v
			m.version++
		case 2: // SendReplace: stores whether or not anyone listens
			k := in.pick(len(senders))
			h := senders[k]
			v := nextVal
			nextVal++
			var old int
			msg := h13Panics(func() { old = h.s.SendReplace(v) })
			tr.add("SendReplace %d via sender %d (open %v): old %d, panic %q", v, k, h.open, old, msg)
			if !h.open {
				closedSend("SendReplace", msg)
				break
			}
			if msg != "" {
				t.Fatalf("SendReplace panicked: %s", msg)
			}
			checkValue("SendReplace's old value", old)
			m.v = v
			m.version++
		case 3, 4: // SendModify; op 4's f panics after changing the value
			k := in.pick(len(senders))
			h := senders[k]
			d := in.next() + 1
			msg := h13Panics(func() {
				h.s.SendModify(func(p *int) {
					*p += d
					if op == 4 {
						panic("h13 modify failed")
					}
				})
			})
			tr.add("SendModify +%d via sender %d (open %v, panicking %v): panic %q", d, k, h.open, op == 4, msg)
			switch {
			case !h.open:
				closedSend("SendModify", msg)
			case op == 4:
				// The doc: the value may be half modified (here: modified), the lock is
				// released, and no receiver is told of a change.
				if msg != "h13 modify failed" {
					t.Fatalf("SendModify with a panicking f: panic %q, want f's", msg)
				}
				m.v += d
			default:
				if msg != "" {
					t.Fatalf("SendModify panicked: %s", msg)
				}
				m.v += d
				m.version++
			}
		case 5: // Borrow (receiver): the value, not marked seen
			k := in.pick(len(recvs))
			var got int
			recvs[k].r.Borrow(func(p *int) { got = *p })
			tr.add("Borrow on receiver %d: %d", k, got)
			checkValue("Borrow", got)
		case 6: // BorrowAndUpdate: marks it seen
			k := in.pick(len(recvs))
			var got int
			recvs[k].r.BorrowAndUpdate(func(p *int) { got = *p })
			tr.add("BorrowAndUpdate on receiver %d: %d", k, got)
			checkValue("BorrowAndUpdate", got)
			recvs[k].seen = m.version
		case 7: // Get: a copy, marked seen
			k := in.pick(len(recvs))
			got := recvs[k].r.Get()
			tr.add("Get on receiver %d: %d", k, got)
			checkValue("Get", got)
			recvs[k].seen = m.version
		case 8: // HasChanged
			k := in.pick(len(recvs))
			r := recvs[k]
			ch, err := r.r.HasChanged()
			tr.add("HasChanged on receiver %d: %v, %v", k, ch, err)
			if r.closed || m.closed {
				if ch || !errors.Is(err, ErrClosed) {
					t.Fatalf("HasChanged = %v, %v; model: false, ErrClosed", ch, err)
				}
				break
			}
			if want := r.seen != m.version; ch != want || err != nil {
				t.Fatalf("HasChanged = %v, %v; model %v", ch, err, want)
			}
		case 9: // a new ChangedAsync, polled once
			k := in.pick(len(recvs))
			if len(futs) >= 8 {
				break
			}
			futs = append(futs, &h13WFut{f: recvs[k].r.ChangedAsync(), rx: k, w: newH13Waker()})
			tr.add("ChangedAsync on receiver %d: future %d", k, len(futs)-1)
			pollFut(len(futs) - 1)
		case 10: // poll a future again (reusable: after ready, it waits for the next change)
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			tr.add("poll future %d (receiver %d)", k, futs[k].rx)
			pollFut(k)
		case 11: // drop a future
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			tr.add("drop future %d", k)
			futs[k].f.Drop()
			futs[k].f.Drop()
			futs = append(futs[:k], futs[k+1:]...)
		case 12: // Subscribe (through any handle): has seen the current value
			k := in.pick(len(senders))
			if len(recvs) >= 8 {
				break
			}
			recvs = append(recvs, &h13WRecv{r: senders[k].s.Subscribe(), seen: m.version})
			tr.add("subscribe via sender %d: receiver %d", k, len(recvs)-1)
		case 13: // Clone a receiver: has seen what its origin has seen
			k := in.pick(len(recvs))
			if len(recvs) >= 8 {
				break
			}
			src := recvs[k]
			var c *WatchReceiver[int]
			msg := h13Panics(func() { c = src.r.Clone() })
			tr.add("clone receiver %d (closed %v): panic %q", k, src.closed, msg)
			if src.closed {
				if !strings.Contains(msg, "Clone of a closed WatchReceiver") {
					t.Fatalf("Clone of a closed receiver: panic %q", msg)
				}
				break
			}
			if msg != "" {
				t.Fatalf("Clone of an open receiver panicked: %s", msg)
			}
			recvs = append(recvs, &h13WRecv{r: c, seen: src.seen})
		case 14: // Close a receiver (twice)
			k := in.pick(len(recvs))
			recvs[k].r.Close()
			recvs[k].r.Close()
			recvs[k].closed = true
			tr.add("close receiver %d", k)
		case 15: // Clone a sender
			k := in.pick(len(senders))
			if len(senders) >= 6 {
				break
			}
			h := senders[k]
			var c *WatchSender[int]
			msg := h13Panics(func() { c = h.s.Clone() })
			tr.add("clone sender %d (open %v): panic %q", k, h.open, msg)
			if !h.open {
				if !strings.Contains(msg, "Clone of a closed WatchSender") {
					t.Fatalf("Clone of a closed sender: panic %q", msg)
				}
				break
			}
			if msg != "" {
				t.Fatalf("Clone of an open sender panicked: %s", msg)
			}
			senders = append(senders, &h13WSend{s: c, open: true})
		case 16: // Close one sender handle (twice)
			k := in.pick(len(senders))
			senders[k].s.Close()
			senders[k].s.Close()
			senders[k].open = false
			m.closed = true
			for _, h := range senders {
				m.closed = m.closed && !h.open
			}
			tr.add("close sender %d: every sender closed: %v", k, m.closed)
		case 17: // ChangedContext with a context already done, or Changed when it will not block
			k := in.pick(len(recvs))
			r := recvs[k]
			if in.next()%2 == 0 {
				err := r.r.ChangedContext(canceled)
				want, ready := m.changed(r)
				tr.add("ChangedContext(done) on receiver %d: %v", k, err)
				if !ready {
					want = context.Canceled
				}
				wantErr("ChangedContext(done)", err, want)
				break
			}
			if !m.ready(r) {
				break
			}
			err := r.r.Changed()
			want, _ := m.changed(r)
			tr.add("Changed on receiver %d: %v", k, err)
			wantErr("Changed", err, want)
		}

		var sv int
		tx.Borrow(func(p *int) { sv = *p })
		checkValue("WatchSender.Borrow", sv)
		if got, want := tx.ReceiverCount(), openRecvs(); got != want {
			t.Fatalf("ReceiverCount = %d; model %d", got, want)
		}
		for k, fu := range futs {
			if fu.pending && m.ready(recvs[fu.rx]) && !fu.w.woken() {
				t.Fatalf("Changed future %d on receiver %d: ready by the model, but its waker was not called",
					k, fu.rx)
			}
		}
	}
	for _, fu := range futs {
		fu.f.Drop()
	}
	if n := queuedIn(&tx.c.recvQ); n != 0 {
		t.Fatalf("%d waiters still queued after every future was dropped", n)
	}
}

// FuzzHostile13Watch checks a watch channel against h13WModel (see h13WatchRun): every
// byte is an operation followed by its argument bytes.
func FuzzHostile13Watch(f *testing.F) {
	f.Add([]byte{9, 0, 0, 0, 10, 0, 7, 0, 8, 0, 16, 0, 8, 0, 10, 0})
	f.Add([]byte{12, 0, 0, 0, 13, 1, 8, 2, 7, 1, 8, 2, 13, 1, 8, 3})
	f.Add([]byte{9, 0, 9, 0, 2, 0, 3, 0, 5, 4, 0, 5, 10, 0, 10, 1, 11, 0, 5, 0, 6, 0})
	f.Add([]byte{14, 0, 0, 0, 1, 0, 2, 0, 12, 0, 0, 0, 8, 1, 9, 1, 14, 1, 10, 0})
	f.Add([]byte{15, 0, 16, 0, 2, 0, 3, 0, 1, 4, 0, 1, 15, 0, 0, 1, 16, 1, 9, 0, 17, 0, 0, 17, 0, 1})
	f.Add([]byte{0, 0, 17, 0, 1, 17, 0, 0, 9, 0, 17, 0, 0, 0, 0, 10, 0, 16, 0, 17, 0, 1, 10, 0})
	f.Add([]byte{9, 0, 4, 0, 3, 10, 0, 3, 0, 3, 10, 0, 11, 0, 9, 0, 14, 0, 10, 0})
	f.Fuzz(h13WatchRun)
}

// TestHostile13WatchSharedHandleVersusClones checks what WatchReceiver's doc says of
// several waiters: two Changed waits through one handle share its seen version (one
// change completes the first to look, the other waits for the next), while a Clone made
// before the change is a waiter of its own and sees it too (it has seen what its origin
// had seen, as in Tokio).
func TestHostile13WatchSharedHandleVersusClones(t *testing.T) {
	tx, rx := NewWatch("a")
	clone := rx.Clone()
	wa, wb, wc := newH13Waker(), newH13Waker(), newH13Waker()
	fa, fb, fc := rx.ChangedAsync(), rx.ChangedAsync(), clone.ChangedAsync()
	for _, p := range []struct {
		f *ChangedFuture[string]
		w *h13Waker
	}{{fa, wa}, {fb, wb}, {fc, wc}} {
		p.w.polled()
		if _, ok := p.f.Poll(p.w.cx); ok {
			t.Fatal("Changed ready before any send")
		}
	}
	if err := tx.Send("b"); err != nil {
		t.Fatal(err)
	}
	if !wa.woken() || !wb.woken() || !wc.woken() {
		t.Fatalf("a send woke %v %v %v; want every waiter", wa.woken(), wb.woken(), wc.woken())
	}
	if err, ok := fb.Poll(wb.cx); !ok || err != nil {
		t.Fatalf("first wait through the shared handle: %v, %v; want the change", err, ok)
	}
	if err, ok := fa.Poll(wa.cx); ok {
		t.Fatalf("second wait through the shared handle: ready (%v); the first marked the change seen", err)
	}
	if err, ok := fc.Poll(wc.cx); !ok || err != nil {
		t.Fatalf("wait through the clone: %v, %v; want the change", err, ok)
	}
	if got := clone.Get(); got != "b" {
		t.Fatalf("clone.Get = %q", got)
	}
	tx.Close()
	if err, ok := fa.Poll(wa.cx); !ok || !errors.Is(err, ErrClosed) {
		t.Fatalf("after the sender's Close: %v, %v; want ErrClosed", err, ok)
	}
	fa.Drop()
	fb.Drop()
	fc.Drop()
}

// TestHostile13WatchCallbackGoexit: a SendModify, Borrow or BorrowAndUpdate callback
// that ends its goroutine with runtime.Goexit (t.FailNow in a helper does) must release
// the channel's lock, as one that panics does; and the SendModify tells no receiver of a
// change (its doc: only a callback that returns counts).
func TestHostile13WatchCallbackGoexit(t *testing.T) {
	tx, rx := NewWatch(0)
	w := newH13Waker()
	f := rx.ChangedAsync()
	if _, ok := f.Poll(w.cx); ok {
		t.Fatal("Changed ready before any send")
	}
	w.polled()
	goexitIn := func(what string, call func(exit func())) {
		t.Helper()
		h11Recv(t, what, h11Go(func() bool {
			done := make(chan bool)
			go func() {
				defer close(done)
				call(runtime.Goexit)
			}()
			return <-done
		}))
	}
	goexitIn("SendModify", func(exit func()) { tx.SendModify(func(p *int) { *p = 5; exit() }) })
	goexitIn("Borrow", func(exit func()) { rx.Borrow(func(*int) { exit() }) })
	goexitIn("BorrowAndUpdate", func(exit func()) { rx.BorrowAndUpdate(func(*int) { exit() }) })
	if w.woken() {
		t.Fatal("a SendModify whose callback did not return woke a receiver")
	}
	if ch, err := rx.HasChanged(); ch || err != nil {
		t.Fatalf("HasChanged = %v, %v after a SendModify that did not return; want false", ch, err)
	}
	// The lock was released: a send goes through (from a goroutine, bounded).
	if err := h11Recv(t, "Send after the callbacks exited", h11Go(func() error { return tx.Send(6) })); err != nil {
		t.Fatal(err)
	}
	if !w.woken() {
		t.Fatal("Send did not wake the waiting Changed")
	}
	if err, ok := f.Poll(w.cx); !ok || err != nil {
		t.Fatalf("Changed after Send = %v, %v", err, ok)
	}
	if got := rx.Get(); got != 6 {
		t.Fatalf("Get = %d, want 6", got)
	}
}
