package lockfree

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile review of Deque: index wrap-around, the last-item race, growth under thieves,
// and an exactly-once stress that also checks the order each party sees against what
// the Chase-Lev semantics allow.

// h7DequeAt returns an empty deque whose indices (top, bottom and the owner's copies)
// all start at start instead of 0. Only index differences may matter to the algorithm,
// so a deque started anywhere must behave exactly like one started at 0; starting near
// math.MaxInt64 makes the indices overflow within a few operations.
func h7DequeAt[T any](capacity int, start int64) *Deque[T] {
	d := NewDeque[T](capacity)
	d.top.Store(start)
	d.bottom.Store(start)
	d.ownBottom = start
	d.topSeen = start
	return d
}

// h7RunDequeModel decodes ops into single-goroutine deque operations on a deque whose
// indices start at start, and checks every result against a slice (front = top, back =
// bottom). It is the body of FuzzHostile7DequeWrap and of the wrap-around unit test.
func h7RunDequeModel(t *testing.T, start int64, capLog uint8, ops []byte) {
	t.Helper()
	capacity := 1 << (capLog % 4)
	d := h7DequeAt[int](capacity, start)
	var model, spilled, modelSpilled []*int
	hook := false
	next := 0
	newItem := func() *int { next++; v := next; return &v }
	for i := 0; i < len(ops); i++ {
		switch op := ops[i] % 7; op {
		case 0, 6: // Push (twice as likely: the ring must fill up and wrap)
			it := newItem()
			ok := d.Push(it)
			switch {
			case len(model) < capacity:
				if !ok {
					t.Fatalf("start %d op %d: Push into %d/%d reported full", start, i, len(model), capacity)
				}
				model = append(model, it)
			case hook:
				if !ok {
					t.Fatalf("start %d op %d: Push with an overflow hook reported false", start, i)
				}
				modelSpilled = append(modelSpilled, it)
			default:
				if ok {
					t.Fatalf("start %d op %d: Push into a full ring (%d) reported true", start, i, capacity)
				}
			}
		case 1: // PushGrow
			it := newItem()
			d.PushGrow(it)
			if len(model) == capacity {
				capacity *= 2
			}
			model = append(model, it)
		case 2: // Pop: the newest
			got := d.Pop()
			var want *int
			if n := len(model); n > 0 {
				want, model = model[n-1], model[:n-1]
			}
			if got != want {
				t.Fatalf("start %d op %d: Pop = %v, want %v", start, i, deref(got), deref(want))
			}
		case 3: // Steal: the oldest; alone, a steal never answers Retry
			got, res := d.Steal()
			if len(model) == 0 {
				if res != Empty || got != nil {
					t.Fatalf("start %d op %d: Steal on empty = %v, %v", start, i, deref(got), res)
				}
				break
			}
			if res != Success || got != model[0] {
				t.Fatalf("start %d op %d: Steal = %v, %v; want %v, Success", start, i, deref(got), res, *model[0])
			}
			model = model[1:]
		case 4: // StealHalf into a fresh deque that also starts near the overflow
			dstCap := 1
			if i+1 < len(ops) {
				i++
				dstCap = 1 << (ops[i] % 4)
			}
			dst := h7DequeAt[int](dstCap, math.MaxInt64-int64(dstCap)/2)
			n := d.StealHalf(dst)
			want := min((len(model)+1)/2, dstCap)
			if n != want || dst.Len() != n {
				t.Fatalf("start %d op %d: StealHalf moved %d (dst Len %d), want %d of %d", start, i, n, dst.Len(), want, len(model))
			}
			moved := model[:n]
			model = model[n:]
			for k := n - 1; k >= 0; k-- {
				if got := dst.Pop(); got != moved[k] {
					t.Fatalf("start %d op %d: dst.Pop = %v, want %v", start, i, deref(got), *moved[k])
				}
			}
		case 5: // toggle the overflow hook
			hook = !hook
			if hook {
				d.SetOverflow(func(it *int) { spilled = append(spilled, it) })
			} else {
				d.SetOverflow(nil)
			}
		}
		if d.Len() != len(model) || d.IsEmpty() != (len(model) == 0) || d.Cap() != capacity {
			t.Fatalf("start %d op %d: Len %d, IsEmpty %v, Cap %d; model holds %d in %d",
				start, i, d.Len(), d.IsEmpty(), d.Cap(), len(model), capacity)
		}
		if !slices.Equal(spilled, modelSpilled) {
			t.Fatalf("start %d op %d: overflow hook got %d items, want %d", start, i, len(spilled), len(modelSpilled))
		}
	}
	for k := 0; len(model) > 0; k++ { // drain from both ends alternately
		if k%2 == 0 {
			if got, res := d.Steal(); res != Success || got != model[0] {
				t.Fatalf("start %d drain: Steal = %v, %v; want %v", start, deref(got), res, *model[0])
			}
			model = model[1:]
		} else {
			if got := d.Pop(); got != model[len(model)-1] {
				t.Fatalf("start %d drain: Pop = %v, want %v", start, deref(got), *model[len(model)-1])
			}
			model = model[:len(model)-1]
		}
	}
	if got := d.Pop(); got != nil {
		t.Fatalf("start %d drain: deque holds more than the model (%v)", start, deref(got))
	}
	if got, res := d.Steal(); res != Empty {
		t.Fatalf("start %d drain: Steal = %v, %v after draining", start, deref(got), res)
	}
}

