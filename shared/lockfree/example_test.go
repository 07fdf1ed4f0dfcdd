package lockfree_test

import (
	"fmt"

	"github.com/blitzgo/blitz/shared/lockfree"
)

type job struct{ name string }

// A tiny find-work loop: a worker runs its own newest job first (Pop), and when its
// deque is empty it steals the oldest job of another worker. Run single-threaded here,
// so the order is deterministic.
func ExampleDeque() {
	mine := lockfree.NewDeque[job](0)
	victim := lockfree.NewDeque[job](0)
	for _, n := range []string{"a", "b"} {
		mine.Push(&job{n})
	}
	for _, n := range []string{"x", "y", "z"} {
		victim.Push(&job{n})
	}
	for {
		j := mine.Pop() // newest local work first: its data is still in cache
		if j == nil {
			var ok bool
			if j, ok = victim.StealLoop(); !ok { // the oldest job: likely the biggest
				break
			}
		}
		fmt.Print(j.name, " ")
	}
	fmt.Println()
	// Output: b a x y z
}

// A joiner waits for a result computed on another goroutine. SetDone publishes
// everything written before it: after Wait, result is safe to read.
func ExampleOnceLatch() {
	var (
		done   lockfree.OnceLatch
		result int
	)
	go func() {
		result = 6 * 7
		done.SetDone()
	}()
	if !done.Probe() { // not ready yet: block (a scheduler would run other work first)
		done.Wait()
	}
	fmt.Println(result)
	// Output: 42
}
