package benchmarks

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// The blitzio suite runs Tokio's scheduler benchmarks (tokio/benches/rt_multi_threaded.rs)
// on a 2-worker runtime, each beside the plain-goroutine program that does the same work,
// plus the memory of a sleeping task, the cost of a timer, and the CPU of an idle runtime.
// The bodies mirror the Benchmark functions in blitzio/bench_test.go (benchmarks in
// _test.go files cannot be imported from here).

func init() {
	Register(Suite{
		Name:  "blitzio",
		Title: "blitzio runtime (2 workers) against goroutines: Tokio's scheduler benchmarks, sleeping-task memory, timers, idle CPU",
		Cases: blitzioCases,
	})
}

const (
	bioSpawnMany = 10_000
	bioYieldTask = 200
	bioYields    = 1_000
	bioPings     = 1_000
	bioChain     = 1_000
	// bioMillion is the number of sleeps SleepStartDropMillion starts before dropping them.
	bioMillion = 1_000_000
	// bioJoin is the number of task handles JoinAll awaits.
	bioJoin = 100_000
)

// bioSpawnFinished fills hs with handles of tasks that have all run, then collects the
// garbage the spawns made (so it is not billed to the timed part that follows).
func bioSpawnFinished(rt *blitzio.Runtime, hs []blitzio.JoinHandle[int]) {
	var ran atomic.Int64
	for i := range hs {
		hs[i] = blitzio.Spawn(rt, blitzio.Lazy(func() int { ran.Add(1); return i }))
	}
	for ran.Load() < int64(len(hs)) {
		runtime.Gosched()
	}
	runtime.GC()
}

func bioRuntime(b *testing.B) *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// bioNop is Tokio's `async {}`: ready at once, stored inline in its task.
type bioNop struct{}

func (bioNop) Poll(*blitzio.Context) (struct{}, bool) { return struct{}{}, true }

// bioAwaitAll awaits handles in order.
type bioAwaitAll struct {
	hs   []blitzio.JoinHandle[struct{}]
	next int
}

func (a *bioAwaitAll) Poll(cx *blitzio.Context) (int, bool) {
	for ; a.next < len(a.hs); a.next++ {
		if _, ok := a.hs[a.next].Poll(cx); !ok {
			return 0, false
		}
	}
	return a.next, true
}

// bioSpawnAll spawns cap(hs) tasks from inside a task, then awaits them.
type bioSpawnAll struct{ bioAwaitAll }

func (s *bioSpawnAll) Poll(cx *blitzio.Context) (int, bool) {
	for len(s.hs) < cap(s.hs) {
		s.hs = append(s.hs, blitzio.Spawn(cx, bioNop{}))
	}
	return s.bioAwaitAll.Poll(cx)
}

func bioGoSpawnMany(n int) {
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
}

// bioYielder yields n times without allocating (Context.Yield).
type bioYielder struct {
	n   int
	rem *atomic.Int64
	wg  *sync.WaitGroup
}

func (y *bioYielder) Poll(cx *blitzio.Context) (struct{}, bool) {
	if y.n == 0 {
		if y.rem.Add(-1) == 0 {
			y.wg.Done()
		}
		return struct{}{}, true
	}
	y.n--
	cx.Yield()
	return struct{}{}, false
}

// bioOneshot is a minimal one-shot signal (blitzio's channels come in a later version).
type bioOneshot struct {
	mu  sync.Mutex
	set bool
	w   blitzio.Waker
}

func (o *bioOneshot) send(cx *blitzio.Context) {
	o.mu.Lock()
	o.set = true
	w := o.w
	o.w = blitzio.Waker{}
	o.mu.Unlock()
	if cx != nil {
		w.WakeFrom(cx)
	} else {
		w.Wake()
	}
}

func (o *bioOneshot) Poll(cx *blitzio.Context) (struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set {
		return struct{}{}, true
	}
	o.w = cx.Waker()
	return struct{}{}, false
}

