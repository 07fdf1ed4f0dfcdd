package tsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// h13NModel is the sequential specification of Notify, as its doc (and Tokio's Notify)
// states it: at most one stored permit; a FIFO of waiting futures; NotifyOne hands the
// oldest waiter a notification or stores the permit; NotifyWaiters notifies every waiter
// queued and every future created before it (polled or not) and stores nothing; a future
// dropped after a NotifyOne reached it passes the notification on (to the next waiter,
// or as the permit).
type h13NModel struct {
	permit bool
	calls  uint64 // NotifyWaiters calls
	queue  []*h13NFut
}

const (
	h13Idle = iota
	h13Waiting
	h13Done
)

type h13NFut struct {
	f        *NotifiedFuture
	w        *h13Waker
	snap     uint64 // the model's calls when the future was made (or Reset)
	st       int
	notified bool
	byOne    bool // notified by NotifyOne (passed on if dropped unseen)
	pending  bool // its last poll returned pending
}

func (m *h13NModel) notifyOne() {
	if len(m.queue) == 0 {
		m.permit = true
		return
	}
	w := m.queue[0]
	m.queue = m.queue[1:]
	w.notified, w.byOne = true, true
}

func (m *h13NModel) notifyWaiters() {
	m.calls++
	for _, w := range m.queue {
		w.notified, w.byOne = true, false
	}
	m.queue = nil
}

// poll is the model's Poll of fu: whether it completes.
func (m *h13NModel) poll(fu *h13NFut) bool {
	switch fu.st {
	case h13Done:
		return true
	case h13Idle:
		if m.calls != fu.snap {
			fu.st = h13Done
			return true
		}
		if m.permit {
			m.permit = false
			fu.st = h13Done
			return true
		}
		fu.st = h13Waiting
		m.queue = append(m.queue, fu)
		return false
	}
	if fu.notified {
		fu.notified = false
		fu.st = h13Done
		return true
	}
	return false
}

// drop is the model's Drop of fu.
func (m *h13NModel) drop(fu *h13NFut) {
	if fu.st != h13Waiting {
		return
	}
	for i, q := range m.queue {
		if q == fu {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			return
		}
	}
	if fu.notified && fu.byOne {
		m.notifyOne()
	}
	fu.notified = false
}

// h13NotifyRun drives a Notify and h13NModel with the operations ops encodes and fails
// at the first difference: in which future completes, the stored permit, the number of
// queued waiters, or a missed wake-up (a waiting future the model says was notified whose
// waker did not run).
func h13NotifyRun(t *testing.T, ops []byte) {
	in := &h13Ops{b: ops}
	n := new(Notify)
	m := &h13NModel{}
	var futs []*h13NFut
	var tr h13Trace
	defer func() {
		if t.Failed() {
			t.Logf("ops:\n%s", &tr)
		}
	}()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	newFut := func() {
		futs = append(futs, &h13NFut{f: n.Notified(), w: newH13Waker(), snap: m.calls})
	}
	pollFut := func(k int) {
		t.Helper()
		fu := futs[k]
		want := m.poll(fu)
		fu.w.polled()
		_, got := fu.f.Poll(fu.w.cx)
		tr.add("poll future %d: %v", k, got)
		if got != want {
			t.Fatalf("future %d: Poll ready = %v; model %v", k, got, want)
		}
		fu.pending = !got
	}

	for in.more() {
		op := in.next() % 10
		switch op {
		case 0: // NotifyOne, or NotifyOneFrom
			if in.next()%2 == 0 {
				n.NotifyOne()
			} else {
				n.NotifyOneFrom(newH13Waker().cx)
			}
			m.notifyOne()
			tr.add("NotifyOne")
		case 1:
			n.NotifyWaiters()
			m.notifyWaiters()
			tr.add("NotifyWaiters")
		case 2:
			got := n.TryWait()
			tr.add("TryWait: %v", got)
			if got != m.permit {
				t.Fatalf("TryWait = %v; model permit %v", got, m.permit)
			}
			m.permit = false
		case 3: // Notified, not polled yet
			if len(futs) < 8 {
				newFut()
				tr.add("Notified: future %d", len(futs)-1)
			}
		case 4: // poll any future, in any order
			if len(futs) > 0 {
				pollFut(in.pick(len(futs)))
			}
		case 5: // drop a future (twice: idempotent); polling it after panics unless it completed
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			fu := futs[k]
			fu.f.Drop()
			fu.f.Drop()
			m.drop(fu)
			tr.add("drop future %d", k)
			msg := h13Panics(func() { fu.f.Poll(fu.w.cx) })
			if fu.st == h13Done {
				if msg != "" {
					t.Fatalf("Poll of a completed then dropped future panicked: %s", msg)
				}
			} else if !strings.Contains(msg, "polled after Drop") {
				t.Fatalf("Poll after Drop: panic %q, want one saying so", msg)
			}
			futs = append(futs[:k], futs[k+1:]...)
		case 6: // Reset: drops a waiting future, then waits anew
			if len(futs) == 0 {
				break
			}
			k := in.pick(len(futs))
			fu := futs[k]
			fu.f.Reset()
			m.drop(fu)
			fu.st, fu.snap, fu.notified, fu.pending = h13Idle, m.calls, false, false
			tr.add("reset future %d", k)
		case 7: // WaitContext with a context already done: takes a stored permit only
			err := n.WaitContext(canceled)
			tr.add("WaitContext(done): %v", err)
			if m.permit {
				if err != nil {
					t.Fatalf("WaitContext(done) with a stored permit: %v", err)
				}
				m.permit = false
			} else if err != context.Canceled {
				t.Fatalf("WaitContext(done) without a permit: %v; want context.Canceled", err)
			}
		case 8: // Wait, only when the model says it will not block
			if m.permit {
				n.Wait()
				m.permit = false
				tr.add("Wait")
			}
		case 9: // Notified, polled at once
			if len(futs) < 8 {
				newFut()
				tr.add("Notified: future %d", len(futs)-1)
				pollFut(len(futs) - 1)
			}
		}

		if got := n.permit.Load() == 1; got != m.permit {
			t.Fatalf("stored permit %v; model %v", got, m.permit)
		}
		if queued := h13NotifyQueued(n); queued != len(m.queue) {
			t.Fatalf("%d waiters queued; model %d", queued, len(m.queue))
		}
		for k, fu := range futs {
			if fu.pending && fu.notified && !fu.w.woken() {
				t.Fatalf("future %d was notified by the model, but its waker was not called", k)
			}
		}
	}
	for _, fu := range futs {
		fu.f.Drop()
	}
	if n.waiters.n != 0 {
		t.Fatalf("%d waiters queued after every future was dropped", n.waiters.n)
	}
}

