package tsync

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h13OModel is the sequential specification of a oneshot channel, as its doc states it:
// one Send (or Close) by the sender; the value goes to the first TryRecv, Poll or
// RecvContext that finds it; a Poll that was ready returns the same result again; a
// receiver Close discards a value not yet received and fails later sends. Only the
// waker of the latest poll that left the receiver waiting must be woken (the Future
// contract), and a RecvContext that gave up leaves no waker behind.
type h13OModel struct {
	v                 int
	sent, txClosed    bool
	rxClosed          bool
	taken             bool // a receive took the value (or Close discarded it)
	kept              bool // Poll took it: Poll returns it again
	registered        *h13Waker
	registeredPending bool // registered's last poll returned pending
}

// recv is the model's take of the value by TryRecv (pollKeeps false) or Poll (true):
// the value or error, and whether anything was ready.
func (m *h13OModel) recv(byPoll bool) (int, error, bool) {
	switch {
	case byPoll && m.kept:
		return m.v, nil, true
	case byPoll && (m.taken || m.txClosed || m.rxClosed):
		return 0, ErrClosed, true
	case m.rxClosed || m.taken:
		return 0, ErrClosed, true
	case m.sent:
		m.taken, m.kept = true, byPoll
		return m.v, nil, true
	case m.txClosed:
		return 0, ErrClosed, true
	}
	return 0, nil, false
}

// ready reports whether a receive would complete now.
func (m *h13OModel) ready() bool { return m.sent || m.txClosed || m.rxClosed }

// mustWake reports whether the receiver's latest waiting poll must have been woken: the
// sender sent or closed, or the receiver was closed (by Close, or by Drop, which wakes a
// waiting receive too: its dropper may not be the waiter).
func (m *h13OModel) mustWake() bool { return m.sent || m.txClosed || m.rxClosed }

func h13OCheck(t *testing.T, what string, v int, err error, wantV int, wantErr error) {
	t.Helper()
	if wantErr == nil && (err != nil || v != wantV) || wantErr != nil && !errors.Is(err, wantErr) {
		t.Fatalf("%s = %d, %v; model %d, %v", what, v, err, wantV, wantErr)
	}
}