// TestHostile7DequeIndexWrap: the deque only ever compares top and bottom with each
// other, so their absolute values must not matter, even when they overflow past
// math.MaxInt64 (Go defines signed overflow as wrapping). Reaching that takes 2^63
// operations on one deque, so the indices are placed there directly. Every start point
// runs the same operation sequences, each crossing the overflow with a full ring, a
// growth, steals and the last-item paths of Pop.
func TestHostile7DequeIndexWrap(t *testing.T) {
	seqs := [][]byte{
		{0, 0, 0, 0, 3, 0, 2, 2, 3, 3, 2},                   // fill, steal, refill, drain
		{0, 0, 0, 0, 0, 1, 1, 1, 3, 2, 3, 2, 3},             // full ring, then PushGrow across the wrap
		{0, 2, 0, 3, 0, 0, 2, 2, 2, 0, 0, 0, 0, 0, 0, 3, 3}, // last item via Pop's CAS and via a steal
		{0, 0, 0, 0, 4, 2, 0, 0, 0, 4, 3, 5, 0, 0, 0, 0, 0}, // StealHalf and the overflow hook
	}
	starts := []int64{0, -1, math.MinInt64, math.MinInt64 + 1}
	for k := int64(0); k <= 10; k++ {
		starts = append(starts, math.MaxInt64-k)
	}
	for _, start := range starts {
		for _, capLog := range []uint8{0, 1, 2} {
			for _, ops := range seqs {
				h7RunDequeModel(t, start, capLog, ops)
			}
		}
	}
}

// FuzzHostile7DequeWrap is FuzzDeque with a fuzzed start index: the deque must match
// the slice model wherever its indices start, above all just below math.MaxInt64,
// where they overflow during the sequence. StealHalf's destination starts near the
// overflow as well.
func FuzzHostile7DequeWrap(f *testing.F) {
	f.Add(int64(math.MaxInt64), uint8(1), []byte{0, 0, 0, 3, 0, 2, 2, 3})
	f.Add(int64(math.MaxInt64-2), uint8(2), []byte{0, 0, 0, 0, 0, 1, 1, 3, 2, 4, 2, 3, 2})
	f.Add(int64(math.MaxInt64-5), uint8(0), []byte{0, 2, 0, 3, 1, 1, 1, 2, 3, 2, 2})
	f.Add(int64(-3), uint8(3), []byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3})
	f.Fuzz(h7RunDequeModel)
}

// h7Item is a deque item numbered in push order (per deque) and globally unique.
type h7Item struct{ seq int64 }

