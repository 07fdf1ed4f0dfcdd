//go:build linux

package blitzio

import (
	"syscall"
	"testing"
	"time"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleRuntimeCPU measures the process CPU (getrusage) over one second with an
// idle runtime of GOMAXPROCS workers, in percent of one core, beside the same second with
// no runtime. Target: at most 2%.
func BenchmarkIdleRuntimeCPU(b *testing.B) {
	measure := func(b *testing.B, withRuntime bool) {
		var pct float64
		for b.Loop() {
			if withRuntime {
				rt, err := New(Config{})
				if err != nil {
					b.Fatal(err)
				}
				BlockOn(rt, Sleep(10*time.Millisecond)) // let the workers park
				before := processCPU()
				time.Sleep(time.Second)
				pct = 100 * float64(processCPU()-before) / float64(time.Second)
				rt.Close()
			} else {
				before := processCPU()
				time.Sleep(time.Second)
				pct = 100 * float64(processCPU()-before) / float64(time.Second)
			}
		}
		b.ReportMetric(pct, "%core")
	}
	b.Run("blitzio", func(b *testing.B) { measure(b, true) })
	b.Run("no-runtime", func(b *testing.B) { measure(b, false) })
}
