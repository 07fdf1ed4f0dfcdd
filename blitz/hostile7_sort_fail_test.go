package blitz

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
)

// hs7Outcome is how a call ended: it returned, panicked (with the value), or its goroutine
// was ended by runtime.Goexit.
type hs7Outcome struct {
	returned bool
	panicked any
	goexited bool
}

// hs7Run runs f on a new goroutine (so that a runtime.Goexit ends that goroutine, not the
// test's) and reports how it ended. It fails the test instead of hanging.
func hs7Run(t *testing.T, name string, f func()) (o hs7Outcome) {
	t.Helper()
	runWithWatchdog(t, name, func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			normal := false
			defer func() {
				if !normal {
					if r := recover(); r != nil {
						o.panicked = r
					} else {
						o.goexited = true
					}
				}
			}()
			f()
			normal = true
			o.returned = true
		}()
		<-done
	})
	return o
}

// hs7PoolWorks checks that p still sorts correctly with every kind of sort.
func hs7PoolWorks(t *testing.T, p *Pool, what string) {
	t.Helper()
	in := rand.New(rand.NewPCG(1, 1)).Perm(3 * radixParMin)
	want := slices.Clone(in)
	slices.Sort(want)
	for name, f := range map[string]func([]int){
		"Sort":           func(s []int) { Sort(s, WithPool(p), WithGrain(512)) },
		"SortFunc":       func(s []int) { SortFunc(s, cmp.Compare[int], WithPool(p), WithGrain(512)) },
		"SortStableFunc": func(s []int) { SortStableFunc(s, cmp.Compare[int], WithPool(p), WithGrain(512)) },
		"SortByKey":      func(s []int) { SortByKey(s, func(x int) int { return x }, WithPool(p), WithGrain(512)) },
	} {
		got := slices.Clone(in)
		runWithWatchdog(t, what+": "+name+" afterwards", func() { f(got) })
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %s on the same pool afterwards does not sort", what, name)
		}
	}
}

// TestHostile7SortFailingUserCode makes the comparator (SortFunc on both of its
// algorithms, SortStableFunc) or the key function (SortByKey with numeric and string
// keys, SortStableByKey with records carried or gathered) panic or call runtime.Goexit at
// a random call, on the caller's goroutine or on a pool worker, and checks what each sort
// promises: the failure is not swallowed (a panic or Goexit on the caller's goroutine goes
// on there; one on a worker comes back as a *PanicError, wrapping ErrGoexit for a Goexit);
// the comparison sorts leave s a permutation of its input and the keyed sorts leave it
// unchanged; and the pool sorts normally afterwards.
func TestHostile7SortFailingUserCode(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	sizes := []int{10, 2*stableBlock + 1, 1000, 3 * radixParMin}
	trials := 4
	if testing.Short() || raceEnabled {
		sizes = []int{10, 1000, 2*radixParMin + 1}
		trials = 2
	}
	type big struct {
		k int
		_ [6]int64
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range sizes {
		in := r.Perm(n)
		for _, g := range []int{1, 64, 1 << 30} {
			opts := []Option{WithPool(p), WithGrain(g)}
			for _, how := range []string{"panic", "goexit"} {
				for range trials {
					at := int64(1 + r.IntN(4*n))
					var fired atomic.Bool
					var calls atomic.Int64
					fail := func() {
						if calls.Add(1) == at {
							fired.Store(true)
							if how == "panic" {
								panic("hostile7 boom")
							}
							runtime.Goexit()
						}
					}
					less := func(a, b int) int { fail(); return cmp.Compare(a, b) }
					sorts := []struct {
						name  string
						keyed bool
						run   func(s []int)
					}{
						{"SortFunc", false, func(s []int) { SortFunc(s, less, opts...) }},
						{"SortFunc/merge", false, func(s []int) { withSortFuncPath(1, func() { SortFunc(s, less, opts...) }) }},
						{"SortFunc/pdq", false, func(s []int) { withSortFuncPath(-1, func() { SortFunc(s, less, opts...) }) }},
						{"SortStableFunc", false, func(s []int) { SortStableFunc(s, less, opts...) }},
						{"SortByKey", true, func(s []int) { SortByKey(s, func(x int) int { fail(); return -x }, opts...) }},
						{"SortStableByKey/string", true, func(s []int) {
							SortStableByKey(s, func(x int) string { fail(); return strconv.Itoa(x) }, opts...)
						}},
						{"SortByCachedKey/float", true, func(s []int) {
							SortByCachedKey(s, func(x int) float64 { fail(); return float64(x % 97) }, opts...)
						}},
						{"SortStableByKey/large", true, func(s []int) {
							b := make([]big, len(s))
							for i, x := range s {
								b[i].k = x
							}
							defer func() {
								for i := range b {
									s[i] = b[i].k
								}
							}()
							SortStableByKey(b, func(x big) int32 { fail(); return int32(x.k % 13) }, opts...)
						}},
					}
					for _, sc := range sorts {
						name := fmt.Sprintf("%s/n%d/g%d/%s at call %d", sc.name, n, g, how, at)
						calls.Store(0)
						fired.Store(false)
						got := slices.Clone(in)
						o := hs7Run(t, name, func() { sc.run(got) })
						if !fired.Load() {
							if !o.returned {
								t.Fatalf("%s: no failure injected, yet the sort did not return: %+v", name, o)
							}
							continue
						}
						if o.returned {
							t.Fatalf("%s: the sort returned normally: the failure was swallowed", name)
						}
						if o.panicked != nil {
							err, _ := o.panicked.(error)
							var pe *PanicError
							switch {
							case err != nil && errors.As(err, &pe):
								if how == "goexit" && !errors.Is(err, ErrGoexit) {
									t.Fatalf("%s: a Goexit on a worker came back as %v, not wrapping ErrGoexit", name, err)
								}
								if how == "panic" && pe.Value != "hostile7 boom" {
									t.Fatalf("%s: the panic came back with value %v", name, pe.Value)
								}
							case how == "panic" && o.panicked == "hostile7 boom":
							default:
								t.Fatalf("%s: the failure came back as %v (%T)", name, o.panicked, o.panicked)
							}
						}
						if sc.keyed {
							if !slices.Equal(got, in) {
								t.Fatalf("%s: a keyed sort whose key failed changed s", name)
							}
						} else if !sameMultiset(got, in, identityKey[int]) {
							t.Fatalf("%s: s is not a permutation of its input", name)
						}
					}
				}
			}
		}
		hs7PoolWorks(t, p, fmt.Sprintf("after the failures at n=%d", n))
	}
}
