package blitzio

import (
	"errors"
	"testing"
	"time"
)

// JoinAll reads runs of finished JoinHandles in one loop; it must still spend one unit
// of budget per handle (yielding when the budget is spent) and resume where it stopped.
func TestJoinAllFinishedHandlesSpendBudget(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const n = 1000
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = Spawn(rt, Ready(i))
	}
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	f := JoinAll(hs...)
	p := newParker()
	cx := &Context{waker: Waker{t: p}, rt: rt}
	polls := 0
	for {
		cx.budget = budgetPerPoll
		rs, ok := f.Poll(cx)
		polls++
		if ok {
			for i, r := range rs {
				if r.Err != nil || r.Value != i {
					t.Fatalf("result %d = %+v", i, r)
				}
			}
			break
		}
		if cx.budget != 0 {
			t.Fatalf("poll %d returned pending with %d budget left: finished handles must spend it", polls, cx.budget)
		}
		select {
		case <-p.ch:
		default:
			t.Fatalf("poll %d returned pending without a wake", polls)
		}
	}
	if want := (n + budgetPerPoll - 1) / budgetPerPoll; polls != want {
		t.Fatalf("%d polls for %d finished handles, want %d (one per budget)", polls, n, want)
	}
}

// BlockOn polls a future that yields again at once; a runtime shut down meanwhile still
// ends it with ErrRuntimeClosed.
func TestBlockOnYieldingFuture(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	left := 10_000
	v, err := BlockOn(rt, PollFn(func(cx *Context) (int, bool) {
		if left == 0 {
			return 7, true
		}
		left--
		cx.Yield()
		return 0, false
	}))
	if err != nil || v != 7 {
		t.Fatalf("BlockOn of a yielding future: %v, %v", v, err)
	}
	rt2, _ := New(Config{Workers: 1})
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := BlockOn(rt2, PollFn(func(cx *Context) (int, bool) {
			select {
			case <-started:
			default:
				close(started)
			}
			cx.Yield()
			return 0, false
		}))
		done <- err
	}()
	<-started
	rt2.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRuntimeClosed) {
			t.Fatalf("BlockOn of a future that always yields, runtime closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BlockOn of a future that always yields did not end when the runtime closed")
	}
}
