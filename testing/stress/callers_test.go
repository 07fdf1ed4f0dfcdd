package stress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
)

// The cross-callers scenarios: blitz parallel loops called at the same time from
// blitzio tasks (through a Completion, and directly from a poll), from blitzio's
// blocking pool and from plain goroutines; runtimes created and closed while the pools
// run; nested pools; panics injected at random points of both runtimes. Every result is
// checked, every injected panic must reach its caller and no one else, and each
// scenario ends with no goroutine and no file descriptor left.

// scenario is one entry of a scenario table: a name and a body that returns the first
// problem it found. The body gets the test's random source and a scale factor.
type scenario struct {
	name string
	run  func(t *testing.T, r *rand.Rand) error
}

// crossScenarios is the table TestCross runs, each as a subtest with its own watchdog
// and leak check.
//
// Extension point: the TCP server, HTTP serving and channel scenarios are added here
// when those modules land (a blitzio server whose handlers fan CPU work out with blitz,
// driven by an in-process load client at more connections than cores, checking a hash
// of every response; channel fan-in/fan-out between tasks and goroutines).
var crossScenarios = []scenario{
	{"CallersAtOnce", scenarioCallersAtOnce},
	{"RuntimesChurnWhilePoolsRun", scenarioRuntimeChurn},
	{"NestedPools", scenarioNestedPools},
	{"InjectedPanics", scenarioInjectedPanics},
	{"InjectedGoexits", scenarioInjectedGoexits},
	{"TwoRuntimes", scenarioTwoRuntimes},
}

// TestCross runs crossScenarios.
func TestCross(t *testing.T) {
	for _, sc := range crossScenarios {
		t.Run(sc.name, func(t *testing.T) {
			leakCheck(t)
			r := seeded(t)
			var err error
			watchdog(t, sc.name, 60*time.Second, func() { err = sc.run(t, r) })
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testData(n int) ([]int64, int64) {
	data := make([]int64, n)
	var sum int64
	for i := range data {
		data[i] = int64(i%977) - 300
		sum += data[i]
	}
	return data, sum
}

// firstErr keeps the first of many errors reported concurrently, and counts them.
type firstErr struct {
	mu  sync.Mutex
	err error
	n   int
}

func (f *firstErr) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.err == nil {
		f.err = err
	}
}

func (f *firstErr) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		return nil
	}
	return fmt.Errorf("%d failures; first: %w", f.n, f.err)
}

// scenarioCallersAtOnce: four kinds of callers run the same parallel sum on one pool at
// once, each unit numbered in a ledger: tasks through a Completion, tasks calling the
// pool inside their poll (legal for short work: the caller's goroutine helps), blocking
// jobs, and plain goroutines.
func scenarioCallersAtOnce(t *testing.T, r *rand.Rand) error {
	units := scaled(800, 8)
	data, want := testData(20_000)
	pool, err := blitz.NewPool(blitz.Config{Workers: 3})
	if err != nil {
		return err
	}
	defer pool.Close()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 6})
	if err != nil {
		return err
	}
	defer rt.Close()

	led := newLedger(units)
	var errs firstErr
	check := func(id int, v int64, err error) {
		led.answer(id)
		if err != nil {
			errs.add(fmt.Errorf("unit %d: %w", id, err))
		} else if v != want {
			errs.add(fmt.Errorf("unit %d: sum %d, want %d", id, v, want))
		}
	}
	kinds := make([]int, units)
	for i := range kinds {
		kinds[i] = r.IntN(4)
	}
	var handles []blitzio.JoinHandle[struct{}]
	var wg sync.WaitGroup
	for id, kind := range kinds {
		switch kind {
		case 0: // task -> Completion -> pool
			handles = append(handles, blitzio.Spawn(rt, blitzio.Map(offload(pool, sumWork(pool, data, -1, id)),
				func(o outcome[int64]) struct{} { check(id, o.v, o.err); return struct{}{} })))
		case 1: // task calls the pool inside its poll
			handles = append(handles, blitzio.Spawn(rt, blitzio.Lazy(func() struct{} {
				v, err := callPool(pool, sumWork(pool, data, -1, id))
				check(id, v, err)
				return struct{}{}
			})))
		case 2: // blocking job calls the pool
			handles = append(handles, blitzio.SpawnBlocking(rt, func() struct{} {
				v, err := callPool(pool, sumWork(pool, data, -1, id))
				check(id, v, err)
				return struct{}{}
			}))
		case 3: // plain goroutine
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := callPool(pool, sumWork(pool, data, -1, id))
				check(id, v, err)
			}()
		}
	}
	for i, h := range handles {
		if _, err := h.Wait(); err != nil {
			errs.add(fmt.Errorf("handle %d: %w", i, err))
		}
	}
	wg.Wait()
	for id := range kinds {
		if n := led.count(id); n != 1 {
			errs.add(fmt.Errorf("unit %d (kind %d) answered %d times, want once", id, kinds[id], n))
		}
	}
	return errs.get()
}

