package blitzio_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// A multi-step task written as a poll function: a small state machine in a closure. Each
// step either finishes at once or returns pending, and the task is polled again when the
// future it waits on wakes it.
func Example() {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	var (
		step  int
		child blitzio.JoinHandle[int]
		nap   = blitzio.Sleep(time.Millisecond)
		total int
	)
	task := blitzio.PollFn(func(cx *blitzio.Context) (string, bool) {
		for {
			switch step {
			case 0: // start a child task
				child = blitzio.Spawn(cx, blitzio.Lazy(func() int { return 40 }))
				step = 1
			case 1: // await it
				r, ok := child.Poll(cx)
				if !ok {
					return "", false
				}
				total = r.Value
				step = 2
			case 2: // sleep a little
				if _, ok := nap.Poll(cx); !ok {
					return "", false
				}
				step = 3
			case 3:
				return fmt.Sprintf("answer %d", total+2), true
			}
		}
	})
	v, err := blitzio.Spawn(rt, task).Wait()
	fmt.Println(v, err)
	// Output: answer 42 <nil>
}

func ExampleBlockOn() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()
	double := blitzio.AndThen(blitzio.Ready(21), func(x int) blitzio.Future[int] {
		return blitzio.Lazy(func() int { return 2 * x })
	})
	v, err := blitzio.BlockOn(rt, double)
	fmt.Println(v, err)
	// Output: 42 <nil>
}

func ExampleSpawnBlocking() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()
	h := blitzio.SpawnBlocking(rt, func() string {
		time.Sleep(time.Millisecond) // a blocking call belongs on the blocking pool
		return "done"
	})
	fmt.Println(h.Wait())
	// Output: done <nil>
}

// Timers under a TestClock move only when the test advances the clock.
func ExampleTimeout() {
	clock := blitzio.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt, _ := blitzio.New(blitzio.Config{Clock: clock})
	defer rt.Close()
	h := blitzio.Spawn(rt, blitzio.Timeout(time.Second, blitzio.Pending[int]()))
	for !h.IsFinished() {
		clock.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond) // let the task register its timer
	}
	r, _ := h.Wait()
	fmt.Println(errors.Is(r.Err, context.DeadlineExceeded))
	// Output: true
}

func ExampleSelect2() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()
	r, _ := blitzio.BlockOn(rt, blitzio.Select2(blitzio.Sleep(time.Hour), blitzio.Ready("fast")))
	fmt.Println(r.Index, r.V2)
	// Output: 1 fast
}
