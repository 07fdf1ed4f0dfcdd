package tsync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// Tests of a OneshotReceiver waited on from several places at once (see the protocol
// comment at the top of chan_oneshot.go): tasks in Select2 or Timeout that drop the
// receiver, tasks of two runtimes, TryRecv racing the waits, RecvContext giving up in a
// loop, SendFrom, Close during registration, panicking tasks, many oneshots at once and
// a randomized schedule checked against the documented rules.

// h14mOut is what one receive ended with: the value or the error, and for a Select2 or
// a Timeout the branch that won (1: the Sleep or the time limit).
type h14mOut struct {
	v   int
	err error
	idx int
}

// h14mTableLen is the number of waiters of rx's oneshot in the side table.
func h14mTableLen[T any](rx *OneshotReceiver[T]) int {
	oneshotWaiters.mu.Lock()
	defer oneshotWaiters.mu.Unlock()
	return len(oneshotWaiters.m[&rx.c.state])
}

// h14mWaitTable waits until the side table holds n waiters of rx's oneshot.
func h14mWaitTable[T any](t *testing.T, rx *OneshotReceiver[T], n int) {
	t.Helper()
	for deadline := time.Now().Add(h11Timeout); h14mTableLen(rx) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("the side table holds %d waiters of the oneshot, want %d (a wait never registered)",
				h14mTableLen(rx), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// h14mNoMore fails the test if the oneshot has used the side table (osMore set, or an
// entry in it): a single waiter must never touch it.
func h14mNoMore[T any](t *testing.T, rx *OneshotReceiver[T], when string) {
	t.Helper()
	if st := rx.c.state.Load(); st&osMore != 0 {
		t.Fatalf("%s: osMore is set (state %#x): a single waiter went to the side table", when, st)
	}
	if n := h14mTableLen(rx); n != 0 {
		t.Fatalf("%s: the side table holds %d waiters of a oneshot with a single waiter", when, n)
	}
}

// h14mTask spawns fn as an Async task on rt; the channel receives its h14mOut, with the
// task's own error (a panic, Goexit) in err.
func h14mTask(rt *blitzio.Runtime, fn func(co *blitzio.Co) h14mOut) <-chan h14mOut {
	h := blitzio.Spawn(rt, blitzio.Async(fn))
	return h11Go(func() h14mOut {
		out, err := h.Wait()
		if err != nil {
			out.err = err
		}
		return out
	})
}

// h14mAwait is a task awaiting the receiver itself.
func h14mAwait(rt *blitzio.Runtime, rx *OneshotReceiver[int]) <-chan h14mOut {
	return h14mTask(rt, func(co *blitzio.Co) h14mOut {
		r := blitzio.Await(co, rx)
		return h14mOut{v: r.Value, err: r.Err}
	})
}

// h14mSelect is a task awaiting Select2(rx, Sleep(d)): when the Sleep wins, the Select
// drops the receiver, which closes it (as documented).
func h14mSelect(rt *blitzio.Runtime, rx *OneshotReceiver[int], d time.Duration) <-chan h14mOut {
	return h14mTask(rt, func(co *blitzio.Co) h14mOut {
		s := blitzio.Await(co, blitzio.Select2[blitzio.Result[int], struct{}](rx, blitzio.Sleep(d)))
		return h14mOut{v: s.V1.Value, err: s.V1.Err, idx: s.Index}
	})
}

// h14mTimeout is a task awaiting Timeout(d, rx); idx 1 when the time limit won.
func h14mTimeout(rt *blitzio.Runtime, rx *OneshotReceiver[int], d time.Duration) <-chan h14mOut {
	return h14mTask(rt, func(co *blitzio.Co) h14mOut {
		r := blitzio.Await(co, blitzio.Timeout[blitzio.Result[int]](d, rx))
		if r.Err != nil {
			return h14mOut{err: r.Err, idx: 1}
		}
		return h14mOut{v: r.Value.Value, err: r.Value.Err}
	})
}

// h14mDropFirst is a task whose Select2 has a ready first branch, so it drops the
// receiver without ever polling it: the receiver is closed by a task that never waited.
func h14mDropFirst(rt *blitzio.Runtime, rx *OneshotReceiver[int]) <-chan h14mOut {
	return h14mTask(rt, func(co *blitzio.Co) h14mOut {
		s := blitzio.Await(co, blitzio.Select2[int, blitzio.Result[int]](blitzio.Ready(1), rx))
		return h14mOut{idx: s.Index}
	})
}

func h14mRecv(rx *OneshotReceiver[int]) <-chan h14mOut {
	return h11Go(func() h14mOut { v, err := rx.Recv(); return h14mOut{v: v, err: err} })
}

func h14mRecvCtx(ctx context.Context, rx *OneshotReceiver[int]) <-chan h14mOut {
	return h11Go(func() h14mOut { v, err := rx.RecvContext(ctx); return h14mOut{v: v, err: err} })
}

// h14mSendFrom sends v with SendFrom from a task of rt and returns Send's error.
func h14mSendFrom(t *testing.T, rt *blitzio.Runtime, tx *OneshotSender[int], v int) error {
	t.Helper()
	h := blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (error, bool) {
		return tx.SendFrom(cx, v), true
	}))
	err, jerr := h11Join(t, "the task calling SendFrom", h)
	if jerr != nil {
		t.Fatalf("the task calling SendFrom failed: %v", jerr)
	}
	return err
}

