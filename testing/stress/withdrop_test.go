package stress

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestWithDropDropsTheWrappedFuture: a future made by blitzio.WithDrop(f, drop) and
// then dropped (its task aborted) must drop f too. Found while writing the handler
// abort scenario: a connection handler written as an Async function and wrapped with
// WithDrop (to close its connection even when the task is aborted before its first
// poll, when the function has not run and so has deferred nothing) loses the Async
// future's own Drop. withDrop embeds Future[T], whose method set has no Drop, and its
// Drop calls only the hook, so an Async function suspended in an Await is never
// unwound: its deferred calls never run and its coroutine goroutine is blocked forever
// (a leak the runtime's Close does not reclaim either: the task is gone). The same
// holds for any Dropper wrapped so: a Sleep's timer entry stays in the wheel, a
// JoinHandle's waiter stays registered. Fixed: withDrop.Drop now drops the wrapped
// future after the hook.
func TestWithDropDropsTheWrappedFuture(t *testing.T) {
	leakCheck(t)
	rt, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var suspended, unwound, hooked atomic.Bool
	inner := blitzio.Async(func(co *blitzio.Co) struct{} {
		defer unwound.Store(true)
		suspended.Store(true)
		blitzio.Await(co, blitzio.Sleep(time.Hour))
		return struct{}{}
	})
	h := blitzio.Spawn(rt, blitzio.WithDrop(inner, func() { hooked.Store(true) }))
	waitUntil(t, "the Async function to suspend in its Await", 10*time.Second, suspended.Load)
	h.Abort()
	if _, err, ok := waitHandle(h, 10*time.Second); !ok || !errors.Is(err, blitzio.ErrCancelled) {
		t.Fatalf("aborted task: resolved %v, %v; want ErrCancelled", ok, err)
	}
	if !hooked.Load() {
		t.Fatal("WithDrop's hook did not run when its task was aborted")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !unwound.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !unwound.Load() {
		t.Fatalf("the task wrapped by WithDrop was aborted and its hook ran, but the Async future inside was never dropped: "+
			"its function is still suspended in Await (its deferred calls have not run, its goroutine is leaked); goroutines:\n%s", stacks())
	}
}
