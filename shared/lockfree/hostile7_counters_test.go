package lockfree

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Hostile review of AtomicCounters: every operation at every field boundary, checked
// against a model of three separate fields, so that an overflow or underflow of one
// field that leaks into its neighbour (a carry or a borrow) is caught.

// h7Counters is the model: three independent fields.
type h7Counters struct {
	sleeping, inactive uint32 // 16 bits each
	jec                uint32
}

func (m h7Counters) packed() uint64 { return pack(m.sleeping, m.inactive, m.jec) }

// h7CountersOp applies op to c and to the model m, checking the result, the panic
// (with its message) when the model says the field would leave its range, and that the
// whole packed word matches the model afterwards.
func h7CountersOp(t *testing.T, c *AtomicCounters, m *h7Counters, stale uint64, op byte) {
	t.Helper()
	before := *m
	expectPanic := func(want string, f func()) {
		t.Helper()
		mustPanic(t, want, f)
	}
	switch op % 8 {
	case 0: // TryAddSleeping with the current value
		if m.sleeping == MaxCountedWorkers {
			expectPanic("TryAddSleeping: sleeping count would overflow", func() { c.TryAddSleeping(c.Load()) })
			break
		}
		if !c.TryAddSleeping(c.Load()) {
			t.Fatalf("%+v: TryAddSleeping with the current value failed", before)
		}
		m.sleeping++
	case 1: // TryAddSleeping with a value from before the last operation
		switch {
		case ExtractSleeping(stale) == MaxCountedWorkers:
			// Documented: the check is on expected, stale or not.
			expectPanic("sleeping count would overflow", func() { c.TryAddSleeping(stale) })
		case stale != m.packed():
			if c.TryAddSleeping(stale) {
				t.Fatalf("%+v: TryAddSleeping succeeded with a stale value %#x", before, stale)
			}
		default:
			if !c.TryAddSleeping(stale) {
				t.Fatalf("%+v: TryAddSleeping with an unchanged value failed", before)
			}
			m.sleeping++
		}
	case 2:
		if m.sleeping == 0 {
			expectPanic("SubSleeping: sleeping count is already zero", c.SubSleeping)
			break
		}
		c.SubSleeping()
		m.sleeping--
	case 3:
		if m.inactive == MaxCountedWorkers {
			expectPanic("AddInactive: inactive count would overflow", c.AddInactive)
			break
		}
		c.AddInactive()
		m.inactive++
	case 4:
		if m.inactive == 0 {
			expectPanic("SubInactive: inactive count is already zero", func() { c.SubInactive() })
			break
		}
		if got, want := c.SubInactive(), min(m.sleeping, 2); got != want {
			t.Fatalf("%+v: SubInactive = %d, want %d", before, got, want)
		}
		m.inactive--
	case 5:
		if old := c.IncrementJECIfSleepy(); old != before.packed() {
			t.Fatalf("%+v: IncrementJECIfSleepy returned %#x, want the value before, %#x", before, old, before.packed())
		}
		if m.jec%2 == 0 {
			m.jec++ // wraps at 2^32 without a carry: the JEC is the top field
		}
	case 6:
		if old := c.IncrementJECIfActive(); old != before.packed() {
			t.Fatalf("%+v: IncrementJECIfActive returned %#x, want %#x", before, old, before.packed())
		}
		if m.jec%2 == 1 {
			m.jec++
		}
	case 7:
		if got, want := c.String(), fmt.Sprintf("sleeping=%d inactive=%d jec=%d", m.sleeping, m.inactive, m.jec); got != want {
			t.Fatalf("String = %q, want %q", got, want)
		}
	}
	if got := c.Load(); got != m.packed() {
		t.Fatalf("from %+v, op %d: counters %#x (sleeping=%d inactive=%d jec=%d), model %+v",
			before, op%8, got, ExtractSleeping(got), ExtractInactive(got), ExtractJEC(got), *m)
	}
}

