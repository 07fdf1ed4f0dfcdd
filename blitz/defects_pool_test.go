package blitz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Regression tests for issue 9, items 3 to 7 and 9 (pool, tasks, jobs, Close).

const defectsChildEnv = "BLITZ_DEFECTS_POOL_CHILD"

// TestMain lets a test re-execute the test binary as a child that runs one scenario
// (selected by defectsChildEnv) and exits, to check that it crashes as it must.
func TestMain(m *testing.M) {
	if s := os.Getenv(defectsChildEnv); s != "" {
		defectsChild(s)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs scenario in a child process and returns its combined output and
// whether it exited with an error status.
func runChild(t *testing.T, scenario string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), defectsChildEnv+"="+scenario)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("child %q did not finish within 60s; output:\n%s", scenario, out)
	}
	return string(out), err != nil
}

var defectsForkJob Job[chan struct{}, int]

// guestWaitsForStolen runs, inside a Call on a one-worker pool, a fork that the worker
// steals and that keeps running until started is closed; while the caller (a guest)
// waits for it, inject runs. It returns once the Call returned.
func guestWaitsForStolen(p *Pool, started chan struct{}, inject func()) {
	stolen := make(chan struct{})
	p.Call(func(t *Task) {
		fu := defectsForkJob.Fork(t, func(_ *Task, c chan struct{}) int {
			close(stolen)
			<-c
			return 1
		}, started)
		<-stolen // the worker took the fork: it is busy until started is closed
		inject()
		if fu.Join(t) != 1 {
			panic("wrong result")
		}
	})
}

func defectsChild(scenario string) {
	if strings.HasPrefix(scenario, "pool2-") {
		pool2Child(scenario)
		return
	}
	switch scenario {
	case "gopanic":
		// Item 3: a Go job's panic without a PanicHandler must crash the program, not
		// surface in the Call of a guest that happened to run it.
		p, _ := NewPool(Config{Workers: 1})
		started := make(chan struct{})
		func() {
			defer func() {
				if r := recover(); r != nil {
					fmt.Printf("SURFACED IN CALL: %v\n", r)
					os.Exit(0)
				}
			}()
			guestWaitsForStolen(p, started, func() {
				p.Go(func(*Task) {
					close(started)
					panic("go-job-boom-42")
				})
			})
		}()
		time.Sleep(20 * time.Second) // the crash must come before this
		fmt.Println("NO CRASH")
	case "gopanic-top":
		// The same on a worker that is not inside other work.
		p, _ := NewPool(Config{Workers: 2})
		p.Go(func(*Task) { panic("go-job-boom-43") })
		time.Sleep(20 * time.Second)
		fmt.Println("NO CRASH")
	}
}

// Item 3.
func TestDefectsGoPanicCrashesNotCall(t *testing.T) {
	for _, sc := range []struct{ name, value string }{{"gopanic", "go-job-boom-42"}, {"gopanic-top", "go-job-boom-43"}} {
		out, failed := runChild(t, sc.name)
		if strings.Contains(out, "SURFACED IN CALL") {
			t.Fatalf("%s: a Go job's panic surfaced in an unrelated Call:\n%s", sc.name, out)
		}
		if !failed || !strings.Contains(out, sc.value) {
			t.Fatalf("%s: want a crash (non-zero exit) showing %q; failed=%v, output:\n%s", sc.name, sc.value, failed, out)
		}
	}
}

// Item 3: a Go job that blocks must not hold up a Call whose caller was waiting.
func TestDefectsBlockingGoJobDoesNotHoldCall(t *testing.T) {
	for round := 0; round < 5; round++ {
		p := newPool(t, Config{Workers: 1})
		started := make(chan struct{})
		release := make(chan struct{})
		within(t, 10*time.Second, "a Call whose guest could run a blocking Go job", func() {
			guestWaitsForStolen(p, started, func() {
				p.Go(func(*Task) {
					close(started)
					<-release
				})
			})
		})
		close(release)
	}
}

