package blitzio_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/tsync"
)

func newRT5(t *testing.T) *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func wait5[T any](t *testing.T, h blitzio.JoinHandle[T], msg string) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := h.Wait(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("hang: %s", msg)
		panic("unreachable")
	}
}

// A blitzio.Join2 whose second child panics (or Goexits) while the first, an blitzio.Async function,
// holds a tsync lock: the task is dropped, the blitzio.Async function unwinds and its deferred
// Unlock gives the lock back.
func TestHostile5JoinChildPanicReleasesLock(t *testing.T) {
	rt := newRT5(t)
	for _, goexit := range []bool{false, true} {
		var mu tsync.Mutex
		locked := make(chan struct{})
		holder := blitzio.Async(func(co *blitzio.Co) int {
			g := blitzio.Await[tsync.MutexGuard](co, mu.LockAsync())
			defer g.Unlock()
			close(locked)
			blitzio.Await(co, blitzio.Pending[int]())
			return 1
		})
		bad := blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
			select {
			case <-locked:
			default:
				cx.Yield()
				return 0, false
			}
			if goexit {
				runtime.Goexit()
			}
			panic("boom")
		})
		h := blitzio.Spawn(rt, blitzio.Join2(holder, blitzio.Future[int](bad)))
		_, err := wait5(t, h, "blitzio.Join2 with a panicking child")
		var pe *blitzio.PanicError
		if goexit && !errors.Is(err, blitzio.ErrGoexit) || !goexit && !errors.As(err, &pe) {
			t.Fatalf("goexit=%v: err %v", goexit, err)
		}
		if g, ok := mu.TryLock(); !ok {
			t.Fatalf("goexit=%v: the lock held by the dropped sibling was not given back", goexit)
		} else {
			g.Unlock()
		}
	}
}
