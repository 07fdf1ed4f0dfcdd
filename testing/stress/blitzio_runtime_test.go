package stress

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// bioSignal is a one-shot wake-up usable from any goroutine: the stress tests wake tasks
// from plain goroutines at random moments.
type bioSignal struct {
	mu  sync.Mutex
	set bool
	w   blitzio.Waker
}

func (s *bioSignal) fire() {
	s.mu.Lock()
	s.set = true
	w := s.w
	s.mu.Unlock()
	w.Wake()
}

func (s *bioSignal) Poll(cx *blitzio.Context) (struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set {
		return struct{}{}, true
	}
	s.w = cx.Waker()
	return struct{}{}, false
}

// dropCount counts drops of an abandoned future.
type dropCount struct {
	inner blitzio.Future[struct{}]
	drops *atomic.Int64
}

func (d *dropCount) Poll(cx *blitzio.Context) (struct{}, bool) { return d.inner.Poll(cx) }
func (d *dropCount) Drop()                                     { d.drops.Add(1); blitzio.Drop(d.inner) }

func stressScale(t *testing.T) int {
	if testing.Short() {
		return 1
	}
	if bioRaceOn {
		return 2
	}
	return 8
}

// TestBlitzioStressWakeAbortRace: many more goroutines than cores spawn tasks that wait
// for signals, and fire, abort and await them in random order with random pauses. Every
// task must end exactly once: with its value, or cancelled (and then dropped once).
func TestBlitzioStressWakeAbortRace(t *testing.T) {
	leakCheck(t) // registered first: runs after rt.Close below
	rt, err := blitzio.New(blitzio.Config{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	goroutines := 32
	per := 40 * stressScale(t)
	var ok, cancelled, drops atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	rs := seeded(t)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < per; i++ {
				sig := &bioSignal{}
				sel := blitzio.Select2[struct{}, struct{}](sig, blitzio.Sleep(time.Duration(rng.IntN(3))*time.Millisecond))
				inner := blitzio.Map(sel, func(blitzio.Selected2[struct{}, struct{}]) struct{} { return struct{}{} })
				h2 := blitzio.Spawn(rt, &dropCount{inner: inner, drops: &drops})
				if rng.IntN(3) == 0 {
					runtime.Gosched()
				}
				switch rng.IntN(3) {
				case 0:
					sig.fire()
				case 1:
					h2.Abort()
				default:
					go sig.fire()
					h2.Abort()
				}
				if _, err := h2.Wait(); err == nil {
					ok.Add(1)
				} else if errors.Is(err, blitzio.ErrCancelled) {
					cancelled.Add(1)
				} else {
					t.Errorf("unexpected task error: %v", err)
				}
			}
		}(rs.Uint64())
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("stress test hung: some task was never woken or never dropped")
	}
	if got := ok.Load() + cancelled.Load(); got != int64(goroutines*per) {
		t.Fatalf("%d tasks ended, want %d", got, goroutines*per)
	}
	if drops.Load() != cancelled.Load() {
		t.Fatalf("%d futures dropped, but %d tasks cancelled: each cancelled task must be dropped exactly once", drops.Load(), cancelled.Load())
	}
	t.Logf("ok %d, cancelled %d", ok.Load(), cancelled.Load())
}

// TestBlitzioStressShutdownUnderLoad closes runtimes while tasks spawn, wake and sleep
// on them from inside and outside; Close must return, every handle must finish, and no
// goroutine may be left behind.
func TestBlitzioStressShutdownUnderLoad(t *testing.T) {
	base := runtime.NumGoroutine()
	rounds := 2 * stressScale(t)
	rs := seeded(t)
	for r := 0; r < rounds; r++ {
		rt, err := blitzio.New(blitzio.Config{Workers: 3, MaxBlockingThreads: 8})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var hs []blitzio.JoinHandle[int]
		stop := make(chan struct{})
		var producers sync.WaitGroup
		for p := 0; p < 8; p++ {
			producers.Add(1)
			go func(seed uint64) {
				defer producers.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(r)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					var h blitzio.JoinHandle[int]
					switch rng.IntN(4) {
					case 0:
						h = blitzio.Spawn(rt, blitzio.Map(blitzio.Sleep(time.Duration(rng.IntN(5))*time.Millisecond), func(struct{}) int { return 1 }))
					case 1:
						h = blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
							blitzio.Spawn(cx, blitzio.YieldNow()).Detach()
							return 2, true
						}))
					case 2:
						h = blitzio.SpawnBlocking(rt, func() int { return 3 })
					default:
						h = blitzio.Spawn(rt, blitzio.Pending[int]())
					}
					mu.Lock()
					hs = append(hs, h)
					mu.Unlock()
				}
			}(rs.Uint64())
		}
		time.Sleep(20 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := rt.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown under load: %v", err)
		}
		cancel()
		close(stop)
		producers.Wait()
		mu.Lock()
		for i, h := range hs {
			if !h.IsFinished() {
				t.Fatalf("round %d: task %d of %d unfinished after Shutdown", r, i, len(hs))
			}
		}
		mu.Unlock()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("goroutine leak: %d > %d", runtime.NumGoroutine(), base)
		}
		time.Sleep(time.Millisecond)
	}
}
