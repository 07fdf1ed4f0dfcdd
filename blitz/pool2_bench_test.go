package blitz

import (
	"sync"
	"testing"
	"time"
)

// BenchmarkPool2Call is the round trip of an empty Pool.Call from outside the pool:
// with the workers asleep (idle), and with every worker busy forking (busy), where the
// workers' scans of the busy guests contend with the caller's claim of one.
func BenchmarkPool2Call(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		p := newPool(b, Config{Workers: 2})
		time.Sleep(10 * time.Millisecond) // let the workers fall asleep
		b.ReportAllocs()
		for b.Loop() {
			p.Call(func(*Task) {})
		}
	})
	b.Run("busy", func(b *testing.B) { benchCallBusy(b, 2) })
	b.Run("busy1", func(b *testing.B) { benchCallBusy(b, 1) })
	b.Run("parallel", func(b *testing.B) {
		// Many goroutines calling at once: the guest claim under contention.
		p := newPool(b, Config{Workers: 2})
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Call(func(*Task) {})
			}
		})
	})
}

// benchCallBusy measures empty Calls while every one of the pool's workers runs a Go
// job that forks without pause (fib), so the workers' searches for work run all the
// time beside the caller's claims of a guest.
func benchCallBusy(b *testing.B, workers int) {
	p := newPool(b, Config{Workers: workers})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range p.NumWorkers() {
		wg.Add(1)
		p.Go(func(t *Task) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					fib(t, 15)
				}
			}
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Call(func(*Task) {})
	}
	close(stop)
	wg.Wait()
}
