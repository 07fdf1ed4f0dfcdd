package blitz

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

const benchFibN = 30

// fibForks is the number of forks of fib(n) with a fork at every call: one per call
// with n >= 2, which is fib(n+1) - 1.
func fibForks(n int) float64 { return float64(fibSeq(n+1) - 1) }

func fibGoroutine(n int) int {
	if n < 2 {
		return n
	}
	var wg sync.WaitGroup
	var a int
	wg.Add(1)
	go func() { defer wg.Done(); a = fibGoroutine(n - 1) }()
	b := fibGoroutine(n - 2)
	wg.Wait()
	return a + b
}

// onWorker runs f on a pool worker (not on the calling goroutine as Call would), so
// exactly NumWorkers goroutines compute.
func onWorker(p *Pool, f func(t *Task)) {
	done := make(chan struct{})
	p.Go(func(t *Task) { f(t); close(done) })
	<-done
}

// inPool runs the benchmark loop inside one job on a worker of a fresh pool: exactly
// `workers` goroutines compute and the loop allocates nothing.
func inPool(b *testing.B, workers int, body func(t *Task)) {
	p := newPool(b, Config{Workers: workers})
	b.ReportAllocs()
	onWorker(p, func(t *Task) {
		for b.Loop() {
			body(t)
		}
	})
}

func BenchmarkFibSeq(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		fibSeq(benchFibN)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fibForks(benchFibN), "ns/fork")
}

// BenchmarkFibJoin forks at every call of fib(30). The main figures use the
// Future.Stolen idiom; the join=Join sub-benchmarks use Future.Join.
func BenchmarkFibJoin(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			inPool(b, w, func(t *Task) { fibS(t, benchFibN) })
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fibForks(benchFibN), "ns/fork")
		})
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d/join=Join", w), func(b *testing.B) {
			inPool(b, w, func(t *Task) { fib(t, benchFibN) })
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fibForks(benchFibN), "ns/fork")
		})
	}
}

// BenchmarkFibIdeal2 is what two cores give right now, as a ceiling for workers=2 on a
// shared machine: two goroutines each compute a whole sequential fib(30) at the same
// time, and the time per fork is the elapsed time over both computations' forks.
func BenchmarkFibIdeal2(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); runtime.KeepAlive(fibSeq(benchFibN)) }()
		runtime.KeepAlive(fibSeq(benchFibN))
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*fibForks(benchFibN)), "ns/fork")
}

func BenchmarkFibGoroutine(b *testing.B) {
	n := benchFibN
	if testing.Short() {
		n = 22
	}
	b.ReportAllocs()
	for b.Loop() {
		fibGoroutine(n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fibForks(n), "ns/fork")
}

func BenchmarkTreeSum(b *testing.B) {
	sizes := []int{1023, 1 << 24}
	if testing.Short() {
		sizes = []int{1023, 1 << 18}
	}
	for _, n := range sizes {
		v := 0
		tree := buildTree(n, 0.5, &v)
		b.Run(fmt.Sprintf("nodes=%d/seq", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sumSeq(tree)
			}
		})
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("nodes=%d/workers=%d", n, w), func(b *testing.B) {
				inPool(b, w, func(t *Task) { sumParS(t, tree) })
			})
		}
	}
}

var emptyJob Job[int, Unit]

func emptyTree(t *Task, depth int) Unit {
	if depth == 0 {
		return Unit{}
	}
	f := emptyJob.Fork(t, emptyTree, depth-1)
	emptyTree(t, depth-1)
	if _, ok := f.Stolen(t); !ok {
		emptyTree(t, depth-1)
	}
	return Unit{}
}

func BenchmarkJoinEmptyDepth20(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			inPool(b, w, func(t *Task) { emptyTree(t, 20) })
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(1<<20-1), "ns/join")
		})
	}
}

func BenchmarkCallFromOutside(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		p := newPool(b, Config{Workers: 2})
		time.Sleep(10 * time.Millisecond) // let the workers fall asleep
		b.ReportAllocs()
		for b.Loop() {
			p.Call(func(*Task) {})
		}
	})
	b.Run("busy", func(b *testing.B) { benchCallBusy(b, 2) })
	b.Run("idle/Go", func(b *testing.B) {
		p := newPool(b, Config{Workers: 2})
		b.ReportAllocs()
		for b.Loop() {
			onWorker(p, func(*Task) {})
		}
	})
}