// TestHostile14MultiSingleWaiterNoTable: one waiter at a time, of every form (also after
// RecvContexts on the same receiver gave up one after another, and a task polled many
// times), never touches the side table: osMore stays clear before and after the Send.
func TestHostile14MultiSingleWaiterNoTable(t *testing.T) {
	rt := newRT(t, 2)
	forms := []struct {
		name  string
		start func(rx *OneshotReceiver[int]) <-chan h14mOut
	}{
		{"Recv", h14mRecv},
		{"RecvContext", func(rx *OneshotReceiver[int]) <-chan h14mOut {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel) // a live Done channel: blockOnCtx, not blockOn
			return h14mRecvCtx(ctx, rx)
		}},
		{"BlockOn", func(rx *OneshotReceiver[int]) <-chan h14mOut {
			return h11Go(func() h14mOut {
				r, err := blitzio.BlockOn[blitzio.Result[int]](rt, rx)
				return h14mOut{v: r.Value, err: errors.Join(r.Err, err)}
			})
		}},
		{"task", func(rx *OneshotReceiver[int]) <-chan h14mOut { return h14mAwait(rt, rx) }},
		{"task in Select2 with a Sleep", func(rx *OneshotReceiver[int]) <-chan h14mOut {
			return h14mSelect(rt, rx, time.Hour)
		}},
		{"task in Timeout", func(rx *OneshotReceiver[int]) <-chan h14mOut { return h14mTimeout(rt, rx, time.Hour) }},
		{"task polled many times", func(rx *OneshotReceiver[int]) <-chan h14mOut {
			polls := 0
			h := blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (h14mOut, bool) {
				r, ok := rx.Poll(cx)
				if ok {
					return h14mOut{v: r.Value, err: r.Err}, true
				}
				if polls++; polls < 50 {
					cx.Yield() // polled again at once, with the same waker
				}
				return h14mOut{}, false
			}))
			return h11Go(func() h14mOut {
				out, err := h.Wait()
				if err != nil {
					out.err = err
				}
				return out
			})
		}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			for _, giveUps := range []int{0, 5} {
				tx, rx := NewOneshot[int]()
				for i := range giveUps {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i)*100*time.Microsecond)
					_, err := rx.RecvContext(ctx)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("RecvContext %d with nothing sent: %v; want DeadlineExceeded", i, err)
					}
					h14mNoMore(t, rx, fmt.Sprintf("after RecvContext %d gave up", i))
				}
				done := f.start(rx)
				h13WaitWaker(t, rx)
				h14mNoMore(t, rx, "with one waiter")
				if err := tx.Send(3); err != nil {
					t.Fatal(err)
				}
				if out := h11Recv(t, f.name, done); out.err != nil || out.v != 3 || out.idx != 0 {
					t.Fatalf("%s after %d give-ups: %+v; want the value 3", f.name, giveUps, out)
				}
				h14mNoMore(t, rx, "after the Send")
			}
		})
	}
}

