package lockfree

import (
	"math"
	"testing"
	"unsafe"
)

func TestXorShift64Star(t *testing.T) {
	zero := NewXorShift64Star(0)
	var zeroValue XorShift64Star
	other := NewXorShift64Star(0x9E3779B97F4A7C15)
	for i := range 100 {
		a, b, c := zero.Next(), zeroValue.Next(), other.Next()
		if a == 0 || a != b || a != c {
			t.Fatalf("step %d: zero seed %#x, zero value %#x, golden seed %#x: want equal and non-zero", i, a, b, c)
		}
	}
	r1, r2 := NewXorShift64Star(42), NewXorShift64Star(42)
	for range 100 {
		if r1.Next() != r2.Next() {
			t.Fatal("same seed, different sequences")
		}
	}
	for _, n := range []int{1, 2, 3, 7, 1000, 1 << 30, math.MaxInt} {
		seen := map[int]bool{}
		for range 2000 {
			v := r1.Intn(n)
			if v < 0 || v >= n {
				t.Fatalf("Intn(%d) = %d", n, v)
			}
			seen[v] = true
		}
		if n <= 7 && len(seen) != n {
			t.Errorf("Intn(%d) produced only %d distinct values in 2000 draws", n, len(seen))
		}
	}
	mustPanic(t, "Intn: n must be positive", func() { r1.Intn(0) })
	mustPanic(t, "Intn: n must be positive", func() { r1.Intn(-5) })
}

func TestSpinWait(t *testing.T) {
	var s SpinWait
	for i := 0; i <= yieldLimit; i++ {
		if s.IsCompleted() {
			t.Fatalf("completed after %d snoozes", i)
		}
		s.Snooze()
	}
	if !s.IsCompleted() {
		t.Fatal("not completed after the yield limit")
	}
	s.Snooze() // keeps yielding, never blocks
	s.Reset()
	if s.IsCompleted() {
		t.Fatal("completed after Reset")
	}
	for range 20 {
		s.Spin() // capped: returns quickly however often it is called
	}
	if s.step != spinLimit+1 {
		t.Fatalf("Spin advanced to step %d, want the cap %d", s.step, spinLimit+1)
	}
}

func TestPadding(t *testing.T) {
	for name, size := range map[string]uintptr{
		"CachePad":     unsafe.Sizeof(CachePad{}),
		"PaddedInt64":  unsafe.Sizeof(PaddedInt64{}),
		"PaddedUint64": unsafe.Sizeof(PaddedUint64{}),
		"PaddedUint32": unsafe.Sizeof(PaddedUint32{}),
		"PaddedBool":   unsafe.Sizeof(PaddedBool{}),
	} {
		if size != CacheLineSize {
			t.Errorf("%s is %d bytes, want %d", name, size, CacheLineSize)
		}
	}
	var p PaddedInt64
	p.Store(3)
	if p.Add(2) != 5 {
		t.Fatal("PaddedInt64 does not behave as an atomic.Int64")
	}
}