// Item 3, on a worker: a worker waiting in a join (here inside a Go job) must not run
// a blocking Go job beneath the join.
func TestDefectsBlockingGoJobDoesNotHoldWorkerJoin(t *testing.T) {
	for round := 0; round < 5; round++ {
		p := newPool(t, Config{Workers: 2})
		started := make(chan struct{})
		release := make(chan struct{})
		joined := make(chan struct{})
		p.Go(func(t *Task) {
			stolen := make(chan struct{})
			var j Job[chan struct{}, int]
			fu := j.Fork(t, func(_ *Task, c chan struct{}) int {
				close(stolen)
				<-c
				return 1
			}, started)
			<-stolen // the other worker took the fork
			p.Go(func(*Task) {
				close(started)
				<-release
			})
			fu.Join(t) // waits here while the blocking Go job is queued
			close(joined)
		})
		within(t, 10*time.Second, "a worker's join while a blocking Go job was queued", func() { <-joined })
		close(release)
	}
}

// Item 4: Goexit inside Call's function must not leave the Call counted: Close returns.
func TestDefectsGoexitInCallThenClose(t *testing.T) {
	p, _ := NewPool(Config{Workers: 2})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Call(func(t *Task) {
			Join(t, func(*Task) {}, func(*Task) {})
			runtime.Goexit()
		})
	}()
	<-done
	within(t, 10*time.Second, "Close after a Call whose function called runtime.Goexit", p.Close)
}

// goexitOutcome runs f on a goroutine of its own and reports how it ended: with a
// panic (its value), or by runtime.Goexit (exited), or normally.
func goexitOutcome(t *testing.T, what string, f func()) (r any, exited bool) {
	t.Helper()
	returned, panicked := false, false
	within(t, 10*time.Second, what, func() {
		defer func() {
			r = recover()
			panicked = r != nil
		}()
		f()
		returned = true
	})
	return r, !returned && !panicked
}

// expectGoexit runs f, which makes some job call runtime.Goexit, and checks that f
// either panics with a *PanicError wrapping ErrGoexit (the job ran on another goroutine)
// or exits too (the job ran on f's own goroutine, which Goexit ends).
func expectGoexit(t *testing.T, what string, f func()) {
	t.Helper()
	r, exited := goexitOutcome(t, what, f)
	if exited {
		return
	}
	pe, ok := r.(*PanicError)
	if !ok || !errors.Is(pe, ErrGoexit) {
		t.Fatalf("%s: recovered %T %v, want a *PanicError wrapping ErrGoexit (or the goroutine to exit)", what, r, r)
	}
}

// checkPoolAlive checks that every worker of p runs work (dead workers were replaced)
// and that Close returns.
func checkPoolAlive(t *testing.T, p *Pool, what string) {
	t.Helper()
	var ran atomic.Int32
	within(t, 10*time.Second, what+": pool works after Goexit", func() {
		p.Broadcast(func(int) { ran.Add(1) })
		done := make(chan struct{})
		p.Go(func(*Task) { close(done) })
		<-done
	})
	if int(ran.Load()) != p.NumWorkers() {
		t.Fatalf("%s: Broadcast after Goexit ran on %d workers, want %d", what, ran.Load(), p.NumWorkers())
	}
	within(t, 10*time.Second, what+": Close after Goexit", p.Close)
}