// TestHostile14MultiSelectSleepTasks: several tasks await one receiver, each in a
// Select2 with a Sleep (or in a Timeout). When one's time runs out it drops the
// receiver, which closes it: every other wait (tasks and a goroutine's Recv) ends with
// ErrClosed, and the Send after fails. Without an expiry, one Send gives every task the
// value (a task's Poll keeps it for the others, as a re-poll does).
func TestHostile14MultiSelectSleepTasks(t *testing.T) {
	rt := newRT(t, 2)
	const n = 4
	for _, expiry := range []string{"none", "Select2 Sleep", "Timeout"} {
		t.Run(expiry, func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			var waits []<-chan h14mOut
			for i := range n {
				if i%2 == 0 {
					waits = append(waits, h14mSelect(rt, rx, time.Hour))
				} else {
					waits = append(waits, h14mTimeout(rt, rx, time.Hour))
				}
				if i == 0 {
					h13WaitWaker(t, rx)
				}
			}
			h14mWaitTable(t, rx, n-1) // one in the slot, the rest in the table
			if expiry == "none" {
				if err := tx.Send(8); err != nil {
					t.Fatal(err)
				}
				for i, ch := range waits {
					if out := h11Recv(t, fmt.Sprintf("task %d", i), ch); out.err != nil || out.v != 8 || out.idx != 0 {
						t.Fatalf("task %d: %+v; want the value 8", i, out)
					}
				}
				h14TableEmpty(t, rx)
				return
			}
			g := h14mRecv(rx)
			h14mWaitTable(t, rx, n)
			var quitter <-chan h14mOut
			if expiry == "Timeout" {
				quitter = h14mTimeout(rt, rx, time.Millisecond)
			} else {
				quitter = h14mSelect(rt, rx, time.Millisecond)
			}
			if out := h11Recv(t, "the task whose time ran out", quitter); out.idx != 1 {
				t.Fatalf("the expiring task: %+v; want its time limit to win (nothing was sent)", out)
			} else if expiry == "Timeout" && !errors.Is(out.err, blitzio.ErrTimeout) {
				t.Fatalf("the expiring Timeout: %v; want ErrTimeout", out.err)
			}
			for i, ch := range waits {
				if out := h11Recv(t, fmt.Sprintf("task %d", i), ch); !errors.Is(out.err, ErrClosed) || out.idx != 0 {
					t.Fatalf("task %d after another dropped the receiver: %+v; want ErrClosed", i, out)
				}
			}
			if out := h11Recv(t, "the goroutine's Recv", g); !errors.Is(out.err, ErrClosed) {
				t.Fatalf("Recv after a task dropped the receiver: %+v; want ErrClosed", out)
			}
			if err := tx.Send(8); !errors.Is(err, ErrClosed) {
				t.Fatalf("Send after the receiver was dropped: %v; want ErrClosed", err)
			}
			h14TableEmpty(t, rx)
		})
	}
}

// TestHostile14MultiUnpolledDropWakesWaiter: a receive waits alone on the receiver (its
// waker in the slot, osMore clear); then a task drops the receiver without having polled
// it (a Select2 whose first branch is ready, or whose first branch panics). The drop
// closes the receiver, as documented, and the waiting receive must end with ErrClosed:
// the type's doc says several waits "still all end", and a Send after the drop fails
// without waking anyone, so nothing else ever would.
func TestHostile14MultiUnpolledDropWakesWaiter(t *testing.T) {
	rt := newRT(t, 2)
	waiters := []struct {
		name  string
		start func(rx *OneshotReceiver[int]) <-chan h14mOut
	}{
		{"Recv", h14mRecv},
		{"RecvContext", func(rx *OneshotReceiver[int]) <-chan h14mOut {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return h14mRecvCtx(ctx, rx)
		}},
		{"task", func(rx *OneshotReceiver[int]) <-chan h14mOut { return h14mAwait(rt, rx) }},
	}
	for _, w := range waiters {
		for _, dropper := range []string{"ready first branch", "panicking first branch"} {
			t.Run(w.name+"/"+dropper, func(t *testing.T) {
				tx, rx := NewOneshot[int]()
				done := w.start(rx)
				h13WaitWaker(t, rx)
				h14mNoMore(t, rx, "one waiter")
				if dropper == "ready first branch" {
					if out := h11Recv(t, "the dropping task", h14mDropFirst(rt, rx)); out.err != nil || out.idx != 0 {
						t.Fatalf("the dropping task: %+v; want its ready branch to win", out)
					}
				} else {
					out := h11Recv(t, "the panicking task", h14mTask(rt, func(co *blitzio.Co) h14mOut {
						boom := blitzio.PollFn(func(*blitzio.Context) (int, bool) { panic("h14m: first branch panics") })
						blitzio.Await(co, blitzio.Select2[int, blitzio.Result[int]](boom, rx))
						return h14mOut{}
					}))
					if pe := (*blitzio.PanicError)(nil); !errors.As(out.err, &pe) {
						t.Fatalf("the panicking task: %v; want a *PanicError", out.err)
					}
				}
				if out := h11Recv(t, w.name+" left waiting when another task dropped the receiver", done); !errors.Is(out.err, ErrClosed) {
					t.Fatalf("%s after the receiver was dropped: %+v; want ErrClosed", w.name, out)
				}
				if err := tx.Send(1); !errors.Is(err, ErrClosed) {
					t.Fatalf("Send after the drop: %v; want ErrClosed", err)
				}
				h14TableEmpty(t, rx)
			})
		}
	}
}