// FuzzHostile13Notify checks Notify against h13NModel (see h13NotifyRun): every byte is
// an operation followed by its argument bytes.
func FuzzHostile13Notify(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 2, 0, 1, 8, 7})                         // permits: at most one
	f.Add([]byte{9, 9, 9, 0, 0, 4, 1, 4, 0, 4, 2, 0, 0, 4, 2})          // FIFO
	f.Add([]byte{9, 9, 0, 0, 5, 0, 4, 0, 2})                            // dropped after NotifyOne: passed on
	f.Add([]byte{9, 0, 0, 5, 0, 2, 7})                                  // passed on to the permit
	f.Add([]byte{3, 9, 1, 4, 0, 4, 1, 3, 4, 2, 2})                      // NotifyWaiters: made before, not polled
	f.Add([]byte{9, 9, 1, 5, 0, 4, 0, 2})                               // NotifyWaiters: not passed on
	f.Add([]byte{9, 0, 0, 6, 0, 4, 0, 9, 0, 1, 6, 1, 4, 0, 4, 1})       // Reset
	f.Add([]byte{0, 1, 3, 4, 0, 9, 1, 0, 0, 9, 4, 1, 5, 0, 5, 0, 2})    // mixed
	f.Add([]byte{3, 3, 0, 0, 4, 1, 4, 0, 0, 1, 4, 1, 5, 1, 6, 0, 4, 0}) // poll order
	f.Fuzz(h13NotifyRun)
}

// TestHostile13NotifyWaitContextCancelRace races a NotifyOne with the cancellation of the
// oldest waiter's WaitContext, with a second waiter queued behind it: the one
// notification must end up in exactly one place. Either WaitContext returns nil, or it
// returns ctx.Err() and the notification passed on to the second waiter (woken), never
// both, never neither, and no permit is stored meanwhile.
func TestHostile13NotifyWaitContextCancelRace(t *testing.T) {
	for i := range 500 {
		var n Notify
		ctx, cancel := context.WithCancel(context.Background())
		res := h11Go(func() error { return n.WaitContext(ctx) })
		for deadline := time.Now().Add(h11Timeout); h13NotifyQueued(&n) != 1; time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatal("WaitContext never queued")
			}
		}
		second, w := n.Notified(), newH13Waker()
		if _, ok := second.Poll(w.cx); ok {
			t.Fatal("second waiter ready before any notification")
		}
		w.polled()
		h11Race(cancel, n.NotifyOne)
		err := h11Recv(t, "WaitContext raced with NotifyOne and cancel", res)
		_, secondGot := second.Poll(w.cx)
		switch {
		case err == nil && secondGot:
			t.Fatalf("iteration %d: one NotifyOne completed both waiters", i)
		case err != nil && !errors.Is(err, context.Canceled):
			t.Fatalf("iteration %d: WaitContext = %v", i, err)
		case err != nil && !secondGot:
			t.Fatalf("iteration %d: WaitContext gave up and the notification did not pass on (permit %d)",
				i, n.permit.Load())
		case secondGot && !w.woken():
			t.Fatalf("iteration %d: the notification passed on without waking the second waiter", i)
		}
		if n.TryWait() {
			t.Fatalf("iteration %d: a permit was stored as well", i)
		}
		second.Drop()
	}
}
