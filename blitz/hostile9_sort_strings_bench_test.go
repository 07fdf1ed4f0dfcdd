package blitz

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Inputs and benchmarks for the string sort on shapes that defeat a radix sort: many
// duplicates of a few long strings mixed with their prefixes, beside the ordinary shapes
// (random, sorted, reversed, all equal, shared long prefix, many duplicates, short,
// unicode). Each shape runs "blitz" (Sort, parallel on the default pool), "blitz1" (the
// same string sort run sequentially on the caller's goroutine, the single-threaded figure)
// and "slices" (slices.Sort) in the same process.

// hs9RandString returns a string of n bytes drawn from alpha.
func hs9RandString(r *rand.Rand, n int, alpha string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[r.IntN(len(alpha))]
	}
	return string(b)
}

// hs9PrefixMix returns n strings drawn from k random strings of length l: each is either
// the whole string (with probability full/100, its own copy when clone is set) or a prefix
// of it, of a random length when lengths is 0, else of one of lengths fixed lengths.
func hs9PrefixMix(seed uint64, n, k, l, full, lengths int, clone bool) []string {
	r := rand.New(rand.NewPCG(seed, 9))
	bases := make([]string, k)
	for i := range bases {
		bases[i] = hs9RandString(r, l, "abcdefghijklmnopqrstuvwxyz")
	}
	cuts := make([]int, lengths)
	for i := range cuts {
		cuts[i] = r.IntN(l + 1)
	}
	s := make([]string, n)
	for i := range s {
		b := bases[r.IntN(k)]
		switch {
		case r.IntN(100) < full:
			s[i] = b
			if clone {
				s[i] = strings.Clone(b)
			}
		case lengths == 0:
			s[i] = b[:r.IntN(l+1)]
		default:
			s[i] = b[:cuts[r.IntN(lengths)]]
		}
	}
	return s
}

// hs9Shapes returns the named string inputs of about n strings.
func hs9Shapes(n int) []benchInput[string] {
	r := rand.New(rand.NewPCG(9, uint64(n)))
	random := make([]string, n)
	for i := range random {
		random[i] = hs9RandString(r, 8+r.IntN(25), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	}
	sorted := slices.Clone(random)
	slices.Sort(sorted)
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	equal := make([]string, n)
	for i := range equal {
		equal[i] = "the same string for every element"
	}
	prefix := strings.Repeat("/a/long/shared/path/", 10)
	shared := make([]string, n)
	for i := range shared {
		shared[i] = prefix + hs9RandString(r, 4+r.IntN(12), "0123456789abcdef")
	}
	dups := make([]string, n)
	for i := range dups {
		dups[i] = random[r.IntN(100)]
	}
	short := make([]string, n)
	for i := range short {
		short[i] = hs9RandString(r, r.IntN(4), "abcdefgh")
	}
	uni := make([]string, n)
	runes := []rune("aéü世界😀ßΩжñ\u0301\ufffd")
	for i := range uni {
		var sb strings.Builder
		for range 1 + r.IntN(10) {
			sb.WriteRune(runes[r.IntN(len(runes))])
		}
		uni[i] = sb.String()
	}
	return []benchInput[string]{
		// The shapes of the known gap: duplicates of a few long strings and their prefixes.
		{"prefixmix/k8-l1000", hs9PrefixMix(1, n, 8, 1000, 50, 0, false)},
		{"prefixmix/k4-l100", hs9PrefixMix(2, n, 4, 100, 50, 0, false)},
		{"prefixmix/k2-l10000", hs9PrefixMix(3, n, 2, 10000, 50, 0, false)},
		{"prefixmix/k16-l1000-cuts20", hs9PrefixMix(4, n, 16, 1000, 30, 20, false)},
		{"prefixmix/k1-l5000-clone", hs9PrefixMix(5, n, 1, 5000, 50, 0, true)},
		{"prefixmix/k8-l300-noFull", hs9PrefixMix(6, n, 8, 300, 0, 0, false)},
		{"prefixmix/k1-l100-organ", hs9Organ(n, 100)},
		// The ordinary shapes, which must not get slower.
		{"random", random},
		{"sorted", sorted},
		{"reversed", reversed},
		{"equal", equal},
		{"sharedprefix", shared},
		{"dups100", dups},
		{"short", short},
		{"unicode", uni},
	}
}

// hs9SortSeq is the string sort of Sort run on the caller's goroutine only.
func hs9SortSeq(s []string) {
	if len(s) < 2 {
		return
	}
	sortStrings(parCall{pool: Default(), grain: len(s), workers: 1, seq: true}, s)
}

func BenchmarkHostile9SortStrings(b *testing.B) {
	hs9BenchStrings(b, hs9Shapes(benchN(50_000, 20_000)))
}

// BenchmarkHostile9SortStringsLarge: the bad shapes at sizes where the records no longer fit
// in cache.
func BenchmarkHostile9SortStringsLarge(b *testing.B) {
	n := benchN(2_000_000, 200_000)
	hs9BenchStrings(b, []benchInput[string]{
		{"prefixmix/k1-l100-organ", hs9Organ(n, 100)},
		{"prefixmix/k8-l1000", hs9PrefixMix(1, n/2, 8, 1000, 50, 0, false)},
		{"prefixmix/k1000-l200-clone", hs9PrefixMix(2, n/2, 1000, 200, 50, 0, true)},
	})
}

func hs9BenchStrings(b *testing.B, shapes []benchInput[string]) {
	for _, c := range shapes {
		b.Run(fmt.Sprintf("%s/blitz", c.name), func(b *testing.B) { benchSort(b, c.in, true, func(w []string) { Sort(w) }) })
		b.Run(fmt.Sprintf("%s/blitz1", c.name), func(b *testing.B) { benchSort(b, c.in, true, hs9SortSeq) })
		b.Run(fmt.Sprintf("%s/slices", c.name), func(b *testing.B) { benchSort(b, c.in, false, slices.Sort[[]string]) })
	}
}