// TestHostile14MultiPanickingTask: a task that awaits the receiver (registered, in the
// slot or in the table) and then panics or calls runtime.Goexit drops it on the way out
// (Await drops what it awaits), which closes the receiver: the goroutine waiting beside
// it ends with ErrClosed, the task's handle reports the panic or ErrGoexit, and the side
// table is left empty.
func TestHostile14MultiPanickingTask(t *testing.T) {
	rt := newRT(t, 2)
	for _, how := range []string{"panic", "Goexit"} {
		for _, taskFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/task first %v", how, taskFirst), func(t *testing.T) {
				tx, rx := NewOneshot[int]()
				var trigger atomic.Bool
				var wk atomic.Pointer[blitzio.Waker]
				// bomb is the Select's second branch: pending until triggered, then it
				// panics or exits the goroutine, with the receiver registered.
				bomb := blitzio.PollFn(func(cx *blitzio.Context) (struct{}, bool) {
					if trigger.Load() {
						if how == "panic" {
							panic("h14m: the task panics while awaiting the receiver")
						}
						runtime.Goexit()
					}
					w := cx.Waker()
					wk.Store(&w)
					return struct{}{}, false
				})
				startTask := func() <-chan h14mOut {
					return h14mTask(rt, func(co *blitzio.Co) h14mOut {
						s := blitzio.Await(co, blitzio.Select2[blitzio.Result[int], struct{}](rx, bomb))
						return h14mOut{v: s.V1.Value, err: s.V1.Err, idx: s.Index}
					})
				}
				var task, g <-chan h14mOut
				if taskFirst {
					task = startTask()
					h13WaitWaker(t, rx)
					g = h14mRecv(rx)
				} else {
					g = h14mRecv(rx)
					h13WaitWaker(t, rx)
					task = startTask()
				}
				h14WaitMore(t, rx)
				h14mWaitTable(t, rx, 1)
				for deadline := time.Now().Add(h11Timeout); wk.Load() == nil; time.Sleep(100 * time.Microsecond) {
					if time.Now().After(deadline) {
						t.Fatal("the task never polled its second branch")
					}
				}
				trigger.Store(true)
				wk.Load().Wake()
				out := h11Recv(t, "the task that ran "+how, task)
				if how == "panic" {
					if pe := (*blitzio.PanicError)(nil); !errors.As(out.err, &pe) {
						t.Fatalf("the panicking task: %+v; want a *PanicError", out)
					}
				} else if !errors.Is(out.err, blitzio.ErrGoexit) {
					t.Fatalf("the task that called Goexit: %+v; want ErrGoexit", out)
				}
				if out := h11Recv(t, "the Recv beside the task that ran "+how, g); !errors.Is(out.err, ErrClosed) {
					t.Fatalf("Recv beside the task that ran %s: %+v; want ErrClosed", how, out)
				}
				if err := tx.Send(1); !errors.Is(err, ErrClosed) {
					t.Fatalf("Send after the task dropped the receiver: %v; want ErrClosed", err)
				}
				h14TableEmpty(t, rx)
			})
		}
	}
}

// TestHostile14MultiTwoRuntimes: tasks of two runtimes (and, every other round, a
// goroutine in Recv) wait on one receiver; a task of the first runtime sends with
// SendFrom. Every wait ends: without the Recv every task gets the value; with it, either
// the Recv got it and every task ErrClosed, or every task got it and the Recv ErrClosed.
func TestHostile14MultiTwoRuntimes(t *testing.T) {
	rt1, rt2 := newRT(t, 1), newRT(t, 2)
	for round := range 40 {
		tx, rx := NewOneshot[int]()
		withRecv := round%2 == 1
		var tasks []<-chan h14mOut
		for range 3 {
			tasks = append(tasks, h14mAwait(rt1, rx), h14mAwait(rt2, rx))
		}
		var g <-chan h14mOut
		if withRecv {
			g = h14mRecv(rx)
		}
		if round%4 < 2 { // let every wait register first; otherwise race them with the Send
			n := len(tasks)
			if withRecv {
				n++
			}
			h13WaitState(t, rx, osWaker, "no wait registered")
			h14mWaitTable(t, rx, n-1)
		}
		want := 100 + round
		if err := h14mSendFrom(t, rt1, tx, want); err != nil {
			t.Fatalf("round %d: SendFrom: %v", round, err)
		}
		var tv, tc int
		for i, ch := range tasks {
			switch out := h11Recv(t, fmt.Sprintf("round %d task %d (runtime %d)", round, i, i%2+1), ch); {
			case out.err == nil && out.v == want:
				tv++
			case errors.Is(out.err, ErrClosed):
				tc++
			default:
				t.Fatalf("round %d task %d: %+v", round, i, out)
			}
		}
		recvGot := false
		if withRecv {
			switch out := h11Recv(t, fmt.Sprintf("round %d Recv", round), g); {
			case out.err == nil && out.v == want:
				recvGot = true
			case !errors.Is(out.err, ErrClosed):
				t.Fatalf("round %d Recv: %+v", round, out)
			}
		}
		if recvGot && tc != len(tasks) || !recvGot && tv != len(tasks) {
			t.Fatalf("round %d: Recv got the value %v, %d tasks got it, %d ErrClosed; want the value in the Recv alone or in every task",
				round, recvGot, tv, tc)
		}
		h14TableEmpty(t, rx)
	}
}

