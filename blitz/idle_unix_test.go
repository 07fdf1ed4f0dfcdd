//go:build unix

package blitz

import (
	"syscall"
	"testing"
	"time"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleCPU reports the CPU time (getrusage) the process uses in the second after
// a burst of work on a default-sized pool, in percent of one core. Target: at most 2%.
func BenchmarkIdleCPU(b *testing.B) {
	b.ReportAllocs()
	var pct float64
	for b.Loop() {
		p, err := NewPool(Config{})
		if err != nil {
			b.Fatal(err)
		}
		for range 20 {
			Call(p, func(t *Task) int { return fibS(t, 22) })
		}
		c0, t0 := processCPU(), time.Now()
		time.Sleep(time.Second)
		pct = 100 * float64(processCPU()-c0) / float64(time.Since(t0))
		p.Close()
	}
	b.ReportMetric(pct, "%core")
}
