package blitzio

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tokio's scheduler benchmarks (tokio/benches/rt_multi_threaded.rs), 2 workers, each
// beside its plain-goroutine equivalent in the same run: go test -bench . -benchmem.

const (
	benchSpawnMany = 10_000
	benchYieldTask = 200
	benchYields    = 1_000
	benchPings     = 1_000
	benchChain     = 1_000
)

func benchRT(b *testing.B) *Runtime {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// nopFuture is Tokio's `async {}`: ready at once, stored inline in the task.
type nopFuture struct{}

func (nopFuture) Poll(*Context) (struct{}, bool) { return struct{}{}, true }

// awaitAll awaits handles in order (each is re-polled only when it wakes the awaiter).
type awaitAll struct {
	hs   []JoinHandle[struct{}]
	next int
}

func (a *awaitAll) Poll(cx *Context) (int, bool) {
	for ; a.next < len(a.hs); a.next++ {
		if _, ok := a.hs[a.next].Poll(cx); !ok {
			return 0, false
		}
	}
	return a.next, true
}

// spawnAll spawns n nopFutures from inside a task, then awaits them.
type spawnAll struct{ awaitAll }

func (s *spawnAll) Poll(cx *Context) (int, bool) {
	if len(s.hs) < cap(s.hs) {
		for len(s.hs) < cap(s.hs) {
			s.hs = append(s.hs, Spawn(cx, nopFuture{}))
		}
	}
	return s.awaitAll.Poll(cx)
}

func goroutinesSpawnMany(n int) {
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
}

func BenchmarkSpawnManyLocal(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		b.ReportAllocs()
		hs := make([]JoinHandle[struct{}], 0, benchSpawnMany)
		for b.Loop() {
			s := &spawnAll{awaitAll{hs: hs[:0]}}
			if _, err := BlockOn[int](rt, Spawn[*spawnAll, int](rt, s).resultValue()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			done := make(chan struct{})
			go func() { goroutinesSpawnMany(benchSpawnMany); close(done) }()
			<-done
		}
	})
}

func BenchmarkSpawnManyRemote(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		b.ReportAllocs()
		hs := make([]JoinHandle[struct{}], 0, benchSpawnMany)
		for b.Loop() {
			hs = hs[:0]
			for i := 0; i < benchSpawnMany; i++ {
				hs = append(hs, Spawn(rt, nopFuture{}))
			}
			if _, err := BlockOn[int](rt, &awaitAll{hs: hs}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			goroutinesSpawnMany(benchSpawnMany)
		}
	})
}

// yielder yields n times without allocating (Context.Yield).
type yielder struct {
	n   int
	rem *atomic.Int64
	wg  *sync.WaitGroup
}

func (y *yielder) Poll(cx *Context) (struct{}, bool) {
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

func BenchmarkYieldMany(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		b.ReportAllocs()
		var rem atomic.Int64
		var wg sync.WaitGroup
		ys := make([]yielder, benchYieldTask)
		for b.Loop() {
			rem.Store(benchYieldTask)
			wg.Add(1)
			for i := range ys {
				ys[i] = yielder{n: benchYields, rem: &rem, wg: &wg}
				Spawn(rt, &ys[i]).Detach()
			}
			wg.Wait()
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var wg sync.WaitGroup
			wg.Add(benchYieldTask)
			for i := 0; i < benchYieldTask; i++ {
				go func() {
					for j := 0; j < benchYields; j++ {
						runtime.Gosched()
					}
					wg.Done()
				}()
			}
			wg.Wait()
		}
	})
}

// oneshot is a minimal one-shot signal (channels arrive in a later version): send wakes
// the receiver's stored waker.
type oneshot struct {
	mu  sync.Mutex
	set bool
	w   Waker
}

func (o *oneshot) send(cx *Context) {
	o.mu.Lock()
	o.set = true
	w := o.w
	o.w = Waker{}
	o.mu.Unlock()
	w.WakeFrom(cx)
}

func (o *oneshot) Poll(cx *Context) (struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set {
		return struct{}{}, true
	}
	o.w = cx.Waker()
	return struct{}{}, false
}

type pinger struct {
	tx1, rx2 oneshot
	started  bool
	rem      *atomic.Int64
	done     *oneshot
}

type ponger struct{ p *pinger }

func (g ponger) Poll(cx *Context) (struct{}, bool) {
	if _, ok := g.p.tx1.Poll(cx); !ok {
		return struct{}{}, false
	}
	g.p.rx2.send(cx)
	return struct{}{}, true
}

