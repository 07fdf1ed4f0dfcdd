package blitz_test

import (
	"fmt"

	"github.com/blitzgo/blitz/blitz"
)

// SortStableByKey keeps the input order of elements with equal keys: the orders of the
// same day stay in the order they were placed.
func ExampleSortStableByKey() {
	type order struct {
		day int
		id  string
	}
	orders := []order{{3, "c1"}, {1, "a1"}, {3, "c2"}, {2, "b1"}, {1, "a2"}, {3, "c3"}}
	blitz.SortStableByKey(orders, func(o order) int { return o.day })
	fmt.Println(orders)
	// Output: [{1 a1} {1 a2} {2 b1} {3 c1} {3 c2} {3 c3}]
}

// Sort orders strings bytewise, as slices.Sort does: a string that is a prefix of another
// comes first.
func ExampleSort_strings() {
	s := []string{"banana", "apple", "app", "apple pie", "", "Apple"}
	blitz.Sort(s)
	fmt.Printf("%q\n", s)
	// Output: ["" "Apple" "app" "apple" "apple pie" "banana"]
}