// Item 4: Goexit in a stolen fork: the joiner gets ErrGoexit, the worker is replaced.
func TestDefectsGoexitInStolenFork(t *testing.T) {
	for _, w := range []int{1, 2, 4} {
		p, _ := NewPool(Config{Workers: w})
		checked := 0
		for i := 0; i < 5; i++ {
			var stole atomic.Bool
			r, exited := goexitOutcome(t, "stolen fork with Goexit", func() {
				p.Call(func(t *Task) {
					var j Job[int, int]
					fu := j.Fork(t, func(t *Task, _ int) int {
						if t.WorkerIndex() >= 0 {
							stole.Store(true)
							runtime.Goexit()
						}
						return 0
					}, 0)
					deadline := time.Now().Add(2 * time.Second)
					for !stole.Load() && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					fu.Join(t)
				})
			})
			if !stole.Load() {
				continue
			}
			checked++
			if pe, ok := r.(*PanicError); exited || !ok || !errors.Is(pe, ErrGoexit) {
				t.Fatalf("workers=%d: stolen fork with Goexit: recovered %T %v (exited %v), want ErrGoexit", w, r, r, exited)
			}
		}
		if checked == 0 {
			t.Logf("workers=%d: no fork was stolen", w)
		}
		checkPoolAlive(t, p, fmt.Sprintf("stolen fork, workers=%d", w))
	}
}

// Item 4, entry by entry, each with a fresh pool.
func TestDefectsGoexitEveryEntry(t *testing.T) {
	cases := []struct {
		name string
		run  func(p *Pool)
	}{
		{"Join branch", func(p *Pool) {
			p.Call(func(t *Task) {
				Join(t, func(*Task) { time.Sleep(time.Millisecond) }, func(*Task) { runtime.Goexit() })
			})
		}},
		{"Join branch in a Go job", func(p *Pool) {
			res := make(chan any, 1)
			p.Go(func(t *Task) {
				returned := false
				defer func() {
					if r := recover(); r != nil {
						res <- r
					} else if !returned {
						res <- &PanicError{Value: ErrGoexit} // the Go job's goroutine exited
					}
				}()
				Join(t, func(*Task) { time.Sleep(time.Millisecond) }, func(*Task) { runtime.Goexit() })
				returned = true
				res <- nil
			})
			if r := <-res; r != nil {
				panic(r)
			}
		}},
		{"nested Call in a Go job", func(p *Pool) {
			res := make(chan any, 1)
			p.Go(func(t *Task) {
				returned := false
				defer func() {
					if r := recover(); r != nil {
						res <- r
					} else if !returned {
						res <- &PanicError{Value: ErrGoexit} // the worker's goroutine exited
					}
				}()
				p.Call(func(t *Task) {
					Join(t, func(*Task) {}, func(*Task) {})
					runtime.Goexit()
				})
				returned = true
				res <- nil
			})
			if r := <-res; r != nil {
				panic(r)
			}
		}},
		{"scope spawn", func(p *Pool) {
			p.Call(func(t *Task) {
				Scope(t, func(s *Spawner) { s.Spawn(func(*Task) { runtime.Goexit() }) })
			})
		}},
		{"broadcast", func(p *Pool) {
			p.Broadcast(func(i int) {
				if i == 0 {
					runtime.Goexit()
				}
			})
		}},
		{"loop leaves", func(p *Pool) {
			ForGrain(1<<10, 1, func(lo, hi int) {
				if lo%7 == 3 {
					runtime.Goexit()
				}
				time.Sleep(10 * time.Microsecond)
			}, WithPool(p))
		}},
	}
	for _, c := range cases {
		for _, w := range []int{1, 3} {
			what := fmt.Sprintf("%s, workers=%d", c.name, w)
			t.Run(what, func(t *testing.T) {
				p, _ := NewPool(Config{Workers: w})
				expectGoexit(t, what, func() { c.run(p) })
				checkPoolAlive(t, p, what)
			})
		}
	}
}

// Item 4: a Go job that exits must not kill its worker for good.
func TestDefectsGoexitInGoJob(t *testing.T) {
	p, _ := NewPool(Config{Workers: 1})
	for i := 0; i < 3; i++ {
		p.Go(func(*Task) { runtime.Goexit() })
	}
	done := make(chan struct{})
	p.Go(func(*Task) { close(done) })
	within(t, 10*time.Second, "a Go job after Go jobs that called Goexit", func() { <-done })
	within(t, 10*time.Second, "Close after Go jobs that called Goexit", p.Close)
}