type bioPinger struct {
	tx1, rx2 bioOneshot
	started  bool
	rem      *atomic.Int64
	done     *bioOneshot
}

type bioPonger struct{ p *bioPinger }

func (g bioPonger) Poll(cx *blitzio.Context) (struct{}, bool) {
	if _, ok := g.p.tx1.Poll(cx); !ok {
		return struct{}{}, false
	}
	g.p.rx2.send(cx)
	return struct{}{}, true
}

func (p *bioPinger) Poll(cx *blitzio.Context) (struct{}, bool) {
	if !p.started {
		p.started = true
		blitzio.Spawn(cx, bioPonger{p}).Detach()
		p.tx1.send(cx)
	}
	if _, ok := p.rx2.Poll(cx); !ok {
		return struct{}{}, false
	}
	if p.rem.Add(-1) == 0 {
		p.done.send(cx)
	}
	return struct{}{}, true
}

type bioPingRoot struct {
	rem  *atomic.Int64
	done *bioOneshot
}

func (r bioPingRoot) Poll(cx *blitzio.Context) (struct{}, bool) {
	for i := 0; i < bioPings; i++ {
		blitzio.Spawn(cx, &bioPinger{rem: r.rem, done: r.done}).Detach()
	}
	return struct{}{}, true
}

type bioChainLink struct {
	n    int
	done *bioOneshot
}

func (c bioChainLink) Poll(cx *blitzio.Context) (struct{}, bool) {
	if c.n == 0 {
		c.done.send(cx)
	} else {
		blitzio.Spawn(cx, bioChainLink{n: c.n - 1, done: c.done}).Detach()
	}
	return struct{}{}, true
}

// bioMemInUse is heap objects plus goroutine stacks after a GC, from runtime/metrics.
func bioMemInUse() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64() + s[1].Value.Uint64())
}

// bioCountedSleep sleeps 60 s and counts its first poll, so the measurement starts when
// every timer is registered.
type bioCountedSleep struct {
	s       *blitzio.SleepFuture
	started *atomic.Int64
	polled  bool
}

func (c *bioCountedSleep) Poll(cx *blitzio.Context) (struct{}, bool) {
	if !c.polled {
		c.polled = true
		c.started.Add(1)
	}
	return c.s.Poll(cx)
}

func (c *bioCountedSleep) Drop() { c.s.Drop() }

// bioReleaseMemory returns the memory a million-task measurement used to the OS at once.
// Otherwise the runtime's background scavenger keeps returning it during the cases that
// run next, whose allocations then fault pages back in: SleepStartDrop measured 71 ns
// after the memory case against 58 ns on its own.
func bioReleaseMemory() { debug.FreeOSMemory() }

func bioSleepingTaskBytes(n int) float64 {
	defer bioReleaseMemory() // after Close, below
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	var started atomic.Int64
	hs := make([]blitzio.JoinHandle[struct{}], n)
	before := bioMemInUse()
	for i := range hs {
		hs[i] = blitzio.Spawn(rt, &bioCountedSleep{s: blitzio.Sleep(60 * time.Second), started: &started})
	}
	for started.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	after := bioMemInUse()
	runtime.KeepAlive(hs)
	return (after - before) / float64(n)
}

func bioSleepingGoroutineBytes(n int) float64 {
	defer bioReleaseMemory()
	stop := make(chan struct{})
	var started, exited sync.WaitGroup
	before := bioMemInUse()
	started.Add(n)
	exited.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			t := time.NewTimer(60 * time.Second)
			select {
			case <-t.C:
			case <-stop: // lets the measurement end without waiting a minute
			}
			t.Stop()
			exited.Done()
		}()
	}
	started.Wait()
	after := bioMemInUse()
	close(stop)
	exited.Wait() // do not let a million exiting goroutines pollute what runs next
	return (after - before) / float64(n)
}