// h13OneshotRun drives a oneshot channel and h13OModel with the operations ops encodes
// and fails at the first difference, or at a missed wake-up of the latest waiting poll.
func h13OneshotRun(t *testing.T, ops []byte) {
	in := &h13Ops{b: ops}
	tx, rx := NewOneshot[int]()
	m := &h13OModel{}
	wakers := []*h13Waker{newH13Waker(), newH13Waker(), newH13Waker()}
	var tr h13Trace
	defer func() {
		if t.Failed() {
			t.Logf("ops:\n%s", &tr)
		}
	}()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	nextVal := 1
	for in.more() {
		op := in.next() % 9
		switch op {
		case 0, 1: // Send, SendFrom
			v := nextVal
			nextVal++
			var err error
			if op == 0 {
				err = tx.Send(v)
			} else {
				err = tx.SendFrom(newH13Waker().cx, v)
			}
			tr.add("send %d: %v", v, err)
			if m.sent || m.txClosed || m.rxClosed {
				var se *SendError[int]
				if !errors.Is(err, ErrClosed) || !errors.As(err, &se) || se.Value != v {
					t.Fatalf("send %d: %v; model: a *SendError holding it, ErrClosed", v, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("send %d: %v; model: sent", v, err)
			}
			m.sent, m.v = true, v
		case 2: // sender Close (twice)
			tx.Close()
			tx.Close()
			if !m.sent {
				m.txClosed = true
			}
			tr.add("sender close")
		case 3:
			got := tx.IsClosed()
			tr.add("IsClosed: %v", got)
			if want := m.sent || m.txClosed || m.rxClosed; got != want {
				t.Fatalf("IsClosed = %v; model %v", got, want)
			}
		case 4: // TryRecv
			v, err := rx.TryRecv()
			wantV, wantErr, ok := m.recv(false)
			tr.add("TryRecv: %d, %v", v, err)
			if !ok {
				wantErr = ErrEmpty
			}
			h13OCheck(t, "TryRecv", v, err, wantV, wantErr)
		case 5: // Poll the receiver with one of three wakers (a future may move between tasks)
			w := wakers[in.pick(len(wakers))]
			wantV, wantErr, ok := m.recv(true)
			w.polled()
			res, ready := rx.Poll(w.cx)
			tr.add("Poll: %v, %d, %v", ready, res.Value, res.Err)
			if ready != ok {
				t.Fatalf("Poll ready = %v (%d, %v); model %v", ready, res.Value, res.Err, ok)
			}
			if ready {
				h13OCheck(t, "Poll", res.Value, res.Err, wantV, wantErr)
				m.registeredPending = false
				break
			}
			m.registered, m.registeredPending = w, true
		case 6: // receiver Close, or Drop (the same, made by the poller), twice
			if in.next()%2 == 0 {
				rx.Close()
			} else {
				rx.Drop()
				if !m.ready() {
					m.registeredPending = false // its poller gave up
				}
			}
			rx.Close()
			rx.Drop()
			if m.sent && !m.taken {
				m.taken = true // discarded
			}
			m.rxClosed = true
			tr.add("receiver close")
		case 7: // RecvContext with a context already done: the receiver stays open
			v, err := rx.RecvContext(canceled)
			wantV, wantErr, ok := m.recv(false)
			tr.add("RecvContext(done): %d, %v", v, err)
			if !ok {
				wantErr = context.Canceled
				m.registeredPending = false // its probe took the waker slot, then gave it up
			}
			h13OCheck(t, "RecvContext(done)", v, err, wantV, wantErr)
		case 8: // Recv, only when the model says it will not block
			if !m.ready() {
				break
			}
			v, err := rx.Recv()
			wantV, wantErr, _ := m.recv(false)
			tr.add("Recv: %d, %v", v, err)
			h13OCheck(t, "Recv", v, err, wantV, wantErr)
		}
		if m.registeredPending && m.mustWake() && !m.registered.woken() {
			t.Fatalf("the receiver's latest poll waits, the model says it can complete, but its waker was not called")
		}
	}
}

// FuzzHostile13Oneshot checks a oneshot channel against h13OModel (see h13OneshotRun):
// every byte is an operation followed by its argument bytes.
func FuzzHostile13Oneshot(f *testing.F) {
	f.Add([]byte{5, 0, 0, 5, 0, 5, 1, 4, 3})
	f.Add([]byte{5, 1, 2, 5, 1, 4, 0, 3})
	f.Add([]byte{0, 4, 4, 5, 0})
	f.Add([]byte{5, 0, 6, 0, 5, 0, 0, 3})
	f.Add([]byte{0, 6, 1, 4, 5, 2, 3})
	f.Add([]byte{5, 0, 7, 5, 1, 1, 5, 1, 5, 2, 4})
	f.Add([]byte{7, 0, 7, 8, 5, 0, 2, 1})
	f.Add([]byte{5, 0, 5, 1, 5, 2, 2, 5, 2, 8, 4})
	f.Fuzz(h13OneshotRun)
}

// h13WaitWaker waits (up to h11Timeout) until the oneshot's receiver has stored a waker:
// a Recv or an awaiting task is about to sleep, or sleeps.
func h13WaitWaker[T any](t *testing.T, rx *OneshotReceiver[T]) {
	t.Helper()
	h13WaitState(t, rx, osWaker, "the receive never stored its waker")
	time.Sleep(time.Millisecond) // let it get from the probe's poll to its parked one
}

// h13WaitState waits (up to h11Timeout) until bit is set in the oneshot's state, and
// fails the test with msg if it never is.
func h13WaitState[T any](t *testing.T, rx *OneshotReceiver[T], bit uint32, msg string) {
	t.Helper()
	for deadline := time.Now().Add(h11Timeout); rx.c.state.Load()&bit == 0; {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestHostile13OneshotCloseWakesWaitingPoll: a receive waiting on a oneshot receiver
// that is then closed must be woken and end with ErrClosed, as a receive waiting through
// a closed Receiver, BroadcastReceiver or WatchReceiver handle is (and as a blocked
// net.Conn Read returns when the conn is closed). It used to stay asleep until the
// sender closed; a Send after the Close fails without waking anyone, so a sender that
// only sends left it asleep forever.
func TestHostile13OneshotCloseWakesWaitingPoll(t *testing.T) {
	tx, rx := NewOneshot[int]()
	w := newH13Waker()
	if _, ok := rx.Poll(w.cx); ok {
		t.Fatal("Poll ready before anything was sent")
	}
	w.polled()
	rx.Close()
	if !w.woken() {
		t.Fatal("Close did not wake the waiting poll")
	}
	if res, ok := rx.Poll(w.cx); !ok || !errors.Is(res.Err, ErrClosed) {
		t.Fatalf("Poll after Close = %v, %v; want ErrClosed", res, ok)
	}
	if err := tx.Send(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after the receiver closed: %v", err)
	}
}

// TestHostile13OneshotCloseWakesBlockedRecv is the same for the blocking forms and for a
// task awaiting the receiver, woken by a Close from another goroutine.
func TestHostile13OneshotCloseWakesBlockedRecv(t *testing.T) {
	rt := newRT(t, 2)
	for _, form := range []string{"Recv", "RecvContext", "task"} {
		t.Run(form, func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			var done <-chan error
			switch form {
			case "Recv":
				done = h11Go(func() error { _, err := rx.Recv(); return err })
			case "RecvContext":
				done = h11Go(func() error { _, err := rx.RecvContext(context.Background()); return err })
			case "task":
				h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
					return blitzio.Await(co, rx).Err
				}))
				done = h11Go(func() error {
					err, jerr := h.Wait()
					return errors.Join(err, jerr)
				})
			}
			h13WaitWaker(t, rx)
			rx.Close()
			_ = tx.Send(1) // fails, and wakes nobody
			if err := h11Recv(t, form+" after the receiver's Close", done); !errors.Is(err, ErrClosed) {
				t.Fatalf("%s after Close: %v; want ErrClosed", form, err)
			}
		})
	}
}

