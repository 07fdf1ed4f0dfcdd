// Package benchmarks holds side-by-side measurements of blitz, blitzio and
// shared/lockfree against the alternatives a Go programmer would pick, and the suites
// that the blitzbench command runs.
package benchmarks