// TestHostile14MultiTasksAllGetValue: tasks awaiting the receiver itself all get the
// value, as the type's doc says ("as a re-poll does"), also when the Send wakes them
// together and they race to take it on several workers: the task whose take loses the
// CAS to another task's must return the value that task kept, not ErrClosed.
func TestHostile14MultiTasksAllGetValue(t *testing.T) {
	rts := []*blitzio.Runtime{newRT(t, 2), newRT(t, 2)}
	const n = 8
	for round := range 150 {
		tx, rx := NewOneshot[int]()
		var tasks []<-chan h14mOut
		for i := range n {
			tasks = append(tasks, h14mAwait(rts[i%2], rx))
		}
		if round%2 == 0 { // all parked, so the Send wakes them together
			h13WaitState(t, rx, osWaker, "no task registered")
			h14mWaitTable(t, rx, n-1)
		}
		if err := tx.Send(round); err != nil {
			t.Fatal(err)
		}
		for i, ch := range tasks {
			if out := h11Recv(t, fmt.Sprintf("round %d task %d", round, i), ch); out.err != nil || out.v != round {
				t.Fatalf("round %d task %d: %+v; want the value %d (another task took it first and kept it)", round, i, out, round)
			}
		}
		h14TableEmpty(t, rx)
	}
	// The same race, tighter: two pollers (two tasks' wakers) poll each of many
	// receivers, each already sent to, at the same moment (a spinning barrier before
	// each receiver), so that their takes collide.
	const m = 5000
	rxs := make([]*OneshotReceiver[int], m)
	for i := range rxs {
		var tx *OneshotSender[int]
		tx, rxs[i] = NewOneshot[int]()
		if err := tx.Send(i); err != nil {
			t.Fatal(err)
		}
	}
	var arrived atomic.Int64
	bad := make([]atomic.Int64, 2)
	poller := func(k int) func() {
		w := newH13Waker()
		return func() {
			for i, rx := range rxs {
				arrived.Add(1)
				for spins := 0; arrived.Load() < int64(2*(i+1)); spins++ {
					if spins > 1000 {
						runtime.Gosched() // the other poller was descheduled
					}
				}
				if r, ok := rx.Poll(w.cx); !ok || r.Err != nil || r.Value != i {
					bad[k].Add(1)
				}
			}
		}
	}
	h11Race(poller(0), poller(1))
	if a, b := bad[0].Load(), bad[1].Load(); a+b != 0 {
		t.Fatalf("two pollers of %d receivers, each sent to: %d and %d polls did not return the value", m, a, b)
	}
}

// TestHostile14MultiTryRecvRace races TryRecv (in a loop until it sees something) with
// the Send, while a goroutine's Recv and a task wait on the receiver: the value goes out
// exactly once (to TryRecv, to the Recv, or to the task), everything else sees ErrClosed.
func TestHostile14MultiTryRecvRace(t *testing.T) {
	rt := newRT(t, 2)
	for round := range 200 {
		tx, rx := NewOneshot[int]()
		g := h14mRecv(rx)
		task := h14mAwait(rt, rx)
		var tryV int
		var tryErr, sendErr error
		h11Race(
			func() {
				for deadline := time.Now().Add(h11Timeout); ; runtime.Gosched() {
					v, err := rx.TryRecv()
					if !errors.Is(err, ErrEmpty) {
						tryV, tryErr = v, err
						return
					}
					if time.Now().After(deadline) {
						tryErr = err
						return
					}
				}
			},
			func() {
				if round%2 == 0 {
					runtime.Gosched()
				}
				sendErr = tx.Send(round)
			},
		)
		if sendErr != nil {
			t.Fatalf("round %d: Send: %v", round, sendErr)
		}
		outs := []h14mOut{{v: tryV, err: tryErr}, h11Recv(t, "Recv", g), h11Recv(t, "task", task)}
		taken := 0
		for i, out := range outs {
			switch {
			case out.err == nil && out.v == round:
				taken++
			case !errors.Is(out.err, ErrClosed):
				t.Fatalf("round %d: receive %d (TryRecv, Recv, task) ended with %+v", round, i, out)
			}
		}
		if taken != 1 {
			t.Fatalf("round %d: TryRecv, Recv, task ended with %+v; want the value exactly once", round, outs)
		}
		h14TableEmpty(t, rx)
	}
}