// h7Owner is the sequential model of what a deque's owner may see while thieves steal.
// Thieves only ever take the oldest items (a prefix in push order), so when the owner
// pops, either the newest item it pushed and has not popped itself is still there and
// Pop must return exactly it, or that item was stolen, and then so was every older one,
// and Pop must return nil.
type h7Owner struct {
	d       *Deque[h7Item]
	pending []*h7Item // pushed by this owner and not popped by it, oldest first
}

func (o *h7Owner) pushed(it *h7Item) { o.pending = append(o.pending, it) }

// pop pops and checks the result against the model; it returns the item or nil.
func (o *h7Owner) pop() (*h7Item, error) {
	got := o.d.Pop()
	if got == nil {
		o.pending = o.pending[:0] // all stolen: the final exactly-once check confirms it
		return nil, nil
	}
	n := len(o.pending)
	if n == 0 || got != o.pending[n-1] {
		want := "nothing"
		if n > 0 {
			want = fmt.Sprintf("seq %d", o.pending[n-1].seq)
		}
		return nil, fmt.Errorf("owner Pop = seq %d, want the newest unpopped push (%s) or nil", got.seq, want)
	}
	o.pending = o.pending[:n-1]
	return got, nil
}

// h7DequeStress: one owner pushes n items into main (Push, PushGrow or a Push that
// spills to the overflow hook), popping random bursts back. thieves goroutines steal:
// from main with Steal, StealLoop and StealHalf into a deque of their own, whose items
// they pop as its owner, and with Steal from each other's deques. Checked: every item
// taken exactly once; owners' pops match h7Owner; the items one thief steals from one
// deque arrive in push order (top only grows, and a deque holds its items in push
// order). main's indices start at start.
func h7DequeStress(t *testing.T, n, thieves, capacity int, start int64, grow bool) {
	t.Helper()
	items := make([]h7Item, n)
	for i := range items {
		items[i].seq = int64(i)
	}
	taken := make([]atomic.Int32, n)
	var takenTotal atomic.Int64
	var byThief, byHalf, byOwnerPop atomic.Int64 // where the items went, for the log
	var failed atomic.Bool
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		failed.Store(true)
	}
	take := func(it *h7Item) {
		if it == nil {
			fail(fmt.Errorf("took a nil item"))
			return
		}
		taken[it.seq].Add(1)
		takenTotal.Add(1)
	}

	main := h7DequeAt[h7Item](capacity, start)
	var spilled []*h7Item
	main.SetOverflow(func(it *h7Item) { spilled = append(spilled, it) })
	own := make([]*Deque[h7Item], thieves) // each thief's deque, stolen from by the others
	for i := range own {
		own[i] = h7DequeAt[h7Item](max(capacity/2, 1), math.MaxInt64-int64(i))
	}

	var wg sync.WaitGroup
	for id := range thieves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := NewXorShift64Star(uint64(id)*7919 + 1)
			me := &h7Owner{d: own[id]}
			last := make([]int64, thieves+1) // per victim (thieves = main): last seq stolen
			for i := range last {
				last[i] = -1
			}
			stolen := func(victim int, it *h7Item) {
				if it != nil && it.seq <= last[victim] {
					fail(fmt.Errorf("thief %d stole seq %d from deque %d after seq %d: not in push order", id, it.seq, victim, last[victim]))
				}
				if it != nil {
					last[victim] = it.seq
				}
				byThief.Add(1)
				take(it)
			}
			for takenTotal.Load() < int64(n) && !failed.Load() {
				// Drain our own deque first, as its owner.
				for {
					it, err := me.pop()
					if err != nil {
						fail(fmt.Errorf("thief %d: %w", id, err))
						return
					}
					if it == nil {
						break
					}
					take(it)
				}
				switch r := rng.Intn(8); {
				case r < 3:
					if it, res := main.Steal(); res == Success {
						stolen(thieves, it)
					}
				case r < 5:
					if it, ok := main.StealLoop(); ok {
						stolen(thieves, it)
					}
				case r < 7:
					// Items StealHalf moves arrive in main's push order, so our own deque
					// holds them in its push order too, which our thieves check.
					moved := main.StealHalf(own[id])
					if moved > 0 {
						// Peek at what was pushed: the deque's newest moved items are at
						// the bottom; read them back through the ring (owner-only state).
						r := own[id].ownRing
						b := own[id].ownBottom
						for k := int64(moved); k > 0; k-- {
							it := r.load(b - k)
							if it == nil {
								fail(fmt.Errorf("thief %d: StealHalf reported %d moved, slot %d of its deque is empty", id, moved, b-k))
								return
							}
							if it.seq <= last[thieves] {
								fail(fmt.Errorf("thief %d: StealHalf moved seq %d after seq %d", id, it.seq, last[thieves]))
							}
							last[thieves] = it.seq
							me.pushed(it)
							byHalf.Add(1)
						}
					}
				default:
					v := rng.Intn(thieves)
					if v != id {
						if it, res := own[v].Steal(); res == Success {
							stolen(v, it)
						}
					}
				}
				switch rng.Intn(32) {
				case 0:
					runtime.Gosched()
				case 1:
					if rng.Intn(8) == 0 {
						time.Sleep(time.Duration(rng.Intn(20)) * time.Microsecond)
					}
				}
			}
		}()
	}

	owner := &h7Owner{d: main}
	rng := NewXorShift64Star(uint64(n)*31 + uint64(thieves))
	for next := 0; next < n && !failed.Load(); {
		for burst := 1 + rng.Intn(2*capacity+1); burst > 0 && next < n; burst-- {
			it := &items[next]
			switch {
			case grow && rng.Intn(3) == 0:
				main.PushGrow(it)
				owner.pushed(it)
			default:
				before := len(spilled)
				if !main.Push(it) {
					fail(fmt.Errorf("Push with an overflow hook reported false"))
				}
				if len(spilled) > before {
					if spilled[len(spilled)-1] != it {
						fail(fmt.Errorf("overflow hook got seq %d, want %d", spilled[len(spilled)-1].seq, it.seq))
					}
					take(it) // the hook took it: it never entered the deque
				} else {
					owner.pushed(it)
				}
			}
			next++
		}
		for pops := rng.Intn(capacity + 2); pops > 0; pops-- {
			it, err := owner.pop()
			if err != nil {
				fail(err)
				break
			}
			if it == nil {
				break
			}
			byOwnerPop.Add(1)
			take(it)
		}
		switch rng.Intn(16) {
		case 0:
			runtime.Gosched()
		case 1:
			time.Sleep(time.Duration(rng.Intn(10)) * time.Microsecond)
		}
	}
	for !failed.Load() {
		it, err := owner.pop()
		if err != nil {
			fail(err)
		}
		if it == nil {
			break
		}
		take(it)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stressTimeout):
		t.Fatalf("thieves did not finish within %v: %d of %d items taken (an item was lost)", stressTimeout, takenTotal.Load(), n)
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	bad := 0
	for i := range taken {
		if c := taken[i].Load(); c != 1 {
			if bad < 5 {
				t.Errorf("item %d taken %d times", i, c)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d items not taken exactly once", bad, n)
	}
	if main.Len() != 0 || main.Pop() != nil {
		t.Fatal("main deque not empty at the end")
	}
	t.Logf("%d items: %d stolen, %d moved by StealHalf, %d popped by main's owner (before the drain), %d spilled; main ring %d",
		n, byThief.Load(), byHalf.Load(), byOwnerPop.Load(), len(spilled), main.Cap())
}

// TestHostile7DequeStress runs h7DequeStress with far more goroutines than cores, with
// rings small enough to be full most of the time, with growth from one slot, and with
// main's indices starting just below the int64 overflow so that the whole run crosses
// it.
func TestHostile7DequeStress(t *testing.T) {
	n := scale(200_000)
	for _, c := range []struct {
		name     string
		thieves  int
		capacity int
		start    int64
		grow     bool
	}{
		{"full-ring", 16, 4, 0, false},
		{"grow-from-1", 12, 1, 0, true},
		{"wrap", 8, 8, math.MaxInt64 - int64(n)/2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h7DequeStress(t, n, c.thieves, c.capacity, c.start, c.grow)
		})
	}
}

