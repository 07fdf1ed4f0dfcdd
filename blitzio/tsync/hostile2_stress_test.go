package tsync

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile2PrimsTwoRuntimesAndGoroutinesRandomTimeouts hammers a Mutex, a Semaphore,
// an RwLock and a Notify at once from tasks on two runtimes (each wait wrapped in a
// Timeout of random length, so waiters are dropped at random points, woken or not) and
// from plain goroutines using the Context forms with random deadlines. It checks mutual
// exclusion and the permit bound, and, at the end, that nothing was lost: every permit is
// back, the locks are free and nobody is left queued.
func TestHostile2PrimsTwoRuntimesAndGoroutinesRandomTimeouts(t *testing.T) {
	const permits = 3
	var (
		m        Mutex
		l        RwLock
		n        Notify
		inMutex  atomic.Int32
		inSem    atomic.Int32
		writers  atomic.Int32
		readers  atomic.Int32
		progress atomic.Int64
		bad      atomic.Value
	)
	s := NewSemaphore(permits)
	fail := func(msg string) { bad.CompareAndSwap(nil, msg) }
	stop := watchdogProgress(t, 20*time.Second, progress.Load, func() string {
		return "mutex " + m.debugState()
	})
	defer stop()
	rt1, rt2 := newRT(t, 2), newRT(t, 3)
	iters := stressScale(4000)
	dur := func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(200)) * time.Microsecond }

	task := func(seed uint64) blitzio.Future[struct{}] {
		return blitzio.Async(func(co *blitzio.Co) struct{} {
			r := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < iters; i++ {
				progress.Add(1)
				switch r.IntN(4) {
				case 0:
					res := blitzio.Await(co, blitzio.Timeout(dur(r), blitzio.Future[MutexGuard](m.LockAsync())))
					if res.Err == nil {
						if inMutex.Add(1) != 1 {
							fail("two holders of the Mutex")
						}
						blitzio.Await(co, blitzio.YieldNow())
						inMutex.Add(-1)
						res.Value.UnlockFrom(co.Context())
					}
				case 1:
					k := int64(1 + r.IntN(permits))
					res := blitzio.Await(co, blitzio.TryTimeout(dur(r), blitzio.Future[blitzio.Result[Permit]](s.AcquireAsync(k))))
					if res.Err == nil {
						if inSem.Add(int32(k)) > permits {
							fail("more permits out than the semaphore holds")
						}
						blitzio.Await(co, blitzio.YieldNow())
						inSem.Add(-int32(k))
						p := res.Value
						p.ReleaseFrom(co.Context())
					}
				case 2:
					if r.IntN(2) == 0 {
						res := blitzio.Await(co, blitzio.Timeout(dur(r), blitzio.Future[RwLockWriteGuard](l.WriteAsync())))
						if res.Err == nil {
							if writers.Add(1) != 1 || readers.Load() != 0 {
								fail("writer not alone")
							}
							writers.Add(-1)
							res.Value.Unlock()
						}
					} else {
						res := blitzio.Await(co, blitzio.Timeout(dur(r), blitzio.Future[RwLockReadGuard](l.ReadAsync())))
						if res.Err == nil {
							readers.Add(1)
							if writers.Load() != 0 {
								fail("reader with a writer")
							}
							blitzio.Await(co, blitzio.YieldNow())
							readers.Add(-1)
							res.Value.Unlock()
						}
					}
				case 3:
					if r.IntN(2) == 0 {
						n.NotifyOneFrom(co.Context())
					} else {
						blitzio.Await(co, blitzio.Timeout(dur(r), blitzio.Future[struct{}](n.Notified())))
					}
				}
			}
			return struct{}{}
		})
	}
	var hs []blitzio.JoinHandle[struct{}]
	for i := 0; i < 24; i++ {
		rt := rt1
		if i%2 == 1 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, task(uint64(i))))
	}
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(1000+g), 2))
			for i := 0; i < iters/2; i++ {
				progress.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), dur(r))
				switch r.IntN(3) {
				case 0:
					if g, err := m.LockContext(ctx); err == nil {
						if inMutex.Add(1) != 1 {
							fail("two holders of the Mutex (goroutine)")
						}
						inMutex.Add(-1)
						g.Unlock()
					}
				case 1:
					k := int64(1 + r.IntN(permits))
					if p, err := s.AcquireContext(ctx, k); err == nil {
						if inSem.Add(int32(k)) > permits {
							fail("more permits out than the semaphore holds (goroutine)")
						}
						inSem.Add(-int32(k))
						p.Release()
					}
				case 2:
					_ = n.WaitContext(ctx)
				}
				cancel()
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}
	if got := s.Available(); got != permits {
		t.Fatalf("semaphore has %d permits at the end, want %d", got, permits)
	}
	if g, ok := m.TryLock(); !ok {
		t.Fatalf("mutex not free at the end: %s", m.debugState())
	} else {
		g.Unlock()
	}
	if g, ok := l.TryWrite(); !ok {
		t.Fatal("rwlock not free at the end")
	} else {
		g.Unlock()
	}
	if mutexQueued(&m) != 0 {
		t.Fatalf("mutex queue not empty: %s", m.debugState())
	}
}
