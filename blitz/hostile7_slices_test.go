package blitz

import (
	"fmt"
	"slices"
	"testing"
)

// TestHostile7EmptyResultsAreNil: the functions that build a new slice (Filter,
// Partition, Map, FlatMap, Flatten) return nil when the result has no elements, as
// slices.Collect does for an empty sequence, whatever the input size, the grain and the
// pool. Filter and Partition returned nil from their sequential path (inputs of at most
// one grain) but an empty non-nil slice from their parallel path, so the same call
// changed its answer with the input size or WithGrain (a JSON encoder writes null for
// one and [] for the other; a nil check flips).
func TestHostile7EmptyResultsAreNil(t *testing.T) {
	p1 := newPool(t, Config{Workers: 1})
	p2 := newPool(t, Config{Workers: 2})
	const g = 8
	configs := []struct {
		name string
		opts []Option
	}{
		{"default", nil},
		{"w1/grain8", []Option{WithPool(p1), WithGrain(g)}},
		{"w2/grain8", []Option{WithPool(p2), WithGrain(g)}},
		{"w2/grain1", []Option{WithPool(p2), WithGrain(1)}},
	}
	// 0, 1, below, at and above the test grain, and above the automatic grain.
	sizes := []int{0, 1, g - 1, g, g + 1, 5 * g, 3*parMinGrain + 7}
	preds := []struct {
		name string
		f    func(int) bool
	}{
		{"none", func(int) bool { return false }},
		{"all", func(int) bool { return true }},
		{"even", func(v int) bool { return v%2 == 0 }},
	}
	check := func(t *testing.T, what string, got, want []int) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, h7Short(got), h7Short(want))
		}
		if (got == nil) != (len(want) == 0) {
			t.Errorf("%s: got nil = %v for %d elements; an empty result must be nil and only an empty one", what, got == nil, len(got))
		}
	}
	for _, c := range configs {
		for _, n := range sizes {
			for _, nilInput := range []bool{false, true} {
				if nilInput && n > 0 {
					continue
				}
				s := make([]int, n)
				if nilInput {
					s = nil
				}
				for i := range s {
					s[i] = i
				}
				name := fmt.Sprintf("%s/n=%d", c.name, n)
				if nilInput {
					name += "/nil"
				}
				t.Run(name, func(t *testing.T) {
					for _, pr := range preds {
						var yes, no []int
						for _, v := range s {
							if pr.f(v) {
								yes = append(yes, v)
							} else {
								no = append(no, v)
							}
						}
						check(t, "Filter/"+pr.name, Filter(s, pr.f, c.opts...), yes)
						py, pn := Partition(s, pr.f, c.opts...)
						check(t, "Partition(yes)/"+pr.name, py, yes)
						check(t, "Partition(no)/"+pr.name, pn, no)
						check(t, "FlatMap/"+pr.name, FlatMap(s, func(v int) []int {
							if pr.f(v) {
								return []int{v}
							}
							return nil
						}, c.opts...), yes)
					}
					var want []int // nil for an empty s, as Map's result must be
					want = append(want, s...)
					check(t, "Map", Map(s, func(v int) int { return v }, c.opts...), want)
					parts := make([][]int, n)
					for i := range parts {
						parts[i] = []int{}
					}
					check(t, "Flatten(empty parts)", Flatten(parts, c.opts...), nil)
					for i := range parts {
						parts[i] = s[i : i+1]
					}
					check(t, "Flatten", Flatten(parts, c.opts...), want)
				})
			}
		}
	}
}

// h7Short abbreviates a long slice for a failure message.
func h7Short(s []int) string {
	if s == nil {
		return "nil"
	}
	if len(s) > 10 {
		return fmt.Sprintf("%v... (len %d)", s[:10], len(s))
	}
	return fmt.Sprint(s)
}