// TestHostile14MultiGiveUpLoop: a goroutine's RecvContext gives up hundreds of times on
// one receiver while another receive (a Recv or a task) waits: each give-up takes its
// waker back out, so the side table does not grow (it holds exactly the other waiter when
// that one waits there, nothing otherwise), and the Send still reaches the waiter.
func TestHostile14MultiGiveUpLoop(t *testing.T) {
	rt := newRT(t, 2)
	for _, c := range []struct {
		name         string
		task         bool
		quitterFirst bool
	}{
		{"Recv holds the slot", false, false},
		{"task holds the slot", true, false},
		{"quitter took the slot first, Recv in the table", false, true},
		{"quitter took the slot first, task in the table", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, rx := NewOneshot[int]()
			start := func() <-chan h14mOut {
				if c.task {
					return h14mAwait(rt, rx)
				}
				return h14mRecv(rx)
			}
			var other <-chan h14mOut
			want := 0
			if c.quitterFirst {
				ctx, cancel := context.WithCancel(context.Background())
				q := h14mRecvCtx(ctx, rx)
				h13WaitWaker(t, rx)
				other = start()
				h14WaitMore(t, rx)
				h14mWaitTable(t, rx, 1)
				cancel()
				if out := h11Recv(t, "the first RecvContext", q); !errors.Is(out.err, context.Canceled) {
					t.Fatalf("the cancelled RecvContext: %+v; want context.Canceled", out)
				}
				want = 1
			} else {
				other = start()
				h13WaitWaker(t, rx)
			}
			if n := h14mTableLen(rx); n != want {
				t.Fatalf("before the loop the side table holds %d waiters; want %d", n, want)
			}
			for i := range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*30*time.Microsecond)
				_, err := rx.RecvContext(ctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("RecvContext %d with nothing sent: %v; want DeadlineExceeded", i, err)
				}
				if n := h14mTableLen(rx); n != want {
					t.Fatalf("after %d give-ups the side table holds %d waiters of the oneshot; want %d", i+1, n, want)
				}
			}
			select {
			case out := <-other:
				t.Fatalf("the waiting receive ended before anything was sent: %+v", out)
			default:
			}
			if err := tx.Send(9); err != nil {
				t.Fatal(err)
			}
			if out := h11Recv(t, "the waiting receive", other); out.err != nil || out.v != 9 {
				t.Fatalf("the waiting receive: %+v; want the value 9", out)
			}
			h14TableEmpty(t, rx)
		})
	}
}

// TestHostile14MultiSendFromTask: goroutines wait in Recv and RecvContext; a task sends
// with SendFrom (waking the slot's waker with WakeFrom, the table's with Wake): exactly
// one receive gets the value, the others ErrClosed.
func TestHostile14MultiSendFromTask(t *testing.T) {
	rt := newRT(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for round := range 60 {
		tx, rx := NewOneshot[int]()
		n := 2 + round%3
		var waits []<-chan h14mOut
		for i := range n {
			if i%2 == 0 {
				waits = append(waits, h14mRecv(rx))
			} else {
				waits = append(waits, h14mRecvCtx(ctx, rx))
			}
		}
		if round%2 == 0 {
			h13WaitState(t, rx, osWaker, "no wait registered")
			h14mWaitTable(t, rx, n-1)
		}
		if err := h14mSendFrom(t, rt, tx, round+1); err != nil {
			t.Fatalf("round %d: SendFrom: %v", round, err)
		}
		got := 0
		for i, ch := range waits {
			switch out := h11Recv(t, fmt.Sprintf("round %d receive %d", round, i), ch); {
			case out.err == nil && out.v == round+1:
				got++
			case !errors.Is(out.err, ErrClosed):
				t.Fatalf("round %d receive %d: %+v", round, i, out)
			}
		}
		if got != 1 {
			t.Fatalf("round %d: %d of %d receives got the value; want 1", round, got, n)
		}
		h14TableEmpty(t, rx)
	}
}

// TestHostile14MultiCloseDuringRegistration races the receiver's or the sender's Close,
// from a third goroutine, with two goroutines and a task starting to wait: every wait
// ends with ErrClosed, a Send after fails, and the side table is left empty.
func TestHostile14MultiCloseDuringRegistration(t *testing.T) {
	rt := newRT(t, 2)
	for round := range 400 {
		tx, rx := NewOneshot[int]()
		outs := make([]h14mOut, 3)
		done := h11Go(func() struct{} {
			h11Race(
				func() { v, err := rx.Recv(); outs[0] = h14mOut{v: v, err: err} },
				func() { v, err := rx.RecvContext(context.Background()); outs[1] = h14mOut{v: v, err: err} },
				func() { outs[2] = <-h14mAwait(rt, rx) },
				func() {
					for range round % 5 {
						runtime.Gosched()
					}
					if round%2 == 0 {
						rx.Close()
					} else {
						tx.Close()
					}
				},
			)
			return struct{}{}
		})
		h11Recv(t, fmt.Sprintf("round %d: receives racing a Close", round), done)
		for i, out := range outs {
			if !errors.Is(out.err, ErrClosed) {
				t.Fatalf("round %d: receive %d (Recv, RecvContext, task): %+v; want ErrClosed", round, i, out)
			}
		}
		if err := tx.Send(1); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Send after Close: %v; want ErrClosed", round, err)
		}
		h14TableEmpty(t, rx)
	}
}

