package tsync

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"golang.org/x/sync/semaphore"
)

// The benchmarks of the primitives, each beside its Go baseline in the same run. The
// blitzbench suite "sync" (benchmarks/suite_sync.go) runs the same bodies.

func benchRT(b *testing.B, workers int) *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// BenchmarkMutexUncontended: one lock and unlock with nobody else around. The future is
// polled with a hand-made Context and reused (Reset), as a task's state machine holding a
// LockFuture does; TryLock is the try-form; sync.Mutex is the baseline.
func BenchmarkMutexUncontended(b *testing.B) {
	b.Run("tsync.Mutex/future", func(b *testing.B) {
		var m Mutex
		cx := blitzio.NewContext(nil, blitzio.Waker{})
		f := m.LockAsync()
		b.ReportAllocs()
		for b.Loop() {
			f.Reset()
			g, _ := f.Poll(cx)
			g.Unlock()
		}
	})
	b.Run("tsync.Mutex/TryLock", func(b *testing.B) {
		var m Mutex
		b.ReportAllocs()
		for b.Loop() {
			g, _ := m.TryLock()
			g.Unlock()
		}
	})
	b.Run("sync.Mutex", func(b *testing.B) {
		var m sync.Mutex
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			m.Lock()
			n++
			m.Unlock()
		}
		runtime.KeepAlive(n)
	})
}

const (
	benchContenders = 8
	benchLocksPer   = 1000
)

// mutexContender locks m n times with one reused future, incrementing a shared counter.
type mutexContender struct {
	m       *Mutex
	f       LockFuture
	n       int
	counter *int
}

func (c *mutexContender) Poll(cx *blitzio.Context) (struct{}, bool) {
	for c.n > 0 {
		g, ok := c.f.Poll(cx)
		if !ok {
			return struct{}{}, false
		}
		*c.counter++
		c.n--
		g.UnlockFrom(cx)
		c.f.Reset()
	}
	return struct{}{}, true
}

