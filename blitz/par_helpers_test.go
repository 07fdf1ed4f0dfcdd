package blitz

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// parTestGrain is the explicit grain used with small inputs, so that sizes around it
// exercise the sequential path, one split and many splits.
const parTestGrain = 64

// parSizes are the input sizes every function is tested with: empty, one element, around
// the grain, and several grains.
var parSizes = []int{0, 1, parTestGrain - 1, parTestGrain, parTestGrain + 1, 1000, 4099}

// parCase is one configuration a function is tested under.
type parCase struct {
	name string
	opts []Option
}

// parCases returns the configurations: pools of 1, 2 and 4 workers with the small test
// grain, plus the default pool with the automatic grain. The pools are closed when the test
// ends.
func parCases(t *testing.T) []parCase {
	t.Helper()
	cases := []parCase{{"default/auto", nil}}
	for _, w := range []int{1, 2, 4} {
		p, err := NewPool(Config{Workers: w})
		if err != nil {
			t.Fatalf("NewPool(%d workers): %v", w, err)
		}
		t.Cleanup(p.Close)
		cases = append(cases, parCase{fmt.Sprintf("w%d/g%d", w, parTestGrain), []Option{WithPool(p), WithGrain(parTestGrain)}})
	}
	return cases
}

// parLarge is the extra size run with the automatic grain: large enough that even the
// built-in leaves (minimum grain parMinGrainCheap) split.
const parLarge = 3*parMinGrainCheap + 5

// forCases runs body for every configuration and size, as subtests.
func forCases(t *testing.T, body func(t *testing.T, n int, opts []Option)) {
	for _, c := range parCases(t) {
		sizes := parSizes
		if c.opts == nil {
			sizes = append(slices.Clip(sizes), parLarge)
		}
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n%d", c.name, n), func(t *testing.T) { body(t, n, c.opts) })
		}
	}
}

func randInts(seed uint64, n int, max int64) []int64 {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	s := make([]int64, n)
	for i := range s {
		s[i] = r.Int64N(2*max+1) - max
	}
	return s
}

// mustPanic runs f and returns the panic value's message, failing if f does not panic.
// A *PanicError is unwrapped to its value.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("did not panic")
		}
		var pe *PanicError
		if err, ok := r.(error); ok && errors.As(err, &pe) {
			r = pe.Value
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	if msg := mustPanic(t, f); !strings.Contains(msg, want) {
		t.Fatalf("panic %q, want it to contain %q", msg, want)
	}
}
