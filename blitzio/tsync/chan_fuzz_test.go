package tsync

import (
	"errors"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// FuzzChannel drives a bounded channel with a sequence of operations (try-forms, futures
// polled once and dropped when pending, handle clones and closes from both sides) and
// checks every result against a sequential model: a FIFO of at most capacity values.
func FuzzChannel(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1})
	f.Add([]byte{1, 0, 4, 5, 5, 1, 6, 3, 0, 1})
	f.Add([]byte{7, 7, 0, 8, 0, 8, 0, 2, 1, 1, 1})
	f.Add([]byte{2, 0, 0, 0, 1, 0, 1, 0, 1, 0, 9, 1, 1, 1, 3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int(ops[0]%16) + 1
		tx, rx := NewChannel[int](capacity)
		senders := []*Sender[int]{tx}
		openSenders := 1
		var model []int
		sendersClosed, receiversClosed := false, false
		next := 0
		cx := blitzio.NewContext(nil, blitzio.Waker{})

		// wantSend is the model's answer to a send of v: nil, ErrFull or ErrClosed.
		wantSend := func(handleOpen bool) error {
			switch {
			case !handleOpen || receiversClosed:
				return ErrClosed
			case len(model) == capacity:
				return ErrFull
			}
			return nil
		}
		checkSendErr := func(err, want error, v int) {
			t.Helper()
			if want == nil {
				if err != nil {
					t.Fatalf("send %d: %v, model says it fits (len %d of %d)", v, err, len(model), capacity)
				}
				model = append(model, v)
				return
			}
			var se *SendError[int]
			if !errors.Is(err, want) || !errors.As(err, &se) || se.Value != v {
				t.Fatalf("send %d: %v, want %v holding the value", v, err, want)
			}
		}
		checkRecv := func(v int, err error, pendingOK bool) {
			t.Helper()
			switch {
			case receiversClosed:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("recv through a closed receiver: %d, %v", v, err)
				}
			case len(model) > 0:
				if err != nil || v != model[0] {
					t.Fatalf("recv = %d, %v; model has %d first", v, err, model[0])
				}
				model = model[1:]
			case sendersClosed:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("recv on a closed, drained channel: %d, %v", v, err)
				}
			default:
				if !(errors.Is(err, ErrEmpty) || pendingOK && err == errPendingForFuzz) {
					t.Fatalf("recv on an empty channel: %d, %v", v, err)
				}
			}
		}
		for _, op := range ops[1:] {
			h := senders[int(op>>4)%len(senders)]
			handleOpen := !h.closed.Load()
			switch op % 10 {
			case 0, 9: // TrySend
				v := next
				next++
				checkSendErr(h.TrySend(v), wantSend(handleOpen), v)
			case 1: // TryRecv
				v, err := rx.TryRecv()
				checkRecv(v, err, false)
			case 2: // close every sender handle
				for _, s := range senders {
					s.Close()
				}
				openSenders = 0
				sendersClosed = true
			case 3: // close the receiver: buffered values are discarded
				rx.Close()
				receiversClosed = true
				model = nil
			case 4: // a send future polled once, dropped if pending
				v := next
				next++
				sf := h.SendAsync(v)
				err, ok := sf.Poll(cx)
				want := wantSend(handleOpen)
				if !ok {
					if want != ErrFull {
						t.Fatalf("send future pending; model says %v", want)
					}
					sf.Drop()
					continue
				}
				checkSendErr(err, want, v)
			case 5: // a receive future polled once, dropped if pending
				rf := rx.RecvAsync()
				r, ok := rf.Poll(cx)
				if !ok {
					rf.Drop()
					r.Err = errPendingForFuzz
				}
				checkRecv(r.Value, r.Err, true)
			case 6: // Len
				if n := rx.Len(); !receiversClosed && n != len(model) {
					t.Fatalf("Len = %d, model %d", n, len(model))
				}
			case 7: // clone an open sender
				if handleOpen && len(senders) < 8 {
					senders = append(senders, h.Clone())
					openSenders++
				}
			case 8: // close one sender handle
				if handleOpen {
					h.Close()
					openSenders--
					if openSenders == 0 {
						sendersClosed = true
					}
				}
			}
		}
	})
}

var errPendingForFuzz = errors.New("pending")
