package tsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/tsync"
)

func exampleRuntime() *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	return rt
}

// Tasks and a plain goroutine share one Mutex: tasks await LockAsync, the goroutine calls
// Lock. The guard unlocks; unlocking it twice would panic.
func ExampleMutex() {
	rt := exampleRuntime()
	defer rt.Close()
	var mu tsync.Mutex
	total := 0
	var hs []blitzio.JoinHandle[int]
	for range 4 {
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			for range 100 {
				g := blitzio.Await(co, mu.LockAsync())
				total++
				g.Unlock()
			}
			return 0
		})))
	}
	for range 100 {
		g := mu.Lock() // a plain goroutine blocks instead
		total++
		g.Unlock()
	}
	for _, h := range hs {
		h.Wait()
	}
	g := mu.Lock()
	fmt.Println(total)
	g.Unlock()
	// Output: 500
}

// MutexOf owns the value it protects, like Tokio's Mutex<T>.
func ExampleMutexOf() {
	m := tsync.NewMutexOf([]string{})
	g := m.Lock()
	*g.Value() = append(*g.Value(), "a", "b")
	g.Unlock()
	if g, ok := m.TryLock(); ok {
		fmt.Println(*g.Value())
		g.Unlock()
	}
	// Output: [a b]
}

// A Semaphore bounds concurrency: at most 2 of the 6 tasks run their critical part at
// once. Release returns the permit; Close fails every later acquire.
func ExampleSemaphore() {
	rt := exampleRuntime()
	defer rt.Close()
	sem := tsync.NewSemaphore(2)
	var mu sync.Mutex
	running, peak := 0, 0
	var hs []blitzio.JoinHandle[error]
	for range 6 {
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
			r := blitzio.Await(co, sem.AcquireAsync(1))
			if r.Err != nil {
				return r.Err
			}
			permit := r.Value
			defer permit.Release()
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			blitzio.Await(co, blitzio.Sleep(time.Millisecond))
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})))
	}
	for _, h := range hs {
		h.Wait()
	}
	// Whether two of them overlapped depends on the scheduling (a loaded machine may run
	// them one after the other); the bound does not.
	fmt.Println("at most 2 at once:", peak <= 2)
	sem.Close()
	_, err := sem.Acquire(1)
	fmt.Println(errors.Is(err, tsync.ErrSemaphoreClosed))
	// Output:
	// at most 2 at once: true
	// true
}

// NotifyOne stores a permit when nobody waits, so a notification sent before the wait
// is not lost.
func ExampleNotify() {
	rt := exampleRuntime()
	defer rt.Close()
	var ready tsync.Notify
	ready.NotifyOne() // nobody waits yet: stored
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) string {
		blitzio.Await(co, ready.Notified())
		return "notified"
	}))
	v, _ := h.Wait()
	fmt.Println(v)
	// Output: notified
}

// Every generation of a Barrier has exactly one leader.
func ExampleBarrier() {
	rt := exampleRuntime()
	defer rt.Close()
	b := tsync.NewBarrier(3)
	var hs []blitzio.JoinHandle[bool]
	for range 3 {
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) bool {
			return blitzio.Await(co, b.WaitAsync()).IsLeader
		})))
	}
	leaders := 0
	for _, h := range hs {
		if v, _ := h.Wait(); v {
			leaders++
		}
	}
	fmt.Println("leaders:", leaders)
	// Output: leaders: 1
}

// The first caller's initialiser runs; a failed one lets the next caller try.
func ExampleOnceCell() {
	rt := exampleRuntime()
	defer rt.Close()
	var cfg tsync.OnceCell[string]
	fail := cfg.GetOrTryInit(func() blitzio.Future[blitzio.Result[string]] {
		return blitzio.Ready(blitzio.Result[string]{Err: errors.New("config server down")})
	})
	r, _ := blitzio.BlockOn(rt, blitzio.Future[blitzio.Result[string]](fail))
	fmt.Println("first:", r.Err)
	v, _ := blitzio.BlockOn(rt, blitzio.Future[string](cfg.GetOrInit(func() blitzio.Future[string] {
		return blitzio.Ready("loaded")
	})))
	fmt.Println("second:", v)
	// Output:
	// first: config server down
	// second: loaded
}

// Cancelling a parent token cancels its children; a task waits with Cancelled, a
// goroutine with Done or through the token's context.Context.
func ExampleCancelToken() {
	rt := exampleRuntime()
	defer rt.Close()
	root := tsync.NewCancelToken()
	child := root.Child()
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) string {
		blitzio.Await(co, child.Cancelled())
		return "task stopped"
	}))
	ctx := child.Context()
	root.Cancel()
	v, _ := h.Wait()
	<-ctx.Done()
	fmt.Println(v, "/", ctx.Err())
	// Output: task stopped / context canceled
}

// FromContext turns a context's cancellation into a token.
func ExampleFromContext() {
	ctx, cancel := context.WithCancel(context.Background())
	tok, stop := tsync.FromContext(ctx)
	defer stop()
	cancel()
	tok.Wait()
	fmt.Println(tok.IsCancelled())
	// Output: true
}
