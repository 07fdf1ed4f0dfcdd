package blitz

import (
	"sync"
	"testing"
)

// BenchmarkPool2Call adds two cases to BenchmarkCallFromOutside (idle and busy with two
// workers are measured there): the round trip of an empty Pool.Call from outside a
// one-worker pool whose worker forks without pause (busy1), and many goroutines calling
// at once (parallel), where their claims of guest slots contend.
func BenchmarkPool2Call(b *testing.B) {
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
