package blitzio

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// timerStressTask is a task that runs a random series of timer operations, each racing
// with the workers' drains and firings and with other tasks: await a sleep; await the
// first of two sleeps (the loser is dropped, often while still queued); re-arm a reused
// sleep; re-arm one that is registered (cancelled while queued or in the wheel, then
// registered again, which must first drain it out of the pending stack); start a sleep
// and drop it at once. Every awaited sleep is checked never to complete early.
type timerStressTask struct {
	rng   *rand.Rand
	left  int
	cur   Future[struct{}]
	min   time.Duration
	start time.Time
	reuse *SleepFuture
	early *atomic.Pointer[string]
}

func (s *timerStressTask) Poll(cx *Context) (struct{}, bool) {
	for {
		if s.cur == nil {
			if s.left == 0 {
				return struct{}{}, true
			}
			s.left--
			d := time.Duration(s.rng.IntN(2000)) * time.Microsecond
			switch s.rng.IntN(5) {
			case 0:
				s.cur, s.min = Sleep(d), d
			case 1:
				d2 := time.Duration(s.rng.IntN(2000)) * time.Microsecond
				s.cur = Map(Select2(Sleep(d), Sleep(d2)), func(Selected2[struct{}, struct{}]) struct{} { return struct{}{} })
				s.min = min(d, d2)
			case 2:
				s.reuse.Reset(d)
				s.cur, s.min = s.reuse, d
			case 3:
				s.reuse.Reset(time.Hour)
				if _, ok := s.reuse.Poll(cx); ok {
					panic("an hour-long sleep completed at once")
				}
				s.reuse.Reset(d) // cancels the registered hour
				s.cur, s.min = s.reuse, d
			default:
				f := Sleep(time.Duration(s.rng.IntN(5000)) * time.Millisecond)
				f.Poll(cx)
				f.Drop()
				continue
			}
			s.start = time.Now()
		}
		if _, ok := s.cur.Poll(cx); !ok {
			return struct{}{}, false
		}
		if el := time.Since(s.start); el < s.min {
			msg := fmt.Sprintf("a %v sleep completed after %v", s.min, el)
			s.early.CompareAndSwap(nil, &msg)
		}
		s.cur = nil
	}
}

// TestTimerRegistrationStress runs many more timer-using tasks than cores, plus plain
// goroutines starting and dropping sleeps from outside the workers, and checks that no
// awaited sleep is lost (each task finishes, under a watchdog) or early, and that no
// timer is left registered at the end.
func TestTimerRegistrationStress(t *testing.T) {
	tasks, iters, outside := 64, 150, 20_000
	if raceEnabled || testing.Short() {
		tasks, iters, outside = 16, 40, 2_000
	}
	// A lost timer leaves a task waiting forever, and a corrupted pending stack can make
	// a drain loop under the timer lock, which would also hang the runtime's Close: fail
	// loudly from a watchdog instead.
	watchdog := time.AfterFunc(time.Minute, func() {
		panic("TestTimerRegistrationStress: no progress in a minute: a timer was lost or a drain loops")
	})
	t.Cleanup(func() { watchdog.Stop() }) // registered first, so it runs after the runtime's Close
	rt := newRT(t, Config{Workers: 4})
	var early atomic.Pointer[string]
	hs := make([]JoinHandle[struct{}], tasks)
	for i := range hs {
		hs[i] = Spawn(rt, &timerStressTask{
			rng:   rand.New(rand.NewPCG(uint64(i), 7)),
			left:  iters,
			reuse: Sleep(0),
			early: &early,
		})
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cx := NewContext(rt, Waker{})
			reuse := Sleep(time.Hour)
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			for range outside {
				if rng.IntN(4) == 0 {
					reuse.Reset(time.Duration(1+rng.IntN(60)) * time.Second)
					reuse.Poll(cx)
					continue
				}
				f := Sleep(time.Duration(1+rng.IntN(60)) * time.Second)
				f.Poll(cx)
				f.Drop()
			}
			reuse.Drop()
		}()
	}
	for _, h := range hs {
		if _, err := waitHandle(t, h); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if m := early.Load(); m != nil {
		t.Fatal(*m)
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers still registered after every sleep completed or was dropped", n)
	}
}
