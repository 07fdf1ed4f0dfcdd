package lockfree

import (
	"sync"
	"testing"
)

// The benchmarks of the issue. Their twins in benchmarks/suite_lockfree.go run the same
// bodies from the blitzbench command (benchmark functions in _test.go files cannot be
// imported from another module).

type benchItem struct{ _ int }

// BenchmarkDequePushPop measures one owner Push followed by one Pop of the same item:
// the fast path of a fork-join worker that forks a job and takes it back itself.
func BenchmarkDequePushPop(b *testing.B) {
	d, it := NewDeque[benchItem](0), &benchItem{}
	b.ReportAllocs()
	for b.Loop() {
		d.Push(it)
		d.Pop()
	}
}

// mutexSlice is the baseline a Go programmer would write instead of a deque.
type mutexSlice struct {
	mu    sync.Mutex
	items []*benchItem
}

func (q *mutexSlice) push(it *benchItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
}

func (q *mutexSlice) pop() *benchItem {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items)
	if n == 0 {
		return nil
	}
	it := q.items[n-1]
	q.items = q.items[:n-1]
	return it
}

// BenchmarkDequePushPopMutex is the BenchmarkDequePushPop work on a mutex-guarded slice.
func BenchmarkDequePushPopMutex(b *testing.B) {
	q, it := &mutexSlice{}, &benchItem{}
	b.ReportAllocs()
	for b.Loop() {
		q.push(it)
		q.pop()
	}
}

// BenchmarkDequePushPopChan is the BenchmarkDequePushPop work on a buffered channel.
func BenchmarkDequePushPopChan(b *testing.B) {
	ch, it := make(chan *benchItem, DefaultDequeCapacity), &benchItem{}
	b.ReportAllocs()
	for b.Loop() {
		ch <- it
		<-ch
	}
}

// BenchmarkDequeSteal measures an uncontended steal by a goroutine that is not the
// owner. Another goroutine, the owner, fills the deque (4096 items) while the timer is
// stopped; the benchmark goroutine then steals them one at a time, and when the deque
// runs dry the owner refills it. So the figure is one Steal (two loads, a slot load and
// the CAS on top) on lines this goroutine has already pulled into its cache, without a
// concurrent owner or thief: the cost a thief pays per item once it found a victim.
// The cross-core transfer of the owner's writes is real but amortised over the batch.
func BenchmarkDequeSteal(b *testing.B) {
	const batch = 4096
	d, it := NewDeque[benchItem](batch), &benchItem{}
	refill := func() {
		done := make(chan struct{})
		go func() { // the owner
			for d.Push(it) {
			}
			close(done)
		}()
		<-done
	}
	refill()
	b.ReportAllocs()
	for b.Loop() {
		if _, res := d.Steal(); res != Success {
			b.StopTimer()
			refill()
			b.StartTimer()
			if _, res := d.Steal(); res != Success {
				b.Fatalf("steal after refill: %v", res)
			}
		}
	}
}

// BenchmarkOnceLatchProbe measures the non-blocking check of a set latch, the joiner's
// fast path.
func BenchmarkOnceLatchProbe(b *testing.B) {
	var l OnceLatch
	l.SetDone()
	b.ReportAllocs()
	for b.Loop() {
		if !l.Probe() {
			b.Fatal("latch not set")
		}
	}
}

// BenchmarkTreiberPushPop measures one Push and one Pop from a single goroutine; Push
// allocates the node, so it reports one allocation per pair.
func BenchmarkTreiberPushPop(b *testing.B) {
	var s TreiberStack[int]
	b.ReportAllocs()
	for b.Loop() {
		s.Push(1)
		if _, ok := s.Pop(); !ok {
			b.Fatal("empty after push")
		}
	}
}
