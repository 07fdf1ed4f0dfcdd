package stress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// scenarioTwoRuntimes uses the same values from two runtimes at once: tasks of one await
// JoinHandles of the other, the two ends of a stream pair are served by tasks of
// different runtimes, and both share one blitz pool. Then the second runtime closes
// while tasks of the first still await its handles: they must see ErrCancelled (or the
// value, for tasks that finished first), never hang.
func scenarioTwoRuntimes(t *testing.T, r *rand.Rand) error {
	pairs := scaled(200, 6)
	data, want := testData(3_000)
	pool, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	a, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := blitzio.New(blitzio.Config{Workers: 1, MaxBlockingThreads: 2})
	if err != nil {
		return err
	}
	defer b.Close()

	var errs firstErr
	// Phase 1: cross awaits and cross-runtime stream pairs, everything completes.
	var hs []blitzio.JoinHandle[string]
	for id := range pairs {
		onB := blitzio.Spawn(b, offload(pool, sumWork(pool, data, -1, id)))
		client, server := stream.Duplex(8 + r.IntN(32))
		srv := blitzio.Spawn(b, serveDuplex(server, pool, data))
		hs = append(hs, blitzio.Spawn(a, blitzio.Async(func(co *blitzio.Co) string {
			defer client.Close()
			res := blitzio.Await(co, onB) // a handle of runtime b, awaited on a
			if res.Err != nil || res.Value.err != nil || res.Value.v != want {
				return fmt.Sprintf("cross await: %+v", res)
			}
			note, _ := requestOnce(co, client, id, want)
			client.Close()
			if s := blitzio.Await(co, srv); s.Err != nil || s.Value.Value != "" {
				return fmt.Sprintf("server on b: %q %v", s.Value.Value, s.Err)
			}
			return note
		})))
	}
	for i, h := range hs {
		if note, err := h.Wait(); err != nil || note != "" {
			errs.add(fmt.Errorf("pair %d: %q %v", i, note, err))
		}
	}

	// Phase 2: tasks on a await tasks on b that only finish when b closes.
	var waiting []blitzio.JoinHandle[error]
	for range pairs {
		_, fut := blitzio.NewCompletion[int]() // never completed: only b's shutdown ends the task
		onB := blitzio.Spawn(b, blitzio.Future[int](fut))
		waiting = append(waiting, blitzio.Spawn(a, blitzio.Map(onB, func(res blitzio.Result[int]) error { return res.Err })))
	}
	if err := b.Close(); err != nil {
		errs.add(fmt.Errorf("closing b: %w", err))
	}
	for i, h := range waiting {
		got, err, ok := waitHandle(h, crossTimeout)
		switch {
		case !ok:
			errs.add(fmt.Errorf("task %d on a: never woken after b closed", i))
		case err != nil:
			errs.add(fmt.Errorf("task %d on a: %w", i, err))
		case !errors.Is(got, blitzio.ErrCancelled):
			errs.add(fmt.Errorf("task %d on a: awaited handle of closed b reported %v, want ErrCancelled", i, got))
		}
	}
	// a still works.
	if v, err := blitzio.Spawn(a, offload(pool, sumWork(pool, data, -1, 0))).Wait(); err != nil || v.err != nil || v.v != want {
		errs.add(fmt.Errorf("runtime a after b closed: %+v %v", v, err))
	}
	return errs.get()
}
