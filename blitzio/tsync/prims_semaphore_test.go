package tsync

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestSemaphoreTryAcquireReleaseForget(t *testing.T) {
	s := NewSemaphore(3)
	p, err := s.TryAcquire(2)
	if err != nil || p.N() != 2 || s.Available() != 1 {
		t.Fatalf("TryAcquire(2) = %v, %v; available %d", p.N(), err, s.Available())
	}
	if _, err := s.TryAcquire(2); !errors.Is(err, ErrNoPermits) {
		t.Fatalf("err = %v, want ErrNoPermits", err)
	}
	p.Release()
	p.Release() // emptied: no second return
	if s.Available() != 3 {
		t.Fatalf("available %d after release, want 3", s.Available())
	}
	q, _ := s.TryAcquire(1)
	q.Forget()
	q.Release()
	if s.Available() != 2 {
		t.Fatalf("available %d after Forget, want 2", s.Available())
	}
	if got := s.Forget(5); got != 2 || s.Available() != 0 {
		t.Fatalf("Forget(5) = %d, available %d", got, s.Available())
	}
	s.AddPermits(4)
	if s.Available() != 4 {
		t.Fatalf("available %d", s.Available())
	}
	z, err := s.TryAcquire(0)
	if err != nil || z.N() != 0 {
		t.Fatal("TryAcquire(0)")
	}
	var zs Semaphore // zero value: no permits
	if _, err := zs.TryAcquire(1); !errors.Is(err, ErrNoPermits) {
		t.Fatal("zero Semaphore had a permit")
	}
}

func TestSemaphoreBadCounts(t *testing.T) {
	expectPanic(t, "permits = -1", func() { NewSemaphore(-1) })
	expectPanic(t, "out of range", func() { NewSemaphore(math.MaxInt64) })
	s := NewSemaphore(MaxPermits)
	expectPanic(t, "n = -2", func() { s.AcquireAsync(-2) })
	expectPanic(t, "n = -2", func() { s.TryAcquire(-2) })
	expectPanic(t, "out of range", func() { s.AcquireAsync(math.MaxInt64) })
	expectPanic(t, "exceeds MaxPermits", func() { s.AddPermits(1) })
	if s.Available() != MaxPermits {
		t.Fatal("a refused AddPermits changed the count")
	}
	p, err := s.TryAcquire(MaxPermits)
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	var ns *Semaphore
	expectPanic(t, "nil *Semaphore", func() { ns.AcquireAsync(1) })
	expectPanic(t, "nil *Semaphore", func() { ns.TryAcquire(1) })
}

func TestSemaphoreCloseFailsWaiters(t *testing.T) {
	tc := newTestCx()
	s := NewSemaphore(1)
	held, _ := s.TryAcquire(1)
	a := s.AcquireAsync(3)
	if _, ok := a.Poll(tc.cx); ok {
		t.Fatal("ready without permits")
	}
	s.Close()
	r, ok := a.Poll(tc.cx)
	if !ok || !errors.Is(r.Err, ErrSemaphoreClosed) {
		t.Fatalf("after Close: %v %v", r, ok)
	}
	if _, err := s.TryAcquire(0); !errors.Is(err, ErrSemaphoreClosed) {
		t.Fatal("TryAcquire on a closed semaphore")
	}
	if r, _ := s.AcquireAsync(1).Poll(tc.cx); !errors.Is(r.Err, ErrSemaphoreClosed) {
		t.Fatal("Acquire on a closed semaphore")
	}
	if _, err := s.Acquire(1); !errors.Is(err, ErrSemaphoreClosed) {
		t.Fatal("Acquire on a closed semaphore")
	}
	held.Release() // still allowed
	if !s.IsClosed() || s.Available() != 1 {
		t.Fatal("state after close")
	}
}