// scenarioRuntimeChurn: blitzio runtimes are created, used (their tasks call the pools)
// and closed over and over while plain goroutines keep the same pools busy; the pools
// must not notice, and every runtime must close cleanly with its tasks answered.
func scenarioRuntimeChurn(t *testing.T, r *rand.Rand) error {
	rounds := scaled(40, 8)
	data, want := testData(8_000)
	pool, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer pool.Close()

	stop := make(chan struct{})
	var errs firstErr
	var wg sync.WaitGroup
	var background atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if v, err := callPool(pool, sumWork(pool, data, -1, g)); err != nil || v != want {
					errs.add(fmt.Errorf("background caller %d: sum %d, err %v", g, v, err))
					return
				}
				background.Add(1)
			}
		}()
	}
	for round := range rounds {
		rt, err := blitzio.New(blitzio.Config{Workers: 1 + r.IntN(2), MaxBlockingThreads: 1 + r.IntN(4)})
		if err != nil {
			close(stop)
			return err
		}
		n := 5 + r.IntN(20)
		handles := make([]blitzio.JoinHandle[outcome[int64]], n)
		for i := range handles {
			if i%2 == 0 {
				handles[i] = blitzio.Spawn(rt, offload(pool, sumWork(pool, data, -1, i)))
			} else {
				handles[i] = blitzio.SpawnBlocking(rt, func() outcome[int64] {
					v, err := callPool(pool, sumWork(pool, data, -1, i))
					return outcome[int64]{v, err}
				})
			}
		}
		// Close at once or after the tasks: both must leave nothing behind. An early
		// Close cancels the tasks still queued; the pool jobs they started still run
		// and complete a Completion nobody awaits, which is allowed.
		early := r.IntN(3) == 0
		if early {
			if err := rt.Close(); err != nil {
				errs.add(fmt.Errorf("round %d: early Close: %w", round, err))
			}
		}
		for i, h := range handles {
			o, err := h.Wait()
			switch {
			case early && errors.Is(err, blitzio.ErrCancelled):
			case err != nil:
				errs.add(fmt.Errorf("round %d task %d: %w", round, i, err))
			case o.err != nil || o.v != want:
				errs.add(fmt.Errorf("round %d task %d: sum %d, err %v", round, i, o.v, o.err))
			}
		}
		if err := rt.Close(); err != nil {
			errs.add(fmt.Errorf("round %d: Close: %w", round, err))
		}
	}
	close(stop)
	wg.Wait()
	if background.Load() == 0 {
		errs.add(errors.New("the background callers made no call at all while the runtimes churned"))
	}
	return errs.get()
}

