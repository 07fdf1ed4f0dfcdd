package blitzio

import (
	"runtime"
	"testing"
	"time"
)

// pendingOnce is pending on every other poll (waking its waker at once), ready on the
// others: each await of it is one suspension and one resumption.
type pendingOnce struct{ n int }

func (p *pendingOnce) Poll(cx *Context) (struct{}, bool) {
	p.n++
	if p.n%2 == 1 {
		return struct{}{}, false
	}
	return struct{}{}, true
}

// BenchmarkSwitchAsync / BenchmarkSwitchPollFn: the cost of one suspension and
// resumption of a task body, polled by hand (no scheduler): an Async function awaiting
// (a coroutine switch there and back) against a PollFn state machine returning pending.
func BenchmarkSwitchAsync(b *testing.B) {
	p := &pendingOnce{}
	n := b.N
	f := Async(func(co *Co) int {
		for range n {
			Await[struct{}](co, p)
		}
		return n
	})
	cx := NewContext(nil, Waker{})
	b.ReportAllocs()
	b.ResetTimer()
	for {
		if _, ok := f.Poll(cx); ok {
			break
		}
	}
}

func BenchmarkSwitchPollFn(b *testing.B) {
	p := &pendingOnce{}
	n, i := b.N, 0
	f := PollFn(func(cx *Context) (int, bool) {
		for i < n {
			if _, ok := p.Poll(cx); !ok {
				return 0, false
			}
			i++
		}
		return n, true
	})
	cx := NewContext(nil, Waker{})
	b.ReportAllocs()
	b.ResetTimer()
	for {
		if _, ok := f.Poll(cx); ok {
			break
		}
	}
}

// suspendedBytes spawns n tasks made by mk that each sleep for an hour, waits until all
// are suspended, and reports the heap and stack memory they hold, per task.
func suspendedBytes(b *testing.B, n int, mk func() Future[struct{}]) float64 {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hs := make([]JoinHandle[struct{}], n)
	for i := range hs {
		hs[i] = Spawn(rt, mk())
	}
	deadline := time.Now().Add(20 * time.Second)
	for rt.timerCount() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
	runtime.KeepAlive(hs)
	return float64(used) / float64(n)
}

// BenchmarkSuspendedAsync / BenchmarkSuspendedPollFn: memory per task suspended in a
// one-hour sleep, as an Async function and as a PollFn state machine (B/task).
func BenchmarkSuspendedAsync(b *testing.B) {
	const n = 10000
	var per float64
	for range b.N {
		per = suspendedBytes(b, n, func() Future[struct{}] {
			return Async(func(co *Co) struct{} { return Await(co, Sleep(time.Hour)) })
		})
	}
	b.ReportMetric(per, "B/task")
}

func BenchmarkSuspendedPollFn(b *testing.B) {
	const n = 10000
	var per float64
	for range b.N {
		per = suspendedBytes(b, n, func() Future[struct{}] {
			s := Sleep(time.Hour)
			return WithDrop[struct{}](PollFn(s.Poll), s.Drop)
		})
	}
	b.ReportMetric(per, "B/task")
}

// BenchmarkYieldTaskAsync / BenchmarkYieldTaskPollFn: one task on a one-worker runtime
// yielding to the scheduler b.N times: the full round trip through the run queue, with
// and without a coroutine switch in it.
func BenchmarkYieldTaskAsync(b *testing.B) {
	rt, _ := New(Config{Workers: 1})
	defer rt.Close()
	n := b.N
	b.ResetTimer()
	_, _ = Spawn(rt, Async(func(co *Co) int {
		for range n {
			Await(co, YieldNow())
		}
		return n
	})).Wait()
}

func BenchmarkYieldTaskPollFn(b *testing.B) {
	rt, _ := New(Config{Workers: 1})
	defer rt.Close()
	n, i := b.N, 0
	var y Future[struct{}]
	b.ResetTimer()
	_, _ = Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		for i < n {
			if y == nil {
				y = YieldNow()
			}
			if _, ok := y.Poll(cx); !ok {
				return 0, false
			}
			y = nil
			i++
		}
		return n, true
	})).Wait()
}

// BenchmarkStartAsync: the cost of starting an Async function that suspends once and
// finishing it (coroutine creation and exit), polled by hand.
func BenchmarkStartAsync(b *testing.B) {
	cx := NewContext(nil, Waker{})
	b.ReportAllocs()
	for range b.N {
		p := &pendingOnce{}
		f := Async(func(co *Co) struct{} { return Await[struct{}](co, p) })
		for {
			if _, ok := f.Poll(cx); ok {
				break
			}
		}
	}
}

// BenchmarkSpawnAsyncTasks: 64 tasks at a time, each an Async function that suspends
// once with a 4 KiB buffer on its stack (a read buffer, say), spawned on a 2-worker
// runtime and waited for: coroutine start (or reuse of one a worker kept), the stack
// the buffer needs, and the exit, per task.
func BenchmarkSpawnAsyncTasks(b *testing.B) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	hs := make([]JoinHandle[byte], 64)
	b.ReportAllocs()
	for b.Loop() {
		for i := range hs {
			hs[i] = Spawn(rt, Async(func(co *Co) byte {
				var buf [4096]byte
				buf[i] = byte(i)
				Await(co, YieldNow())
				return stackBufByte(buf[:], i)
			}))
		}
		for i, h := range hs {
			if v, err := h.Wait(); err != nil || v != byte(i) {
				b.Fatal(v, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hs)), "ns/task")
}

// stackBufByte keeps buf on the caller's stack (it does not escape) while the compiler
// cannot drop it.
//
//go:noinline
func stackBufByte(buf []byte, i int) byte { return buf[i] }
