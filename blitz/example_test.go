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
