package blitz_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitz"
)

// TryCall is the (T, error) form of Call: f's own error, a panic in f or in the work it
// forked (as a *PanicError), and a closed pool (ErrClosed) all come back as the error.
func ExampleTryCall() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})

	parse := func(a, b string) (int, error) {
		return blitz.TryCall(p, func(t *blitz.Task) (int, error) {
			var errA, errB error
			x, y := blitz.Join2(t,
				func(*blitz.Task) (v int) { v, errA = strconv.Atoi(a); return v },
				func(*blitz.Task) (v int) { v, errB = strconv.Atoi(b); return v })
			return x + y, errors.Join(errA, errB)
		})
	}
	fmt.Println(parse("40", "2"))
	fmt.Println(parse("40", "two"))

	_, err := blitz.TryCall(p, func(t *blitz.Task) (int, error) {
		var s []int
		return s[3], nil // a panic becomes an error
	})
	var pe *blitz.PanicError
	fmt.Println(errors.As(err, &pe))

	p.Close()
	_, err = blitz.TryCall(p, func(t *blitz.Task) (int, error) { return 1, nil })
	fmt.Println(errors.Is(err, blitz.ErrClosed))
	// Output:
	// 42 <nil>
	// 40 strconv.Atoi: parsing "two": invalid syntax
	// true
	// true
}

// TryJoinContext runs functions in parallel and cancels the others as soon as one
// fails, like errgroup.WithContext: the function that has not started is skipped, and
// the error returned is the one that cancelled the others.
func ExampleTryJoinContext() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})
	defer p.Close()

	errBadInput := errors.New("bad input")
	err := p.TryCall(func(t *blitz.Task) error {
		return blitz.TryJoinContext(context.Background(), t,
			func(ctx context.Context, t *blitz.Task) error { return errBadInput },
			func(ctx context.Context, t *blitz.Task) error {
				// A long computation checks ctx now and then; this one only waits.
				<-ctx.Done()
				return nil
			})
	})
	fmt.Println(err)
	// Output:
	// bad input
}

// ScopeContext stops starting the spawned tasks once its context is cancelled, and
// returns the context's error after the tasks already running have finished.
func ExampleScopeContext() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})
	defer p.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := p.TryCall(func(t *blitz.Task) error {
		return blitz.ScopeContext(ctx, t, func(s *blitz.Spawner) {
			s.Spawn(func(*blitz.Task) { ran.Add(1) })
			cancel() // every task spawned from now on is skipped
			for range 100 {
				s.Spawn(func(*blitz.Task) { ran.Add(1) })
			}
		})
	})
	fmt.Println(err, ran.Load() <= 1)
	// Output:
	// context canceled true
}
