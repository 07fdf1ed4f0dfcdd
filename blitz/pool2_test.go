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

// closedPanic reports whether f panicked with an error wrapping ErrClosed, and what it
// panicked with.
func closedPanic(f func()) (ok bool, r any) {
	defer func() {
		r = recover()
		err, isErr := r.(error)
		ok = isErr && errors.Is(err, ErrClosed)
	}()
	f()
	return false, nil
}

// On a closed pool, every parallel function behaves the same whatever the size of its
// (non-empty) input: it panics with ErrClosed, as Call does. Small inputs used to run
// on the caller's goroutine without looking at the pool, so they worked while large
// ones panicked. (An empty input may return at once: documented on WithPool.)
func TestPool2ClosedPoolSameForEverySize(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	o := WithPool(p)
	add := func(a, b int) int { return a + b }
	id := func(v int) int { return v }
	pos := func(v int) bool { return v > 1 }
	cmpInt := func(a, b int) int { return a - b }
	for _, n := range []int{1, 3, 100, 5000, 1 << 16} {
		s := make([]int, n)
		for i := range s {
			s[i] = n - i
		}
		ss := [][]int{s, s}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		seq := func(yield func(int) bool) {
			for _, v := range s {
				if !yield(v) {
					return
				}
			}
		}
		fns := map[string]func(){
			"For":            func() { For(n, func(lo, hi int) {}, o) },
			"ForGrain":       func() { ForGrain(n, 1, func(lo, hi int) {}, o) },
			"ForUntil":       func() { ForUntil(n, func(lo, hi int, _ Stop) {}, o) },
			"Reduce":         func() { Reduce(n, 0, func(lo, hi int) int { return hi - lo }, add, o) },
			"MapReduce":      func() { MapReduce(s, 0, id, add, o) },
			"MapReduceChunk": func() { MapReduceChunked(s, 0, func(c []int) int { return len(c) }, add, o) },
			"TryFor":         func() { _ = TryFor(n, func(lo, hi int) error { return nil }, o) },
			"TryForEach":     func() { _ = TryForEach(s, func(int) error { return nil }, o) },
			"TryReduce":      func() { _, _ = TryReduce(n, 0, func(lo, hi int) (int, error) { return 0, nil }, add, o) },
			"TryForContext": func() {
				_ = TryForContext(context.Background(), n, func(context.Context, int, int) error { return nil }, o)
			},
			"ForEach":         func() { ForEach(s, func(int) {}, o) },
			"ForEachIndex":    func() { ForEachIndex(s, func(int, *int) {}, o) },
			"Map":             func() { Map(s, id, o) },
			"MapInto":         func() { MapInto(make([]int, n), s, id, o) },
			"MapInPlace":      func() { MapInPlace(s, id, o) },
			"Fill":            func() { Fill(make([]int, n), 1, o) },
			"Filter":          func() { Filter(s, pos, o) },
			"Partition":       func() { Partition(s, pos, o) },
			"FlatMap":         func() { FlatMap(s, func(v int) []int { return nil }, o) },
			"Flatten":         func() { Flatten(ss, o) },
			"Scatter":         func() { Scatter(s, idx, make([]int, n), o) },
			"Sum":             func() { Sum(s, o) },
			"Dot":             func() { Dot(s, s, o) },
			"Min":             func() { Min(s, o) },
			"Max":             func() { Max(s, o) },
			"MinFunc":         func() { MinFunc(s, cmpInt, o) },
			"MaxFunc":         func() { MaxFunc(s, cmpInt, o) },
			"MinByKey":        func() { MinByKey(s, id, o) },
			"MaxByKey":        func() { MaxByKey(s, id, o) },
			"Count":           func() { Count(s, pos, o) },
			"Any":             func() { Any(s, pos, o) },
			"All":             func() { All(s, pos, o) },
			"FindAny":         func() { FindAny(s, pos, o) },
			"FindFirst":       func() { FindFirst(s, pos, o) },
			"FindLast":        func() { FindLast(s, pos, o) },
			"Index":           func() { Index(s, 1, o) },
			"IndexAny":        func() { IndexAny(s, 1, o) },
			"LastIndex":       func() { LastIndex(s, 1, o) },
			"Sort":            func() { Sort(s, o) },
			"SortDesc":        func() { SortDesc(s, o) },
			"SortFunc":        func() { SortFunc(s, cmpInt, o) },
			"SortByKey":       func() { SortByKey(s, id, o) },
			"SortByCachedKey": func() { SortByCachedKey(s, id, o) },
			"SortStableFunc":  func() { SortStableFunc(s, cmpInt, o) },
			"ForEachSeq":      func() { ForEachSeq(seq, func(int) {}, o) },
			"MapSeq": func() {
				for range MapSeq(seq, id, o) {
				}
			},
			"Chunks.ForEach": func() { Chunks(s, 8).ForEach(func(int, []int) {}, o) },
			"ReduceChunks":   func() { ReduceChunks(Chunks(s, 8), 0, func(int, []int) int { return 1 }, add, o) },
			"Zip.ForEach":    func() { Zip(s, s).ForEach(func(int, int, int) {}, o) },
			"ZipMapReduce":   func() { ZipMapReduce(Zip(s, s), 0, add, add, o) },
			"ZipDot":         func() { ZipDot(Zip(s, s), o) },
			"Chain.ForEach":  func() { Chain(s, s).ForEach(func(int, int) {}, o) },
			"ChainMapReduce": func() { ChainMapReduce(Chain(s, s), 0, id, add, o) },
			"Range.ForEach":  func() { Range(0, n).ForEach(func(int) {}, o) },
			"RangeReduce":    func() { RangeReduce(Range(0, n), 0, id, add, o) },
		}
		for name, f := range fns {
			if ok, r := closedPanic(f); !ok {
				t.Errorf("%s with %d elements on a closed pool: recovered %v, want a panic wrapping ErrClosed", name, n, r)
			}
		}
	}
}