// scenarioNestedPools: work on one pool calls into a second, whose work calls back into
// the first, from tasks and goroutines at once; short-lived third pools are created and
// closed inside the work.
func scenarioNestedPools(t *testing.T, r *rand.Rand) error {
	units := scaled(200, 8)
	data, want := testData(4_000)
	p, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer p.Close()
	q, err := blitz.NewPool(blitz.Config{Workers: 2, SplitDepth: 1})
	if err != nil {
		return err
	}
	defer q.Close()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 4})
	if err != nil {
		return err
	}
	defer rt.Close()

	// nested sums data on p, on q from inside p, and (sometimes) on a fresh pool from
	// inside q, and returns the three sums' total.
	nested := func(fresh bool) func(t *blitz.Task) int64 {
		return func(t *blitz.Task) int64 {
			a, b := blitz.Join2(t,
				func(t *blitz.Task) int64 { return sumWork(p, data, -1, 0)(t) },
				func(*blitz.Task) int64 {
					return blitz.Call(q, func(t *blitz.Task) int64 {
						s := sumWork(q, data, -1, 0)(t)
						if fresh {
							third, err := blitz.NewPool(blitz.Config{Workers: 1})
							if err != nil {
								panic(err)
							}
							defer third.Close()
							return s + blitz.Call(third, sumWork(third, data, -1, 0))
						}
						return s + blitz.Call(p, sumWork(p, data, -1, 0))
					})
				})
			return a + b
		}
	}
	var errs firstErr
	var wg sync.WaitGroup
	var handles []blitzio.JoinHandle[outcome[int64]]
	for i := range units {
		fresh := r.IntN(8) == 0
		switch r.IntN(3) {
		case 0:
			handles = append(handles, blitzio.Spawn(rt, offload(p, nested(fresh))))
		case 1:
			handles = append(handles, blitzio.SpawnBlocking(rt, func() outcome[int64] {
				v, err := callPool(q, nested(fresh))
				return outcome[int64]{v, err}
			}))
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, err := callPool(p, nested(fresh)); err != nil || v != 3*want {
					errs.add(fmt.Errorf("goroutine %d: nested sum %d, err %v, want %d", i, v, err, 3*want))
				}
			}()
		}
	}
	for i, h := range handles {
		o, err := h.Wait()
		if err == nil {
			err = o.err
		}
		if err != nil || o.v != 3*want {
			errs.add(fmt.Errorf("handle %d: nested sum %d, err %v, want %d", i, o.v, err, 3*want))
		}
	}
	wg.Wait()
	return errs.get()
}