// bioUserCPU is the CPU time spent running Go code so far, from runtime/metrics (the
// class is brought up to date by a GC, which is why one runs first).
func bioUserCPU() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/cpu/classes/user:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// bioWindowPercent is the CPU the process uses over window, in percent of one core:
// from getrusage on Unix, else from runtime/metrics' user class (which has a noise
// floor of its own on a loaded machine).
func bioWindowPercent(window time.Duration) float64 {
	runtime.GC() // settle: finish GC work earlier cases left behind
	time.Sleep(100 * time.Millisecond)
	if before, ok := processCPU(); ok {
		time.Sleep(window)
		after, _ := processCPU()
		return 100 * float64(after-before) / float64(window)
	}
	before := bioUserCPU()
	time.Sleep(window)
	return 100 * (bioUserCPU() - before) / window.Seconds()
}

func blitzioCases(cfg Config) []Case {
	memTasks := 1_000_000
	idleWindow := 2 * time.Second
	if cfg.Quick {
		memTasks = 100_000
		idleWindow = 500 * time.Millisecond
	}
	return []Case{
		{
			Name: "SpawnManyLocal",
			Note: "10,000 spawns from inside a task, await all (Tokio 5.2-6.5 ms)",
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				hs := make([]blitzio.JoinHandle[struct{}], 0, bioSpawnMany)
				b.ReportAllocs()
				for b.Loop() {
					h := blitzio.Spawn(rt, &bioSpawnAll{bioAwaitAll{hs: hs[:0]}})
					if _, err := h.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			}},
			Baselines: []Impl{{"goroutines", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					done := make(chan struct{})
					go func() { bioGoSpawnMany(bioSpawnMany); close(done) }()
					<-done
				}
			}}},
			Targets: []Target{TimesBetter("goroutines", 1)},
		},
		{
			Name: "SpawnManyRemote",
			Note: "10,000 spawns from outside the runtime, await all",
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				hs := make([]blitzio.JoinHandle[struct{}], 0, bioSpawnMany)
				b.ReportAllocs()
				for b.Loop() {
					hs = hs[:0]
					for i := 0; i < bioSpawnMany; i++ {
						hs = append(hs, blitzio.Spawn(rt, bioNop{}))
					}
					if _, err := blitzio.BlockOn[int](rt, &bioAwaitAll{hs: hs}); err != nil {
						b.Fatal(err)
					}
				}
			}},
			Baselines: []Impl{{"goroutines", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					bioGoSpawnMany(bioSpawnMany)
				}
			}}},
			Targets: []Target{TimesBetter("goroutines", 1)},
		},
		{
			Name: "YieldMany",
			Note: "200 tasks x 1,000 yields (Tokio 8.4 ms)",
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				var rem atomic.Int64
				var wg sync.WaitGroup
				ys := make([]bioYielder, bioYieldTask)
				b.ReportAllocs()
				for b.Loop() {
					rem.Store(bioYieldTask)
					wg.Add(1)
					for i := range ys {
						ys[i] = bioYielder{n: bioYields, rem: &rem, wg: &wg}
						blitzio.Spawn(rt, &ys[i]).Detach()
					}
					wg.Wait()
				}
			}},
			Baselines: []Impl{{"goroutines+Gosched", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var wg sync.WaitGroup
					wg.Add(bioYieldTask)
					for i := 0; i < bioYieldTask; i++ {
						go func() {
							for j := 0; j < bioYields; j++ {
								runtime.Gosched()
							}
							wg.Done()
						}()
					}
					wg.Wait()
				}
			}}},
			Targets: []Target{TimesBetter("goroutines+Gosched", 3)},
		},
		{
			Name: "PingPong",
			Note: "1,000 task pairs, one round trip each through one-shot wakes (Tokio 1.1 ms)",
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				var rem atomic.Int64
				b.ReportAllocs()
				for b.Loop() {
					rem.Store(bioPings)
					done := &bioOneshot{}
					blitzio.Spawn(rt, bioPingRoot{rem: &rem, done: done}).Detach()
					if _, err := blitzio.BlockOn[struct{}](rt, done); err != nil {
						b.Fatal(err)
					}
				}
			}},
			Baselines: []Impl{{"goroutines+chan", func(b *testing.B) {
				var rem atomic.Int64
				b.ReportAllocs()
				for b.Loop() {
					rem.Store(bioPings)
					done := make(chan struct{})
					go func() {
						for i := 0; i < bioPings; i++ {
							go func() {
								tx1, tx2 := make(chan struct{}, 1), make(chan struct{}, 1)
								go func() { <-tx1; tx2 <- struct{}{} }()
								tx1 <- struct{}{}
								<-tx2
								if rem.Add(-1) == 0 {
									close(done)
								}
							}()
						}
					}()
					<-done
				}
			}}},
			Targets: []Target{TimesBetter("goroutines+chan", 1)},
		},
		{
			Name: "ChainedSpawn",
			Note: "a chain of 1,000 spawns (Tokio 0.25 ms)",
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				b.ReportAllocs()
				for b.Loop() {
					done := &bioOneshot{}
					blitzio.Spawn(rt, bioChainLink{n: bioChain, done: done}).Detach()
					if _, err := blitzio.BlockOn[struct{}](rt, done); err != nil {
						b.Fatal(err)
					}
				}
			}},
			Baselines: []Impl{{"goroutines", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					done := make(chan struct{})
					var link func(n int)
					link = func(n int) {
						if n == 0 {
							close(done)
							return
						}
						go link(n - 1)
					}
					go link(bioChain)
					<-done
				}
			}}},
			Targets: []Target{TimesBetter("goroutines", 1)},
		},
		{
			Name: "SleepStartDrop",
			Note: "start a sleep (timer registered) and drop it (timer removed)",
			Ours: Impl{"blitzio.Sleep", func(b *testing.B) {
				rt := bioRuntime(b)
				cx := blitzio.NewContext(rt, blitzio.Waker{})
				b.ReportAllocs()
				for b.Loop() {
					s := blitzio.Sleep(time.Minute)
					s.Poll(cx)
					s.Drop()
				}
			}},
			Baselines: []Impl{{"time.AfterFunc+Stop", func(b *testing.B) {
				f := func() {}
				b.ReportAllocs()
				for b.Loop() {
					time.AfterFunc(time.Minute, f).Stop()
				}
			}}},
			Targets: []Target{TimesBetter("time.AfterFunc+Stop", 3)},
		},
		{
			Name:   "SleepStartDropMillion",
			Metric: "ns/sleep",
			Note:   "1,000,000 sleeps started (all registered at once) then dropped; time per sleep; beside time.AfterFunc then Stop of 1,000,000",
			Ours: Impl{"blitzio.Sleep", func(b *testing.B) {
				rt := bioRuntime(b)
				cx := blitzio.NewContext(rt, blitzio.Waker{})
				ss := make([]*blitzio.SleepFuture, bioMillion)
				b.ReportAllocs()
				for b.Loop() {
					for i := range ss {
						ss[i] = blitzio.Sleep(time.Minute)
						ss[i].Poll(cx)
					}
					for _, s := range ss {
						s.Drop()
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/bioMillion, "ns/sleep")
			}},
			Baselines: []Impl{{"time.AfterFunc+Stop", func(b *testing.B) {
				ts := make([]*time.Timer, bioMillion)
				f := func() {}
				b.ReportAllocs()
				for b.Loop() {
					for i := range ts {
						ts[i] = time.AfterFunc(time.Minute, f)
					}
					for _, t := range ts {
						t.Stop()
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/bioMillion, "ns/sleep")
			}}},
		},
		{
			Name: "JoinAll",
			Note: "await 100,000 finished task handles with one JoinAll (BlockOn), results in a slice; beside a loop of Wait collecting the same slice (spawning untimed)",
			Ours: Impl{"blitzio.JoinAll", func(b *testing.B) {
				rt := bioRuntime(b)
				hs := make([]blitzio.JoinHandle[int], bioJoin)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					bioSpawnFinished(rt, hs)
					b.StartTimer()
					rs, err := blitzio.BlockOn(rt, blitzio.JoinAll(hs...))
					if err != nil || len(rs) != bioJoin || rs[bioJoin-1].Value != bioJoin-1 {
						b.Fatal(err)
					}
				}
			}},
			Baselines: []Impl{{"loop of JoinHandle.Wait", func(b *testing.B) {
				rt := bioRuntime(b)
				hs := make([]blitzio.JoinHandle[int], bioJoin)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					bioSpawnFinished(rt, hs)
					b.StartTimer()
					rs := make([]blitzio.Result[int], len(hs))
					for i, h := range hs {
						v, err := h.Wait()
						rs[i] = blitzio.Result[int]{Value: v, Err: err}
					}
					if rs[bioJoin-1].Err != nil || rs[bioJoin-1].Value != bioJoin-1 {
						b.Fatal(rs[bioJoin-1])
					}
				}
			}}},
			Targets: []Target{TimesBetter("loop of JoinHandle.Wait", 1)},
		},
		{
			Name: "SleepReuse",
			Note: "a reused sleep: register then Reset (timer removed), no allocation; beside a reused time.Timer Reset+Stop",
			Ours: Impl{"blitzio.Sleep+Reset", func(b *testing.B) {
				rt := bioRuntime(b)
				cx := blitzio.NewContext(rt, blitzio.Waker{})
				s := blitzio.Sleep(time.Minute)
				b.ReportAllocs()
				for b.Loop() {
					s.Poll(cx)
					s.Reset(time.Minute)
				}
			}},
			Baselines: []Impl{{"time.Timer Reset+Stop", func(b *testing.B) {
				t := time.AfterFunc(time.Hour, func() {})
				t.Stop()
				b.ReportAllocs()
				for b.Loop() {
					t.Reset(time.Minute)
					t.Stop()
				}
			}}},
		},
		{
			Name:   "IdleRuntimeCPU",
			Metric: "%core",
			Note:   "process CPU over a window with an idle runtime (GOMAXPROCS workers parked), percent of one core",
			Ours: Impl{"blitzio idle", func(b *testing.B) {
				var pct float64
				for b.Loop() {
					rt, err := blitzio.New(blitzio.Config{})
					if err != nil {
						b.Fatal(err)
					}
					blitzio.BlockOn(rt, blitzio.Sleep(10*time.Millisecond)) // let the workers park
					pct = bioWindowPercent(idleWindow)
					rt.Close()
				}
				b.ReportMetric(pct, "%core")
			}},
			Baselines: []Impl{{"no runtime", func(b *testing.B) {
				var pct float64
				for b.Loop() {
					pct = bioWindowPercent(idleWindow)
				}
				b.ReportMetric(pct, "%core")
			}}},
			Targets: []Target{AtMost(2)},
			Roles:   map[string]Role{"no runtime": RoleReference},
		},
		{
			// Last: a million tasks leave the heap large, which disturbed the timing
			// cases that used to follow it (see bioReleaseMemory).
			Name:   "SleepingTaskMemory",
			Metric: "bytes/task",
			Note:   "tasks each waiting on a 60 s Sleep, heap+stack in use per task (goroutines ~2,730 B, Tokio ~450 B)",
			Ours: Impl{"blitzio", func(b *testing.B) {
				var per float64
				for b.Loop() {
					per = bioSleepingTaskBytes(memTasks)
				}
				b.ReportMetric(per, "bytes/task")
			}},
			Baselines: []Impl{{"goroutines+time.Sleep", func(b *testing.B) {
				var per float64
				for b.Loop() {
					per = bioSleepingGoroutineBytes(memTasks)
				}
				b.ReportMetric(per, "bytes/task")
			}}},
			Targets: []Target{AtMost(320)},
		},
	}
}