// TestHostile7DequeLastItemRace: the owner pushes one or two items, then races thieves
// (released at the same moment) for them with Pop, so Pop's single-item CAS and its
// fenced path with t == b both meet concurrent steals. Each round must hand every item
// to exactly one taker, and leave the deque empty and reusable (the lazy-bottom state
// left behind by Pop must read as empty to everybody).
func TestHostile7DequeLastItemRace(t *testing.T) {
	rounds := scale(20_000)
	const thieves = 3
	// Each round moves top by 1 or 2 (a Pop through the fence reuses its index), so
	// starting rounds/2 below the overflow crosses it in the first half of the run.
	d := h7DequeAt[h7Item](2, math.MaxInt64-int64(rounds)/2)
	items := make([]h7Item, 2*rounds)
	for i := range items {
		items[i].seq = int64(i)
	}
	taken := make([]atomic.Int32, len(items))
	var round atomic.Int64 // thieves may steal in round r once round == r+1
	round.Store(0)
	var finished atomic.Int64 // thief rounds completed
	var stop atomic.Bool
	var wg sync.WaitGroup
	for id := range thieves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := NewXorShift64Star(uint64(id) + 11)
			for r := int64(1); r <= int64(rounds); r++ {
				for round.Load() < r {
					if stop.Load() {
						return
					}
					runtime.Gosched()
				}
				spin(uint32(rng.Intn(64)))
				for {
					it, res := d.Steal()
					if res == Empty {
						break
					}
					if res == Success {
						taken[it.seq].Add(1)
					}
				}
				finished.Add(1)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	rng := NewXorShift64Star(5)
	deadline := time.Now().Add(stressTimeout)
	for r := range rounds {
		k := 1 + rng.Intn(2)
		for j := range k {
			if !d.Push(&items[2*r+j]) {
				t.Fatalf("round %d: Push %d into an empty ring of 2 failed", r, j)
			}
		}
		round.Store(int64(r + 1))
		spin(uint32(rng.Intn(64)))
		for it := d.Pop(); it != nil; it = d.Pop() {
			taken[it.seq].Add(1)
		}
		for finished.Load() < int64(thieves*(r+1)) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: thieves stuck (a steal that never ends?)", r)
			}
			runtime.Gosched()
		}
		for j := range k {
			if c := taken[2*r+j].Load(); c != 1 {
				t.Fatalf("round %d (%d items): item %d taken %d times", r, k, j, c)
			}
		}
		if d.Len() != 0 || d.Pop() != nil {
			t.Fatalf("round %d: deque not empty after everybody took", r)
		}
		if it, res := d.Steal(); res != Empty {
			t.Fatalf("round %d: Steal = %v, %v on an emptied deque", r, it, res)
		}
	}
}

