package blitz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// stalePanic runs f, which uses a *Task after the Call or job that received it
// returned, and fails unless f panics with the stale-Task message.
func stalePanic(t *testing.T, what string, f func()) {
	t.Helper()
	var r any
	within(t, 10*time.Second, what, func() {
		defer func() { r = recover() }()
		f()
	})
	if pe, ok := r.(*PanicError); ok {
		r = pe.Value
	}
	if r == nil {
		t.Errorf("%s: a Task kept after its Call returned was accepted silently, want a panic", what)
		return
	}
	if msg := fmt.Sprint(r); !strings.Contains(msg, "after the Call or job that received it returned") {
		t.Errorf("%s: panic %q, want the stale-Task message", what, msg)
	}
}

var pool2Job Job[int, int]

// A *Task kept and used after its Call returned panics on every entry point that does
// more than a plain call: Fork when it pushes, the closure joins, Scope, Catch. The
// pool still works afterwards.
func TestPool2StaleTaskAfterCall(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	var saved *Task
	p.Call(func(t *Task) { saved = t })
	nop := func(*Task) {}
	cases := []struct {
		name string
		f    func()
	}{
		{"Job.Fork", func() {
			fu := pool2Job.Fork(saved, func(_ *Task, n int) int { return n }, 1)
			fu.Join(saved)
		}},
		{"Join", func() { Join(saved, nop, nop) }},
		{"Join2", func() { Join2(saved, func(*Task) int { return 1 }, func(*Task) int { return 2 }) }},
		{"JoinN", func() { JoinN(saved, nop, nop, nop) }},
		{"TryJoin", func() { _ = TryJoin(saved, func(*Task) error { return nil }) }},
		{"TryJoinContext", func() {
			_ = TryJoinContext(context.Background(), saved, func(context.Context, *Task) error { return nil })
		}},
		{"Scope", func() { Scope(saved, func(s *Spawner) { s.Spawn(nop) }) }},
		{"ScopeContext", func() { _ = ScopeContext(context.Background(), saved, func(*Spawner) {}) }},
		{"Catch", func() { Catch(saved, nop) }},
	}
	for _, c := range cases {
		stalePanic(t, c.name, c.f)
	}
	if got := Call(p, func(t *Task) int { return fib(t, 15) }); got != 610 {
		t.Fatalf("after the stale uses, fib(15) = %d", got)
	}
}

// The same for a Task that a Go job kept, used after its pool closed.
func TestPool2StaleTaskAfterClose(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Task, 1)
	p.Go(func(t *Task) { got <- t })
	saved := <-got
	p.Close()
	stalePanic(t, "Join with a worker's Task after Close", func() { Join(saved, func(*Task) {}, func(*Task) {}) })
}

// The (T, error) call forms: TryCall returns f's error, f's panic as a *PanicError,
// and ErrClosed; the method and the function agree.
func TestPool2TryCall(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	v, err := TryCall(p, func(t *Task) (int, error) { return fib(t, 10), nil })
	if v != 55 || err != nil {
		t.Fatalf("TryCall = %d, %v; want 55, nil", v, err)
	}
	errMine := errors.New("mine")
	v, err = TryCall(p, func(t *Task) (int, error) { return 7, errMine })
	if v != 7 || err != errMine {
		t.Fatalf("TryCall with an error = %d, %v; want 7, mine", v, err)
	}
	if err := p.TryCall(func(*Task) error { return errMine }); err != errMine {
		t.Fatalf("Pool.TryCall with an error = %v", err)
	}
	v, err = TryCall(p, func(t *Task) (int, error) {
		Join(t, func(*Task) {}, func(*Task) { panic("boom-in-fork") })
		return 1, nil
	})
	var pe *PanicError
	if v != 0 || !errors.As(err, &pe) || pe.Value != "boom-in-fork" {
		t.Fatalf("TryCall with a panic = %d, %v; want 0 and a *PanicError", v, err)
	}
	if err := p.TryCall(func(*Task) error { panic("boom") }); !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("Pool.TryCall with a panic = %v; want a *PanicError", err)
	}
	// The pool is fine after the panics.
	if got := Call(p, func(t *Task) int { return fib(t, 12) }); got != 144 {
		t.Fatalf("Call after panics = %d", got)
	}
	p.Close()
	ran := false
	v, err = TryCall(p, func(*Task) (int, error) { ran = true; return 1, nil })
	if v != 0 || !errors.Is(err, ErrClosed) || ran {
		t.Fatalf("TryCall after Close = %d, %v (ran %v); want 0, ErrClosed, not run", v, err, ran)
	}
	if err := p.TryCall(func(*Task) error { ran = true; return nil }); !errors.Is(err, ErrClosed) || ran {
		t.Fatalf("Pool.TryCall after Close = %v (ran %v)", err, ran)
	}
}

// Every form of Call allocates nothing of its own.
func TestPool2CallAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newPool(t, Config{Workers: 2})
	var sink int
	forms := map[string]func(){
		"Pool.Call":    func() { p.Call(func(*Task) { sink++ }) },
		"Call":         func() { sink += Call(p, func(*Task) int { return 1 }) },
		"Pool.TryCall": func() { _ = p.TryCall(func(*Task) error { sink++; return nil }) },
		"TryCall": func() {
			v, _ := TryCall(p, func(*Task) (int, error) { return 1, nil })
			sink += v
		},
	}
	for name, f := range forms {
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s allocates %.1f times per call, want 0", name, a)
		}
	}
}