// h7RunCounters starts the counters at the given fields and applies ops.
func h7RunCounters(t *testing.T, sleeping, inactive uint16, jec uint32, ops []byte) {
	t.Helper()
	var c AtomicCounters
	m := h7Counters{uint32(sleeping), uint32(inactive), jec}
	c.value.Store(m.packed())
	stale := m.packed()
	for _, op := range ops {
		prev := c.Load()
		h7CountersOp(t, &c, &m, stale, op)
		stale = prev
	}
}

// TestHostile7CountersBoundaries runs every operation, twice in a row, from every
// combination of boundary values of the three fields (0, 1, max-1, max): an add at max
// and a subtraction at 0 must panic and leave all three fields as they were, and the
// JEC must wrap at 2^32 without touching the counts.
func TestHostile7CountersBoundaries(t *testing.T) {
	counts := []uint16{0, 1, MaxCountedWorkers - 1, MaxCountedWorkers}
	jecs := []uint32{0, 1, 1<<32 - 2, 1<<32 - 1}
	for _, s := range counts {
		for _, i := range counts {
			for _, j := range jecs {
				for op := byte(0); op < 8; op++ {
					h7RunCounters(t, s, i, j, []byte{op, op})
				}
			}
		}
	}
}

// FuzzHostile7AtomicCounters checks long operation sequences, from fuzzed start fields,
// against the three-field model.
func FuzzHostile7AtomicCounters(f *testing.F) {
	f.Add(uint16(0), uint16(0), uint32(0), []byte{3, 0, 5, 1, 2, 6, 4, 7})
	f.Add(uint16(MaxCountedWorkers), uint16(0), uint32(1<<32-1), []byte{0, 2, 0, 4, 3, 5, 6, 5, 6})
	f.Add(uint16(0), uint16(MaxCountedWorkers), uint32(1<<32-2), []byte{2, 3, 4, 3, 5, 6, 5, 1, 7})
	f.Add(uint16(MaxCountedWorkers-1), uint16(1), uint32(7), []byte{0, 0, 1, 4, 4, 2, 2, 2})
	f.Fuzz(h7RunCounters)
}

// TestHostile7CountersConcurrentModel: goroutines go through the sleep protocol's
// life cycle (AddInactive, TryAddSleeping, SubSleeping, SubInactive), toggling the JEC
// in between. Every snapshot must satisfy sleeping <= inactive <= goroutines (each
// goroutine's own contribution does), and the final JEC must equal the number of
// toggle calls that reported a changed JEC (their return value has the other parity).
func TestHostile7CountersConcurrentModel(t *testing.T) {
	const goroutines = 12
	per := scale(20_000)
	var c AtomicCounters
	var toggles atomic.Int64
	var wg sync.WaitGroup
	var bad atomic.Value
	check := func(v uint64) {
		s, i := ExtractSleeping(v), ExtractInactive(v)
		if s > i || i > goroutines {
			bad.Store(fmt.Sprintf("snapshot sleeping=%d inactive=%d jec=%d", s, i, ExtractJEC(v)))
		}
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := NewXorShift64Star(uint64(g) + 1)
			toggle := func() {
				if rng.Intn(2) == 0 {
					if ExtractJEC(c.IncrementJECIfSleepy())%2 == 0 {
						toggles.Add(1)
					}
				} else if ExtractJEC(c.IncrementJECIfActive())%2 == 1 {
					toggles.Add(1)
				}
			}
			for range per {
				c.AddInactive()
				check(c.Load())
				toggle()
				for !c.TryAddSleeping(c.Load()) {
				}
				check(c.Load())
				toggle()
				c.SubSleeping()
				if n := c.SubInactive(); n > 2 {
					bad.Store(fmt.Sprintf("SubInactive = %d", n))
				}
				check(c.Load())
			}
		}()
	}
	h7WaitAll(t, &wg, "counter goroutines")
	if b := bad.Load(); b != nil {
		t.Fatal(b)
	}
	v := c.Load()
	if ExtractSleeping(v) != 0 || ExtractInactive(v) != 0 || int64(ExtractJEC(v)) != toggles.Load() {
		t.Fatalf("final %s; want zero counts and jec=%d (the successful toggles)", c.String(), toggles.Load())
	}
}
