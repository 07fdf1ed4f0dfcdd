//go:build !race

package lockfree

// raceEnabled is true when the race detector is on; stress tests shrink their sizes,
// because the detector slows atomics down about tenfold.
const raceEnabled = false
