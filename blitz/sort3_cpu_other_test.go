//go:build !unix

package blitz

import "time"

// processCPU is not measured outside Unix: the cpu-ms/op metric of the sort benchmarks
// then reads 0.
func processCPU() time.Duration { return 0 }