func (p *pinger) Poll(cx *Context) (struct{}, bool) {
	if !p.started {
		p.started = true
		Spawn(cx, ponger{p}).Detach()
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

type pingRoot struct {
	rem  *atomic.Int64
	done *oneshot
}

func (r pingRoot) Poll(cx *Context) (struct{}, bool) {
	for i := 0; i < benchPings; i++ {
		Spawn(cx, &pinger{rem: r.rem, done: r.done}).Detach()
	}
	return struct{}{}, true
}

func BenchmarkPingPong(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		b.ReportAllocs()
		var rem atomic.Int64
		for b.Loop() {
			rem.Store(benchPings)
			done := &oneshot{}
			Spawn(rt, pingRoot{rem: &rem, done: done}).Detach()
			if _, err := BlockOn[struct{}](rt, done); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		var rem atomic.Int64
		for b.Loop() {
			rem.Store(benchPings)
			done := make(chan struct{})
			go func() {
				for i := 0; i < benchPings; i++ {
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
	})
}

type chainLink struct {
	n    int
	done *oneshot
}

func (c chainLink) Poll(cx *Context) (struct{}, bool) {
	if c.n == 0 {
		c.done.send(cx)
	} else {
		Spawn(cx, chainLink{n: c.n - 1, done: c.done}).Detach()
	}
	return struct{}{}, true
}

func BenchmarkChainedSpawn(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		b.ReportAllocs()
		for b.Loop() {
			done := &oneshot{}
			Spawn(rt, chainLink{n: benchChain, done: done}).Detach()
			if _, err := BlockOn[struct{}](rt, done); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
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
			go link(benchChain)
			<-done
		}
	})
}

// memInUse is heap objects plus goroutine stacks, from runtime/metrics, after a GC.
func memInUse() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64() + s[1].Value.Uint64())
}

// SleepingTaskBytes spawns n tasks each sleeping 60 s and returns the memory in use per
// task; the tasks are dropped before it returns.
func SleepingTaskBytes(n int) float64 {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	hs := make([]JoinHandle[struct{}], n)
	before := memInUse()
	for i := range hs {
		hs[i] = Spawn(rt, Sleep(60*time.Second))
	}
	for int64(rt.timerCount()) < int64(n) {
		time.Sleep(time.Millisecond)
	}
	after := memInUse()
	runtime.KeepAlive(hs)
	return (after - before) / float64(n)
}

// SleepingGoroutineBytes is the same measurement for goroutines in time.Sleep.
func SleepingGoroutineBytes(n int) float64 {
	stop := make(chan struct{})
	var started, exited sync.WaitGroup
	before := memInUse()
	started.Add(n)
	exited.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			t := time.NewTimer(60 * time.Second)
			select {
			case <-t.C:
			case <-stop: // so the benchmark can end without waiting a minute
			}
			t.Stop()
			exited.Done()
		}()
	}
	started.Wait()
	after := memInUse()
	close(stop)
	exited.Wait() // do not let a million exiting goroutines pollute what runs next
	return (after - before) / float64(n)
}

func BenchmarkSleepingTaskMemory(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	b.Run("blitzio", func(b *testing.B) {
		var per float64
		for b.Loop() {
			per = SleepingTaskBytes(n)
		}
		b.ReportMetric(per, "bytes/task")
	})
	b.Run("goroutines", func(b *testing.B) {
		var per float64
		for b.Loop() {
			per = SleepingGoroutineBytes(n)
		}
		b.ReportMetric(per, "bytes/task")
	})
}

// BenchmarkSleepStartDrop starts a Sleep (registering its timer) and drops it (removing
// it), against time.AfterFunc and Stop.
func BenchmarkSleepStartDrop(b *testing.B) {
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		cx := NewContext(rt, Waker{})
		b.ReportAllocs()
		for b.Loop() {
			s := Sleep(time.Minute)
			s.Poll(cx)
			s.Drop()
		}
	})
	b.Run("blitzio-reused", func(b *testing.B) {
		rt := benchRT(b)
		cx := NewContext(rt, Waker{})
		s := Sleep(time.Minute)
		b.ReportAllocs()
		for b.Loop() {
			s.Poll(cx)
			s.Reset(time.Minute)
		}
	})
	b.Run("time.Timer-reused", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, func() {})
		t.Stop()
		b.ReportAllocs()
		for b.Loop() {
			t.Reset(time.Minute)
			t.Stop()
		}
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		b.ReportAllocs()
		f := func() {}
		for b.Loop() {
			t := time.AfterFunc(time.Minute, f)
			t.Stop()
		}
	})
}

