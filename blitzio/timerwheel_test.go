package blitzio

import (
	"container/heap"
	"encoding/binary"
	"testing"
)

// heapModel is the reference the wheel is checked against: a binary heap of deadlines.
type heapItem struct {
	deadline uint64
	id       int
	index    int
}

type heapModel []*heapItem

func (h heapModel) Len() int           { return len(h) }
func (h heapModel) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h heapModel) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *heapModel) Push(x any)        { it := x.(*heapItem); it.index = len(*h); *h = append(*h, it) }
func (h *heapModel) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// wheelChecker runs operations on a wheel and the heap model side by side.
type wheelChecker struct {
	t       testing.TB
	w       wheel
	now     uint64
	entries map[int]*timerEntry
	items   map[int]*heapItem
	model   heapModel
	nextID  int
}

func newWheelChecker(t testing.TB) *wheelChecker {
	return &wheelChecker{t: t, entries: map[int]*timerEntry{}, items: map[int]*heapItem{}}
}

func (c *wheelChecker) insert(after uint64) {
	id := c.nextID
	c.nextID++
	e := &timerEntry{}
	deadline := c.now + after
	if !c.w.insert(e, deadline) {
		if deadline > c.now {
			c.t.Fatalf("insert of deadline %d at now %d refused", deadline, c.now)
		}
		return // expired at once, as the model would fire it
	}
	c.entries[id] = e
	it := &heapItem{deadline: deadline, id: id}
	heap.Push(&c.model, it)
	c.items[id] = it
}

func (c *wheelChecker) cancel(k int) {
	if len(c.entries) == 0 {
		return
	}
	// Pick the k-th live id in a deterministic way.
	ids := make([]int, 0, len(c.entries))
	for id := range c.entries {
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ { // insertion sort: deterministic order
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	id := ids[k%len(ids)]
	c.w.remove(c.entries[id])
	c.w.remove(c.entries[id]) // a second cancel is a no-op
	delete(c.entries, id)
	heap.Remove(&c.model, c.items[id].index)
	delete(c.items, id)
}

func (c *wheelChecker) advance(by uint64) {
	c.now += by
	var fired []uint64
	c.w.advance(c.now, func(e *timerEntry) {
		if e.deadline > c.now {
			c.t.Fatalf("entry with deadline %d fired at %d (early)", e.deadline, c.now)
		}
		fired = append(fired, e.deadline)
		for id, x := range c.entries {
			if x == e {
				delete(c.entries, id)
				heap.Remove(&c.model, c.items[id].index)
				delete(c.items, id)
				break
			}
		}
	})
	for i := 1; i < len(fired); i++ {
		if fired[i] < fired[i-1] {
			c.t.Fatalf("fired out of deadline order: %v", fired)
		}
	}
	if c.model.Len() > 0 && c.model[0].deadline <= c.now {
		c.t.Fatalf("deadline %d not fired at now %d", c.model[0].deadline, c.now)
	}
	if c.w.count != c.model.Len() {
		c.t.Fatalf("wheel count %d, model %d", c.w.count, c.model.Len())
	}
	if next, ok := c.w.nextExpiration(); ok != (c.model.Len() > 0) || (ok && next > c.model[0].deadline) {
		c.t.Fatalf("nextExpiration = %d,%v; earliest deadline %v", next, ok, c.model)
	}
}

// ranges picks a deadline distance in each wheel level and beyond.
var wheelRanges = []uint64{1, 64, 64 * 64, 64 * 64 * 64, 64 * 64 * 64 * 64, 64 * 64 * 64 * 64 * 64, 1 << 34}

func runWheelOps(t testing.TB, data []byte) {
	c := newWheelChecker(t)
	for len(data) >= 5 {
		op := data[0]
		v := uint64(binary.LittleEndian.Uint32(data[1:5]))
		data = data[5:]
		switch op % 4 {
		case 0, 1:
			r := wheelRanges[int(op/4)%len(wheelRanges)]
			c.insert(v%(r*2) + 1)
		case 2:
			c.cancel(int(v))
		case 3:
			r := wheelRanges[int(op/4)%len(wheelRanges)]
			c.advance(v % (r * 2))
		}
	}
	// Drain: everything left fires, in order, by the time the model says.
	for c.model.Len() > 0 {
		c.advance(c.model[0].deadline - c.now)
	}
}

func FuzzTimerWheel(f *testing.F) {
	f.Add([]byte{0, 10, 0, 0, 0, 3, 20, 0, 0, 0})
	f.Add([]byte{4, 100, 0, 0, 0, 8, 200, 1, 0, 0, 2, 0, 0, 0, 0, 7, 255, 255, 0, 0})
	f.Add([]byte{20, 1, 2, 3, 4, 24, 9, 9, 9, 9, 23, 255, 255, 255, 255, 27, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) { runWheelOps(t, data) })
}

func TestTimerWheelEveryLevel(t *testing.T) {
	c := newWheelChecker(t)
	for _, r := range wheelRanges {
		for _, d := range []uint64{r, r + 1, r*2 - 1, r * 3} {
			c.insert(d)
		}
	}
	c.cancel(3)
	c.cancel(11)
	for c.model.Len() > 0 {
		c.advance(c.model[0].deadline - c.now)
	}
	if c.w.overflow != nil {
		t.Fatal("overflow list not drained")
	}
	// Random operations from a fixed stream.
	data := make([]byte, 5000)
	x := uint64(12345)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	runWheelOps(t, data)
}

func TestTimerLevelFor(t *testing.T) {
	cases := []struct {
		elapsed, deadline uint64
		level             int
	}{
		{0, 1, 0}, {0, 63, 0}, {0, 64, 1}, {0, 4095, 1}, {0, 4096, 2},
		{0, 1 << 18, 3}, {0, 1 << 24, 4}, {0, 1 << 30, overflowLevel}, {63, 64, 1},
	}
	for _, c := range cases {
		if got := levelFor(c.elapsed, c.deadline); got != c.level {
			t.Errorf("levelFor(%d, %d) = %d, want %d", c.elapsed, c.deadline, got, c.level)
		}
	}
}
