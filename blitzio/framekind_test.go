package blitzio

import (
	"runtime"
	"testing"
)

// TestFrameKindCache: the cached verdict for every frame of a worker's stack, of an Async
// function's coroutine and of a plain goroutine equals the one from the frame's name,
// on the first look (filling the cache) and on later ones (served from it); and the
// goroutine kinds come out right through the cache.
func TestFrameKindCache(t *testing.T) {
	stack := func() []uintptr {
		pcs := make([]uintptr, 256)
		return pcs[:runtime.Callers(1, pcs)]
	}
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	type seen struct {
		pcs  []uintptr
		kind goroutineKind
	}
	onTask, err := BlockOn(rt, Spawn(rt, PollFn(func(*Context) (seen, bool) {
		return seen{stack(), onRuntimeGoroutine()}, true
	})))
	if err != nil || onTask.Err != nil {
		t.Fatal(err, onTask.Err)
	}
	inAsync, err := BlockOn(rt, Spawn(rt, Async(func(*Co) seen {
		return seen{stack(), onRuntimeGoroutine()}
	})))
	if err != nil || inAsync.Err != nil {
		t.Fatal(err, inAsync.Err)
	}
	plain := seen{stack(), onRuntimeGoroutine()}
	for _, c := range []struct {
		name string
		s    seen
		want goroutineKind
	}{{"task", onTask.Value, onWorker}, {"Async", inAsync.Value, onCoroutine}, {"plain", plain, onOther}} {
		if c.s.kind != c.want {
			t.Errorf("%s: onRuntimeGoroutine = %d, want %d", c.name, c.s.kind, c.want)
		}
		for round := range 3 {
			for _, pc := range c.s.pcs {
				if got, want := frameKind(pc), nameFrameKind(pc); got != want {
					t.Fatalf("%s, look %d: frameKind(%#x) = %d, by name %d", c.name, round, pc, got, want)
				}
			}
		}
	}
	// Served from the cache now: the same answers.
	if k := onRuntimeGoroutine(); k != onOther {
		t.Errorf("plain goroutine, cached: %d, want onOther", k)
	}
}
