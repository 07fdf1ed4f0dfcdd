package blitz

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHostile3GroupGoDuringCloseRunsRefusedFunction: while a Group has a function running
// and its pool is closing, Group.Go from an outside goroutine panicked with ErrClosed (the
// Pool.Go of its runner job was refused) but had already queued f: f ran anyway, after
// the caller was told it was refused. Either Go accepts f (Close waits for the pending
// functions) or it refuses it and f never runs; not both, and the same with or without a
// limit. As documented, the outside call is refused (as Pool.Go is), while a Go from the
// Group's own function on a worker (the pool's own work) is accepted, and Close waits
// for that function.
func TestHostile3GroupGoDuringCloseRunsRefusedFunction(t *testing.T) {
	for _, limit := range []int{-1, 1, 2} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			p, err := NewPool(Config{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			g := NewGroup(p)
			g.SetLimit(limit)
			release := make(chan struct{})
			var started, insideRan atomic.Bool
			var insideErr any
			g.Go(func() error {
				started.Store(true)
				<-release // blocks a worker on purpose: the test needs a function in flight
				// Close has begun: a Go from the Group's own function is the pool's work.
				func() {
					defer func() { insideErr = recover() }()
					g.Go(func() error {
						insideRan.Store(true)
						return nil
					})
				}()
				return nil
			})
			for !started.Load() {
				runtime.Gosched()
			}
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				p.Close()
			}()
			for !poolClosing(p) {
				runtime.Gosched()
			}
			var ran atomic.Bool
			var goErr any
			func() {
				defer func() { goErr = recover() }()
				g.Go(func() error {
					ran.Store(true)
					return nil
				})
			}()
			close(release)
			runWithWatchdog(t, "Close", func() { <-closed })
			refused := false
			if e, ok := goErr.(error); ok && errors.Is(e, ErrClosed) {
				refused = true
			} else if goErr != nil {
				t.Fatalf("Group.Go panicked with %v", goErr)
			}
			if refused && ran.Load() {
				t.Fatalf("Group.Go panicked with ErrClosed, yet the function it refused ran")
			}
			if !refused && !ran.Load() {
				t.Fatalf("Group.Go accepted the function, but it never ran before Close returned")
			}
			if !refused {
				t.Fatalf("Group.Go from an outside goroutine during Close was accepted; the Group documents that it is refused")
			}
			if insideErr != nil {
				t.Fatalf("Group.Go from the Group's own function during Close panicked with %v", insideErr)
			}
			if !insideRan.Load() {
				t.Fatalf("Group.Go from the Group's own function during Close was accepted, but it never ran before Close returned")
			}
			// After Close, Go is refused from anywhere and the Group holds nothing.
			func() {
				defer func() { goErr = recover() }()
				g.Go(func() error { ran.Store(true); return nil })
			}()
			if e, ok := goErr.(error); !ok || !errors.Is(e, ErrClosed) {
				t.Fatalf("Group.Go after Close: recovered %v, want ErrClosed", goErr)
			}
			if err := g.Wait(); err != nil {
				t.Fatalf("Wait after Close: %v", err)
			}
		})
	}
}

// TestHostile3TryForContextPrecancelledCause: TryForContext documents that it returns
// ctx's cause (context.Cause) when ctx ended before it returned. With a ctx cancelled
// before the call, it returned ctx.Err() (context.Canceled) instead of the cause, unlike
// a ctx cancelled during the call. The other ...Context functions (TryJoinContext,
// ScopeContext) return the cause too, before and during the call alike.
func TestHostile3TryForContextPrecancelledCause(t *testing.T) {
	cause := errors.New("hostile3: cause")
	p := newPool(t, Config{Workers: 2})
	cases := []struct {
		name string
		run  func(ctx context.Context, cancelDuring func()) error
	}{}
	for _, n := range []int{0, 1, 100000} {
		cases = append(cases, struct {
			name string
			run  func(ctx context.Context, cancelDuring func()) error
		}{fmt.Sprintf("TryForContext/n=%d", n), func(ctx context.Context, cancelDuring func()) error {
			var once sync.Once
			return TryForContext(ctx, n, func(context.Context, int, int) error {
				once.Do(cancelDuring)
				return nil
			}, WithPool(p))
		}})
	}
	cases = append(cases, []struct {
		name string
		run  func(ctx context.Context, cancelDuring func()) error
	}{
		{"TryJoinContext", func(ctx context.Context, cancelDuring func()) error {
			return Call(p, func(t *Task) error {
				return TryJoinContext(ctx, t,
					func(context.Context, *Task) error { cancelDuring(); return nil },
					func(context.Context, *Task) error { return nil })
			})
		}},
		{"ScopeContext", func(ctx context.Context, cancelDuring func()) error {
			return Call(p, func(t *Task) error {
				return ScopeContext(ctx, t, func(s *Spawner) {
					cancelDuring()
					s.Spawn(func(*Task) {})
				})
			})
		}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Cancelled, with a cause, before the call.
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			err := c.run(ctx, func() {})
			if !errors.Is(err, cause) {
				t.Errorf("with a ctx cancelled (with a cause) before the call: returned %v, want the cause %v", err, cause)
			}
			if c.name == "TryForContext/n=0" {
				return // nothing runs: it cannot be cancelled during the call
			}
			// The same ctx cancelled during the call: the cause, as documented.
			ctx2, cancel2 := context.WithCancelCause(context.Background())
			defer cancel2(nil)
			if err := c.run(ctx2, func() { cancel2(cause) }); !errors.Is(err, cause) {
				t.Errorf("cancelled during the call: got %v, want %v", err, cause)
			}
			// Not cancelled: nil.
			ctx3, cancel3 := context.WithCancelCause(context.Background())
			defer cancel3(nil)
			if err := c.run(ctx3, func() {}); err != nil {
				t.Errorf("not cancelled: got %v, want nil", err)
			}
			// A plain cancellation is still context.Canceled.
			ctx4, cancel4 := context.WithCancel(context.Background())
			cancel4()
			if err := c.run(ctx4, func() {}); !errors.Is(err, context.Canceled) {
				t.Errorf("plain cancel before the call: got %v, want context.Canceled", err)
			}
		})
	}
}
