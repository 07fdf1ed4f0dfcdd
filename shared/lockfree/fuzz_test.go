package lockfree

import (
	"slices"
	"testing"
)

// FuzzDeque decodes the fuzz input into a sequence of deque operations, runs them on a
// Deque from one goroutine, and checks every result against a plain slice (front = top,
// the thieves' end; back = bottom, the owner's end). The first byte picks the ring size
// (1 to 8 slots) so Push-full, the overflow hook, wrap-around and PushGrow come up
// quickly. Alone, a Steal never loses a race, so it must never answer Retry.
func FuzzDeque(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 2, 3, 2})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 3, 3, 2, 2, 2})
	f.Add([]byte{1, 0, 0, 0, 0, 5, 0, 0, 5, 0, 3, 0, 2, 2, 2})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 4, 7, 4, 1, 2, 3, 3})
	f.Add([]byte{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 2, 0, 0, 0, 4, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := 1 << (ops[0] % 4)
		ops = ops[1:]
		d := NewDeque[int](capacity)
		var model []*int
		var spilled, modelSpilled []*int
		hook := false
		next := 0
		newItem := func() *int { next++; v := next; return &v }
		for i := 0; i < len(ops); i++ {
			switch op := ops[i] % 6; op {
			case 0: // Push
				it := newItem()
				ok := d.Push(it)
				switch {
				case len(model) < capacity:
					if !ok {
						t.Fatalf("op %d: Push into %d/%d reported full", i, len(model), capacity)
					}
					model = append(model, it)
				case hook:
					if !ok {
						t.Fatalf("op %d: Push with an overflow hook reported false", i)
					}
					modelSpilled = append(modelSpilled, it)
				default:
					if ok {
						t.Fatalf("op %d: Push into a full ring (%d) reported true", i, capacity)
					}
				}
			case 1: // PushGrow
				it := newItem()
				d.PushGrow(it)
				if len(model) == capacity {
					capacity *= 2
				}
				model = append(model, it)
			case 2: // Pop: newest
				got := d.Pop()
				var want *int
				if n := len(model); n > 0 {
					want, model = model[n-1], model[:n-1]
				}
				if got != want {
					t.Fatalf("op %d: Pop = %v, want %v", i, deref(got), deref(want))
				}
			case 3: // Steal: oldest
				got, res := d.Steal()
				if len(model) == 0 {
					if res != Empty || got != nil {
						t.Fatalf("op %d: Steal on empty = %v, %v", i, deref(got), res)
					}
					break
				}
				if res != Success || got != model[0] {
					t.Fatalf("op %d: Steal = %v, %v; want %v, Success", i, deref(got), res, *model[0])
				}
				model = model[1:]
			case 4: // StealHalf into a fresh deque whose size comes from the next byte
				dstCap := 1
				if i+1 < len(ops) {
					i++
					dstCap = 1 << (ops[i] % 4)
				}
				dst := NewDeque[int](dstCap)
				n := d.StealHalf(dst)
				want := min((len(model)+1)/2, dstCap)
				if n != want || dst.Len() != n {
					t.Fatalf("op %d: StealHalf moved %d (dst Len %d), want %d of %d", i, n, dst.Len(), want, len(model))
				}
				moved := model[:n]
				model = model[n:]
				for k := n - 1; k >= 0; k-- {
					if got := dst.Pop(); got != moved[k] {
						t.Fatalf("op %d: dst.Pop = %v, want %v", i, deref(got), *moved[k])
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
				t.Fatalf("op %d: Len %d, IsEmpty %v, Cap %d; model holds %d in %d", i, d.Len(), d.IsEmpty(), d.Cap(), len(model), capacity)
			}
			if !slices.Equal(spilled, modelSpilled) {
				t.Fatalf("op %d: overflow hook got %d items, want %d", i, len(spilled), len(modelSpilled))
			}
		}
		// Drain from both ends alternately; the deque must hold exactly the model.
		for k := 0; len(model) > 0; k++ {
			if k%2 == 0 {
				if got, res := d.Steal(); res != Success || got != model[0] {
					t.Fatalf("drain: Steal = %v, %v; want %v", deref(got), res, *model[0])
				}
				model = model[1:]
			} else {
				if got := d.Pop(); got != model[len(model)-1] {
					t.Fatalf("drain: Pop = %v, want %v", deref(got), *model[len(model)-1])
				}
				model = model[:len(model)-1]
			}
		}
		if d.Pop() != nil {
			t.Fatal("drain: deque holds more than the model")
		}
	})
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// FuzzTreiberStack runs a decoded sequence of Push, Pop, PopAll and Empty against a
// slice used as a stack.
func FuzzTreiberStack(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3})
	f.Add([]byte{1, 2, 3, 0, 4, 1, 0, 8, 0, 12, 2, 1})
	f.Add([]byte{0, 4, 8, 12, 16, 2, 2, 1, 1, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var s TreiberStack[byte]
		var model []byte
		for i, b := range ops {
			switch b % 4 {
			case 0: // Push the byte itself
				s.Push(b)
				model = append(model, b)
			case 1:
				v, ok := s.Pop()
				if n := len(model); n > 0 {
					if !ok || v != model[n-1] {
						t.Fatalf("op %d: Pop = %d, %v; want %d", i, v, ok, model[n-1])
					}
					model = model[:n-1]
				} else if ok || v != 0 {
					t.Fatalf("op %d: Pop on empty = %d, %v", i, v, ok)
				}
			case 2: // PopAll: oldest first, i.e. the model as it stands
				got := s.PopAll()
				if !slices.Equal(got, model) || (len(model) == 0 && got != nil) {
					t.Fatalf("op %d: PopAll = %v, want %v", i, got, model)
				}
				model = model[:0]
			case 3:
				if s.Empty() != (len(model) == 0) {
					t.Fatalf("op %d: Empty = %v with %d values", i, s.Empty(), len(model))
				}
			}
		}
	})
}