// scenarioInjectedPanics: units like CallersAtOnce's, a random third of which panic at
// a random point: inside a parallel loop body on the pool (the caller must get a
// *blitz.PanicError carrying its own injected value), or in the task's own poll or
// blocking job (the JoinHandle must report a *blitzio.PanicError). Every other unit
// must complete normally, and both runtimes must keep working afterwards.
func scenarioInjectedPanics(t *testing.T, r *rand.Rand) error {
	units := scaled(600, 8)
	data, want := testData(10_000)
	pool, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 4})
	if err != nil {
		return err
	}
	defer rt.Close()

	const (
		noPanic = iota
		inLoop  // in a loop body, on whichever goroutine runs that chunk
		inTask  // in the task's poll (or the blocking job / goroutine itself)
	)
	type unit struct {
		kind, where int
		h           blitzio.JoinHandle[outcome[int64]]
	}
	us := make([]unit, units)
	var wg sync.WaitGroup
	var errs firstErr
	checkOne := func(id int, where int, o outcome[int64], err error) {
		if err == nil {
			err = o.err
		}
		switch where {
		case noPanic:
			if err != nil || o.v != want {
				errs.add(fmt.Errorf("unit %d (no panic injected): sum %d, err %v", id, o.v, err))
			}
		default:
			if !injectedIn(err, id) {
				errs.add(fmt.Errorf("unit %d: injected panic not reported to its caller: err %v", id, err))
			}
		}
	}
	for id := range us {
		u := &us[id]
		u.kind = r.IntN(4)
		if r.IntN(3) == 0 {
			u.where = inLoop + r.IntN(2)
		}
		boom := -1
		if u.where == inLoop {
			boom = r.IntN(len(data))
		}
		work := sumWork(pool, data, boom, id)
		where := u.where
		direct := func() outcome[int64] {
			if where == inTask {
				panic(injected{id})
			}
			v, err := callPool(pool, work)
			return outcome[int64]{v, err}
		}
		switch u.kind {
		case 0:
			f := offload(pool, work)
			if where == inTask {
				f = blitzio.AndThen(blitzio.YieldNow(), func(struct{}) blitzio.Future[outcome[int64]] { panic(injected{id}) })
			}
			u.h = blitzio.Spawn(rt, f)
		case 1:
			u.h = blitzio.Spawn(rt, blitzio.Lazy(direct))
		case 2:
			u.h = blitzio.SpawnBlocking(rt, direct)
		case 3:
			wg.Add(1)
			go func() {
				defer wg.Done()
				var o outcome[int64]
				func() {
					defer func() {
						if p := recover(); p != nil {
							o.err = &blitzio.PanicError{Value: p} // as a task would report it
						}
					}()
					o = direct()
				}()
				checkOne(id, where, o, nil)
			}()
		}
	}
	for id := range us {
		if us[id].kind == 3 {
			continue
		}
		o, err := us[id].h.Wait()
		checkOne(id, us[id].where, o, err)
	}
	wg.Wait()
	// Both runtimes still work.
	if v, err := callPool(pool, sumWork(pool, data, -1, 0)); err != nil || v != want {
		errs.add(fmt.Errorf("pool after the panics: sum %d, err %v", v, err))
	}
	if o, err := blitzio.Spawn(rt, offload(pool, sumWork(pool, data, -1, 0))).Wait(); err != nil || o.err != nil || o.v != want {
		errs.add(fmt.Errorf("runtime after the panics: sum %d, err %v / %v", o.v, err, o.err))
	}
	return errs.get()
}

