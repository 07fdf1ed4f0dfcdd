package lockfree

import "math/bits"

// XorShift64Star is the xorshift64* pseudo-random generator (Vigna, 2016): 8 bytes of
// state, a few cycles per number, good enough statistical quality to pick steal victims.
// It is not safe for concurrent use: give each worker its own. It is not cryptographic.
type XorShift64Star struct {
	state uint64
}

// NewXorShift64Star returns a generator whose initial state is init. The state must
// never be zero (zero maps to zero forever), so a zero init is replaced by a fixed
// non-zero constant.
func NewXorShift64Star(init uint64) XorShift64Star {
	if init == 0 {
		init = 0x9E3779B97F4A7C15 // 2^64 / golden ratio
	}
	return XorShift64Star{state: init}
}

// Next returns the next 64-bit pseudo-random number. A zero-value generator starts
// on first use as NewXorShift64Star(0) would be.
func (r *XorShift64Star) Next() uint64 {
	x := r.state
	if x == 0 {
		x = 0x9E3779B97F4A7C15
	}
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	r.state = x
	return x * 0x2545F4914F6CDD1D
}

// Intn returns a pseudo-random number in [0, n). It panics if n <= 0.
//
// It maps the 64-bit output onto [0, n) with a multiply-high (Lemire's method) instead
// of a division; the bias is below n/2^64, irrelevant for choosing victims.
func (r *XorShift64Star) Intn(n int) int {
	if n <= 0 {
		panic("lockfree: XorShift64Star.Intn: n must be positive")
	}
	hi, _ := bits.Mul64(r.Next(), uint64(n))
	return int(hi)
}
