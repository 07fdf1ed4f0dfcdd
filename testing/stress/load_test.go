package stress

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
)

// Building blocks the cross-module scenarios share: handing CPU work from a blitzio task
// to a blitz pool the right way (a Completion, so the task's worker runs other tasks
// meanwhile), calling a pool from anywhere without crashing when it has been closed,
// and a ledger that proves no unit of work is lost or answered twice.

// injected is the value of every panic a scenario injects on purpose, so a check can
// tell it from a real bug.
type injected struct{ id int }

func (i injected) String() string { return fmt.Sprintf("injected panic %d", i.id) }

// outcome carries a pool's answer (or its error: a recovered panic, blitz.ErrClosed)
// back to a task through a Completion.
type outcome[T any] struct {
	v   T
	err error
}

// asError turns a recovered panic value into an error: a *blitz.PanicError or
// blitz.ErrClosed stays as is, anything else is wrapped.
func asError(p any) error {
	switch v := p.(type) {
	case error:
		return v
	default:
		return fmt.Errorf("panic: %v", p)
	}
}

// tryGo is pool.Go that reports a refused job (a closed or closing pool) as an error
// instead of a panic.
func tryGo(pool *blitz.Pool, f func(t *blitz.Task)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = asError(p)
		}
	}()
	pool.Go(f)
	return nil
}

// offload returns a future that runs f as a Go job on pool and is ready with its value,
// or with the job's panic or the pool's refusal as an error. The task awaiting it does
// not hold its worker while f runs.
func offload[T any](pool *blitz.Pool, f func(t *blitz.Task) T) blitzio.Future[outcome[T]] {
	return blitzio.Async(func(co *blitzio.Co) outcome[T] {
		done, fut := blitzio.NewCompletion[outcome[T]]()
		err := tryGo(pool, func(t *blitz.Task) {
			// The Completion must be completed on every path, or the task would wait
			// until its runtime shuts down: a panic, and runtime.Goexit in f (or in a
			// loop body that runs on this goroutine), which no recover sees.
			returned := false
			defer func() {
				if returned {
					return
				}
				if p := recover(); p != nil {
					done.Complete(outcome[T]{err: asError(p)})
					return
				}
				done.Complete(outcome[T]{err: &blitz.PanicError{Value: blitz.ErrGoexit}})
			}()
			v := f(t)
			returned = true
			done.Complete(outcome[T]{v: v})
		})
		if err != nil {
			return outcome[T]{err: err}
		}
		return blitzio.Await(co, fut)
	})
}

// callPool is blitz.TryCall that also turns a panic raised by f (which blitz carries
// to the caller as a *blitz.PanicError) into an error.
func callPool[T any](pool *blitz.Pool, f func(t *blitz.Task) T) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = asError(p)
		}
	}()
	return blitz.TryCall(pool, func(t *blitz.Task) (T, error) { return f(t), nil })
}

// injectedIn reports whether err is a panic this package injected, with that id.
func injectedIn(err error, id int) bool {
	var bpe *blitz.PanicError
	if errors.As(err, &bpe) {
		if v, ok := bpe.Value.(injected); ok && v.id == id {
			return true
		}
		// A panic of a loop body crosses a join inside a job: it may be wrapped once more.
		if inner, ok := bpe.Value.(error); ok {
			return injectedIn(inner, id)
		}
	}
	var ipe *blitzio.PanicError
	if errors.As(err, &ipe) {
		if v, ok := ipe.Value.(injected); ok && v.id == id {
			return true
		}
		if inner, ok := ipe.Value.(error); ok {
			return injectedIn(inner, id)
		}
	}
	return false
}

// sumWork is the CPU work most scenarios hand to a pool: a parallel sum of data with a
// fine grain, so the loop really forks, with an optional panic at index boom (-1: none).
func sumWork(pool *blitz.Pool, data []int64, boom, id int) func(t *blitz.Task) int64 {
	return func(t *blitz.Task) int64 {
		return blitz.Reduce(len(data), int64(0), func(lo, hi int) int64 {
			var s int64
			for i := lo; i < hi; i++ {
				if i == boom {
					panic(injected{id})
				}
				s += data[i]
			}
			return s
		}, func(a, b int64) int64 { return a + b }, blitz.WithPool(pool), blitz.WithGrain(256))
	}
}

// ledger counts the answers of numbered units of work: each unit must answer exactly
// once if it completed, and at most once if it was cancelled or refused. A slot
// answered twice is a duplicated completion; a handle that never resolves is a lost
// unit.
type ledger struct {
	answers []atomic.Int32
}

func newLedger(n int) *ledger { return &ledger{answers: make([]atomic.Int32, n)} }

// answer records one answer of unit id.
func (l *ledger) answer(id int) { l.answers[id].Add(1) }

// count returns how many times unit id answered.
func (l *ledger) count(id int) int32 { return l.answers[id].Load() }
