package tsync

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestRwLockTryAndMisuse(t *testing.T) {
	var l RwLock
	r1, ok1 := l.TryRead()
	r2, ok2 := l.TryRead()
	if !ok1 || !ok2 {
		t.Fatal("two readers refused")
	}
	if _, ok := l.TryWrite(); ok {
		t.Fatal("writer admitted beside readers")
	}
	r1.Unlock()
	r2.Unlock()
	expectPanic(t, "more times than read holds", r2.Unlock)
	w, ok := l.TryWrite()
	if !ok {
		t.Fatal("writer refused on a free lock")
	}
	if _, ok := l.TryRead(); ok {
		t.Fatal("reader admitted beside a writer")
	}
	stale := w
	w.Unlock()
	expectPanic(t, "unlocked twice", w.Unlock)
	w2, _ := l.TryWrite()
	expectPanic(t, "unlocked twice", stale.Unlock)
	w2.Unlock()
	expectPanic(t, "zero RwLockReadGuard", RwLockReadGuard{}.Unlock)
	expectPanic(t, "zero RwLockWriteGuard", RwLockWriteGuard{}.Unlock)
	var nl *RwLock
	expectPanic(t, "nil *RwLock", func() { nl.ReadAsync() })
}

// TestRwLockFairness: a writer queued behind readers blocks later readers (writers do not
// starve), and when it unlocks, every reader queued before the next writer enters at once
// (readers do not starve either).
func TestRwLockFairness(t *testing.T) {
	tc := newTestCx()
	var l RwLock
	r0, _ := l.TryRead()
	w1 := l.WriteAsync()
	if _, ok := w1.Poll(tc.cx); ok {
		t.Fatal("writer beside a reader")
	}
	if _, ok := l.TryRead(); ok {
		t.Fatal("TryRead overtook a queued writer")
	}
	ra, rb := l.ReadAsync(), l.ReadAsync()
	w2 := l.WriteAsync()
	rc := l.ReadAsync()
	for _, f := range []blitzio.Future[RwLockReadGuard]{ra, rb} {
		if _, ok := f.Poll(tc.cx); ok {
			t.Fatal("reader overtook a queued writer")
		}
	}
	w2.Poll(tc.cx)
	rc.Poll(tc.cx)
	r0.Unlock()
	g1, ok := w1.Poll(tc.cx)
	if !ok {
		t.Fatal("writer not admitted when the reader left")
	}
	g1.Unlock()
	ga, oka := ra.Poll(tc.cx)
	gb, okb := rb.Poll(tc.cx)
	if !oka || !okb {
		t.Fatal("readers queued before the next writer were not admitted together")
	}
	if _, ok := rc.Poll(tc.cx); ok {
		t.Fatal("reader behind the second writer overtook it")
	}
	ga.Unlock()
	if _, ok := w2.Poll(tc.cx); ok {
		t.Fatal("writer admitted beside a reader")
	}
	gb.Unlock()
	g2, ok := w2.Poll(tc.cx)
	if !ok {
		t.Fatal("second writer")
	}
	g2.Unlock()
	if g, ok := rc.Poll(tc.cx); !ok {
		t.Fatal("last reader")
	} else {
		g.Unlock()
	}
}

func TestRwLockDropAtEveryAwaitPoint(t *testing.T) {
	tc := newTestCx()
	t.Run("queued writer dropped admits the readers behind it", func(t *testing.T) {
		var l RwLock
		r0, _ := l.TryRead()
		w := l.WriteAsync()
		w.Poll(tc.cx)
		r := l.ReadAsync()
		r.Poll(tc.cx)
		w.Drop()
		if _, ok := r.Poll(tc.cx); !ok {
			t.Fatal("reader stuck behind a dropped writer")
		}
		r0.Unlock()
	})
	t.Run("granted writer dropped passes on", func(t *testing.T) {
		var l RwLock
		w0, _ := l.TryWrite()
		w := l.WriteAsync()
		w.Poll(tc.cx)
		r := l.ReadAsync()
		r.Poll(tc.cx)
		w0.Unlock() // grants w
		w.Drop()
		g, ok := r.Poll(tc.cx)
		if !ok {
			t.Fatal("write hold lost with a dropped waiter")
		}
		g.Unlock()
		if _, ok := l.TryWrite(); !ok {
			t.Fatal("lock not free")
		}
	})
	t.Run("granted reader dropped passes on", func(t *testing.T) {
		var l RwLock
		w0, _ := l.TryWrite()
		r := l.ReadAsync()
		r.Poll(tc.cx)
		w := l.WriteAsync()
		w.Poll(tc.cx)
		w0.Unlock() // grants r
		r.Drop()
		g, ok := w.Poll(tc.cx)
		if !ok {
			t.Fatal("read hold of a dropped reader not released")
		}
		g.Unlock()
	})
}

func TestRwLockWaitAllocatesNothing(t *testing.T) {
	tc := newTestCx()
	var l RwLock
	w0, _ := l.TryWrite()
	f := l.ReadAsync()
	f.Poll(tc.cx)
	if a := testing.AllocsPerRun(100, func() { f.Poll(tc.cx) }); a != 0 {
		t.Fatalf("re-polling a waiting read: %v allocs", a)
	}
	w0.Unlock()
	g, _ := f.Poll(tc.cx)
	g.Unlock()
}

// TestRwLockStress: readers and writers (tasks on two runtimes, goroutines, some
// cancelling) check the invariant inside their critical sections: a writer is alone, and
// readers never see a writer.
func TestRwLockStress(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	var l RwLock
	var readers, writers, bad atomic.Int64
	data := 0
	per := stressScale(500)
	read := func() {
		readers.Add(1)
		if writers.Load() != 0 {
			bad.Add(1)
		}
		_ = data
		readers.Add(-1)
	}
	write := func() {
		if writers.Add(1) != 1 || readers.Load() != 0 {
			bad.Add(1)
		}
		data++
		writers.Add(-1)
	}
	var hs []blitzio.JoinHandle[int]
	for i := range 24 {
		rt := rt1
		if i%3 == 0 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			rng := rand.New(rand.NewPCG(uint64(i), 3))
			for j := 0; j < per; j++ {
				if i%4 == 0 {
					if rng.IntN(3) == 0 {
						r := blitzio.Await(co, blitzio.Timeout(time.Duration(rng.IntN(100))*time.Microsecond,
							blitzio.Future[RwLockWriteGuard](l.WriteAsync())))
						if r.Err == nil {
							write()
							r.Value.Unlock()
						}
						continue
					}
					g := blitzio.Await(co, l.WriteAsync())
					write()
					g.Unlock()
				} else {
					g := blitzio.Await(co, l.ReadAsync())
					read()
					if j%8 == 0 {
						blitzio.Await(co, blitzio.YieldNow())
					}
					g.Unlock()
				}
			}
			return i
		})))
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				if (i+j)%5 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 50*time.Microsecond)
					g, err := l.WriteContext(ctx)
					cancel()
					if err == nil {
						write()
						g.Unlock()
					} else if !errors.Is(err, context.DeadlineExceeded) {
						t.Error(err)
					}
					continue
				}
				g := l.Read()
				read()
				g.Unlock()
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d exclusion violations", bad.Load())
	}
	if _, ok := l.TryWrite(); !ok {
		t.Fatal("lock not free at the end: a hand-off was lost")
	}
}
