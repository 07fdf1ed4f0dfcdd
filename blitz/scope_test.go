package blitz

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestScopeManySpawnsAndNesting(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	n := 5000
	if raceEnabled {
		n = 1000
	}
	var count atomic.Int64
	within(t, 60*time.Second, "Scope", func() {
		p.Call(func(t *Task) {
			Scope(t, func(s *Spawner) {
				for i := 0; i < n; i++ {
					s.Spawn(func(t *Task) {
						count.Add(1)
						if i%100 == 0 { // spawned tasks spawn more, and nest scopes
							s.Spawn(func(*Task) { count.Add(1) })
							Scope(t, func(s2 *Spawner) { s2.Spawn(func(t *Task) { count.Add(int64(fib(t, 5))) }) })
						}
					})
				}
			})
		})
	})
	want := int64(n + 2*(n/100)*1 + (n/100)*4)
	if count.Load() != want {
		t.Fatalf("scope ran %d units, want %d", count.Load(), want)
	}
}

func TestScopeContextStopsStarting(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	var err error
	within(t, 30*time.Second, "ScopeContext", func() {
		err = Call(p, func(t *Task) error {
			return ScopeContext(ctx, t, func(s *Spawner) {
				cancel()
				for i := 0; i < 100; i++ {
					s.Spawn(func(*Task) { ran.Add(1) })
				}
			})
		})
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ScopeContext = %v, want context.Canceled", err)
	}
	if ran.Load() != 0 {
		t.Fatalf("%d tasks started after cancel", ran.Load())
	}
	err = Call(p, func(t *Task) error {
		return ScopeContext(context.Background(), t, func(s *Spawner) { s.Spawn(func(*Task) { ran.Add(1) }) })
	})
	if err != nil || ran.Load() != 1 {
		t.Fatalf("ScopeContext without cancel: err=%v ran=%d", err, ran.Load())
	}
}

func TestTryJoinContext(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	errFail := errors.New("fail")
	var started atomic.Int32
	err := Call(p, func(t *Task) error {
		fns := []func(context.Context, *Task) error{
			func(context.Context, *Task) error { started.Add(1); return errFail },
		}
		for i := 0; i < 50; i++ {
			fns = append(fns, func(ctx context.Context, t *Task) error {
				started.Add(1)
				<-ctx.Done() // only returns because the first failure cancels
				return ctx.Err()
			})
		}
		return TryJoinContext(context.Background(), t, fns...)
	})
	if !errors.Is(err, errFail) {
		t.Fatalf("TryJoinContext = %v, want the failing function's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	started.Store(0)
	err = Call(p, func(t *Task) error {
		return TryJoinContext(ctx, t, func(context.Context, *Task) error { started.Add(1); return nil })
	})
	if !errors.Is(err, context.Canceled) || started.Load() != 0 {
		t.Fatalf("cancelled TryJoinContext = %v, started %d", err, started.Load())
	}
}

// TestScopeOwnerWorkerSleepsAndIsWoken is the regression test for a lost wake-up: a
// worker waiting for its scope went to sleep, and the last spawned task to finish did
// not wake it (only stolen frames woke their owner).
func TestScopeOwnerWorkerSleepsAndIsWoken(t *testing.T) {
	p := newPool(t, Config{Workers: 2, SpinRounds: 1})
	for i := 0; i < 10; i++ {
		done := make(chan struct{})
		p.Go(func(t *Task) {
			Scope(t, func(s *Spawner) {
				// Whichever the owner takes, the other worker has the other one; when
				// the owner takes the short one it sleeps waiting for the long one.
				s.Spawn(func(*Task) { time.Sleep(30 * time.Millisecond) })
				time.Sleep(5 * time.Millisecond) // let the other worker take the long one
				s.Spawn(func(*Task) { time.Sleep(time.Millisecond) })
			})
			close(done)
		})
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the scope's owner was never woken after its spawned task finished", i)
		}
	}
}