// TestSemaphoreFIFO: a large request at the head is not overtaken by smaller ones that
// would fit, and it collects released permits until it has them all.
func TestSemaphoreFIFO(t *testing.T) {
	tc := newTestCx()
	s := NewSemaphore(2)
	p2, _ := s.TryAcquire(2)
	big := s.AcquireAsync(2)
	small := s.AcquireAsync(1)
	big.Poll(tc.cx)
	small.Poll(tc.cx)
	p1 := p2
	p1.n = 1 // release the two permits one at a time
	p2.n = 1
	p1.Release()
	if _, err := s.TryAcquire(1); !errors.Is(err, ErrNoPermits) {
		t.Fatal("TryAcquire overtook a queued waiter")
	}
	if _, ok := small.Poll(tc.cx); ok {
		t.Fatal("the small request overtook the big one at the head")
	}
	if _, ok := big.Poll(tc.cx); ok {
		t.Fatal("big ready with half its permits")
	}
	p2.Release()
	rb, ok := big.Poll(tc.cx)
	if !ok || rb.Value.N() != 2 {
		t.Fatal("big not served")
	}
	rb.Value.Release()
	rs, ok := small.Poll(tc.cx)
	if !ok || rs.Value.N() != 1 {
		t.Fatal("small not served after big released")
	}
	rs.Value.Release()
	if s.Available() != 2 {
		t.Fatalf("available %d, want 2", s.Available())
	}
}

// TestSemaphoreDropAtEveryAwaitPoint: a dropped acquire returns its partial permits, or
// its complete grant, to the waiters behind it.
func TestSemaphoreDropAtEveryAwaitPoint(t *testing.T) {
	tc := newTestCx()
	t.Run("partial", func(t *testing.T) {
		s := NewSemaphore(1)
		a, b := s.AcquireAsync(3), s.AcquireAsync(1)
		a.Poll(tc.cx) // takes the 1 as a down payment
		b.Poll(tc.cx)
		if s.Available() != 0 {
			t.Fatal("down payment not taken")
		}
		a.Drop()
		if r, ok := b.Poll(tc.cx); !ok || r.Value.N() != 1 {
			t.Fatal("a dropped head did not pass its partial permits on")
		}
	})
	t.Run("granted, then dropped", func(t *testing.T) {
		s := NewSemaphore(0)
		a, b := s.AcquireAsync(2), s.AcquireAsync(2)
		a.Poll(tc.cx)
		b.Poll(tc.cx)
		s.AddPermits(2) // completes a
		a.Drop()
		if r, ok := b.Poll(tc.cx); !ok || r.Value.N() != 2 {
			t.Fatal("grant lost with a dropped waiter")
		}
	})
	t.Run("queued, last: the waiters flag clears", func(t *testing.T) {
		s := NewSemaphore(0)
		a := s.AcquireAsync(1)
		a.Poll(tc.cx)
		a.Drop()
		s.AddPermits(1)
		if _, err := s.TryAcquire(1); err != nil {
			t.Fatalf("TryAcquire after the only waiter left: %v", err)
		}
	})
	t.Run("closed, then dropped", func(t *testing.T) {
		s := NewSemaphore(0)
		a := s.AcquireAsync(1)
		a.Poll(tc.cx)
		s.Close()
		a.Drop()
		if s.Available() != 0 {
			t.Fatal("permits from nowhere")
		}
	})
}

func TestSemaphoreWaitAllocatesNothing(t *testing.T) {
	tc := newTestCx()
	s := NewSemaphore(1)
	f := s.AcquireAsync(1)
	if a := testing.AllocsPerRun(100, func() {
		f.Reset()
		r, _ := f.Poll(tc.cx)
		r.Value.Release()
	}); a != 0 {
		t.Fatalf("Reset+Poll+Release: %v allocs", a)
	}
	held, _ := s.TryAcquire(1)
	if a := testing.AllocsPerRun(100, func() {
		f.Reset()
		f.Poll(tc.cx)
		held.Release()
		r, _ := f.Poll(tc.cx)
		held = r.Value
	}); a != 0 {
		t.Fatalf("queue+grant cycle: %v allocs", a)
	}
}

