package blitz

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile tests of ScopeContext and Spawner.Spawn: a context cancelled before, during and
// after the spawns, panics and runtime.Goexit in the body and the tasks, misuse, one
// context shared by scopes on two pools.

// A context cancelled before ScopeContext: the body still runs (it is not a spawned
// task), no spawned task runs, not even one that would panic, and the cause is returned.
func TestHostile11ScopeContextCancelledBefore(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	cause := errors.New("h11-before")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{ctx, cause}, {dctx, context.DeadlineExceeded}} {
		var bodyRan bool
		var ran atomic.Int32
		var err error
		within(t, 10*time.Second, "ScopeContext with a cancelled context", func() {
			p.Call(func(tk *Task) {
				err = ScopeContext(c.ctx, tk, func(s *Spawner) {
					bodyRan = true
					for i := range 50 {
						s.Spawn(func(*Task) {
							ran.Add(1)
							if i%7 == 0 {
								panic("h11-must-not-run")
							}
						})
					}
				})
			})
		})
		if !bodyRan {
			t.Error("the body did not run")
		}
		if ran.Load() != 0 {
			t.Errorf("%d tasks spawned under a cancelled context ran", ran.Load())
		}
		if !errors.Is(err, c.want) {
			t.Errorf("ScopeContext = %v, want %v", err, c.want)
		}
	}
}

// Cancelled by one of the tasks: every task that started has finished when ScopeContext
// returns, tasks spawned after the cancellation (by the body, by tasks, from a plain
// goroutine) never run, and the cause is returned.
func TestHostile11ScopeContextCancelledDuring(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	for round := range 5 {
		cause := fmt.Errorf("h11-during-%d", round)
		ctx, cancel := context.WithCancelCause(context.Background())
		var started, finished, late atomic.Int32
		var cancelled atomic.Bool
		var finishedAtReturn int32
		var err error
		within(t, 20*time.Second, "ScopeContext cancelled by a task", func() {
			p.Call(func(tk *Task) {
				err = ScopeContext(ctx, tk, func(s *Spawner) {
					for i := range 40 {
						s.Spawn(func(t *Task) {
							started.Add(1)
							defer finished.Add(1)
							fib(t, 12) // some forking work
							if i == 10 {
								cancelled.Store(true)
								cancel(cause)
								// Spawned by a task after the cancel: must never run.
								s.Spawn(func(*Task) { late.Add(1) })
							}
							if i%4 == 0 {
								// Tasks spawned by tasks. One spawned before the cancel may
								// start before it and still run; only one spawned after the
								// cancel must be skipped. (Checking ctx when the task runs
								// could fail: task 10 may cancel between the scope's check
								// and the task's own.)
								afterCancel := ctx.Err() != nil
								s.Spawn(func(*Task) {
									if afterCancel {
										late.Add(1) // must never run
									}
								})
							}
						})
					}
					// Wait for the cancellation, then spawn more: none may run.
					deadline := time.Now().Add(10 * time.Second)
					for ctx.Err() == nil && time.Now().Before(deadline) {
						runtime.Gosched()
					}
					if ctx.Err() == nil {
						t.Error("the context was never cancelled")
					}
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 10 {
							s.Spawn(func(*Task) { late.Add(1) })
						}
					}()
					for range 10 {
						s.Spawn(func(*Task) { late.Add(1) })
					}
					wg.Wait()
				})
				finishedAtReturn = finished.Load()
			})
		})
		if !errors.Is(err, cause) {
			t.Errorf("round %d: ScopeContext = %v, want the cause", round, err)
		}
		if late.Load() != 0 {
			t.Errorf("round %d: %d tasks ran after the context was cancelled", round, late.Load())
		}
		if s, f := started.Load(), finishedAtReturn; s != f {
			t.Errorf("round %d: ScopeContext returned with %d tasks started and %d finished", round, s, f)
		}
		if !cancelled.Load() {
			t.Errorf("round %d: task 10, spawned before any cancellation, did not run", round)
		}
	}
}

