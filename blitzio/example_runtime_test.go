package blitzio_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// Abort cancels a task at its next scheduling point; its handle reports ErrCancelled,
// and an Async function's deferred calls run.
func ExampleJoinHandle_Abort() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()

	started := make(chan struct{})
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		defer fmt.Println("cleanup ran")
		close(started)
		blitzio.Await(co, blitzio.Sleep(time.Hour))
		return 1
	}))
	<-started
	h.Abort()
	_, err := h.Wait()
	fmt.Println(errors.Is(err, blitzio.ErrCancelled))
	// Output:
	// cleanup ran
	// true
}

// A JoinHandle is a future: a task awaits its children's handles (any number of tasks
// and goroutines may await copies of one handle).
func ExampleJoinHandle_await() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()

	parent := blitzio.Async(func(co *blitzio.Co) int {
		var hs []blitzio.JoinHandle[int]
		for i := 1; i <= 3; i++ {
			hs = append(hs, blitzio.Spawn(co, blitzio.Lazy(func() int { return i * i })))
		}
		sum := 0
		for _, h := range hs {
			r := blitzio.Await(co, h)
			sum += r.Value
		}
		return sum
	})
	fmt.Println(blitzio.Spawn(rt, parent).Wait())
	// Output: 14 <nil>
}

// Shutdown with a deadline: every task is cancelled and dropped, and Shutdown returns
// once every goroutine the runtime started has exited, or ctx.Err() at the deadline.
func ExampleRuntime_Shutdown() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	h := blitzio.Spawn(rt, blitzio.Sleep(time.Hour))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(rt.Shutdown(ctx))
	_, err := h.Wait()
	fmt.Println(errors.Is(err, blitzio.ErrCancelled))
	// Output:
	// <nil>
	// true
}

// flag is a custom future woken from a plain goroutine: Poll records the task's Waker,
// and Set calls it. (A Completion does this for one value.)
type flag struct {
	mu    sync.Mutex
	set   bool
	waker blitzio.Waker
}

func (f *flag) Poll(cx *blitzio.Context) (struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set {
		return struct{}{}, true
	}
	f.waker = cx.Waker() // the latest waker: a task may move between workers
	return struct{}{}, false
}

func (f *flag) Set() {
	f.mu.Lock()
	f.set = true
	w := f.waker
	f.mu.Unlock()
	w.Wake() // outside the lock; waking a task from any goroutine is safe
}

func ExampleWaker() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()

	f := &flag{}
	h := blitzio.Spawn(rt, blitzio.Future[struct{}](f))
	go func() {
		time.Sleep(time.Millisecond)
		f.Set()
	}()
	_, err := h.Wait()
	fmt.Println("woken", err)
	// Output: woken <nil>
}
