package tsync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile9BarrierRandomWithdrawals: many more parties than cores (tasks on two
// runtimes and goroutines) wait on one Barrier, each wait given up at random (a Timeout
// around WaitAsync, a WaitContext whose context expires), until a CancelToken ends the
// run. A withdrawn arrival must not count towards a generation, and a released one is
// reported unless it was given up in the instant after its release. So every
// generation has exactly one leader and n-1 followers, less those released in the instant
// before they were given up, and once every party has left nobody is counted as arrived.
// A lost wake-up stalls the progress count, which the watchdog reports.
func TestHostile9BarrierRandomWithdrawals(t *testing.T) {
	const n = 5
	const tasks, gors = 24, 4
	b := NewBarrier(n)
	stopTok := NewCancelToken()
	var leaders, followers, progress, withdrawn atomic.Int64
	stop := watchdogProgress(t, 20*time.Second, progress.Load, func() string {
		b.mu.Lock()
		defer b.mu.Unlock()
		return fmt.Sprintf("arrived=%d queued=%d leaders=%d followers=%d", b.arrived, b.waiters.n,
			leaders.Load(), followers.Load())
	})
	defer stop()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	target := int64(stressScale(3000))
	count := func(r BarrierResult) {
		progress.Add(1)
		if r.IsLeader {
			if leaders.Add(1) >= target {
				stopTok.Cancel()
			}
		} else {
			followers.Add(1)
		}
	}
	var hs []blitzio.JoinHandle[int]
	for i := range tasks {
		rt := rt1
		if i%3 == 0 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			for !stopTok.IsCancelled() {
				var w blitzio.Future[BarrierResult] = b.WaitAsync()
				if rng.IntN(2) == 0 {
					d := time.Duration(rng.IntN(20)) * time.Microsecond
					w = blitzio.Map(blitzio.Timeout(d, w), func(r blitzio.Result[BarrierResult]) BarrierResult {
						if r.Err != nil {
							withdrawn.Add(1)
							return BarrierResult{IsLeader: false}
						}
						count(r.Value)
						return r.Value
					})
					blitzio.Await(co, blitzio.Select2[BarrierResult, struct{}](w, stopTok.Cancelled()))
					continue
				}
				sel := blitzio.Await(co, blitzio.Select2[BarrierResult, struct{}](w, stopTok.Cancelled()))
				if sel.Index == 0 {
					count(sel.V1)
				}
				if rng.IntN(8) == 0 {
					blitzio.Await(co, blitzio.YieldNow())
				}
			}
			return i
		})))
	}
	var wg sync.WaitGroup
	for i := range gors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 10))
			ctx := stopTok.Context()
			for !stopTok.IsCancelled() {
				c, cancel := ctx, context.CancelFunc(func() {})
				if rng.IntN(2) == 0 {
					c, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(30))*time.Microsecond)
				}
				r, err := b.WaitContext(c)
				cancel()
				if err != nil {
					withdrawn.Add(1)
					continue
				}
				count(r)
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	// A wait given up by a Timeout or a context after its generation was released (the
	// release came between the wait's last poll and the drop) is reported as given up
	// though its arrival counted: a dropped future cannot report a success, and the
	// other parties were released already. So each withdrawal may cost its generation
	// one follower, and nothing else may.
	l, f, wd := leaders.Load(), followers.Load(), withdrawn.Load()
	if f > l*(n-1) || f < l*(n-1)-wd {
		t.Fatalf("%d leaders and %d followers: want between %d and %d followers (%d withdrawals)",
			l, f, l*(n-1)-wd, l*(n-1), wd)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arrived != 0 || !b.waiters.empty() {
		t.Fatalf("after every party left: arrived=%d, %d queued", b.arrived, b.waiters.n)
	}
	t.Logf("%d generations, %d withdrawals", l, withdrawn.Load())
}