// TestHostile14MultiThousands: thousands of oneshots, each with two waits at once (two
// Recvs, or a Recv and a task), ended by a Send, the sender's Close or the receiver's
// Close: every wait ends as documented and the side table ends empty.
func TestHostile14MultiThousands(t *testing.T) {
	rt := newRT(t, 2)
	const n = 2000
	type one struct {
		tx   *OneshotSender[int]
		rx   *OneshotReceiver[int]
		a, b <-chan h14mOut
	}
	all := make([]one, n)
	for i := range all {
		tx, rx := NewOneshot[int]()
		o := one{tx: tx, rx: rx, a: h14mRecv(rx)}
		if i%2 == 0 {
			o.b = h14mRecv(rx)
		} else {
			o.b = h14mAwait(rt, rx)
		}
		all[i] = o
	}
	// Both waits of every oneshot wait at once: the second set osMore.
	for i, o := range all {
		h13WaitState(t, o.rx, osMore, fmt.Sprintf("oneshot %d: the second wait never went to the side table", i))
	}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := w; i < n; i += 4 {
				var err error
				switch i % 3 {
				case 0:
					err = all[i].tx.Send(i)
				case 1:
					all[i].tx.Close()
				case 2:
					all[i].rx.Close()
				}
				if err != nil {
					errs <- fmt.Errorf("oneshot %d: Send: %w", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := h11Recv(t, "the senders", errs); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range all {
		a, b := h11Recv(t, fmt.Sprintf("oneshot %d wait a", i), o.a), h11Recv(t, fmt.Sprintf("oneshot %d wait b", i), o.b)
		values, closed := 0, 0
		for _, out := range []h14mOut{a, b} {
			switch {
			case out.err == nil && out.v == i:
				values++
			case errors.Is(out.err, ErrClosed):
				closed++
			default:
				t.Fatalf("oneshot %d: a wait ended with %+v", i, out)
			}
		}
		if want := map[bool]int{true: 1, false: 0}[i%3 == 0]; values != want || closed != 2-want {
			t.Fatalf("oneshot %d (ended by %d): %+v and %+v; want %d value(s)", i, i%3, a, b, want)
		}
	}
	oneshotWaiters.mu.Lock()
	left := 0
	for _, o := range all {
		left += len(oneshotWaiters.m[&o.rx.c.state])
	}
	oneshotWaiters.mu.Unlock()
	if left != 0 {
		t.Fatalf("the side table still holds %d waiters of finished oneshots", left)
	}
}

// Receive kinds of the randomized schedule.
const (
	h14mKRecv      = iota // a goroutine in Recv
	h14mKRecvCtx          // a goroutine in RecvContext, whose context is cancelled at a random point
	h14mKTask             // a task awaiting the receiver
	h14mKSelect           // a task awaiting Select2(rx, Sleep(d)), d short or an hour
	h14mKTimeout          // a task awaiting Timeout(d, rx)
	h14mKDropFirst        // a task dropping the receiver without polling it
	h14mKinds
)

var h14mKindNames = [...]string{"Recv", "RecvContext", "task", "Select2", "Timeout", "drop-first"}

// TestHostile14MultiRandomSchedule runs random schedules of several receives (see the
// kinds above), TryRecv, Send or SendFrom, the sender's or the receiver's Close, a
// context cancellation and short pauses, in random order, and checks the documented
// rules: every receive ends, with a result its kind allows; the value goes out at most
// once (tasks that await the receiver share one take); it goes out exactly once when it
// was sent and nothing could close the receiver while something waited for good; and the
// side table ends empty.
func TestHostile14MultiRandomSchedule(t *testing.T) {
	rt := newRT(t, 2)
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	for seed := range uint64(rounds) {
		h14mRandomRound(t, rt, seed)
		if t.Failed() {
			return
		}
	}
}

func h14mRandomRound(t *testing.T, rt *blitzio.Runtime, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 14))
	tx, rx := NewOneshot[int]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tr h13Trace
	defer func() {
		if t.Failed() {
			t.Logf("seed %d:\n%s", seed, &tr)
		}
	}()
	want := 1000 + int(seed)

	type recv struct {
		kind  int
		short bool
		done  <-chan h14mOut
	}
	var recvs []*recv
	var ops []func()
	closes := false   // something may close the receiver: rx.Close, an expiring task, a drop
	forGood := false  // a receive that waits until the end (Recv, task, an hour's Select or Timeout)
	sendOnly := true  // the only enders are Send or SendFrom
	var sendErr error // of the Send or SendFrom, if any
	sent := false
	for range 1 + rng.IntN(4) {
		r := &recv{kind: rng.IntN(h14mKinds), short: rng.IntN(2) == 0}
		recvs = append(recvs, r)
		d := time.Hour
		if r.short {
			d = time.Duration(rng.IntN(200)) * time.Microsecond
		}
		switch r.kind {
		case h14mKRecv, h14mKTask:
			forGood = true
		case h14mKSelect, h14mKTimeout:
			if r.short {
				closes = true
			} else {
				forGood = true
			}
		case h14mKDropFirst:
			closes = true
		}
		ops = append(ops, func() {
			tr.add("start %s (%v)", h14mKindNames[r.kind], d)
			switch r.kind {
			case h14mKRecv:
				r.done = h14mRecv(rx)
			case h14mKRecvCtx:
				r.done = h14mRecvCtx(ctx, rx)
			case h14mKTask:
				r.done = h14mAwait(rt, rx)
			case h14mKSelect:
				r.done = h14mSelect(rt, rx, d)
			case h14mKTimeout:
				r.done = h14mTimeout(rt, rx, d)
			case h14mKDropFirst:
				r.done = h14mDropFirst(rt, rx)
			}
		})
	}
	// The ender (always one, so that every receive ends), maybe a second one.
	for e := range 1 + rng.IntN(2) {
		kind := rng.IntN(4)
		if e == 0 && rng.IntN(2) == 0 {
			kind = rng.IntN(2) // Send or SendFrom more often: the interesting case
		}
		switch kind {
		case 0, 1:
			ops = append(ops, func() {
				var err error
				if kind == 0 {
					err = tx.Send(want)
				} else {
					err = h14mSendFrom(t, rt, tx, want)
				}
				tr.add("send: %v", err)
				if !sent {
					sent, sendErr = true, err
				}
			})
		case 2:
			sendOnly = false
			ops = append(ops, func() { tr.add("sender close"); tx.Close() })
		case 3:
			sendOnly, closes = false, true
			ops = append(ops, func() { tr.add("receiver close"); rx.Close() })
		}
	}
	ops = append(ops, func() { tr.add("cancel"); cancel() })
	var tryDone <-chan h14mOut
	if rng.IntN(3) == 0 {
		ops = append(ops, func() {
			tr.add("TryRecv loop")
			tryDone = h11Go(func() h14mOut {
				for deadline := time.Now().Add(h11Timeout); ; runtime.Gosched() {
					v, err := rx.TryRecv()
					if !errors.Is(err, ErrEmpty) || time.Now().After(deadline) {
						return h14mOut{v: v, err: err}
					}
				}
			})
		})
	}
	for range rng.IntN(4) {
		p := time.Duration(rng.IntN(3)) * 50 * time.Microsecond
		ops = append(ops, func() {
			tr.add("pause %v", p)
			if p == 0 {
				runtime.Gosched()
			} else {
				time.Sleep(p)
			}
		})
	}
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	for _, op := range ops {
		op()
	}

	taken := 0 // takes of the value: Recv, RecvContext, TryRecv; the tasks' shared take
	taskV, taskClosed := 0, 0
	checkV := func(what string, out h14mOut) bool {
		if out.err != nil {
			return false
		}
		if out.v != want || !sent || sendErr != nil {
			t.Fatalf("%s got %d (sent %v, Send's error %v)", what, out.v, sent, sendErr)
		}
		return true
	}
	for i, r := range recvs {
		name := fmt.Sprintf("receive %d (%s)", i, h14mKindNames[r.kind])
		out := h11Recv(t, name, r.done)
		tr.add("%s ended: %+v", name, out)
		switch r.kind {
		case h14mKRecv, h14mKRecvCtx:
			switch {
			case checkV(name, out):
				taken++
			case errors.Is(out.err, ErrClosed):
			case r.kind == h14mKRecvCtx && errors.Is(out.err, context.Canceled):
			default:
				t.Fatalf("%s: %+v", name, out)
			}
		case h14mKDropFirst:
			if out.err != nil || out.idx != 0 {
				t.Fatalf("%s: %+v; want the ready branch", name, out)
			}
		default:
			switch {
			case out.idx == 1:
				if !r.short {
					t.Fatalf("%s: its hour ran out: %+v", name, out)
				}
				if r.kind == h14mKTimeout && !errors.Is(out.err, blitzio.ErrTimeout) {
					t.Fatalf("%s: %+v; want ErrTimeout", name, out)
				}
			case checkV(name, out):
				taskV++
			case errors.Is(out.err, ErrClosed):
				taskClosed++
			default:
				t.Fatalf("%s: %+v", name, out)
			}
		}
	}
	if tryDone != nil {
		out := h11Recv(t, "the TryRecv loop", tryDone)
		tr.add("TryRecv ended: %+v", out)
		switch {
		case checkV("TryRecv", out):
			taken++
		case !errors.Is(out.err, ErrClosed):
			t.Fatalf("TryRecv after the end: %+v", out)
		}
	}
	if taskV > 0 {
		taken++
		if taskClosed > 0 {
			t.Fatalf("%d tasks got the value and %d ErrClosed: a task's take is kept for every task", taskV, taskClosed)
		}
	}
	if taken > 1 {
		t.Fatalf("the value went out %d times", taken)
	}
	if sendOnly && !closes && sendErr != nil {
		t.Fatalf("Send failed with nothing closed: %v", sendErr)
	}
	if sent && sendErr == nil && !closes && forGood && taken != 1 {
		t.Fatalf("the value was sent, nothing closed the receiver, a receive waited for good, and the value went out %d times", taken)
	}
	h14TableEmpty(t, rx)
}