// Item 5: work that Close waits for may still make nested calls.
func TestDefectsNestedCallDuringClose(t *testing.T) {
	for round := 0; round < 5; round++ {
		p, _ := NewPool(Config{Workers: 2})
		results := make(chan error, 2)
		inJob := make(chan struct{}, 2)
		nested := func(t *Task) error {
			inJob <- struct{}{}
			deadline := time.Now().Add(5 * time.Second)
			for !poolClosing(p) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Microsecond)
			}
			if err := p.TryCall(func(*Task) error { return nil }); err != nil {
				return fmt.Errorf("nested TryCall: %w", err)
			}
			var sum atomic.Int64
			For(1000, func(lo, hi int) { sum.Add(int64(hi - lo)) }, WithPool(p), WithGrain(10))
			if sum.Load() != 1000 {
				return fmt.Errorf("nested For covered %d of 1000", sum.Load())
			}
			return nil
		}
		p.Go(func(t *Task) { results <- nested(t) })
		go func() {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("Call panicked: %v", r)
					}
				}()
				p.Call(func(t *Task) { err = nested(t) })
			}()
			results <- err
		}()
		<-inJob
		<-inJob
		within(t, 20*time.Second, "Close while running work makes nested calls", p.Close)
		for range 2 {
			if err := <-results; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// Item 5: Close from inside a job of the same pool panics with a message saying so,
// instead of waiting for itself.
func TestDefectsCloseFromInsideJob(t *testing.T) {
	p, _ := NewPool(Config{Workers: 2})
	check := func(what string, r any) {
		t.Helper()
		msg := fmt.Sprint(r)
		if pe, ok := r.(*PanicError); ok {
			msg = fmt.Sprint(pe.Value)
		}
		if !strings.Contains(msg, "Close") || !strings.Contains(msg, "inside") {
			t.Fatalf("%s: Close from inside the pool: recovered %v, want a panic saying Close was called from inside", what, r)
		}
	}
	var r any
	within(t, 10*time.Second, "Close from a Call's function", func() {
		defer func() { r = recover() }()
		p.Call(func(*Task) { p.Close() })
	})
	check("Call", r)
	rc := make(chan any, 1)
	within(t, 10*time.Second, "Close from a Go job", func() {
		p.Go(func(*Task) {
			defer func() { rc <- recover() }()
			p.Close()
		})
		r = <-rc
	})
	check("Go", r)
	within(t, 10*time.Second, "Close from a loop leaf", func() {
		defer func() { r = recover() }()
		ForGrain(64, 1, func(lo, hi int) { p.Close() }, WithPool(p))
	})
	check("For", r)
	// Another pool's Close from inside p is fine.
	q, _ := NewPool(Config{Workers: 1})
	within(t, 10*time.Second, "closing another pool from inside a job", func() {
		p.Call(func(*Task) { q.Close() })
	})
	within(t, 10*time.Second, "Close from outside", p.Close)
}

// Item 6: a Job per call of a generic function must not grow the Tasks' slab tables.
func TestDefectsJobsPerCallStayBounded(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	const calls = 20000
	var maxSlabs int
	p.Call(func(t *Task) {
		for i := 0; i < calls; i++ {
			if got := forkWithLocalJob(t, i); got != i+1 {
				panic(fmt.Sprintf("forkWithLocalJob(%d) = %d", i, got))
			}
			forkWithLocalJob(t, "x")
			maxSlabs = max(maxSlabs, taskSlabs(t))
		}
	})
	if maxSlabs > 64 {
		t.Fatalf("a guest Task's slab table grew to %d entries after %d Jobs of two types, want it bounded by the types in use", maxSlabs, 2*calls)
	}
}

// forkWithLocalJob declares a Job per call, as generic code does.
func forkWithLocalJob[T any](t *Task, v T) int {
	var j Job[T, int]
	fu := j.Fork(t, func(_ *Task, v T) int { return 1 }, v)
	x := fmt.Sprint(v)
	n := 0
	fmt.Sscan(x, &n)
	return fu.Join(t) + n
}

// Item 7: guest Tasks are reused and bounded, and idle workers scan only busy ones.
func TestDefectsGuestsBounded(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	const callers = 1000
	var entered sync.WaitGroup
	entered.Add(callers)
	release := make(chan struct{})
	var done sync.WaitGroup
	for i := 0; i < callers; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			p.Call(func(*Task) {
				entered.Done()
				<-release
			})
		}()
	}
	within(t, 30*time.Second, "1000 concurrent Calls entering", entered.Wait)
	if _, scanned := guestCounts(p); scanned != callers {
		t.Fatalf("with %d Calls in flight, workers scan %d guests, want %d", callers, scanned, callers)
	}
	close(release)
	within(t, 30*time.Second, "1000 concurrent Calls returning", done.Wait)
	retained, scanned := guestCounts(p)
	if scanned > pinnedLimit(p) {
		t.Fatalf("after the Calls returned, idle workers still scan %d guest Tasks, want at most the %d pinned ones", scanned, pinnedLimit(p))
	}
	if limit := guestKeepLimit(p); retained > limit {
		t.Fatalf("after 1000 concurrent Calls, %d guest Tasks are retained, want at most %d", retained, limit)
	}
	// They are reused: sequential Calls do not make new ones.
	for i := 0; i < 100; i++ {
		p.Call(func(*Task) {})
	}
	if r, _ := guestCounts(p); r > guestKeepLimit(p) {
		t.Fatalf("sequential Calls: %d retained guest Tasks", r)
	}
	st := p.Stats()
	_ = st
}

