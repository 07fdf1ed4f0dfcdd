package stress_test

import (
	"fmt"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
)

// Both runtimes in one binary: blitzio for tasks that wait (I/O, timers), blitz for CPU
// work. Each defaults to GOMAXPROCS workers; sized like this they share the cores
// instead of doubling the busy goroutines (see the blitzio package documentation).
//
// A task hands a CPU-heavy computation to the blitz pool and awaits it through a
// Completion: its blitzio worker runs other tasks meanwhile, instead of blocking in the
// computation (or in a blitz Call).
func Example_cpuWorkFromATask() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1}) // small: its tasks mostly wait
	defer rt.Close()
	pool, _ := blitz.NewPool(blitz.Config{Workers: 2}) // the CPU work
	defer pool.Close()

	data := make([]int, 1_000_000)
	for i := range data {
		data[i] = i % 7
	}
	task := blitzio.Async(func(co *blitzio.Co) string {
		done, sum := blitzio.NewCompletion[int]()
		pool.Go(func(*blitz.Task) { done.Complete(blitz.Sum(data, blitz.WithPool(pool))) })
		return fmt.Sprint("sum = ", blitzio.Await(co, sum))
	})
	fmt.Println(blitzio.Spawn(rt, task).Wait())
	// Output: sum = 2999997 <nil>
}
