package tsync

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestCancelTokenTree(t *testing.T) {
	tc := newTestCx()
	var root CancelToken // zero value is a root
	a := root.Child()
	b := a.Child()
	c := root.Child()
	fb := b.Cancelled()
	if _, ok := fb.Poll(tc.cx); ok {
		t.Fatal("ready before cancel")
	}
	a.Cancel()
	if !a.IsCancelled() || !b.IsCancelled() || c.IsCancelled() || root.IsCancelled() {
		t.Fatal("cancelling a cancelled the wrong nodes")
	}
	if _, ok := fb.Poll(tc.cx); !ok || tc.wakes.Load() != 1 {
		t.Fatal("grandchild's waiter not woken")
	}
	// a left root's children: only c remains.
	if root.children != c || c.nextSib != nil {
		t.Fatal("a cancelled child stayed in its parent's list")
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed")
	}
	if b.Context().Err() != context.Canceled {
		t.Fatal("Context().Err()")
	}
	late := a.Child()
	if !late.IsCancelled() {
		t.Fatal("child of a cancelled token not cancelled")
	}
	root.Cancel()
	root.Cancel() // idempotent
	if !c.IsCancelled() {
		t.Fatal("c")
	}
	var nt *CancelToken
	expectPanic(t, "nil *CancelToken", func() { nt.Cancel() })
}

// TestCancelTokenDeepAndWide: a 100,000-deep chain and a 100,000-wide fan cancel without
// recursion, every waiter woken.
func TestCancelTokenDeepAndWide(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	tc := newTestCx()
	root := NewCancelToken()
	n := stressScale(100_000)
	tok := root
	var fs []*CancelledFuture
	for range n {
		tok = tok.Child()
		w := root.Child()
		f, g := tok.Cancelled(), w.Cancelled()
		f.Poll(tc.cx)
		g.Poll(tc.cx)
		fs = append(fs, f, g)
	}
	root.Cancel()
	if tc.wakes.Load() != int64(2*n) {
		t.Fatalf("%d wakes, want %d", tc.wakes.Load(), 2*n)
	}
	for _, f := range fs {
		if _, ok := f.Poll(tc.cx); !ok {
			t.Fatal("waiter not released")
		}
	}
	if !tok.IsCancelled() {
		t.Fatal("deepest child not cancelled")
	}
}

func TestCancelTokenDropAndAllocs(t *testing.T) {
	tc := newTestCx()
	tok := NewCancelToken()
	f := tok.Cancelled()
	f.Poll(tc.cx)
	if a := testing.AllocsPerRun(100, func() { f.Poll(tc.cx) }); a != 0 {
		t.Fatalf("re-poll: %v allocs", a)
	}
	f.Drop()
	if !tok.waiters.empty() {
		t.Fatal("dropped waiter still listed")
	}
	tok.Cancel()
	expectPanic(t, "after Drop", func() { f.Poll(tc.cx) })
}

func TestCancelTokenContextBridges(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	// Token to context.
	tok := NewCancelToken()
	ctx := tok.Context()
	if ctx.Err() != nil {
		t.Fatal("Err before cancel")
	}
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	go tok.Cancel()
	<-child.Done()
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("derived context: %v", child.Err())
	}
	// Context to token.
	parent, pcancel := context.WithCancel(context.Background())
	ft, stop := FromContext(parent)
	pcancel()
	ft.Wait()
	stop()
	// stop cancels the token and releases the registration.
	p2, c2 := context.WithCancel(context.Background())
	defer c2()
	ft2, stop2 := FromContext(p2)
	stop2()
	if !ft2.IsCancelled() {
		t.Fatal("stop did not cancel the token")
	}
	// WaitContext.
	t3 := NewCancelToken()
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer wcancel()
	if err := t3.WaitContext(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	t3.Cancel()
	if err := t3.WaitContext(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCancelTokenStress: tasks on two runtimes and goroutines wait on random nodes of a
// tree (some with Select against a short sleep, dropping the wait) while the tree is
// cancelled from several places at once; every waiter ends.
func TestCancelTokenStress(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	for round := range stressScale(100) {
		root := NewCancelToken()
		nodes := []*CancelToken{root}
		for i := 1; i < 64; i++ {
			nodes = append(nodes, nodes[(i*7)%i].Child())
		}
		var hs []blitzio.JoinHandle[int]
		for i := range 32 {
			rt := rt1
			if i%2 == 0 {
				rt = rt2
			}
			tok := nodes[i*2]
			hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
				for {
					s := blitzio.Await(co, blitzio.Select2(blitzio.Future[struct{}](tok.Cancelled()), blitzio.Future[struct{}](blitzio.Sleep(time.Duration(i%3)*50*time.Microsecond))))
					if s.Index == 0 {
						return i
					}
				}
			})))
		}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-nodes[i*8+1].Done()
			}()
		}
		go nodes[1].Cancel()
		go nodes[5].Cancel()
		root.Cancel()
		waitAll(t, hs)
		wg.Wait()
		for i, n := range nodes {
			if !n.IsCancelled() {
				t.Fatalf("round %d: node %d not cancelled", round, i)
			}
		}
	}
}