// BenchmarkSleepStartDropMillion is the "1,000,000 sleeps started and dropped"
// read literally: start a million sleeps (all registered at once, as a million waiting
// connections' timeouts would be), then drop them all. Unlike BenchmarkSleepStartDrop the
// timer structure holds a million entries, so this measures the wheel (and Go's timer
// heap) at size, with cache misses. ns/sleep is the time per start+drop.
func BenchmarkSleepStartDropMillion(b *testing.B) {
	const n = 1_000_000
	perSleep := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/sleep")
	}
	b.Run("blitzio", func(b *testing.B) {
		rt := benchRT(b)
		cx := NewContext(rt, Waker{})
		ss := make([]*SleepFuture, n)
		b.ReportAllocs()
		for b.Loop() {
			for i := range ss {
				ss[i] = Sleep(time.Minute)
				ss[i].Poll(cx)
			}
			for _, s := range ss {
				s.Drop()
			}
		}
		perSleep(b)
		if c := rt.timerCount(); c != 0 {
			b.Fatalf("%d timers left in the wheel after dropping every sleep", c)
		}
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		ts := make([]*time.Timer, n)
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
		perSleep(b)
	})
}

// benchGate holds tasks pending until it is opened (untimed set-up), so that the timed
// part of BenchmarkJoinAll starts with every handle pending.
type benchGate struct {
	mu      sync.Mutex
	opened  bool
	wakers  []Waker
	waiting atomic.Int64
}

type benchGated struct {
	g *benchGate
	v int
}

func (t *benchGated) Poll(cx *Context) (int, bool) {
	g := t.g
	g.mu.Lock()
	if !g.opened {
		g.wakers = append(g.wakers, cx.Waker())
		g.mu.Unlock()
		g.waiting.Add(1)
		return 0, false
	}
	g.mu.Unlock()
	return t.v, true
}

func (g *benchGate) open() {
	g.mu.Lock()
	g.opened = true
	ws := g.wakers
	g.wakers = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

// BenchmarkJoinAll awaits n task handles with one JoinAll (driven by BlockOn) against a
// loop of Wait over the same kind of handles, collecting the results in a slice as
// JoinAll does.
//
// JoinAll/10k, LoopWait/10k, JoinAll/100k, LoopWait/100k: n tasks are spawned and wait
// behind a gate (untimed); the timed part opens the gate (the workers then run the n
// tasks) and awaits every handle, pending at first, as in a join of tasks still at work.
//
// JoinAllReady/..., LoopWaitReady/...: the n tasks have all finished before the timed
// part, so every handle is ready at once: the case that was quadratic (every poll after
// the task's first 128 completions re-polled, and re-queued, every remaining child), and
// the least favourable to JoinAll, since a Wait on a finished handle is one atomic load.
func BenchmarkJoinAll(b *testing.B) {
	join := func(b *testing.B, rt *Runtime, hs []JoinHandle[int]) {
		rs, err := BlockOn(rt, JoinAll(hs...))
		if n := len(hs); err != nil || len(rs) != n || rs[n-1].Value != n-1 {
			b.Fatal(err)
		}
	}
	loop := func(b *testing.B, rt *Runtime, hs []JoinHandle[int]) {
		rs := make([]Result[int], len(hs))
		for i, h := range hs {
			v, err := h.Wait()
			rs[i] = Result[int]{Value: v, Err: err}
		}
		if n := len(hs); rs[n-1].Err != nil || rs[n-1].Value != n-1 {
			b.Fatal(rs[n-1])
		}
	}
	for _, ready := range []bool{false, true} {
		for _, n := range []int{10_000, 100_000} {
			size := fmt.Sprintf("%dk", n/1000)
			suffix := ""
			if ready {
				suffix = "Ready"
			}
			for _, v := range []struct {
				name  string
				await func(*testing.B, *Runtime, []JoinHandle[int])
			}{{"JoinAll", join}, {"LoopWait", loop}} {
				b.Run(v.name+suffix+"/"+size, func(b *testing.B) {
					rt := benchRT(b)
					hs := make([]JoinHandle[int], n)
					b.ReportAllocs()
					for b.Loop() {
						b.StopTimer()
						g := &benchGate{opened: ready}
						var ran atomic.Int64
						for i := range hs {
							hs[i] = Spawn(rt, Map[int, int](&benchGated{g, i}, func(v int) int { ran.Add(1); return v }))
						}
						for (ready && ran.Load() < int64(n)) || (!ready && g.waiting.Load() < int64(n)) {
							runtime.Gosched()
						}
						// Finish the collection the spawns started, so that it does not run
						// during (and bill) the timed part of one variant more than the other.
						runtime.GC()
						b.StartTimer()
						if !ready {
							g.open()
						}
						v.await(b, rt, hs)
					}
				})
			}
		}
	}
}