// TestHostile13OneshotConcurrentRecvs: two goroutines wait on one receiver; one Send
// must end both waits, one with the value and the other with ErrClosed (the value was
// received), as TryRecv's doc says of a receive after the value was taken.
func TestHostile13OneshotConcurrentRecvs(t *testing.T) {
	tx, rx := NewOneshot[int]()
	a := h11Go(func() error { _, err := rx.Recv(); return err })
	h13WaitWaker(t, rx)
	b := h11Go(func() error { _, err := rx.Recv(); return err })
	time.Sleep(5 * time.Millisecond) // let b replace a's waker: the case that strands a
	if err := tx.Send(7); err != nil {
		t.Fatal(err)
	}
	ea, eb := h11Recv(t, "first Recv", a), h11Recv(t, "second Recv", b)
	if (ea == nil) == (eb == nil) || !errors.Is(errors.Join(ea, eb), ErrClosed) {
		t.Fatalf("two Recvs ended with %v and %v; want the value and ErrClosed", ea, eb)
	}
}

// TestHostile13OneshotCloseRaces races a blocking receive (Recv, or RecvContext whose
// context is cancelled at the same moment) with the receiver's Close and the sender's
// Send or Close: every receive must end, with the value only if the Send succeeded, and
// (under -race) Close's wake must not race with the receive replacing or forgetting its
// waker.
func TestHostile13OneshotCloseRaces(t *testing.T) {
	for i := range 2000 {
		tx, rx := NewOneshot[int]()
		ctx, cancel := context.WithCancel(context.Background())
		var recvV int
		var recvErr, sendErr error
		recv := make(chan struct{})
		go func() {
			defer close(recv)
			if i%2 == 0 {
				recvV, recvErr = rx.Recv()
			} else {
				recvV, recvErr = rx.RecvContext(ctx)
			}
		}()
		h11Race(
			func() { rx.Close() },
			func() {
				if i%3 == 0 {
					tx.Close()
				} else {
					sendErr = tx.Send(42)
				}
			},
			cancel,
		)
		h11Recv(t, "a receive raced with Close", recv)
		switch {
		case recvErr == nil:
			if recvV != 42 || sendErr != nil || i%3 == 0 {
				t.Fatalf("iteration %d: received %d, but Send returned %v (sender closed: %v)", i, recvV, sendErr, i%3 == 0)
			}
		case !errors.Is(recvErr, ErrClosed) && !(i%2 == 1 && errors.Is(recvErr, context.Canceled)):
			t.Fatalf("iteration %d: receive ended with %v", i, recvErr)
		}
	}
}