// Item 9: nil pools, Tasks and functions panic with a message naming the argument, on
// every path, instead of a nil dereference.
func TestDefectsNilArguments(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	var nilPool *Pool
	var j Job[int, int]
	inc := func(_ *Task, n int) int { return n + 1 }
	call := func(f func(t *Task)) func() { return func() { p.Call(f) } }
	cases := []struct {
		name, want string
		f          func()
	}{
		{"Pool.Call nil pool", "nil", func() { nilPool.Call(func(*Task) {}) }},
		{"Call nil pool", "nil", func() { Call(nilPool, func(*Task) int { return 0 }) }},
		{"TryCall nil pool", "nil", func() { _ = nilPool.TryCall(func(*Task) error { return nil }) }},
		{"Go nil pool", "nil", func() { nilPool.Go(func(*Task) {}) }},
		{"Broadcast nil pool", "nil", func() { nilPool.Broadcast(func(int) {}) }},
		{"Call nil function", "nil", func() { Call[int](p, nil) }},
		{"Join nil task", "nil", func() { Join(nil, func(*Task) {}, func(*Task) {}) }},
		{"Join2 nil task", "nil", func() { Join2(nil, func(*Task) int { return 0 }, func(*Task) int { return 0 }) }},
		{"Join2 nil function", "nil", call(func(t *Task) { Join2[int, int](t, nil, func(*Task) int { return 0 }) })},
		{"JoinN nil task", "nil", func() { JoinN(nil, func(*Task) {}, func(*Task) {}) }},
		{"JoinN nil function", "nil", call(func(t *Task) { JoinN(t, func(*Task) {}, nil, func(*Task) {}) })},
		{"TryJoin nil task", "nil", func() { _ = TryJoin(nil, func(*Task) error { return nil }) }},
		{"TryJoin nil function", "nil", call(func(t *Task) { _ = TryJoin(t, nil, func(*Task) error { return nil }) })},
		{"TryJoinContext nil task", "nil", func() {
			_ = TryJoinContext(context.Background(), nil, func(context.Context, *Task) error { return nil })
		}},
		{"Scope nil task", "nil", func() { Scope(nil, func(*Spawner) {}) }},
		{"Scope nil body", "nil", call(func(t *Task) { Scope(t, nil) })},
		{"ScopeContext nil task", "nil", func() { _ = ScopeContext(context.Background(), nil, func(*Spawner) {}) }},
		{"Catch nil task", "nil", func() { Catch(nil, func(*Task) {}) }},
		{"Catch nil function", "nil", call(func(t *Task) { Catch(t, nil) })},
		// Fork with a nil Task is the one exception, documented on Job.Fork: its
		// inlined fast path has no room for the check.
		{"Fork nil function, then Join", "nil", call(func(t *Task) {
			// Deep enough that the fork is not pushed (below the eager levels).
			var rec func(t *Task, d int)
			rec = func(t *Task, d int) {
				if d == 0 {
					j.Fork(t, nil, 1).Join(t)
					return
				}
				fu := j.Fork(t, inc, 1)
				rec(t, d-1)
				fu.Join(t)
			}
			rec(t, 8)
		})},
		{"Future.Join nil task", "nil", call(func(t *Task) {
			fu := j.Fork(t, inc, 1)
			defer fu.Join(t)
			fu.Join(nil)
		})},
	}
	for _, c := range cases {
		var r any
		within(t, 10*time.Second, c.name, func() {
			defer func() { r = recover() }()
			c.f()
		})
		if pe, ok := r.(*PanicError); ok {
			r = pe.Value
		}
		if r == nil {
			t.Errorf("%s: no panic", c.name)
			continue
		}
		if _, isRuntime := r.(runtime.Error); isRuntime {
			t.Errorf("%s: panicked with a runtime error (%v), want a clear blitz panic", c.name, r)
			continue
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, "blitz") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: panic %q does not name the nil argument", c.name, msg)
		}
	}
}

