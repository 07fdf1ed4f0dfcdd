package blitz

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

var fibJob Job[int, int]

// fib forks at every call (no cutoff): the fork/join stress shape.
func fib(t *Task, n int) int {
	if n < 2 {
		return n
	}
	f := fibJob.Fork(t, fib, n-1)
	b := fib(t, n-2)
	return f.Join(t) + b
}

func fibSeq(n int) int {
	if n < 2 {
		return n
	}
	return fibSeq(n-1) + fibSeq(n-2)
}

// node is a binary tree for the tree-sum shapes.
type node struct {
	val         int
	left, right *node
}

// buildTree makes a tree of n nodes; skew in [0,1) sends that share of the remaining
// nodes to the left, so 0.5 is balanced and 0.9 a deep, steal-heavy shape.
func buildTree(n int, skew float64, v *int) *node {
	if n == 0 {
		return nil
	}
	*v++
	nd := &node{val: *v % 1000}
	rest := n - 1
	l := int(float64(rest) * skew)
	nd.left = buildTree(l, skew, v)
	nd.right = buildTree(rest-l, skew, v)
	return nd
}

func sumSeq(n *node) int {
	if n == nil {
		return 0
	}
	return n.val + sumSeq(n.left) + sumSeq(n.right)
}

var sumJob Job[*node, int]

func sumPar(t *Task, n *node) int {
	if n == nil {
		return 0
	}
	f := sumJob.Fork(t, sumPar, n.right)
	l := sumPar(t, n.left)
	return n.val + l + f.Join(t)
}

func newPool(tb testing.TB, cfg Config) *Pool {
	tb.Helper()
	p, err := NewPool(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// After a failure (say a lost wake-up left a job stuck), Close would wait for
		// the stuck work forever: leak the pool instead, so the test fails, not hangs.
		if !tb.Failed() {
			p.Close()
		}
	})
	return p
}

// within fails the test if f does not return within d, instead of hanging.
func within(tb testing.TB, d time.Duration, what string, f func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		tb.Fatalf("%s did not finish within %v; goroutines:\n%s", what, d, buf)
	}
}

// waitGoroutines waits until the goroutine count is back to at most base.
func waitGoroutines(tb testing.TB, base int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			tb.Fatalf("goroutines: %d, baseline %d; leaked:\n%s", runtime.NumGoroutine(), base, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

var fibSJob Job[int, int]

// fibS is fib with the Stolen idiom: a fork nobody stole is run by a direct call.
func fibS(t *Task, n int) int {
	if n < 2 {
		return n
	}
	f := fibSJob.Fork(t, fibS, n-1)
	b := fibS(t, n-2)
	a, ok := f.Stolen(t)
	if !ok {
		a = fibS(t, n-1)
	}
	return a + b
}

var sumSJob Job[*node, int]

func sumParS(t *Task, n *node) int {
	if n == nil {
		return 0
	}
	f := sumSJob.Fork(t, sumParS, n.right)
	l := sumParS(t, n.left)
	r, ok := f.Stolen(t)
	if !ok {
		r = sumParS(t, n.right)
	}
	return n.val + l + r
}

// checkIdleTasks checks the bookkeeping of every guest Task of an idle pool (and of
// the workers, once they are asleep): no unjoined frames, no eager nesting, and the
// fork gate back at its initial value.
func checkIdleTasks(tb testing.TB, p *Pool) {
	tb.Helper()
	want := int64(p.split) + eagerBonus
	check := func(what string, k *Task) {
		if k.depth != 0 || k.nest != 0 {
			tb.Fatalf("%s: depth=%d nest=%d after all joins, want 0 0", what, k.depth, k.nest)
		}
		if g := atomic.LoadInt64(&k.gate); g != want {
			tb.Fatalf("%s: gate=%d after all joins, want %d (split %d + bonus)", what, g-eagerBonus, want-eagerBonus, p.split)
		}
	}
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	for i, g := range p.free {
		check(fmt.Sprintf("guest %d", i), g)
	}
	for i := range int(p.nPinned.Load()) {
		if g := p.pinned[i].Load(); !g.inUse.Load() {
			check(fmt.Sprintf("pinned guest %d", i), g)
		}
	}
}