// TestSemaphoreStressBound: tasks on two runtimes and goroutines share 3 permits, asking
// for 1 or 2; the number in use never exceeds 3, no acquire is lost, and some waits are
// cancelled (Timeout, context) on the way.
func TestSemaphoreStressBound(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	const permits = 3
	s := NewSemaphore(permits)
	var inUse, over, served atomic.Int64
	per := stressScale(1000)
	use := func(n int64) {
		if inUse.Add(n) > permits {
			over.Add(1)
		}
		inUse.Add(-n)
		served.Add(1)
	}
	var hs []blitzio.JoinHandle[int]
	for i := range 24 {
		rt := rt1
		if i%4 == 0 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			for j := 0; j < per; j++ {
				n := int64(1 + rng.IntN(2))
				if rng.IntN(5) == 0 {
					r := blitzio.Await(co, blitzio.Timeout(time.Duration(rng.IntN(3))*time.Millisecond, blitzio.Future[blitzio.Result[Permit]](s.AcquireAsync(n))))
					if r.Err != nil {
						j--
						continue // timed out: try again
					}
					p := r.Value.Value
					use(n)
					p.Release()
					continue
				}
				r := blitzio.Await(co, s.AcquireAsync(n))
				if r.Err != nil {
					panic(r.Err)
				}
				use(n)
				if j%2 == 0 {
					r.Value.ReleaseFrom(co.Context())
				} else {
					r.Value.Release()
				}
			}
			return i
		})))
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				n := int64(1 + (i+j)%2)
				if j%4 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
					p, err := s.AcquireContext(ctx, n)
					cancel()
					if err != nil {
						j--
						continue
					}
					use(n)
					p.Release()
					continue
				}
				p, err := s.Acquire(n)
				if err != nil {
					t.Error(err)
					return
				}
				use(n)
				p.Release()
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	if over.Load() != 0 {
		t.Fatalf("more than %d permits in use %d times", permits, over.Load())
	}
	if got, want := served.Load(), int64(36*per); got != want {
		t.Fatalf("served %d, want %d", got, want)
	}
	if s.Available() != permits {
		t.Fatalf("available %d at the end, want %d: permits lost or made", s.Available(), permits)
	}
}

// TestSemaphoreCloseRacesWaiters: Close while tasks wait; every waiter finishes, with a
// permit or ErrSemaphoreClosed, and nothing hangs.
func TestSemaphoreCloseRacesWaiters(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	for round := range stressScale(50) {
		s := NewSemaphore(1)
		var hs []blitzio.JoinHandle[error]
		for range 16 {
			hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
				for {
					r := blitzio.Await(co, s.AcquireAsync(1))
					if r.Err != nil {
						return r.Err
					}
					r.Value.Release()
				}
			})))
		}
		time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
		s.Close()
		for _, h := range hs {
			v, err := h.Wait()
			if err != nil || !errors.Is(v, ErrSemaphoreClosed) {
				t.Fatalf("round %d: %v %v", round, v, err)
			}
		}
	}
}

// semLoop acquires n permits at a time, iters times, with one reused future.
type semLoop struct {
	f     *AcquireFuture
	iters int
	count *atomic.Int64
}

func (l *semLoop) Poll(cx *blitzio.Context) (int, bool) {
	for l.iters > 0 {
		r, ok := l.f.Poll(cx)
		if !ok {
			return 0, false
		}
		l.count.Add(1)
		l.iters--
		if l.iters%2 == 0 {
			r.Value.ReleaseFrom(cx)
		} else {
			r.Value.Release()
		}
		l.f.Reset()
		if l.iters%32 == 0 {
			cx.Yield()
			return 0, false
		}
	}
	return 0, true
}

// TestSemaphoreNoLostWakeupMillion: 10^6 acquires (10^5 under -race) of 1 or 2 permits
// among 8 tasks on 2 workers sharing 2 permits; every grant arrives (the count), or the
// watchdog fires.
func TestSemaphoreNoLostWakeupMillion(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	rt := newRT(t, 2)
	s := NewSemaphore(2)
	const tasks = 8
	per := stressScale(1_000_000) / tasks
	var count atomic.Int64
	var hs []blitzio.JoinHandle[int]
	for i := range tasks {
		hs = append(hs, blitzio.Spawn(rt, &semLoop{f: s.AcquireAsync(int64(1 + i%2)), iters: per, count: &count}))
	}
	waitAll(t, hs)
	if count.Load() != int64(tasks*per) || s.Available() != 2 {
		t.Fatalf("count %d (want %d), available %d", count.Load(), tasks*per, s.Available())
	}
}