// Items 3 and 4 together: Calls that fork and join run while Go jobs panic (into a
// PanicHandler), exit, block for a while and make nested parallel loops. Every Call
// must return its own correct result, never a Go job's panic; every panic reaches the
// handler; Close returns.
func TestDefectsGoJobsMixedStress(t *testing.T) {
	rounds := 3
	if raceEnabled {
		rounds = 2
	}
	for round := 0; round < rounds; round++ {
		var handled atomic.Int32
		p, _ := NewPool(Config{Workers: 3, PanicHandler: func(pe *PanicError) {
			if pe.Value != "mixed-go-panic" {
				panic(fmt.Sprintf("PanicHandler got %v", pe.Value))
			}
			handled.Add(1)
		}})
		const callers, goJobs = 8, 120
		var panics atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan string, callers)
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 20; k++ {
					var got int
					func() {
						defer func() {
							if r := recover(); r != nil {
								errs <- fmt.Sprintf("Call panicked: %v", r)
							}
						}()
						got = Call(p, func(t *Task) int { return fib(t, 16) })
					}()
					if got != fibSeq(16) {
						errs <- fmt.Sprintf("Call returned %d, want %d", got, fibSeq(16))
						return
					}
				}
			}()
		}
		for i := 0; i < goJobs; i++ {
			switch i % 4 {
			case 0:
				panics.Add(1)
				p.Go(func(*Task) { panic("mixed-go-panic") })
			case 1:
				p.Go(func(*Task) { runtime.Goexit() })
			case 2:
				p.Go(func(*Task) { time.Sleep(time.Duration(i%7) * 100 * time.Microsecond) })
			default:
				p.Go(func(t *Task) {
					var n atomic.Int64
					For(500, func(lo, hi int) { n.Add(int64(hi - lo)) }, WithPool(p), WithGrain(16))
					if n.Load() != 500 {
						panic("mixed-go-panic") // counted as a missing handler call below
					}
				})
			}
		}
		within(t, 30*time.Second, "Calls beside panicking, exiting and blocking Go jobs", wg.Wait)
		within(t, 30*time.Second, "Close after the mixed Go jobs", p.Close)
		close(errs)
		for e := range errs {
			t.Fatalf("round %d: %s", round, e)
		}
		if handled.Load() != panics.Load() {
			t.Fatalf("round %d: PanicHandler called %d times, want %d", round, handled.Load(), panics.Load())
		}
	}
}