// A context cancelled after ScopeContext returned changes nothing: nil, every task ran.
// One context shared by scopes on two pools, cancelled by a task of one, stops both.
func TestHostile11ScopeContextAfterAndShared(t *testing.T) {
	a := newPool(t, Config{Workers: 2})
	b := newPool(t, Config{Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := Call(a, func(tk *Task) error {
		return ScopeContext(ctx, tk, func(s *Spawner) {
			for range 30 {
				s.Spawn(func(*Task) { ran.Add(1) })
			}
		})
	})
	cancel()
	if err != nil || ran.Load() != 30 {
		t.Errorf("uncancelled ScopeContext = %v with %d of 30 tasks run", err, ran.Load())
	}

	shared, stop := context.WithCancel(context.Background())
	defer stop()
	block := make(chan struct{})
	var errs [2]error
	var wg sync.WaitGroup
	for k, p := range []*Pool{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = Call(p, func(tk *Task) error {
				return ScopeContext(shared, tk, func(s *Spawner) {
					s.Spawn(func(*Task) {
						if k == 0 {
							stop()
							close(block)
						}
						<-block // both scopes have a task running when the context ends
					})
					<-block
					for range 20 {
						s.Spawn(func(*Task) { t.Error("a task ran after the shared context was cancelled") })
					}
				})
			})
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	h11Wait(t, all, 20*time.Second, "two scopes sharing a context")
	for k, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("scope %d on the shared context = %v, want context.Canceled", k, err)
		}
	}
}

// Panics beat cancellation: a task's panic is re-raised even though the context was
// cancelled, the body's panic before any task's, and the scope still waits for its
// tasks first.
func TestHostile11ScopeContextPanics(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, bodyPanics := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var finished atomic.Int32
		var finishedAtPanic int32
		r := recoverRun(t, "ScopeContext with panics", func() {
			p.Call(func(tk *Task) {
				defer func() { finishedAtPanic = finished.Load() }()
				ScopeContext(ctx, tk, func(s *Spawner) {
					gate := make(chan struct{})
					for i := range 8 {
						s.Spawn(func(t *Task) {
							defer finished.Add(1)
							if i == 0 {
								cancel()
								close(gate)
								panic("h11-task-panic")
							}
							fib(t, 10)
						})
					}
					<-gate
					if bodyPanics {
						panic("h11-body-panic")
					}
				})
			})
		})
		want := "h11-task-panic"
		if bodyPanics {
			want = "h11-body-panic"
		}
		pe, ok := r.(*PanicError)
		if !ok || pe.Value != want {
			t.Errorf("bodyPanics=%v: recovered %v, want a *PanicError of %q", bodyPanics, r, want)
		}
		if finishedAtPanic < 1 {
			t.Errorf("bodyPanics=%v: the panic reached the caller before the panicking task finished", bodyPanics)
		}
	}
}

// runtime.Goexit in the body: the goroutine ends only after the spawned tasks finished
// (they may use what the body set up); in a stolen fork, the joiner gets ErrGoexit after
// the tasks finished; the pool keeps working and closes.
func TestHostile11ScopeBodyGoexit(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var finished atomic.Int32
	var finishedAtExit int32 = -1
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer func() { finishedAtExit = finished.Load() }()
		p.Call(func(tk *Task) {
			ScopeContext(context.Background(), tk, func(s *Spawner) {
				for range n {
					s.Spawn(func(t *Task) {
						fib(t, 14)
						finished.Add(1)
					})
				}
				runtime.Goexit()
			})
			t.Error("ScopeContext returned after its body called Goexit")
		})
		t.Error("Call returned after its function called Goexit")
	}()
	h11Wait(t, exited, 20*time.Second, "a Call whose scope body called Goexit")
	if finishedAtExit != n {
		t.Errorf("the goroutine exited with %d of %d spawned tasks finished", finishedAtExit, n)
	}

	// In a fork that a worker stole.
	finished.Store(0)
	var atJoin int32 = -1
	r := recoverRun(t, "Goexit in a scope body in a stolen fork", func() {
		p.Call(func(tk *Task) {
			stolen := make(chan struct{})
			defer func() { atJoin = finished.Load() }()
			Join(tk, func(*Task) {
				select {
				case <-stolen:
				case <-time.After(5 * time.Second):
				}
			}, func(tk *Task) {
				close(stolen)
				Scope(tk, func(s *Spawner) {
					for range n {
						s.Spawn(func(t *Task) {
							fib(t, 14)
							finished.Add(1)
						})
					}
					runtime.Goexit()
				})
			})
		})
	})
	if pe, ok := r.(*PanicError); ok {
		if !errors.Is(pe, ErrGoexit) {
			t.Errorf("stolen fork: recovered %v, want ErrGoexit", pe)
		}
		if atJoin != n {
			t.Errorf("stolen fork: the joiner saw ErrGoexit with %d of %d tasks finished", atJoin, n)
		}
	} else if r != nil {
		t.Errorf("stolen fork: recovered %T %v", r, r)
	} else {
		t.Log("the fork was not stolen: the Goexit ended the caller's goroutine")
	}
	checkPoolAlive(t, p, "scope bodies calling Goexit")
}

