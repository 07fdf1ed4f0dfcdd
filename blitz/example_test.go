package blitz_test

import (
	"fmt"

	"github.com/blitzgo/blitz/blitz"
)

var fibJob blitz.Job[int, int]

func fib(t *blitz.Task, n int) int {
	if n < 2 {
		return n
	}
	f := fibJob.Fork(t, fib, n-1) // another worker may steal it
	b := fib(t, n-2)
	return f.Join(t) + b
}

// A recursive computation with a fork at every call: Fork and Join allocate nothing.
func ExampleJob() {
	p, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	fmt.Println(blitz.Call(p, func(t *blitz.Task) int { return fib(t, 20) }))
	// Output: 6765
}

func ExampleJoin2() {
	p := blitz.Default()
	blitz.Call(p, func(t *blitz.Task) struct{} {
		n, s := blitz.Join2(t,
			func(t *blitz.Task) int { return fib(t, 10) },
			func(*blitz.Task) string { return "hello" })
		fmt.Println(n, s)
		return struct{}{}
	})
	// Output: 55 hello
}

func ExampleScope() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 4})
	defer p.Close()
	squares := make([]int, 8)
	p.Call(func(t *blitz.Task) {
		blitz.Scope(t, func(s *blitz.Spawner) {
			for i := range squares {
				s.Spawn(func(*blitz.Task) { squares[i] = i * i })
			}
		})
	})
	fmt.Println(squares)
	// Output: [0 1 4 9 16 25 36 49]
}

func ExamplePool_Broadcast() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 3})
	defer p.Close()
	seen := make([]bool, p.NumWorkers())
	p.Broadcast(func(i int) { seen[i] = true })
	fmt.Println(seen)
	// Output: [true true true]
}

var sumJob blitz.Job[[]int, int]

// sum splits the slice in halves down to 1000 elements; Stolen lets an unstolen half run
// as a direct call.
func sum(t *blitz.Task, xs []int) int {
	if len(xs) <= 1000 {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s
	}
	mid := len(xs) / 2
	f := sumJob.Fork(t, sum, xs[mid:])
	left := sum(t, xs[:mid])
	right, ok := f.Stolen(t)
	if !ok {
		right = sum(t, xs[mid:])
	}
	return left + right
}

func ExampleFuture_Stolen() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})
	defer p.Close()
	xs := make([]int, 100_000)
	for i := range xs {
		xs[i] = i
	}
	fmt.Println(blitz.Call(p, func(t *blitz.Task) int { return sum(t, xs) }))
	// Output: 4999950000
}

// Call runs a function on the pool from any goroutine; the caller takes part as a guest
// worker, so WorkerIndex is -1.
func ExamplePool_Call() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})
	defer p.Close()
	p.Call(func(t *blitz.Task) {
		fmt.Println(t.WorkerIndex(), t.Pool().NumWorkers())
	})
	// Output: -1 2
}

func ExampleTryJoin() {
	p := blitz.Default()
	err := blitz.Call(p, func(t *blitz.Task) error {
		return blitz.TryJoin(t,
			func(*blitz.Task) error { return nil },
			func(*blitz.Task) error { return fmt.Errorf("second failed") },
			func(*blitz.Task) error { return fmt.Errorf("third failed") })
	})
	fmt.Println(err)
	// Output: second failed
}

func ExampleCatch() {
	p := blitz.Default()
	p.Call(func(t *blitz.Task) {
		pe := blitz.Catch(t, func(t *blitz.Task) {
			blitz.Join(t, func(*blitz.Task) {}, func(*blitz.Task) { panic("oops") })
		})
		fmt.Println(pe.Value)
	})
	// Output: oops
}
