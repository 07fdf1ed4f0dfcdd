package blitz

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// API that no test reached (coverage): Spawner.Context, the function form of Fork,
// Zipped.Len.

func TestHostile11SpawnerContext(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	Call(p, func(t2 *Task) struct{} {
		Scope(t2, func(s *Spawner) {
			if s.Context() != context.Background() {
				t.Errorf("Scope's Spawner.Context() = %v, want context.Background()", s.Context())
			}
		})
		type key struct{}
		ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
		cause := errors.New("stop")
		var seen atomic.Int64
		err := ScopeContext(ctx, t2, func(s *Spawner) {
			if s.Context() != ctx {
				t.Errorf("ScopeContext's Spawner.Context() is not the context given")
			}
			s.Spawn(func(*Task) {
				// Spawned tasks see the same context and its values, and its cancellation.
				s2 := s
				if s2.Context().Value(key{}) != "v" {
					t.Errorf("a spawned task's Spawner.Context() lost the value")
				}
				cancel(cause)
				if !errors.Is(context.Cause(s2.Context()), cause) {
					t.Errorf("Spawner.Context() does not carry the cancellation cause")
				}
				seen.Add(1)
			})
		})
		if seen.Load() != 1 {
			t.Errorf("the spawned task ran %d times", seen.Load())
		}
		if !errors.Is(err, cause) {
			t.Errorf("ScopeContext returned %v, want the cause %v", err, cause)
		}
		return struct{}{}
	})
}

func TestHostile11ForkFunctionForm(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var fib func(t *Task, n int) int
	fib = func(t *Task, n int) int {
		if n < 2 {
			return n
		}
		var jb Job[int, int]
		fu := Fork(t, &jb, fib, n-1)
		b := fib(t, n-2)
		return fu.Join(t) + b
	}
	if got := Call(p, func(t *Task) int { return fib(t, 20) }); got != 6765 {
		t.Fatalf("fib(20) with Fork = %d, want 6765", got)
	}
}

func TestHostile11ZippedLen(t *testing.T) {
	z := Zip([]int{1, 2, 3}, []string{"a", "b", "c"})
	if z.Len() != 3 {
		t.Fatalf("Zip of 3 pairs: Len() = %d", z.Len())
	}
	if Zip([]int(nil), []bool(nil)).Len() != 0 {
		t.Fatal("Zip of nil slices: Len() != 0")
	}
}