// TestHostile9RecvAnyDuplicatesAndDrops: RecvAny over sources that repeat (the same
// bounded receiver twice, the same clone under two indexes), with nil entries, many more
// consumer tasks than cores on two runtimes, and every receive raced against a short
// Sleep that drops it when it loses: every value sent is received exactly once, and the
// consumers all see the close. Two nodes of one future in the same wait set must not
// swallow each other's wake-ups, and a dropped RecvAny must pass on what it was woken
// for.
func TestHostile9RecvAnyDuplicatesAndDrops(t *testing.T) {
	const producers, consumers = 4, 24
	per := stressScale(4000)
	txA, rxA := NewChannel[int](3)
	txB, rxB := NewChannel[int](1)
	var progress atomic.Int64
	stop := watchdogProgress(t, 20*time.Second, progress.Load, func() string {
		return fmt.Sprintf("A len %d, B len %d", rxA.Len(), rxB.Len())
	})
	defer stop()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	seen := make([]atomic.Int32, producers*per)
	var wg sync.WaitGroup
	for p := range producers {
		tx := txA
		if p%2 == 1 {
			tx = txB
		}
		tx = tx.Clone()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tx.Close()
			for i := range per {
				if err := tx.Send(p*per + i); err != nil {
					panic(err)
				}
			}
		}()
	}
	txA.Close()
	txB.Close()
	var hs []blitzio.JoinHandle[int]
	for c := range consumers {
		rt := rt1
		if c%3 == 0 {
			rt = rt2
		}
		a, b := rxA.Clone(), rxB.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			defer a.Close()
			defer b.Close()
			rng := rand.New(rand.NewPCG(uint64(c), 11))
			// a twice, b twice (once as a second handle of the same clone), nils between.
			srcs := []Source[int]{a, nil, b, a, nil, b}
			got := 0
			for closedA, closedB := false, false; !closedA || !closedB; {
				var r Received[int]
				if rng.IntN(3) == 0 {
					sel := blitzio.Await(co, blitzio.Select2[Received[int], struct{}](RecvAny(srcs...),
						blitzio.Sleep(time.Duration(rng.IntN(20))*time.Microsecond)))
					if sel.Index != 0 {
						continue
					}
					r = sel.V1
				} else {
					r = blitzio.Await(co, blitzio.Future[Received[int]](RecvAny(srcs...)))
				}
				progress.Add(1)
				if r.Err != nil {
					if !errors.Is(r.Err, ErrClosed) {
						panic(r.Err)
					}
					// Take the closed source out under both of its indexes.
					if srcs[r.Index] == Source[int](a) {
						srcs[0], srcs[3], closedA = nil, nil, true
					} else {
						srcs[2], srcs[5], closedB = nil, nil, true
					}
					continue
				}
				seen[r.Value].Add(1)
				got++
			}
			return got
		})))
	}
	rxA.Close()
	rxB.Close()
	total := 0
	for i, h := range hs {
		n, err := h.Wait()
		if err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
		total += n
	}
	wg.Wait()
	if total != producers*per {
		t.Fatalf("received %d of %d values", total, producers*per)
	}
	for v := range seen {
		if n := seen[v].Load(); n != 1 {
			t.Fatalf("value %d received %d times", v, n)
		}
	}
}

// TestHostile9OnceCellRandomFailuresAndTimeouts: many callers (tasks on two runtimes and
// goroutines through GetOrInitContext) race for a sequence of cells. Initialisers take a
// while (a Sleep), fail at random, and callers give up at random (a Timeout dropping the
// GetOrTryInit future mid-initialiser, a context expiring). For every cell: at most one
// initialiser runs at a time, none starts once the cell is set, every caller that gets a
// value gets the value that was set, and no caller is left waiting when the cell is set
// or every initialiser has failed (a lost turn would stall the run; the watchdog says
// so).
func TestHostile9OnceCellRandomFailuresAndTimeouts(t *testing.T) {
	const tasks, gors = 20, 4
	cellsN := stressScale(400)
	cells := make([]OnceCell[int], cellsN)
	running := make([]atomic.Int32, cellsN)
	var progress atomic.Int64
	var bad atomic.Value
	fail := func(format string, args ...any) { bad.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	stop := watchdogProgress(t, 20*time.Second, progress.Load, nil)
	defer stop()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	// enter and leave bracket an initialiser of cell i.
	enter := func(i int) {
		if running[i].Add(1) != 1 {
			fail("cell %d: two initialisers at once", i)
		}
		if cells[i].IsSet() {
			fail("cell %d: an initialiser started after the cell was set", i)
		}
	}
	leave := func(i int) { running[i].Add(-1) }
	check := func(i, v int) {
		if w, ok := cells[i].Get(); !ok || v != w || v != 1000+i {
			fail("cell %d: a caller got %d, the cell holds %d (set %v)", i, v, w, ok)
		}
	}
	var hs []blitzio.JoinHandle[int]
	for k := range tasks {
		rt := rt1
		if k%3 == 0 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			rng := rand.New(rand.NewPCG(uint64(k), 12))
			for i := range cellsN {
				for {
					progress.Add(1)
					failInit := rng.IntN(3) == 0
					d := time.Duration(rng.IntN(30)) * time.Microsecond
					f := cells[i].GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
						enter(i)
						return blitzio.WithDrop(blitzio.Map(blitzio.Sleep(d), func(struct{}) blitzio.Result[int] {
							leave(i)
							if failInit {
								return blitzio.Result[int]{Err: errors.New("init failed")}
							}
							return blitzio.Result[int]{Value: 1000 + i}
						}), func() { leave(i) })
					})
					var r blitzio.Result[int]
					if rng.IntN(3) == 0 {
						to := blitzio.Await(co, blitzio.Timeout(time.Duration(rng.IntN(40))*time.Microsecond,
							blitzio.Future[blitzio.Result[int]](f)))
						if to.Err != nil {
							continue // given up: try again
						}
						r = to.Value
					} else {
						r = blitzio.Await(co, blitzio.Future[blitzio.Result[int]](f))
					}
					if r.Err != nil {
						continue // our own initialiser failed: try again
					}
					check(i, r.Value)
					break
				}
			}
			return k
		})))
	}
	var wg sync.WaitGroup
	for g := range gors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 13))
			for i := range cellsN {
				for {
					progress.Add(1)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(60))*time.Microsecond)
					failInit := rng.IntN(3) == 0
					v, err := cells[i].GetOrInitContext(ctx, func(context.Context) (int, error) {
						enter(i)
						defer leave(i)
						time.Sleep(time.Duration(rng.IntN(20)) * time.Microsecond)
						if failInit {
							return 0, errors.New("init failed")
						}
						return 1000 + i, nil
					})
					cancel()
					if err != nil {
						continue
					}
					check(i, v)
					break
				}
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}
	for i := range cells {
		if !cells[i].waiters.empty() || running[i].Load() != 0 {
			t.Fatalf("cell %d: waiters left or an initialiser still counted as running", i)
		}
	}
}