// Default().Close() panics with a message that says why, and leaves the default pool
// working: every package-level function of the process shares it. It runs in a child
// process, so that the code before the fix (which closed the default pool) cannot
// break the other tests.
func TestPool2DefaultCloseRefused(t *testing.T) {
	out, failed := runChild(t, "pool2-default-close")
	if failed || !strings.Contains(out, "REFUSED: ") || !strings.Contains(out, "STILL WORKS") {
		t.Fatalf("Default().Close(): want a panic and a working default pool; child output:\n%s", out)
	}
	if !strings.Contains(out, "default pool") {
		t.Fatalf("the panic does not say that the default pool cannot be closed:\n%s", out)
	}
}

// pool2Child runs the child-process scenarios of the pool2 tests (see runChild).
func pool2Child(scenario string) {
	switch scenario {
	case "pool2-gopanic-site":
		p, _ := NewPool(Config{Workers: 2})
		p.Go(func(*Task) {
			panic("go-site-boom") // the crash message must name this line
		})
		time.Sleep(20 * time.Second)
		fmt.Println("NO CRASH")
	case "pool2-default-close":
		func() {
			defer func() {
				if r := recover(); r != nil {
					fmt.Printf("REFUSED: %v\n", r)
				}
			}()
			Default().Close()
			fmt.Println("CLOSED")
		}()
		s := make([]int, 1<<20)
		for i := range s {
			s[i] = 1
		}
		if Sum(s) == len(s) && Sum(s[:3]) == 3 {
			fmt.Println("STILL WORKS")
		}
	}
}