// TestHostile7DequeGrowthUnderThieves: fresh one-slot deques grown by PushGrow to 2^k
// slots while thieves steal, so thieves keep loading rings that are replaced under
// them. Everything pushed must be taken exactly once, and each thief must see each
// deque's items in push order.
func TestHostile7DequeGrowthUnderThieves(t *testing.T) {
	rounds := scale(400)
	const perRound = 512
	const thieves = 6
	for r := range rounds {
		d := NewDeque[h7Item](1)
		items := make([]h7Item, perRound)
		taken := make([]atomic.Int32, perRound)
		var total atomic.Int64
		var wg sync.WaitGroup
		var orderErr atomic.Value
		for id := range thieves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				last := int64(-1)
				var sw SpinWait
				for total.Load() < perRound {
					it, res := d.Steal()
					switch res {
					case Success:
						if it.seq <= last {
							orderErr.Store(fmt.Sprintf("thief %d: seq %d after %d", id, it.seq, last))
						}
						last = it.seq
						taken[it.seq].Add(1)
						total.Add(1)
						sw.Reset()
					default:
						sw.Snooze()
					}
				}
			}()
		}
		for i := range items {
			items[i].seq = int64(i)
			d.PushGrow(&items[i])
			if i%64 == 63 {
				runtime.Gosched()
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stressTimeout):
			t.Fatalf("round %d: %d of %d items taken after %v (lost in a growth?)", r, total.Load(), perRound, stressTimeout)
		}
		if e := orderErr.Load(); e != nil {
			t.Fatalf("round %d: %s", r, e)
		}
		for i := range taken {
			if c := taken[i].Load(); c != 1 {
				t.Fatalf("round %d: item %d taken %d times (final ring %d)", r, i, c, d.Cap())
			}
		}
	}
}

