//go:build !unix

package benchmarks

import "time"

// processCPU reports false where getrusage does not exist; callers fall back to
// runtime/metrics.
func processCPU() (time.Duration, bool) { return 0, false }