// Hostile: runtime.Goexit in the function of every Call form, directly or inside a
// Join, on the calling goroutine: each Call is left exactly once (the guest freed, the
// operation unregistered), so later Calls reuse the guest, the Task checks see it free,
// and Close returns.
func TestPool2GoexitEveryCallForm(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	exit := func(t *Task, inJoin bool) {
		if inJoin {
			Join(t, func(*Task) { runtime.Goexit() }, func(*Task) {})
		}
		runtime.Goexit()
	}
	forms := map[string]func(inJoin bool){
		"Pool.Call": func(j bool) { p.Call(func(t *Task) { exit(t, j) }) },
		"Call":      func(j bool) { Call(p, func(t *Task) int { exit(t, j); return 0 }) },
		"Pool.TryCall": func(j bool) {
			_ = p.TryCall(func(t *Task) error { exit(t, j); return nil })
		},
		"TryCall": func(j bool) {
			_, _ = TryCall(p, func(t *Task) (int, error) { exit(t, j); return 0, nil })
		},
	}
	for name, f := range forms {
		for _, inJoin := range []bool{false, true} {
			what := fmt.Sprintf("%s (Goexit in a Join: %v)", name, inJoin)
			if _, exited := goexitOutcome(t, what, func() { f(inJoin) }); !exited {
				t.Fatalf("%s: the calling goroutine did not exit", what)
			}
			if ops := p.ops.Load(); ops != 0 {
				t.Fatalf("%s: %d operations still counted after the Call's goroutine exited", what, ops)
			}
		}
	}
	var saved *Task
	p.Call(func(t *Task) { saved = t })
	stalePanic(t, "Catch on the guest after Goexits", func() { Catch(saved, func(*Task) {}) })
	if retained, _ := guestCounts(p); retained > 1 {
		t.Errorf("%d guest Tasks made for sequential Calls, want 1 (the guest was not freed)", retained)
	}
	within(t, 10*time.Second, "Close after Calls that exited", p.Close)
}

// Hostile: a PanicHandler that calls runtime.Goexit (or panics) must not leave the Go
// job counted: Close used to wait for it forever.
func TestPool2PanicHandlerGoexit(t *testing.T) {
	handled := make(chan struct{}, 8)
	p, err := NewPool(Config{Workers: 2, PanicHandler: func(*PanicError) {
		handled <- struct{}{}
		runtime.Goexit()
	}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		p.Go(func(*Task) { panic("handled-then-exit") })
	}
	for range 4 {
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("the PanicHandler was not called")
		}
	}
	checkPoolAlive(t, p, "PanicHandler calling Goexit")
}

// The crash of an unhandled Pool.Go panic names the user's panicking line, as
// PanicError.Error does, on its first line.
func TestPool2GoPanicCrashNamesSite(t *testing.T) {
	out, failed := runChild(t, "pool2-gopanic-site")
	if !failed || strings.Contains(out, "NO CRASH") {
		t.Fatalf("a Go job's panic did not crash the program:\n%s", out)
	}
	first := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "go-site-boom") {
			first = line
			break
		}
	}
	if !strings.Contains(first, "[at pool2_test.go:") {
		t.Fatalf("the crash message does not name the panicking line on the line with the value: %q\nfull output:\n%s", first, out)
	}
}

// Hostile: Go jobs that keep submitting Go jobs while Close waits. Close lets the whole
// chain run (none is refused) and returns once it ends.
func TestPool2CloseWaitsForGoChains(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const chains, links = 4, 200
	var ran atomic.Int64
	var link func(k int) func(*Task)
	link = func(k int) func(*Task) {
		return func(*Task) {
			ran.Add(1)
			if k < links {
				p.Go(link(k + 1)) // panics with ErrClosed if Close refused it
			}
		}
	}
	for range chains {
		p.Go(link(1))
	}
	within(t, 30*time.Second, "Close while Go jobs keep submitting", p.Close)
	if got := ran.Load(); got != chains*links {
		t.Fatalf("Close returned after %d of %d chained Go jobs ran", got, chains*links)
	}
}

