package lockfree

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

type seqItem struct{ seq int }

func makeItems(n int) []seqItem {
	items := make([]seqItem, n)
	for i := range items {
		items[i].seq = i
	}
	return items
}

func TestNewDequeCapacity(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, DefaultDequeCapacity}, {1, 1}, {2, 2}, {64, 64}, {1 << 16, 1 << 16}} {
		if got := NewDeque[int](c.in).Cap(); got != c.want {
			t.Errorf("NewDeque(%d).Cap() = %d, want %d", c.in, got, c.want)
		}
	}
	for _, bad := range []int{-1, -256, 3, 100, 255} {
		mustPanic(t, fmt.Sprintf("capacity %d must be 0 (the default, 256) or a positive power of two", bad), func() {
			NewDeque[int](bad)
		})
	}
}

func TestStealResultString(t *testing.T) {
	for r, want := range map[StealResult]string{Empty: "Empty", Success: "Success", Retry: "Retry", 7: "StealResult(7)"} {
		if got := r.String(); got != want {
			t.Errorf("StealResult(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}

func TestDequeOrder(t *testing.T) {
	d := NewDeque[seqItem](8)
	items := makeItems(6)
	for i := range items {
		if !d.Push(&items[i]) {
			t.Fatalf("Push %d failed", i)
		}
	}
	if d.Len() != 6 || d.IsEmpty() {
		t.Fatalf("Len = %d, IsEmpty = %v; want 6, false", d.Len(), d.IsEmpty())
	}
	// The owner takes the newest (LIFO), thieves the oldest (FIFO).
	if got := d.Pop(); got != &items[5] {
		t.Fatalf("Pop = %v, want item 5", got)
	}
	if got, res := d.Steal(); res != Success || got != &items[0] {
		t.Fatalf("Steal = %v, %v; want item 0, Success", got, res)
	}
	if got, ok := d.StealLoop(); !ok || got != &items[1] {
		t.Fatalf("StealLoop = %v, %v; want item 1, true", got, ok)
	}
	for _, want := range []int{4, 3, 2} {
		if got := d.Pop(); got == nil || got.seq != want {
			t.Fatalf("Pop = %v, want item %d", got, want)
		}
	}
	if d.Len() != 0 || !d.IsEmpty() {
		t.Fatalf("Len = %d after draining", d.Len())
	}
}

// TestDequeEmptyNeverBlocks: every taking operation on an empty deque returns at once,
// including after the deque was emptied each possible way (Pop of the last item through
// the CAS, a thief taking the last item, a Pop that found nothing).
func TestDequeEmptyNeverBlocks(t *testing.T) {
	d := NewDeque[seqItem](2)
	it := &seqItem{}
	check := func(stage string) {
		t.Helper()
		for range 3 {
			if got := d.Pop(); got != nil {
				t.Fatalf("%s: Pop = %v on an empty deque", stage, got)
			}
			if got, res := d.Steal(); got != nil || res != Empty {
				t.Fatalf("%s: Steal = %v, %v on an empty deque", stage, got, res)
			}
			if got, ok := d.StealLoop(); got != nil || ok {
				t.Fatalf("%s: StealLoop = %v, %v on an empty deque", stage, got, ok)
			}
			if n := d.StealHalf(NewDeque[seqItem](4)); n != 0 {
				t.Fatalf("%s: StealHalf moved %d from an empty deque", stage, n)
			}
			if d.Len() != 0 || !d.IsEmpty() {
				t.Fatalf("%s: Len = %d", stage, d.Len())
			}
		}
	}
	check("new")
	d.Push(it)
	if d.Pop() != it {
		t.Fatal("Pop of the only item failed")
	}
	check("after popping the last item")
	d.Push(it)
	if _, res := d.Steal(); res != Success {
		t.Fatal("Steal of the only item failed")
	}
	check("after stealing the last item")
	// The ring of 2 keeps working through many wrap-arounds of these paths.
	for i := range 100 {
		d.Push(it)
		d.Push(it)
		first, second := d.Pop(), d.Pop()
		if first != it || second != it {
			t.Fatalf("round %d: lost an item", i)
		}
		check(fmt.Sprintf("round %d", i))
	}
}

func TestDequePushFull(t *testing.T) {
	d := NewDeque[seqItem](4)
	items := makeItems(6)
	for i := range 4 {
		if !d.Push(&items[i]) {
			t.Fatalf("Push %d into a ring of 4 failed", i)
		}
	}
	if d.Push(&items[4]) {
		t.Fatal("Push into a full ring reported true without an overflow hook")
	}
	if d.Len() != 4 {
		t.Fatalf("failed Push changed Len to %d", d.Len())
	}
	if got, _ := d.Steal(); got != &items[0] {
		t.Fatalf("Steal = %v, want item 0", got)
	}
	// One slot free again: the push wraps around into slot 0.
	if !d.Push(&items[4]) {
		t.Fatal("Push after a steal freed a slot failed")
	}
	for _, want := range []int{4, 3, 2, 1} {
		if got := d.Pop(); got == nil || got.seq != want {
			t.Fatalf("Pop = %v, want item %d", got, want)
		}
	}
}

func TestDequeSetOverflow(t *testing.T) {
	d := NewDeque[seqItem](2)
	items := makeItems(4)
	var spilled []*seqItem
	d.SetOverflow(func(it *seqItem) { spilled = append(spilled, it) })
	for i := range items {
		if !d.Push(&items[i]) {
			t.Fatalf("Push %d with an overflow hook reported false", i)
		}
	}
	if len(spilled) != 2 || spilled[0] != &items[2] || spilled[1] != &items[3] {
		t.Fatalf("overflow hook got %v, want items 2 and 3", spilled)
	}
	if d.Len() != 2 {
		t.Fatalf("Len = %d, want 2", d.Len())
	}
	d.SetOverflow(nil)
	if d.Push(&items[0]) {
		t.Fatal("Push into a full ring after removing the hook reported true")
	}
}

func TestDequeNilItemPanics(t *testing.T) {
	d := NewDeque[seqItem](2)
	mustPanic(t, "Deque.Push: nil item", func() { d.Push(nil) })
	mustPanic(t, "Deque.PushGrow: nil item", func() { d.PushGrow(nil) })
	mustPanic(t, "dst must differ", func() { d.StealHalf(d) })
}

func TestDequePushGrow(t *testing.T) {
	d := NewDeque[seqItem](2)
	items := makeItems(100)
	// Take a few first so the live range does not start at slot 0 when the ring grows.
	d.PushGrow(&items[0])
	d.Steal()
	for i := 1; i < len(items); i++ {
		d.PushGrow(&items[i])
	}
	if d.Cap() != 128 || d.Len() != 99 {
		t.Fatalf("Cap, Len = %d, %d; want 128, 99", d.Cap(), d.Len())
	}
	if got, _ := d.Steal(); got != &items[1] {
		t.Fatalf("Steal after growth = %v, want item 1", got)
	}
	for want := 99; want >= 2; want-- {
		if got := d.Pop(); got == nil || got.seq != want {
			t.Fatalf("Pop = %v, want item %d", got, want)
		}
	}
	if d.Pop() != nil {
		t.Fatal("deque not empty after draining")
	}
	// PushGrow ignores the overflow hook.
	d.SetOverflow(func(*seqItem) { t.Fatal("PushGrow called the overflow hook") })
	for i := range 200 {
		d.PushGrow(&items[i%100])
	}
	if d.Len() != 200 || d.Cap() != 256 {
		t.Fatalf("Len, Cap = %d, %d; want 200, 256", d.Len(), d.Cap())
	}
}

func TestDequeStealHalf(t *testing.T) {
	items := makeItems(64)
	for _, c := range []struct{ have, dstCap, dstHas, want int }{
		{1, 8, 0, 1}, {2, 8, 0, 1}, {7, 8, 0, 4}, {10, 8, 0, 5}, {10, 4, 0, 4}, {10, 8, 6, 2}, {10, 8, 8, 0},
	} {
		src, dst := NewDeque[seqItem](64), NewDeque[seqItem](c.dstCap)
		for i := range c.have {
			src.Push(&items[i])
		}
		for i := range c.dstHas {
			dst.Push(&items[32+i])
		}
		got := src.StealHalf(dst)
		if got != c.want || src.Len() != c.have-got || dst.Len() != c.dstHas+got {
			t.Errorf("%+v: moved %d (src %d, dst %d left)", c, got, src.Len(), dst.Len())
			continue
		}
		// The oldest items moved, in order: dst's owner pops them newest first.
		for i := got - 1; i >= 0; i-- {
			if it := dst.Pop(); it != &items[i] {
				t.Errorf("%+v: dst.Pop = %v, want item %d", c, it, i)
			}
		}
	}
}

func TestDequeLayout(t *testing.T) {
	var d Deque[int]
	if off := unsafe.Offsetof(d.bottom) - unsafe.Offsetof(d.top); off < CacheLineSize {
		t.Errorf("top and bottom are %d bytes apart, want at least a cache line", off)
	}
	if off := unsafe.Offsetof(d.buf) - unsafe.Offsetof(d.bottom); off < CacheLineSize {
		t.Errorf("bottom and buf are %d bytes apart, want at least a cache line", off)
	}
	if unsafe.Offsetof(d.buf)%CacheLineSize != 0 || unsafe.Sizeof(d)%CacheLineSize != 0 {
		t.Errorf("buf at %d, size %d: not cache-line multiples", unsafe.Offsetof(d.buf), unsafe.Sizeof(d))
	}
}

// takenSet counts how often each sequence number was taken; check reports lost and
// duplicated items.
type takenSet []atomic.Int32

func (s takenSet) take(t *testing.T, it *seqItem) {
	if it == nil {
		t.Error("taken item is nil")
		return
	}
	s[it.seq].Add(1)
}

func (s takenSet) check(t *testing.T) {
	t.Helper()
	lost, dup := 0, 0
	for i := range s {
		switch n := s[i].Load(); {
		case n == 0:
			if lost < 5 {
				t.Errorf("item %d was never taken", i)
			}
			lost++
		case n > 1:
			if dup < 5 {
				t.Errorf("item %d was taken %d times", i, n)
			}
			dup++
		}
	}
	if lost+dup > 0 {
		t.Fatalf("%d items lost, %d duplicated, of %d", lost, dup, len(s))
	}
}

// dequeStress runs one owner that pushes n numbered items (in random bursts, popping
// some back in between, so Pop's one-item CAS and fence paths both run) against thieves
// goroutines, and checks that every item was taken exactly once. mode selects how
// thieves take: "steal" mixes Steal and StealLoop, "half" uses StealHalf into a private
// deque that the thief then drains as its owner, "grow" makes the owner use PushGrow.
func dequeStress(t *testing.T, n, thieves, capacity int, mode string) {
	items := makeItems(n)
	taken := make(takenSet, n)
	d := NewDeque[seqItem](capacity)
	var pushedAll atomic.Bool
	var stolen atomic.Int64
	var wg sync.WaitGroup
	for i := range thieves {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := NewXorShift64Star(seed)
			var own *Deque[seqItem]
			if mode == "half" {
				own = NewDeque[seqItem](max(capacity/2, 1))
			}
			for {
				done := pushedAll.Load() // read before the steal: Empty after done means drained
				switch {
				case own != nil:
					if d.StealHalf(own) == 0 {
						if done && d.IsEmpty() {
							return
						}
						runtime.Gosched()
					}
					for it := own.Pop(); it != nil; it = own.Pop() {
						taken.take(t, it)
						stolen.Add(1)
					}
				case rng.Intn(2) == 0:
					it, res := d.Steal()
					if res == Success {
						taken.take(t, it)
						stolen.Add(1)
					} else if res == Empty {
						if done {
							return
						}
						runtime.Gosched()
					}
				default:
					if it, ok := d.StealLoop(); ok {
						taken.take(t, it)
						stolen.Add(1)
					} else if done {
						return
					}
				}
				if rng.Intn(64) == 0 {
					runtime.Gosched() // randomise the interleaving
				}
			}
		}(uint64(i + 1))
	}
	rng := NewXorShift64Star(uint64(n) ^ uint64(thieves))
	for next := 0; next < n; {
		burst := 1 + rng.Intn(2*capacity)
		for ; burst > 0 && next < n; burst-- {
			if mode == "grow" && rng.Intn(4) == 0 {
				d.PushGrow(&items[next])
			} else if !d.Push(&items[next]) {
				break // full: pop some below
			}
			next++
		}
		for pops := rng.Intn(capacity + 1); pops > 0; pops-- {
			it := d.Pop()
			if it == nil {
				break
			}
			taken.take(t, it)
		}
		if rng.Intn(32) == 0 {
			runtime.Gosched()
		}
	}
	pushedAll.Store(true)
	for it := d.Pop(); it != nil; it = d.Pop() {
		taken.take(t, it)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitOrFail(t, done, fmt.Sprintf("%d thieves to finish", thieves))
	taken.check(t)
	t.Logf("%d items, %d taken by thieves, final ring %d slots", n, stolen.Load(), d.Cap())
	if d.Len() != 0 {
		t.Fatalf("deque still holds %d items", d.Len())
	}
}

// TestDequeStress is the exactly-once proof under real concurrency: one owner, 1 to 8
// thieves (more goroutines than cores), 1,000,000 items per configuration in a plain
// `go test` run, a ring of 64 slots so it wraps around thousands of times.
func TestDequeStress(t *testing.T) {
	n := scale(1_000_000)
	for _, thieves := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("thieves=%d", thieves), func(t *testing.T) {
			dequeStress(t, n, thieves, 64, "steal")
		})
	}
}

// TestDequeStressStealHalf: thieves take batches with StealHalf while the owner pushes
// and pops.
func TestDequeStressStealHalf(t *testing.T) {
	n := scale(300_000)
	for _, thieves := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("thieves=%d", thieves), func(t *testing.T) {
			dequeStress(t, n, thieves, 64, "half")
		})
	}
}

// TestDequeStressPushGrow: the owner grows the ring (from 2 slots) while thieves steal
// from whichever ring they loaded.
func TestDequeStressPushGrow(t *testing.T) {
	n := scale(200_000)
	for _, thieves := range []int{1, 4} {
		t.Run(fmt.Sprintf("thieves=%d", thieves), func(t *testing.T) {
			dequeStress(t, n, thieves, 2, "grow")
		})
	}
}