// scenarioInjectedGoexits: runtime.Goexit (what t.Fatal calls) in user code at random
// points: in a loop body on the pool (the caller gets a *blitz.PanicError carrying
// blitz.ErrGoexit), in a task's poll and in a blocking job (the handle reports
// blitzio.ErrGoexit). The goroutines those calls ended are replaced: both runtimes keep
// their full strength, and every other unit completes.
func scenarioInjectedGoexits(t *testing.T, r *rand.Rand) error {
	units := scaled(300, 6)
	data, want := testData(6_000)
	pool, err := blitz.NewPool(blitz.Config{Workers: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 3})
	if err != nil {
		return err
	}
	defer rt.Close()

	type unit struct {
		where int // 0 none, 1 loop body on the pool, 2 the task's poll, 3 the blocking job
		h     blitzio.JoinHandle[outcome[int64]]
	}
	us := make([]unit, units)
	for id := range us {
		u := &us[id]
		if r.IntN(3) == 0 {
			u.where = 1 + r.IntN(3)
		}
		exitAt := -1
		if u.where == 1 {
			exitAt = r.IntN(len(data))
		}
		work := func(t *blitz.Task) int64 {
			return blitz.Reduce(len(data), int64(0), func(lo, hi int) int64 {
				var s int64
				for i := lo; i < hi; i++ {
					if i == exitAt {
						runtime.Goexit()
					}
					s += data[i]
				}
				return s
			}, func(a, b int64) int64 { return a + b }, blitz.WithPool(pool), blitz.WithGrain(256))
		}
		switch {
		case u.where == 2:
			u.h = blitzio.Spawn(rt, blitzio.Lazy(func() outcome[int64] { runtime.Goexit(); return outcome[int64]{} }))
		case u.where == 3:
			u.h = blitzio.SpawnBlocking(rt, func() outcome[int64] { runtime.Goexit(); return outcome[int64]{} })
		case r.IntN(2) == 0:
			u.h = blitzio.Spawn(rt, offload(pool, work))
		default:
			u.h = blitzio.SpawnBlocking(rt, func() outcome[int64] {
				v, err := callPool(pool, work)
				return outcome[int64]{v, err}
			})
		}
	}
	var errs firstErr
	// A Goexit cannot be stopped: it ends the goroutine running the job, and with it any
	// job that goroutine was running below it (a job waiting for a stolen fork, and a
	// caller's goroutine waiting in a Call, run other jobs meanwhile, other units'
	// included), as blitz.ErrGoexit's documentation says. Such a bystander sees
	// blitz.ErrGoexit from the pool, or blitzio.ErrGoexit when the goroutine that ended
	// was its blocking job's own. It is counted, and there can be only a few per
	// goroutine a Goexit ended (one per job nested below it); a unit 0 that fails in any
	// other way, or many bystanders, is an error.
	bystanders, exits := 0, 0
	for _, u := range us {
		if u.where == 1 {
			exits++
		}
	}
	for id, u := range us {
		o, err := u.h.Wait()
		switch u.where {
		case 0:
			var pe *blitz.PanicError
			if (err == nil && errors.As(o.err, &pe) && errors.Is(o.err, blitz.ErrGoexit)) || errors.Is(err, blitzio.ErrGoexit) {
				bystanders++
				continue
			}
			if err != nil || o.err != nil || o.v != want {
				errs.add(fmt.Errorf("unit %d (no Goexit): sum %d, err %v / %v", id, o.v, err, o.err))
			}
		case 1:
			// The chunk that exits ran on a pool worker or on a thief (its joiner gets a
			// *blitz.PanicError of blitz.ErrGoexit), or on the calling goroutine itself
			// (a Call runs f on its caller; the Goexit then ends that goroutine, and the
			// blocking job reports blitzio.ErrGoexit).
			var pe *blitz.PanicError
			inPool := err == nil && errors.As(o.err, &pe) && errors.Is(o.err, blitz.ErrGoexit)
			if !inPool && !errors.Is(err, blitzio.ErrGoexit) {
				errs.add(fmt.Errorf("unit %d: Goexit in a loop body: err %v / %v, want a *blitz.PanicError of blitz.ErrGoexit or blitzio.ErrGoexit", id, err, o.err))
			}
		default:
			if !errors.Is(err, blitzio.ErrGoexit) {
				errs.add(fmt.Errorf("unit %d: Goexit in a task or blocking job: err %v, want blitzio.ErrGoexit", id, err))
			}
		}
	}
	if bystanders > 0 {
		t.Logf("%d units without a Goexit were ended by another unit's Goexit on the goroutine running them (%d units exited)", bystanders, exits)
	}
	if bystanders > 4*exits {
		errs.add(fmt.Errorf("%d units without a Goexit got blitz.ErrGoexit, for %d units that exited", bystanders, exits))
	}
	// Full strength afterwards: as many blocking jobs as threads can block at once, and
	// a Broadcast reaches every pool worker.
	gate := make(chan struct{})
	var hs []blitzio.JoinHandle[struct{}]
	var arrived atomic.Int32
	for range 3 {
		hs = append(hs, blitzio.SpawnBlocking(rt, func() struct{} {
			if arrived.Add(1) == 3 {
				close(gate)
			}
			<-gate
			return struct{}{}
		}))
	}
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			errs.add(fmt.Errorf("blocking pool after the Goexits: %w", err))
		}
	}
	var seen atomic.Int32
	pool.Broadcast(func(int) { seen.Add(1) })
	if seen.Load() != 2 {
		errs.add(fmt.Errorf("Broadcast after the Goexits reached %d of 2 workers", seen.Load()))
	}
	return errs.get()
}
