// Package stress holds cross-module stress, soak and fault suites for blitz, blitzio and
// shared/lockfree. The suites are tests; this package has no API.
package stress