// BenchmarkMutexContended: 8 tasks on 2 workers each take one Mutex 1,000 times, against
// 8 goroutines on a sync.Mutex doing the same. ns/op is per lock.
func BenchmarkMutexContended(b *testing.B) {
	b.Run("tsync.Mutex/8tasks-2workers", func(b *testing.B) {
		rt := benchRT(b, 2)
		var m Mutex
		counter := 0
		cs := make([]mutexContender, benchContenders)
		hs := make([]blitzio.JoinHandle[struct{}], benchContenders)
		b.ReportAllocs()
		for b.Loop() {
			for i := range cs {
				cs[i] = mutexContender{m: &m, f: LockFuture{m: &m}, n: benchLocksPer, counter: &counter}
				hs[i] = blitzio.Spawn(rt, &cs[i])
			}
			for _, h := range hs {
				h.Wait()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchContenders*benchLocksPer), "ns/lock")
	})
	b.Run("sync.Mutex/8goroutines", func(b *testing.B) {
		var m sync.Mutex
		counter := 0
		var wg sync.WaitGroup
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(benchContenders)
			for range benchContenders {
				go func() {
					defer wg.Done()
					for range benchLocksPer {
						m.Lock()
						counter++
						m.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchContenders*benchLocksPer), "ns/lock")
	})
}

// semContender acquires one permit n times with one reused future.
type semContender struct {
	f AcquireFuture
	n int
}

func (c *semContender) Poll(cx *blitzio.Context) (struct{}, bool) {
	for c.n > 0 {
		r, ok := c.f.Poll(cx)
		if !ok {
			return struct{}{}, false
		}
		c.n--
		r.Value.ReleaseFrom(cx)
		c.f.Reset()
	}
	return struct{}{}, true
}

// BenchmarkSemaphore: 8 tasks on 2 workers share 2 permits, each acquiring and releasing
// one 1,000 times, beside 8 goroutines on golang.org/x/sync/semaphore.Weighted(2).
func BenchmarkSemaphore(b *testing.B) {
	b.Run("tsync.Semaphore/8tasks-2workers", func(b *testing.B) {
		rt := benchRT(b, 2)
		s := NewSemaphore(2)
		cs := make([]semContender, benchContenders)
		hs := make([]blitzio.JoinHandle[struct{}], benchContenders)
		b.ReportAllocs()
		for b.Loop() {
			for i := range cs {
				cs[i] = semContender{n: benchLocksPer}
				cs[i].f.s, cs[i].f.w.want = s, 1
				hs[i] = blitzio.Spawn(rt, &cs[i])
			}
			for _, h := range hs {
				h.Wait()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchContenders*benchLocksPer), "ns/acquire")
	})
	b.Run("x/sync/semaphore/8goroutines", func(b *testing.B) {
		s := semaphore.NewWeighted(2)
		ctx := context.Background()
		var wg sync.WaitGroup
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(benchContenders)
			for range benchContenders {
				go func() {
					defer wg.Done()
					for range benchLocksPer {
						if err := s.Acquire(ctx, 1); err != nil {
							panic(err)
						}
						s.Release(1)
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchContenders*benchLocksPer), "ns/acquire")
	})
}

const (
	benchParties = 4
	benchGens    = 1000
)

// barrierParty waits on a barrier n times with one reused future.
type barrierParty struct {
	b *Barrier
	f BarrierFuture
	n int
}

func (p *barrierParty) Poll(cx *blitzio.Context) (struct{}, bool) {
	for p.n > 0 {
		if _, ok := p.f.Poll(cx); !ok {
			return struct{}{}, false
		}
		p.n--
		p.f.Reset()
	}
	return struct{}{}, true
}

// chanBarrier is the goroutine baseline: a mutex-counted barrier whose generations are
// released by closing a channel, the usual way to write one in Go.
type chanBarrier struct {
	mu      sync.Mutex
	n, seen int
	release chan struct{}
}

func (c *chanBarrier) wait() {
	c.mu.Lock()
	c.seen++
	if c.seen == c.n {
		close(c.release)
		c.release, c.seen = make(chan struct{}), 0
		c.mu.Unlock()
		return
	}
	ch := c.release
	c.mu.Unlock()
	<-ch
}

// BenchmarkBarrier: 4 parties go through 1,000 generations of one barrier: 4 tasks on 2
// workers beside 4 goroutines on a channel barrier. ns/op is per generation.
func BenchmarkBarrier(b *testing.B) {
	b.Run("tsync.Barrier/4tasks-2workers", func(b *testing.B) {
		rt := benchRT(b, 2)
		bar := NewBarrier(benchParties)
		ps := make([]barrierParty, benchParties)
		hs := make([]blitzio.JoinHandle[struct{}], benchParties)
		b.ReportAllocs()
		for b.Loop() {
			for i := range ps {
				ps[i] = barrierParty{b: bar, f: BarrierFuture{b: bar}, n: benchGens}
				hs[i] = blitzio.Spawn(rt, &ps[i])
			}
			for _, h := range hs {
				h.Wait()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchGens), "ns/generation")
	})
	b.Run("chan-barrier/4goroutines", func(b *testing.B) {
		bar := &chanBarrier{n: benchParties, release: make(chan struct{})}
		var wg sync.WaitGroup
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(benchParties)
			for range benchParties {
				go func() {
					defer wg.Done()
					for range benchGens {
						bar.wait()
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchGens), "ns/generation")
	})
}

func benchMemInUse() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64() + s[1].Value.Uint64())
}

// notifyWaitingTaskBytes spawns n tasks that each wait on one Notify and returns the heap
// and stack in use per task once all are queued, then releases them.
func notifyWaitingTaskBytes(n int) float64 {
	defer debug.FreeOSMemory()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	var note Notify
	hs := make([]blitzio.JoinHandle[struct{}], n)
	before := benchMemInUse()
	for i := range hs {
		hs[i] = blitzio.Spawn(rt, note.Notified())
	}
	for {
		note.mu.Lock()
		queued := note.waiters.n
		note.mu.Unlock()
		if queued == n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	after := benchMemInUse()
	note.NotifyWaiters()
	for _, h := range hs {
		h.Wait()
	}
	return (after - before) / float64(n)
}

// BenchmarkNotifyWaitingTaskMemory: heap and stack per task of 1,000,000 tasks waiting on
// one Notify (the target is <= 320 B), beside goroutines blocked on one channel.
func BenchmarkNotifyWaitingTaskMemory(b *testing.B) {
	const n = 1_000_000
	b.Run("tsync.Notify/tasks", func(b *testing.B) {
		var per float64
		for b.Loop() {
			per = notifyWaitingTaskBytes(n)
		}
		b.ReportMetric(per, "bytes/task")
	})
	b.Run("chan/goroutines", func(b *testing.B) {
		var per float64
		for b.Loop() {
			per = goroutineWaitingBytes(n)
		}
		b.ReportMetric(per, "bytes/task")
	})
}

func goroutineWaitingBytes(n int) float64 {
	defer debug.FreeOSMemory()
	release := make(chan struct{})
	var started, exited sync.WaitGroup
	var count atomic.Int64
	before := benchMemInUse()
	started.Add(n)
	exited.Add(n)
	for range n {
		go func() {
			started.Done()
			<-release
			count.Add(1)
			exited.Done()
		}()
	}
	started.Wait()
	after := benchMemInUse()
	close(release)
	exited.Wait()
	return (after - before) / float64(n)
}
