package blitz_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitz"
)

// MapReduce with a value identity: the sum of the squares. A number is copied into every
// leaf, so the value form is right here.
func ExampleMapReduce() {
	s := []int{1, 2, 3, 4, 5}
	sumSq := blitz.MapReduce(s, 0, func(v int) int { return v * v }, func(a, b int) int { return a + b })
	fmt.Println(sumSq)
	// Output: 55
}

// Counting words into a map: the accumulator is modified in place by combine, so every
// leaf needs a map of its own. MapReduceFunc takes a constructor for the identity (the
// value form, MapReduce(words, map[string]int{}, ...), would share one map between all
// the leaves running at the same time).
func ExampleMapReduceFunc() {
	words := strings.Fields(strings.Repeat("the quick fox jumps over the lazy dog ", 1000))
	counts := blitz.MapReduceFunc(words,
		func() map[string]int { return map[string]int{} },
		func(w string) map[string]int { return map[string]int{w: 1} },
		func(a, b map[string]int) map[string]int { // merge b into a
			for k, v := range b {
				a[k] += v
			}
			return a
		},
		blitz.WithGrain(500)) // small leaves, to show it splits
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Println(k, counts[k])
	}
	// Output:
	// dog 1000
	// fox 1000
	// jumps 1000
	// lazy 1000
	// over 1000
	// quick 1000
	// the 2000
}

func ExampleSortByKey() {
	type city struct {
		name string
		pop  int
	}
	cities := []city{{"Lyon", 522}, {"Paris", 2103}, {"Nice", 342}, {"Lille", 236}}
	blitz.SortByKey(cities, func(c city) int { return c.pop })
	for _, c := range cities {
		fmt.Println(c.name, c.pop)
	}
	// Output:
	// Lille 236
	// Nice 342
	// Lyon 522
	// Paris 2103
}

func ExampleSortFunc() {
	names := []string{"bob", "Alice", "carol", "Dave"}
	// Case-insensitive order; cmp must be a strict weak ordering, as for slices.SortFunc.
	blitz.SortFunc(names, func(a, b string) int {
		return strings.Compare(strings.ToLower(a), strings.ToLower(b))
	})
	fmt.Println(names)
	// Output: [Alice bob carol Dave]
}

// TryForContext stops at the first error: the leaves receive a context that is cancelled
// as soon as one of them fails, and leaves not yet started never start.
func ExampleTryForContext() {
	data := make([]int, 100_000)
	data[70_000] = -1 // a bad record
	errBad := errors.New("negative value")
	err := blitz.TryForContext(context.Background(), len(data), func(ctx context.Context, lo, hi int) error {
		for i := lo; i < hi; i++ {
			if i%1024 == 0 && ctx.Err() != nil {
				return ctx.Err() // another leaf failed: stop early
			}
			if data[i] < 0 {
				return fmt.Errorf("record %d: %w", i, errBad)
			}
		}
		return nil
	})
	fmt.Println(err, errors.Is(err, errBad))
	// Output: record 70000: negative value true
}

// ForEachSeq consumes any iter.Seq (here a sequence that is not a slice) in parallel
// batches; the sequence itself is iterated on the caller's goroutine only.
func ExampleForEachSeq() {
	lines := strings.Lines(strings.Repeat("alpha\nbeta\ngamma\n", 10_000))
	var letters atomic.Int64
	blitz.ForEachSeq(lines, func(line string) {
		letters.Add(int64(len(strings.TrimSpace(line))))
	})
	fmt.Println(letters.Load())
	// Output: 140000
}

func ExamplePartition() {
	s := []int{5, 12, 7, 3, 20, 8, 1}
	small, large := blitz.Partition(s, func(v int) bool { return v < 8 })
	fmt.Println(small, large) // each keeps the original order
	// Output: [5 7 3 1] [12 20 8]
}

// A Group runs functions that may fail on the pool's workers, as errgroup runs them on
// goroutines: Wait returns the first error, and GroupContext's context is cancelled at
// that error. Use it for CPU work; blocking work belongs in errgroup.
func ExampleGroup() {
	inputs := []string{"12", "7", "x9", "40"}
	results := make([]int, len(inputs))
	g, ctx := blitz.GroupContext(context.Background(), nil) // nil: the default pool
	g.SetLimit(2)                                           // at most two at once
	for i, in := range inputs {
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil // another function failed: skip the work
			}
			var n int
			if _, err := fmt.Sscanf(in, "%d", &n); err != nil {
				return fmt.Errorf("input %d (%q): not a number", i, in)
			}
			results[i] = n * n
			return nil
		})
	}
	fmt.Println(g.Wait())

	// A Group may be used again; without errors Wait returns nil.
	var sum atomic.Int64
	var g2 blitz.Group // the zero Group runs on the default pool
	for _, v := range []int{1, 2, 3} {
		g2.Go(func() error { sum.Add(int64(v)); return nil })
	}
	fmt.Println(g2.Wait(), sum.Load())
	// Output:
	// input 2 ("x9"): not a number
	// <nil> 6
}