// Hostile: Close called from inside a Go job panics (it would wait for itself); with a
// PanicHandler that panic reaches the handler, and the outer Close still returns.
func TestPool2CloseFromGoJobReachesHandler(t *testing.T) {
	got := make(chan *PanicError, 1)
	p, err := NewPool(Config{Workers: 2, PanicHandler: func(pe *PanicError) { got <- pe }})
	if err != nil {
		t.Fatal(err)
	}
	p.Go(func(*Task) { p.Close() })
	select {
	case pe := <-got:
		if !strings.Contains(fmt.Sprint(pe.Value), "inside the pool's own work") {
			t.Fatalf("the handler got %v, want Close's from-inside panic", pe.Value)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close from inside a Go job neither panicked nor returned")
	}
	within(t, 10*time.Second, "Close from outside after the refused inner Close", p.Close)
}

// Nil arguments of the new call forms panic with a message naming them.
func TestPool2TryCallNil(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	var np *Pool
	wantPanic(t, "nil *Pool", func() { _, _ = TryCall(np, func(*Task) (int, error) { return 0, nil }) })
	wantPanic(t, "nil function", func() { _, _ = TryCall[int](p, nil) })
	wantPanic(t, "nil function", func() { _ = p.TryCall(nil) })
}

// Hostile: Broadcast from a job running on a worker of the same pool used to deadlock
// silently (that worker cannot run its share while it waits). Now it panics at once;
// from a Call on an outside goroutine, and from a Call on another pool's worker, it
// works.
func TestPool2BroadcastFromWorkerPanics(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	done := make(chan any, 1)
	p.Go(func(*Task) {
		defer func() { done <- recover() }()
		p.Broadcast(func(int) {})
	})
	select {
	case r := <-done:
		if !strings.Contains(fmt.Sprint(r), "worker of the same pool") {
			t.Fatalf("Broadcast from a Go job: recovered %v, want a panic saying why", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Broadcast from a Go job on the same pool deadlocked")
	}
	// Nested inside a Call made by the job: the goroutine is still a worker.
	p.Go(func(*Task) {
		defer func() { done <- recover() }()
		p.Call(func(*Task) { p.Broadcast(func(int) {}) })
	})
	select {
	case r := <-done:
		if !strings.Contains(fmt.Sprint(r), "worker of the same pool") {
			t.Fatalf("Broadcast from a Call inside a Go job: recovered %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Broadcast from a Call inside a Go job on the same pool deadlocked")
	}
	var ran atomic.Int32
	within(t, 10*time.Second, "Broadcast from a Call", func() {
		p.Call(func(*Task) { p.Broadcast(func(int) { ran.Add(1) }) })
	})
	q := newPool(t, Config{Workers: 1})
	within(t, 10*time.Second, "Broadcast from another pool's worker", func() {
		onWorker(q, func(*Task) { p.Broadcast(func(int) { ran.Add(1) }) })
	})
	if ran.Load() != 4 {
		t.Fatalf("the allowed Broadcasts ran %d shares, want 4", ran.Load())
	}
}

// Hostile: Close while goroutines outside the pool call it in a loop. Close used to
// accept their Calls until the count of operations in flight reached zero, which with
// several callers it almost never did: Close did not return (the stress test
// TestBlitzStressCloseRacesCallers hung for its 2 minutes). Now Calls from outside are
// refused as soon as Close begins; the pool's own nested calls are still accepted
// (TestDefectsNestedCallDuringClose).
func TestPool2CloseWithCallersInALoop(t *testing.T) {
	for round := range 5 {
		p, err := NewPool(Config{Workers: 1 + round%3})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var closed atomic.Int32
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					v, err := TryCall(p, func(t *Task) (int, error) { return fib(t, 10), nil })
					if errors.Is(err, ErrClosed) {
						closed.Add(1)
						return
					}
					if err != nil || v != 55 {
						t.Errorf("TryCall = %d, %v", v, err)
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		within(t, 20*time.Second, "Close while 16 goroutines call in a loop", p.Close)
		wg.Wait()
		if closed.Load() != 16 {
			t.Fatalf("round %d: %d of 16 callers saw ErrClosed", round, closed.Load())
		}
	}
}
