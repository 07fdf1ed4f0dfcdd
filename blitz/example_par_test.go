package blitz_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blitzgo/blitz/blitz"
)

// For splits an index range over the pool; each call receives a subrange.
func ExampleFor() {
	squares := make([]int, 10_000)
	blitz.For(len(squares), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			squares[i] = i * i
		}
	})
	fmt.Println(squares[9_999])
	// Output: 99980001
}

// Reduce folds per-range results in index order.
func ExampleReduce() {
	// Sum of 1..1_000_000 computed over subranges.
	total := blitz.Reduce(1_000_000, 0, func(lo, hi int) int {
		s := 0
		for i := lo; i < hi; i++ {
			s += i + 1
		}
		return s
	}, func(a, b int) int { return a + b })
	fmt.Println(total)
	// Output: 500000500000
}

func ExampleSum() {
	s := make([]int64, 1_000_000)
	for i := range s {
		s[i] = int64(i)
	}
	fmt.Println(blitz.Sum(s))
	// Output: 499999500000
}

// Options choose the pool and the grain of one call.
func ExampleWithPool() {
	p, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	words := strings.Fields("the quick brown fox jumps over the lazy dog")
	lengths := blitz.Map(words, func(w string) int { return len(w) }, blitz.WithPool(p), blitz.WithGrain(1))
	fmt.Println(lengths)
	// Output: [3 5 5 3 5 4 3 4 3]
}

func ExampleFindFirst() {
	s := make([]int, 1_000_000)
	s[700_000], s[900_000] = 7, 7
	v, i, ok := blitz.FindFirst(s, func(x int) bool { return x == 7 })
	fmt.Println(v, i, ok)
	// Output: 7 700000 true
}

// ForUntil stops every worker once one leaf has what it needs.
func ExampleForUntil() {
	stopped := blitz.ForUntil(1_000_000, func(lo, hi int, s blitz.Stop) {
		for i := lo; i < hi && !s.Stopped(); i++ {
			if i == 123_456 {
				s.Stop()
			}
		}
	})
	fmt.Println(stopped)
	// Output: true
}

// TryForEach returns the first error and stops the remaining work.
func ExampleTryForEach() {
	ids := []int{1, 2, 3, -4, 5}
	err := blitz.TryForEach(ids, func(id int) error {
		if id < 0 {
			return fmt.Errorf("bad id %d", id)
		}
		return nil
	})
	fmt.Println(err)
	// Output: bad id -4
}

func ExampleFilter() {
	s := []int{5, 8, 1, 4, 9, 2, 6}
	fmt.Println(blitz.Filter(s, func(x int) bool { return x%2 == 0 }))
	// Output: [8 4 2 6]
}

func ExampleSort() {
	s := []float64{3, -1, 2.5, 0, -7}
	blitz.Sort(s)
	fmt.Println(s)
	// Output: [-7 -1 0 2.5 3]
}

func ExampleSortStableFunc() {
	type person struct {
		name string
		age  int
	}
	people := []person{{"Ana", 30}, {"Bo", 25}, {"Cy", 30}, {"Di", 25}}
	blitz.SortStableFunc(people, func(a, b person) int { return a.age - b.age })
	fmt.Println(people)
	// Output: [{Bo 25} {Di 25} {Ana 30} {Cy 30}]
}

// MapSeq computes in parallel and yields results in order on the caller's goroutine;
// breaking out of the loop stops the remaining work.
func ExampleMapSeq() {
	for sq := range blitz.MapSeq(slices.Values([]int{1, 2, 3, 4, 5, 6}), func(x int) int { return x * x }) {
		if sq > 20 {
			break
		}
		fmt.Print(sq, " ")
	}
	fmt.Println()
	// Output: 1 4 9 16
}

// A panic in a worker is re-raised in the caller as *blitz.PanicError.
func ExampleFor_panic() {
	defer func() {
		var pe *blitz.PanicError
		if err, ok := recover().(error); ok && errors.As(err, &pe) {
			fmt.Println("recovered:", pe.Value)
		}
	}()
	blitz.For(1_000_000, func(lo, hi int) {
		if lo == 0 {
			panic("bad leaf")
		}
	}, blitz.WithGrain(1000))
	// Output: recovered: bad leaf
}