// TestHostile9WatchAndBroadcastManyReceiversRandomDrops: many more receivers than cores
// (tasks on two runtimes, goroutines) follow a watch and a broadcast channel while their
// waits are dropped at random (a Timeout around ChangedAsync or RecvAsync). Every watch
// receiver sees values only go up and ends (ErrClosed) having seen the last one; every
// broadcast receiver accounts for each value exactly once, received or reported missed
// by a *LagError, and ends with ErrClosed. A lost wake-up stalls the run.
func TestHostile9WatchAndBroadcastManyReceiversRandomDrops(t *testing.T) {
	const tasks, gors = 24, 4
	n := stressScale(20000)
	wtx, wrx := NewWatch(0)
	btx, brx := NewBroadcast[int](8)
	var progress atomic.Int64
	var bad atomic.Value
	fail := func(format string, args ...any) { bad.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	stop := watchdogProgress(t, 20*time.Second, progress.Load, nil)
	defer stop()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	var hs []blitzio.JoinHandle[int]
	for k := range tasks {
		rt := rt1
		if k%3 == 0 {
			rt = rt2
		}
		w, b := wrx.Clone(), brx.Clone()
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			defer w.Close()
			defer b.Close()
			rng := rand.New(rand.NewPCG(uint64(k), 14))
			last := -1
			for k%2 == 0 { // even tasks follow the watch, odd ones the broadcast
				progress.Add(1)
				var err error
				if rng.IntN(3) == 0 {
					r := blitzio.Await(co, blitzio.Timeout(time.Duration(rng.IntN(20))*time.Microsecond,
						blitzio.Future[error](w.ChangedAsync())))
					if r.Err != nil {
						continue
					}
					err = r.Value
				} else {
					err = blitzio.Await(co, blitzio.Future[error](w.ChangedAsync()))
				}
				v := w.Get()
				if v < last {
					fail("watch receiver %d: value went from %d to %d", k, last, v)
				}
				last = v
				if err != nil {
					break
				}
			}
			if k%2 == 0 {
				if last != n {
					fail("watch receiver %d ended at %d, want %d", k, last, n)
				}
				return k
			}
			next := 1 // the next broadcast value this receiver must account for
			for {
				progress.Add(1)
				var r blitzio.Result[int]
				if rng.IntN(3) == 0 {
					to := blitzio.Await(co, blitzio.Timeout(time.Duration(rng.IntN(20))*time.Microsecond,
						blitzio.Future[blitzio.Result[int]](b.RecvAsync())))
					if to.Err != nil {
						continue
					}
					r = to.Value
				} else {
					r = blitzio.Await(co, blitzio.Future[blitzio.Result[int]](b.RecvAsync()))
				}
				var lag *LagError
				switch {
				case r.Err == nil:
					if r.Value != next {
						fail("broadcast receiver %d: got %d, want %d", k, r.Value, next)
					}
					next++
				case errors.As(r.Err, &lag):
					next += int(lag.Missed)
				case errors.Is(r.Err, ErrClosed):
					if next != n+1 {
						fail("broadcast receiver %d closed after accounting for %d of %d values", k, next-1, n)
					}
					return k
				default:
					fail("broadcast receiver %d: %v", k, r.Err)
					return k
				}
			}
		})))
	}
	var wg sync.WaitGroup
	for g := range gors {
		w := wrx.Clone()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Close()
			last := -1
			for {
				progress.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(g*10)*time.Microsecond)
				err := w.ChangedContext(ctx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					continue
				}
				v := w.Get()
				if v < last {
					fail("watch goroutine %d: value went from %d to %d", g, last, v)
				}
				last = v
				if err != nil {
					break
				}
			}
			if last != n {
				fail("watch goroutine %d ended at %d, want %d", g, last, n)
			}
		}()
	}
	wrx.Close()
	brx.Close()
	for i := 1; i <= n; i++ {
		if err := wtx.Send(i); err != nil {
			t.Fatal(err)
		}
		if err := btx.Send(i); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	wtx.Close()
	btx.Close()
	waitAll(t, hs)
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}
}
