package lockfree

import (
	"sync"
	"testing"
)

func pack(sleeping, inactive, jec uint32) uint64 {
	return uint64(sleeping) | uint64(inactive)<<inactiveShift | uint64(jec)<<jecShift
}

func TestAtomicCountersPacking(t *testing.T) {
	v := pack(0xABCD, 0x1234, 0xDEADBEEF)
	if ExtractSleeping(v) != 0xABCD || ExtractInactive(v) != 0x1234 || ExtractJEC(v) != 0xDEADBEEF {
		t.Fatalf("extract(%#x) = %#x, %#x, %#x", v, ExtractSleeping(v), ExtractInactive(v), ExtractJEC(v))
	}
	var c AtomicCounters
	for range 3 {
		c.AddInactive()
	}
	for range 2 {
		if !c.TryAddSleeping(c.Load()) {
			t.Fatal("TryAddSleeping with the current value failed")
		}
	}
	if got, want := c.Load(), pack(2, 3, 0); got != want {
		t.Fatalf("counters = %#x, want %#x", got, want)
	}
	if s := c.String(); s != "sleeping=2 inactive=3 jec=0" {
		t.Fatalf("String = %q", s)
	}
	stale := c.Load()
	c.IncrementJECIfSleepy()
	if c.TryAddSleeping(stale) {
		t.Fatal("TryAddSleeping succeeded with a value from before a JEC change")
	}
	c.SubSleeping()
	if got, want := c.Load(), pack(1, 3, 1); got != want {
		t.Fatalf("after SubSleeping: %#x, want %#x", got, want)
	}
}

func TestAtomicCountersJEC(t *testing.T) {
	var c AtomicCounters
	if old := c.IncrementJECIfSleepy(); ExtractJEC(old) != 0 || ExtractJEC(c.Load()) != 1 {
		t.Fatalf("even->odd: returned JEC %d, now %d", ExtractJEC(old), ExtractJEC(c.Load()))
	}
	if old := c.IncrementJECIfSleepy(); ExtractJEC(old) != 1 || ExtractJEC(c.Load()) != 1 {
		t.Fatal("IncrementJECIfSleepy changed an odd JEC")
	}
	if old := c.IncrementJECIfActive(); ExtractJEC(old) != 1 || ExtractJEC(c.Load()) != 2 {
		t.Fatal("IncrementJECIfActive did not move odd to even")
	}
	if c.IncrementJECIfActive(); ExtractJEC(c.Load()) != 2 {
		t.Fatal("IncrementJECIfActive changed an even JEC")
	}

	// Wrap at 2^32: the JEC is the top field, so it wraps to 0 without disturbing the
	// counts below it.
	c.value.Store(pack(5, 7, 0xFFFFFFFE))
	c.IncrementJECIfSleepy()
	if got, want := c.Load(), pack(5, 7, 0xFFFFFFFF); got != want {
		t.Fatalf("to 2^32-1: %#x, want %#x", got, want)
	}
	if old := c.IncrementJECIfActive(); old != pack(5, 7, 0xFFFFFFFF) {
		t.Fatalf("IncrementJECIfActive returned %#x", old)
	}
	if got, want := c.Load(), pack(5, 7, 0); got != want {
		t.Fatalf("after the wrap: %#x, want %#x", got, want)
	}
}

func TestAtomicCountersSubInactive(t *testing.T) {
	for sleeping, want := range []uint32{0, 1, 2, 2, 2} {
		var c AtomicCounters
		c.value.Store(pack(uint32(sleeping), 6, 3))
		if got := c.SubInactive(); got != want {
			t.Errorf("sleeping=%d: SubInactive = %d, want %d", sleeping, got, want)
		}
		if got := c.Load(); got != pack(uint32(sleeping), 5, 3) {
			t.Errorf("sleeping=%d: counters %#x after SubInactive", sleeping, got)
		}
	}
}

// TestAtomicCountersMisuse: under- and overflows panic naming the rule and leave the
// other fields intact.
func TestAtomicCountersMisuse(t *testing.T) {
	var c AtomicCounters
	c.value.Store(pack(0, 0, 9))
	mustPanic(t, "SubSleeping: sleeping count is already zero", c.SubSleeping)
	mustPanic(t, "SubInactive: inactive count is already zero", func() { c.SubInactive() })
	if got := c.Load(); got != pack(0, 0, 9) {
		t.Fatalf("counters %#x after the failed subtractions, want %#x", got, pack(0, 0, 9))
	}
	c.value.Store(pack(MaxCountedWorkers, MaxCountedWorkers, 9))
	mustPanic(t, "AddInactive: inactive count would overflow", c.AddInactive)
	mustPanic(t, "TryAddSleeping: sleeping count would overflow", func() { c.TryAddSleeping(c.Load()) })
	if got := c.Load(); got != pack(MaxCountedWorkers, MaxCountedWorkers, 9) {
		t.Fatalf("counters %#x after the failed additions", got)
	}
}

// TestAtomicCountersConcurrent: balanced updates from many goroutines leave the counts
// at zero, and every JEC change moved it by exactly one.
func TestAtomicCountersConcurrent(t *testing.T) {
	var c AtomicCounters
	const goroutines = 8
	per := scale(20_000)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				c.AddInactive()
				for !c.TryAddSleeping(c.Load()) {
				}
				if g%2 == 0 {
					c.IncrementJECIfSleepy()
				} else {
					c.IncrementJECIfActive()
				}
				c.SubSleeping()
				if n := c.SubInactive(); n > 2 {
					t.Errorf("SubInactive = %d", n)
				}
				_ = i
			}
		}()
	}
	wg.Wait()
	if v := c.Load(); ExtractSleeping(v) != 0 || ExtractInactive(v) != 0 {
		t.Fatalf("counters %s after balanced updates", c.String())
	}
}