// TestHostile7DequeOddItems: zero-size items (whose pointers may all be equal), the same
// pointer pushed many times, and a one-slot ring work; misuse of the documented kinds
// panics with the documented messages; the unusable zero value fails loudly on Push
// rather than accepting items.
func TestHostile7DequeOddItems(t *testing.T) {
	d := NewDeque[struct{}](1)
	a, b := &struct{}{}, &struct{}{}
	if !d.Push(a) || d.Push(b) {
		t.Fatal("one-slot ring: want the first Push to succeed and the second to report full")
	}
	d.PushGrow(b)
	if d.Len() != 2 || d.Cap() != 2 {
		t.Fatalf("Len, Cap = %d, %d; want 2, 2", d.Len(), d.Cap())
	}
	first, second, third := d.Pop(), d.Pop(), d.Pop()
	if first == nil || second == nil || third != nil {
		t.Fatal("zero-size items: want two items then nil")
	}
	same := &h7Item{seq: 7}
	e := NewDeque[h7Item](4)
	for range 4 {
		e.Push(same)
	}
	for k := range 4 {
		if got, res := e.Steal(); res != Success || got != same {
			t.Fatalf("steal %d of a pointer pushed 4 times = %v, %v", k, got, res)
		}
	}
	for _, c := range []int{math.MinInt, -2, 6, 1<<20 + 1} {
		mustPanic(t, fmt.Sprintf("capacity %d must be 0", c), func() { NewDeque[int](c) })
	}
	var zero Deque[int]
	x := 1
	if got, res := zero.Steal(); res != Empty || got != nil {
		t.Fatalf("Steal on the zero value = %v, %v", got, res)
	}
	for name, f := range map[string]func(){
		"Push":     func() { zero.Push(&x) },
		"PushGrow": func() { zero.PushGrow(&x) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on the zero Deque (documented unusable) did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestHostile7DequeHookReentry: the overflow hook runs on the owner's goroutine in the
// middle of Push, so an adversarial hook may use the deque itself. One that grows the
// deque with the item it was handed must leave it there, in order; one that panics
// must leave the deque exactly as it was.
func TestHostile7DequeHookReentry(t *testing.T) {
	d := NewDeque[h7Item](2)
	items := make([]h7Item, 5)
	for i := range items {
		items[i].seq = int64(i)
	}
	d.SetOverflow(func(it *h7Item) { d.PushGrow(it) })
	for i := range items {
		if !d.Push(&items[i]) {
			t.Fatalf("Push %d with a growing hook reported false", i)
		}
	}
	if d.Len() != 5 || d.Cap() != 8 {
		t.Fatalf("Len, Cap = %d, %d; want 5, 8", d.Len(), d.Cap())
	}
	if it, _ := d.Steal(); it != &items[0] {
		t.Fatalf("Steal = %v, want item 0", it)
	}
	for want := int64(4); want >= 1; want-- {
		if it := d.Pop(); it == nil || it.seq != want {
			t.Fatalf("Pop = %v, want item %d", it, want)
		}
	}
	e := NewDeque[h7Item](1)
	e.Push(&items[0])
	e.SetOverflow(func(*h7Item) { panic("hook refuses") })
	mustPanic(t, "hook refuses", func() { e.Push(&items[1]) })
	if e.Len() != 1 {
		t.Fatalf("Len = %d after a panicking hook, want 1", e.Len())
	}
	if it := e.Pop(); it != &items[0] {
		t.Fatalf("Pop = %v after a panicking hook, want item 0", it)
	}
	if e.Pop() != nil {
		t.Fatal("deque holds an item the panicking hook refused")
	}
}