// Misuse: nil arguments are named; Spawn after the scope ended panics (and does not run
// f), whether the Spawner escaped to a goroutine or not.
func TestHostile11ScopeMisuse(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	var nilS *Spawner
	var kept *Spawner
	p.Call(func(tk *Task) {
		for _, c := range []struct {
			want string
			f    func()
		}{
			{"ScopeContext: nil context.Context", func() {
				//lint:ignore SA1012 a nil context is the misuse under test
				ScopeContext(nil, tk, func(*Spawner) {})
			}},
			{"ScopeContext: nil *Task", func() { ScopeContext(context.Background(), nil, func(*Spawner) {}) }},
			{"ScopeContext: nil function body", func() { ScopeContext(context.Background(), tk, nil) }},
			{"Scope.Spawn: nil *Spawner", func() { nilS.Spawn(func(*Task) {}) }},
			{"Scope.Spawn: nil function", func() { Scope(tk, func(s *Spawner) { s.Spawn(nil) }) }},
		} {
			r := h11Recover(c.f)
			if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
				t.Errorf("panic %v, want one containing %q", r, c.want)
			}
		}
		if err := ScopeContext(context.Background(), tk, func(s *Spawner) { kept = s }); err != nil {
			t.Errorf("empty ScopeContext = %v", err)
		}
	})
	var ran atomic.Bool
	r := h11Recover(func() { kept.Spawn(func(*Task) { ran.Store(true) }) })
	if r == nil || !strings.Contains(fmt.Sprint(r), "already ended") {
		t.Errorf("Spawn after the scope ended: panic %v", r)
	}
	time.Sleep(time.Millisecond)
	if ran.Load() {
		t.Error("a Spawn refused after the scope ended ran its function")
	}
}

// A Spawner of a scope on pool a used from work of pool b (a Call of b made inside a
// spawned task, and a fork of it that b's worker may steal): the tasks run on a, the
// scope waits for all of them, and a cancellation seen there skips them as well.
func TestHostile11ScopeSpawnFromOtherPool(t *testing.T) {
	a := newPool(t, Config{Workers: 2})
	b := newPool(t, Config{Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var onA, total atomic.Int32
	var finishedAtReturn int32
	err := Call(a, func(tk *Task) error {
		err := ScopeContext(ctx, tk, func(s *Spawner) {
			s.Spawn(func(*Task) {
				b.Call(func(tb *Task) {
					Join(tb, func(*Task) {
						for range 10 {
							s.Spawn(func(ta *Task) {
								if ta.Pool() == a {
									onA.Add(1)
								}
								fib(ta, 10)
								total.Add(1)
							})
						}
					}, func(*Task) {
						for range 10 {
							s.Spawn(func(ta *Task) {
								if ta.Pool() == a {
									onA.Add(1)
								}
								total.Add(1)
							})
						}
					})
				})
			})
		})
		finishedAtReturn = total.Load()
		return err
	})
	if err != nil {
		t.Errorf("ScopeContext = %v", err)
	}
	if finishedAtReturn != 20 || onA.Load() != 20 {
		t.Errorf("the scope returned with %d of 20 tasks finished, %d ran on its own pool", finishedAtReturn, onA.Load())
	}
}
