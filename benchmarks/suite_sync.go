package benchmarks

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/tsync"
	"golang.org/x/sync/semaphore"
)

// The sync suite measures blitzio/tsync's primitives on a 2-worker runtime, each beside
// the goroutine program that does the same with the standard library or x/sync. The
// bodies mirror the Benchmark functions in blitzio/tsync/bench_prims_test.go (benchmarks
// in _test.go files cannot be imported from here); the channel cases come from
// suite_sync_chan.go.

func init() {
	Register(Suite{
		Name:  "sync",
		Title: "blitzio/tsync channels and primitives (2 workers) against Go channels, sync.Mutex, x/sync/semaphore and goroutines",
		Cases: syncCases,
	})
}

func syncCases(cfg Config) []Case {
	return append(syncChanCases(), syncPrimCases(cfg)...)
}

const (
	syncContenders = 8
	syncLocksPer   = 1000
	syncParties    = 4
	syncGens       = 1000
)

// syncPerOp reports the time per inner operation of a body whose every b.Loop iteration
// does ops of them.
func syncPerOp(b *testing.B, ops int, unit string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), unit)
}

// syncLocker locks a tsync.Mutex n times with one reused future.
type syncLocker struct {
	f       *tsync.LockFuture
	n       int
	counter *int
}

func (c *syncLocker) Poll(cx *blitzio.Context) (struct{}, bool) {
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

// syncAcquirer acquires one permit n times with one reused future.
type syncAcquirer struct {
	f *tsync.AcquireFuture
	n int
}

func (c *syncAcquirer) Poll(cx *blitzio.Context) (struct{}, bool) {
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

// syncParty waits on a barrier n times with one reused future.
type syncParty struct {
	f *tsync.BarrierFuture
	n int
}

func (p *syncParty) Poll(cx *blitzio.Context) (struct{}, bool) {
	for p.n > 0 {
		if _, ok := p.f.Poll(cx); !ok {
			return struct{}{}, false
		}
		p.n--
		p.f.Reset()
	}
	return struct{}{}, true
}

// syncChanBarrier is the goroutine baseline for Barrier: a counted barrier whose
// generations are released by closing a channel, the usual way to write one in Go.
type syncChanBarrier struct {
	mu      sync.Mutex
	n, seen int
	release chan struct{}
}

func (c *syncChanBarrier) wait() {
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

// syncCountedNotified waits on a Notify and counts its first poll, so the memory is
// measured once every task is queued.
type syncCountedNotified struct {
	f       *tsync.NotifiedFuture
	started *atomic.Int64
	polled  bool
}

func (c *syncCountedNotified) Poll(cx *blitzio.Context) (struct{}, bool) {
	v, ok := c.f.Poll(cx)
	if !c.polled {
		c.polled = true
		c.started.Add(1)
	}
	return v, ok
}

func (c *syncCountedNotified) Drop() { c.f.Drop() }

// syncNotifyWaitingBytes is the heap and stack in use per task of n tasks waiting on one
// Notify.
func syncNotifyWaitingBytes(n int) float64 {
	defer bioReleaseMemory()
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	var note tsync.Notify
	var started atomic.Int64
	hs := make([]blitzio.JoinHandle[struct{}], n)
	before := bioMemInUse()
	for i := range hs {
		hs[i] = blitzio.Spawn(rt, &syncCountedNotified{f: note.Notified(), started: &started})
	}
	for started.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	after := bioMemInUse()
	note.NotifyWaiters()
	for _, h := range hs {
		h.Wait()
	}
	return (after - before) / float64(n)
}

// syncChanWaitingBytes is the same for goroutines blocked on one channel.
func syncChanWaitingBytes(n int) float64 {
	defer bioReleaseMemory()
	release := make(chan struct{})
	var started, exited sync.WaitGroup
	before := bioMemInUse()
	started.Add(n)
	exited.Add(n)
	for range n {
		go func() {
			started.Done()
			<-release
			exited.Done()
		}()
	}
	started.Wait()
	after := bioMemInUse()
	close(release)
	exited.Wait()
	return (after - before) / float64(n)
}

func syncPrimCases(cfg Config) []Case {
	memTasks := 1_000_000
	if cfg.Quick {
		memTasks = 100_000
	}
	return []Case{
		{
			Name: "MutexUncontended",
			Note: "lock+unlock, nobody else around; the future reused with Reset and polled by hand",
			Ours: Impl{"tsync.Mutex", func(b *testing.B) {
				var m tsync.Mutex
				cx := blitzio.NewContext(nil, blitzio.Waker{})
				f := m.LockAsync()
				b.ReportAllocs()
				for b.Loop() {
					f.Reset()
					g, _ := f.Poll(cx)
					g.Unlock()
				}
			}},
			Baselines: []Impl{
				{"tsync.Mutex.TryLock", func(b *testing.B) {
					var m tsync.Mutex
					b.ReportAllocs()
					for b.Loop() {
						g, _ := m.TryLock()
						g.Unlock()
					}
				}},
				{"sync.Mutex", func(b *testing.B) {
					var m sync.Mutex
					n := 0
					b.ReportAllocs()
					for b.Loop() {
						m.Lock()
						n++
						m.Unlock()
					}
					runtime.KeepAlive(n)
				}},
			},
			Roles:   map[string]Role{"tsync.Mutex.TryLock": RoleVariant},
			Targets: []Target{TimesBetter("sync.Mutex", 0.5)},
		},
		{
			Name:   "MutexContended",
			Metric: "ns/lock",
			Note:   "8 tasks on 2 workers x 1,000 locks of one Mutex, vs 8 goroutines on sync.Mutex (both let a running task or goroutine re-take the lock ahead of a woken waiter); the reference rows are the spawn and join alone, spread over the same 8,000 locks",
			Ours: Impl{"tsync.Mutex/8tasks", func(b *testing.B) {
				rt := bioRuntime(b)
				var m tsync.Mutex
				counter := 0
				cs := make([]syncLocker, syncContenders)
				hs := make([]blitzio.JoinHandle[struct{}], syncContenders)
				for i := range cs {
					cs[i].f = m.LockAsync()
				}
				b.ReportAllocs()
				for b.Loop() {
					for i := range cs {
						cs[i].f.Reset()
						cs[i].n, cs[i].counter = syncLocksPer, &counter
						hs[i] = blitzio.Spawn(rt, &cs[i])
					}
					for _, h := range hs {
						h.Wait()
					}
				}
				syncPerOp(b, syncContenders*syncLocksPer, "ns/lock")
			}},
			Baselines: []Impl{{"sync.Mutex/8goroutines", func(b *testing.B) {
				var m sync.Mutex
				counter := 0
				var wg sync.WaitGroup
				b.ReportAllocs()
				for b.Loop() {
					wg.Add(syncContenders)
					for range syncContenders {
						go func() {
							defer wg.Done()
							for range syncLocksPer {
								m.Lock()
								counter++
								m.Unlock()
							}
						}()
					}
					wg.Wait()
				}
				syncPerOp(b, syncContenders*syncLocksPer, "ns/lock")
			}},
				// The two rows below lock nothing: they are the start-up and join of the 8
				// tasks (8 goroutines) that the rows above include, spread over the same
				// 8,000 locks, so the table shows how much of each figure is the runtime
				// waking its workers and how much is the lock.
				{"blitzio spawn+join of 8 tasks only", func(b *testing.B) {
					rt := bioRuntime(b)
					hs := make([]blitzio.JoinHandle[struct{}], syncContenders)
					b.ReportAllocs()
					for b.Loop() {
						for i := range hs {
							hs[i] = blitzio.Spawn(rt, bioNop{})
						}
						for _, h := range hs {
							h.Wait()
						}
					}
					syncPerOp(b, syncContenders*syncLocksPer, "ns/lock")
				}},
				{"go+wait of 8 goroutines only", func(b *testing.B) {
					var wg sync.WaitGroup
					b.ReportAllocs()
					for b.Loop() {
						wg.Add(syncContenders)
						for range syncContenders {
							go wg.Done()
						}
						wg.Wait()
					}
					syncPerOp(b, syncContenders*syncLocksPer, "ns/lock")
				}},
			},
			Roles: map[string]Role{
				"blitzio spawn+join of 8 tasks only": RoleReference,
				"go+wait of 8 goroutines only":       RoleReference,
			},
			Targets: []Target{TimesBetter("sync.Mutex/8goroutines", 1)},
		},
		{
			Name:   "Semaphore",
			Metric: "ns/acquire",
			Note:   "8 tasks on 2 workers share 2 permits, 1,000 acquire+release each, vs 8 goroutines on x/sync/semaphore.Weighted(2)",
			Ours: Impl{"tsync.Semaphore/8tasks", func(b *testing.B) {
				rt := bioRuntime(b)
				s := tsync.NewSemaphore(2)
				cs := make([]syncAcquirer, syncContenders)
				hs := make([]blitzio.JoinHandle[struct{}], syncContenders)
				for i := range cs {
					cs[i].f = s.AcquireAsync(1)
				}
				b.ReportAllocs()
				for b.Loop() {
					for i := range cs {
						cs[i].f.Reset()
						cs[i].n = syncLocksPer
						hs[i] = blitzio.Spawn(rt, &cs[i])
					}
					for _, h := range hs {
						h.Wait()
					}
				}
				syncPerOp(b, syncContenders*syncLocksPer, "ns/acquire")
			}},
			Baselines: []Impl{{"x/sync/semaphore/8goroutines", func(b *testing.B) {
				s := semaphore.NewWeighted(2)
				ctx := context.Background()
				var wg sync.WaitGroup
				b.ReportAllocs()
				for b.Loop() {
					wg.Add(syncContenders)
					for range syncContenders {
						go func() {
							defer wg.Done()
							for range syncLocksPer {
								if err := s.Acquire(ctx, 1); err != nil {
									panic(err)
								}
								s.Release(1)
							}
						}()
					}
					wg.Wait()
				}
				syncPerOp(b, syncContenders*syncLocksPer, "ns/acquire")
			}}},
		},
		{
			Name:   "Barrier",
			Metric: "ns/generation",
			Note:   "4 parties x 1,000 generations: tasks on 2 workers vs goroutines on a mutex+channel barrier",
			Ours: Impl{"tsync.Barrier/4tasks", func(b *testing.B) {
				rt := bioRuntime(b)
				bar := tsync.NewBarrier(syncParties)
				ps := make([]syncParty, syncParties)
				hs := make([]blitzio.JoinHandle[struct{}], syncParties)
				for i := range ps {
					ps[i].f = bar.WaitAsync()
				}
				b.ReportAllocs()
				for b.Loop() {
					for i := range ps {
						ps[i].f.Reset()
						ps[i].n = syncGens
						hs[i] = blitzio.Spawn(rt, &ps[i])
					}
					for _, h := range hs {
						h.Wait()
					}
				}
				syncPerOp(b, syncGens, "ns/generation")
			}},
			Baselines: []Impl{{"chan-barrier/4goroutines", func(b *testing.B) {
				bar := &syncChanBarrier{n: syncParties, release: make(chan struct{})}
				var wg sync.WaitGroup
				b.ReportAllocs()
				for b.Loop() {
					wg.Add(syncParties)
					for range syncParties {
						go func() {
							defer wg.Done()
							for range syncGens {
								bar.wait()
							}
						}()
					}
					wg.Wait()
				}
				syncPerOp(b, syncGens, "ns/generation")
			}}},
		},
		{
			// Last: a million tasks leave the heap large (see bioReleaseMemory).
			Name:   "NotifyWaitingTaskMemory",
			Metric: "bytes/task",
			Note:   "tasks each waiting on one Notify, heap+stack in use per task, vs goroutines blocked on one channel",
			Ours: Impl{"tsync.Notify/tasks", func(b *testing.B) {
				var per float64
				for b.Loop() {
					per = syncNotifyWaitingBytes(memTasks)
				}
				b.ReportMetric(per, "bytes/task")
			}},
			Baselines: []Impl{{"chan/goroutines", func(b *testing.B) {
				var per float64
				for b.Loop() {
					per = syncChanWaitingBytes(memTasks)
				}
				b.ReportMetric(per, "bytes/task")
			}}},
			Targets: []Target{AtMost(320)},
		},
	}
}
