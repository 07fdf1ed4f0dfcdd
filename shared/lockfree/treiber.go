package lockfree

import "sync/atomic"

type treiberNode[T any] struct {
	value T
	next  *treiberNode[T] // immutable once the node is published
}

// TreiberStack is a lock-free LIFO stack (Treiber, 1986). Pools use it for work injected
// by goroutines outside the pool. Every method may be called from any goroutine; the
// zero value is an empty stack.
//
// ABA, the classic hazard of this algorithm (a node popped and pushed again between a
// popper's read of head and its CAS), cannot happen here: Push always allocates a fresh
// node and nodes are never reused, and the garbage collector does not free a node while
// any goroutine still holds a pointer to it. A node's next field is written only before
// the CAS that publishes it, so a popper reading it races with nobody.
type TreiberStack[T any] struct {
	head atomic.Pointer[treiberNode[T]]
}

// Push adds v on top. It allocates one node.
func (s *TreiberStack[T]) Push(v T) {
	n := &treiberNode[T]{value: v}
	for {
		h := s.head.Load()
		n.next = h
		if s.head.CompareAndSwap(h, n) {
			return
		}
	}
}

// Pop removes and returns the top value; ok is false when the stack is empty. It never
// blocks.
func (s *TreiberStack[T]) Pop() (v T, ok bool) {
	for {
		h := s.head.Load()
		if h == nil {
			return v, false
		}
		if s.head.CompareAndSwap(h, h.next) {
			return h.value, true
		}
	}
}

// PopAll empties the stack with one atomic swap and returns what it held, oldest first
// (the order of the Pushes that happened before the swap). It returns nil when the stack
// was empty.
func (s *TreiberStack[T]) PopAll() []T {
	h := s.head.Swap(nil)
	if h == nil {
		return nil
	}
	n := 0
	for p := h; p != nil; p = p.next {
		n++
	}
	out := make([]T, n)
	for p := h; p != nil; p = p.next {
		n--
		out[n] = p.value
	}
	return out
}

// Empty reports whether the stack held no value when it looked.
func (s *TreiberStack[T]) Empty() bool { return s.head.Load() == nil }
