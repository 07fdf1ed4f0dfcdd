package blitz

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile tests of the pool's entry points that the coverage report showed partly
// untested: Pool.Go during Close, Default and SetDefault before the first use, many
// Calls at once (overflow guests released with panics and Goexit), and the stack marks
// (markD0...markDF) of many live pools nested in one another.

// h11Recover runs f and returns what it panicked with (nil if it returned).
func h11Recover(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// h11Wait waits for c to be closed, failing the test after d.
func h11Wait(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s: not done within %v; goroutines:\n%s", what, d, buf)
	}
}

// h11WaitTrue polls cond until it holds, failing the test after d.
func h11WaitTrue(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v", what, d)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func h11IsClosed(r any) bool {
	err, ok := r.(error)
	return ok && errors.Is(err, ErrClosed)
}

// Nil receivers and functions panic with a message naming them, and a closed pool
// refuses Go without running f.
func TestHostile11GoNilArgsAndClosed(t *testing.T) {
	var nilp *Pool
	for _, c := range []struct {
		what, want string
		f          func()
	}{
		{"nil Pool.Go", "Pool.Go: nil *Pool", func() { nilp.Go(func(*Task) {}) }},
		{"nil Pool.NumWorkers", "Pool.NumWorkers: nil *Pool", func() { nilp.NumWorkers() }},
		{"nil Pool.Call", "Pool.Call: nil *Pool", func() { nilp.Call(func(*Task) {}) }},
		{"Pool.Call(nil)", "Pool.Call: nil function", func() {
			p := newPool(t, Config{Workers: 1})
			p.Call(nil)
		}},
		{"Pool.Go(nil)", "Pool.Go: nil function", func() {
			p := newPool(t, Config{Workers: 1})
			p.Go(nil)
		}},
	} {
		r := h11Recover(c.f)
		if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
			t.Errorf("%s: panic %v, want one containing %q", c.what, r, c.want)
		}
	}
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.NumWorkers(); n != 3 {
		t.Errorf("NumWorkers = %d, want 3", n)
	}
	p.Close()
	if n := p.NumWorkers(); n != 3 {
		t.Errorf("NumWorkers after Close = %d, want 3", n)
	}
	var ran atomic.Bool
	if r := h11Recover(func() { p.Go(func(*Task) { ran.Store(true) }) }); !h11IsClosed(r) {
		t.Errorf("Go after Close panicked with %v, want ErrClosed", r)
	}
	time.Sleep(time.Millisecond)
	if ran.Load() {
		t.Error("a Go job refused by a closed pool ran")
	}
}

// While Close waits, the Go job in flight may start more Go jobs (and so may its
// PanicHandler), and Close waits for them; a goroutine outside the pool's work, even
// one the job started, is refused at once, and its f never runs.
func TestHostile11GoDuringClose(t *testing.T) {
	var handled atomic.Int32
	var p *Pool
	handlerGo := make(chan struct{})
	p, err := NewPool(Config{Workers: 2, PanicHandler: func(pe *PanicError) {
		if pe.Value != "h11-late-panic" {
			t.Errorf("PanicHandler got %v", pe.Value)
		}
		handled.Add(1)
		// The handler runs while the job is still counted: it is the pool's work.
		p.Go(func(*Task) { close(handlerGo) })
	}})
	if err != nil {
		t.Fatal(err)
	}
	jobIn := make(chan struct{})
	release := make(chan struct{})
	var chain atomic.Int32
	var outsiderRan atomic.Bool
	outsider := make(chan any, 1)
	p.Go(func(*Task) {
		close(jobIn)
		<-release
		// Close has begun. A chain of Go jobs, each started by the previous one.
		var next func(int) func(*Task)
		next = func(k int) func(*Task) {
			return func(*Task) {
				chain.Add(1)
				if k > 0 {
					p.Go(next(k - 1))
				}
			}
		}
		p.Go(next(9))
		go func() { outsider <- h11Recover(func() { p.Go(func(*Task) { outsiderRan.Store(true) }) }) }()
		select {
		case r := <-outsider:
			outsider <- r
		case <-time.After(10 * time.Second):
			t.Error("the goroutine started by the job did not return from Go")
		}
		panic("h11-late-panic")
	})
	h11Wait(t, jobIn, 10*time.Second, "the first Go job starting")
	closeDone := make(chan struct{})
	go func() {
		defer close(closeDone)
		p.Close()
	}()
	h11WaitTrue(t, 10*time.Second, "Close starting", func() bool { return poolClosing(p) })
	if r := h11Recover(func() { p.Go(func(*Task) { outsiderRan.Store(true) }) }); !h11IsClosed(r) {
		t.Errorf("Go from outside while Close waits panicked with %v, want ErrClosed", r)
	}
	select {
	case <-closeDone:
		t.Fatal("Close returned while a Go job was still running")
	default:
	}
	close(release)
	h11Wait(t, closeDone, 10*time.Second, "Close after the Go job was released")
	if got := chain.Load(); got != 10 {
		t.Errorf("Close returned after %d of the 10 chained Go jobs ran", got)
	}
	select {
	case <-handlerGo:
	default:
		t.Error("Close returned before the Go job started by the PanicHandler ran")
	}
	if handled.Load() != 1 {
		t.Errorf("PanicHandler called %d times, want 1", handled.Load())
	}
	if r := <-outsider; !h11IsClosed(r) {
		t.Errorf("Go from a goroutine the job started (not the pool's work) panicked with %v, want ErrClosed", r)
	}
	if outsiderRan.Load() {
		t.Error("a refused Go job ran")
	}
}

// A Go job's Task forks and joins like any other, and may call the package's parallel
// functions and Pool.Call on its own pool; Goexit in a Go job ends it silently and the
// pool keeps all its workers.
func TestHostile11GoTaskForksAndGoexit(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	res := make(chan int, 1)
	p.Go(func(t *Task) {
		if t == nil || t.Pool() != p {
			res <- -1
			return
		}
		a, b := Join2(t, func(t *Task) int { return fib(t, 15) }, func(t *Task) int {
			return Call(p, func(t *Task) int { return fib(t, 12) })
		})
		s := make([]int64, 5000)
		for i := range s {
			s[i] = 1
		}
		res <- a + b + int(Sum(s, WithPool(p), WithGrain(100)))
	})
	select {
	case got := <-res:
		if want := fibSeq(15) + fibSeq(12) + 5000; got != want {
			t.Fatalf("Go job computed %d, want %d", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Go job did not finish")
	}
	for range 2 * p.NumWorkers() {
		p.Go(func(*Task) { runtime.Goexit() })
	}
	checkPoolAlive(t, p, "Go jobs calling runtime.Goexit")
}

// goPanic's message (the crash of a Go job with no PanicHandler) names the value and the
// panicking line, then gives the job's stack.
func TestHostile11GoPanicMessage(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	got := make(chan *PanicError, 1)
	var line int
	// Catch the panic as the pool wraps it, with Catch on a Task of the pool.
	p.Call(func(t *Task) {
		got <- Catch(t, func(*Task) {
			line = lineBelow()
			panic("h11-go-crash")
		})
	})
	pe := <-got
	if pe == nil {
		t.Fatal("Catch returned nil for a panicking function")
	}
	msg := goPanic{pe}.Error()
	head, stack, ok := strings.Cut(msg, "\n\njob's goroutine stack:\n")
	if !ok {
		t.Fatalf("goPanic message has no stack section:\n%s", msg)
	}
	want := fmt.Sprintf("blitz: panic in a Pool.Go job (the pool has no Config.PanicHandler): h11-go-crash [at hostile11_blitz_pool_test.go:%d]", line)
	if head != want {
		t.Errorf("goPanic first line\n\t%q\nwant\n\t%q", head, want)
	}
	if !strings.Contains(stack, "hostile11_blitz_pool_test.go") {
		t.Errorf("goPanic stack does not show the job's frames:\n%s", stack)
	}
}

// SetDefault before the first use of Default configures it (the last call wins, a bad
// Config is refused without changing anything), concurrent first uses agree on one
// pool, and afterwards SetDefault fails and Close of the default pool panics.
func TestHostile11SetDefaultBeforeFirstUse(t *testing.T) {
	defaultPool.mu.Lock()
	old, oldCfg := defaultPool.p.Load(), defaultPool.cfg
	defaultPool.p.Store(nil)
	defaultPool.cfg = Config{}
	defaultPool.mu.Unlock()
	var made *Pool
	defer func() {
		defaultPool.mu.Lock()
		defaultPool.p.Store(old)
		defaultPool.cfg = oldCfg
		defaultPool.mu.Unlock()
		if made != nil {
			made.isDefault = false
			made.Close()
		}
	}()
	if err := SetDefault(Config{Workers: 3}); err != nil {
		t.Fatalf("SetDefault before the first use: %v", err)
	}
	handled := make(chan any, 1)
	if err := SetDefault(Config{Workers: 2, PanicHandler: func(pe *PanicError) { handled <- pe.Value }}); err != nil {
		t.Fatalf("second SetDefault before the first use: %v", err)
	}
	if err := SetDefault(Config{SplitDepth: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("SetDefault(bad) = %v, want ErrConfig", err)
	}
	const n = 16
	got := make([]*Pool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i] = Default()
		}()
	}
	close(start)
	wg.Wait()
	made = got[0]
	for i, q := range got {
		if q != made || q == nil {
			t.Fatalf("concurrent first uses of Default returned different pools (%d: %p, 0: %p)", i, q, made)
		}
	}
	if w := made.NumWorkers(); w != 2 {
		t.Errorf("the default pool has %d workers, want the 2 of the last valid SetDefault", w)
	}
	made.Go(func(*Task) { panic("h11-default-handler") })
	select {
	case v := <-handled:
		if v != "h11-default-handler" {
			t.Errorf("the default pool's PanicHandler got %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the PanicHandler given to SetDefault was not called")
	}
	if err := SetDefault(Config{Workers: 5}); err == nil || errors.Is(err, ErrConfig) {
		t.Errorf("SetDefault after the first use = %v, want the already-started error", err)
	}
	if Default() != made || made.NumWorkers() != 2 {
		t.Error("SetDefault after the first use changed the default pool")
	}
	if r := h11Recover(made.Close); r == nil || !strings.Contains(fmt.Sprint(r), "default pool cannot be closed") {
		t.Errorf("Close of the default pool: panic %v", r)
	}
	s := make([]int64, 100000)
	for i := range s {
		s[i] = int64(i)
	}
	if got, want := Sum(s), int64(len(s))*int64(len(s)-1)/2; got != want {
		t.Errorf("Sum on the default pool after its refused Close = %d, want %d", got, want)
	}
	if got := Sum(s, WithPool(nil)); got != int64(len(s))*int64(len(s)-1)/2 {
		t.Errorf("Sum with WithPool(nil) = %d", got)
	}
}

// 150 Calls at once on a one-worker pool (8 pinned guests, the rest overflow guests):
// forks, panics, Goexit, errors and a nested Call of another pool. Every Call gets its
// own outcome; afterwards the guests retained are bounded, their counters were kept
// (Stats never decrease), and Close returns.
func TestHostile11ManyCallsOverflowGuests(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	q := newPool(t, Config{Workers: 2})
	const n = 150
	var inside sync.WaitGroup
	inside.Add(n)
	start := make(chan struct{})
	type outcome struct {
		val    int
		r      any
		err    error
		exited bool
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			returned := false
			defer func() {
				out[i].r = recover()
				out[i].exited = !returned && out[i].r == nil
			}()
			body := func(t *Task) int {
				inside.Done()
				<-start
				a, b := Join2(t, func(t *Task) int { return fib(t, 10) }, func(t *Task) int { return fib(t, 9) })
				switch i % 5 {
				case 1:
					panic(fmt.Sprintf("h11-call-%d", i))
				case 2:
					runtime.Goexit()
				case 4:
					return a + b + Call(q, func(t *Task) int { return fib(t, 8) })
				}
				return a + b
			}
			if i%5 == 3 {
				_, out[i].err = TryCall(p, func(t *Task) (int, error) {
					body(t)
					return 0, fmt.Errorf("h11-err-%d", i)
				})
			} else {
				out[i].val = Call(p, body)
			}
			returned = true
		}()
	}
	done := make(chan struct{})
	go func() { inside.Wait(); close(done) }()
	h11Wait(t, done, 20*time.Second, "150 Calls entering the pool")
	if _, scanned := guestCounts(p); scanned < n {
		t.Errorf("%d Calls in flight, but the workers scan %d guests", n, scanned)
	}
	s1 := p.Stats()
	close(start)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	h11Wait(t, all, 30*time.Second, "150 concurrent Calls")
	want := fibSeq(10) + fibSeq(9)
	for i, o := range out {
		switch i % 5 {
		case 0:
			if o.val != want || o.r != nil {
				t.Errorf("Call %d: %d, %v; want %d", i, o.val, o.r, want)
			}
		case 1:
			pe, ok := o.r.(*PanicError)
			if !ok || pe.Value != fmt.Sprintf("h11-call-%d", i) {
				t.Errorf("Call %d: recovered %v, want its own *PanicError", i, o.r)
			}
		case 2:
			if !o.exited {
				t.Errorf("Call %d: the goroutine did not exit (recovered %v)", i, o.r)
			}
		case 3:
			if o.err == nil || o.err.Error() != fmt.Sprintf("h11-err-%d", i) {
				t.Errorf("TryCall %d: %v, want its own error", i, o.err)
			}
		case 4:
			if o.val != want+fibSeq(8) {
				t.Errorf("Call %d with a nested Call: %d, want %d", i, o.val, want+fibSeq(8))
			}
		}
	}
	s2 := p.Stats()
	if s2.Executed < s1.Executed || s2.Stolen < s1.Stolen {
		t.Errorf("Stats went backwards as guests were released: %+v then %+v", s1, s2)
	}
	retained, scanned := guestCounts(p)
	if retained > guestKeepLimit(p) {
		t.Errorf("%d guests retained after the burst, want at most %d", retained, guestKeepLimit(p))
	}
	if scanned > pinnedLimit(p) {
		t.Errorf("idle workers still scan %d guests, want at most the %d pinned", scanned, pinnedLimit(p))
	}
	if l := len(*p.guestSlots.Load()); l > 128 {
		t.Errorf("the overflow slot array kept %d slots after the burst", l)
	}
	checkIdleTasks(t, p)
	within(t, 10*time.Second, "Close after the burst", p.Close)
}

// h11MarkDigits returns the set of hex digits that appear in s, and its top digit.
func h11MarkDigits(s uint64) (digits uint16, top uint64) {
	for ; s != 0; s >>= 4 {
		digits |= 1 << (s & 15)
		top = s & 15
	}
	return digits, top
}

// The stack marks of many live pools, whose serial numbers use every hex digit and
// every marker function as the last digit: inside a chain of Calls nested through all
// of them, each pool sees itself on the stack exactly when its Call encloses the code,
// Close from inside panics, Broadcast knows a worker from a guest, and a panic or a
// Goexit at any depth unwinds every mark and leaves every pool usable.
func TestHostile11StackMarksManyPools(t *testing.T) {
	var pools []*Pool
	var digits, tops uint16
	for len(pools) < 300 && (digits != 0xFFFF || tops != 0xFFFE || len(pools) < 20) {
		p := newPool(t, Config{Workers: 1})
		pools = append(pools, p)
		d, top := h11MarkDigits(p.serial)
		digits |= d
		tops |= 1 << top
	}
	if digits != 0xFFFF || tops != 0xFFFE {
		t.Logf("serials cover digits %016b, top digits %016b", digits, tops)
	}
	// Keep the chain to the pools that bring a new digit, plus a few.
	var chain []*Pool
	var seen, seenTop uint16
	for i, p := range pools {
		d, top := h11MarkDigits(p.serial)
		if d&^seen != 0 || (1<<top)&^seenTop != 0 || i < 4 {
			chain = append(chain, p)
			seen |= d
			seenTop |= 1 << top
		}
	}
	// Every pool, alone: inside its Call it is on the stack and no other is; Close from
	// there panics; its worker knows it is one.
	for _, p := range pools {
		p.Call(func(*Task) {
			if in, onW := p.stackMarks(); !in || onW {
				t.Errorf("pool %d: stackMarks in its own Call = %v, %v; want true, false", p.serial, in, onW)
			}
			for _, o := range chain {
				if o != p && o.onStack() {
					t.Errorf("pool %d's mark is seen inside pool %d's Call", o.serial, p.serial)
				}
			}
		})
		onW := make(chan [2]bool, 1)
		p.Go(func(*Task) {
			in, w := p.stackMarks()
			onW <- [2]bool{in, w}
		})
		select {
		case got := <-onW:
			// A Go job runs on the worker, or detached on a goroutine of its own.
			if !got[0] {
				t.Errorf("pool %d: a Go job does not see its pool's mark", p.serial)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("pool %d: Go job did not run", p.serial)
		}
	}
	// The nested chain.
	var level func(i, fail int, how string)
	level = func(i, fail int, how string) {
		if i == len(chain) {
			return
		}
		chain[i].Call(func(tk *Task) {
			Join(tk, func(*Task) {
				for j, o := range chain {
					if got := o.onStack(); got != (j <= i) {
						t.Errorf("depth %d: pool %d (serial %d) onStack = %v, want %v", i, j, o.serial, got, j <= i)
					}
				}
				if r := h11Recover(chain[i].Close); r == nil || !strings.Contains(fmt.Sprint(r), "inside the pool's own work") {
					t.Errorf("depth %d: Close from inside panicked with %v", i, r)
				}
				if i == fail {
					switch how {
					case "panic":
						panic(fmt.Sprintf("h11-depth-%d", i))
					case "goexit":
						runtime.Goexit()
					}
				}
				level(i+1, fail, how)
			}, func(*Task) {
				if !chain[i].onStack() {
					t.Errorf("depth %d: the forked half does not see its pool's mark", i)
				}
			})
		})
	}
	within(t, 30*time.Second, "the full chain", func() { level(0, -1, "") })
	for _, d := range []int{0, len(chain) / 2, len(chain) - 1} {
		r := recoverRun(t, "panic at depth", func() { level(0, d, "panic") })
		pe, ok := r.(*PanicError)
		if !ok || pe.Value != fmt.Sprintf("h11-depth-%d", d) {
			t.Errorf("panic at depth %d of %d: recovered %v", d, len(chain), r)
		}
		if _, exited := goexitOutcome(t, "goexit at depth", func() { level(0, d, "goexit") }); !exited {
			t.Errorf("Goexit at depth %d: the goroutine of the chain did not exit", d)
		}
	}
	// Every pool still works and has no Call left counted.
	for _, p := range chain {
		if got := Call(p, func(t *Task) int { return fib(t, 8) }); got != fibSeq(8) {
			t.Errorf("pool %d after the chain: fib(8) = %d", p.serial, got)
		}
		if p.ops.Load() != 0 {
			t.Errorf("pool %d: %d operations still counted after the chain", p.serial, p.ops.Load())
		}
	}
}

// Regression: a Go job whose Join re-raised the ErrGoexit of a fork that another worker
// stole (that worker's goroutine exited) panicked — the rest of f never ran — but the
// pool took the *PanicError's ErrGoexit value for a Goexit of the job itself and ended
// the job silently: no PanicHandler call and no crash, where the same Join in a Call or
// a plain goroutine surfaces the panic. The handler must receive it; a job whose own
// goroutine calls runtime.Goexit still ends silently.
func TestHostile11GoJobJoinReraisedGoexitReachesHandler(t *testing.T) {
	got := make(chan *PanicError, 16)
	p := newPool(t, Config{Workers: 2, PanicHandler: func(pe *PanicError) { got <- pe }})
	checked := 0
	for round := 0; round < 5; round++ {
		var stolen, reached atomic.Bool
		done := make(chan struct{})
		p.Go(func(tk *Task) {
			defer close(done)
			Join(tk, func(*Task) { stealOrTimeout(&stolen) }, func(bt *Task) {
				// Only a thief's run counts as stolen: when the wait times out (a
				// loaded machine), Join runs b on the job's own goroutine, whose
				// Goexit is the job's own and must stay silent.
				if bt != tk {
					stolen.Store(true)
				}
				runtime.Goexit()
			})
			reached.Store(true)
		})
		h11Wait(t, done, 10*time.Second, "the Go job")
		if reached.Load() {
			t.Fatal("Join returned after its fork called runtime.Goexit")
		}
		// The handler is called after the job's deferred calls: wait for it, or for
		// Close, which waits for the handler, to show there was none.
		var pe *PanicError
		select {
		case pe = <-got:
		case <-time.After(5 * time.Second):
		}
		if !stolen.Load() {
			continue // b ran on the job's own goroutine: a real Goexit of the job, silent
		}
		checked++
		if pe == nil || !errors.Is(pe, ErrGoexit) {
			t.Fatalf("round %d: the Go job panicked with the re-raised ErrGoexit of its stolen fork, but the PanicHandler got %v", round, pe)
		}
	}
	if checked == 0 {
		t.Log("no fork was stolen; nothing checked")
	}
	// A Go job that itself calls Goexit still ends silently.
	exited := make(chan struct{})
	p.Go(func(*Task) {
		defer close(exited)
		runtime.Goexit()
	})
	h11Wait(t, exited, 10*time.Second, "a Go job calling Goexit")
	within(t, 10*time.Second, "Close", p.Close)
	select {
	case pe := <-got:
		t.Errorf("a Go job that called runtime.Goexit itself reached the PanicHandler with %v", pe)
	default:
	}
}

// Several goroutines close the pool at once while a Go job runs: none returns before the
// job finished, all return once it has, and the pool refuses work afterwards.
func TestHostile11ConcurrentCloseWaiters(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	in := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	p.Go(func(*Task) {
		close(in)
		<-release
		finished.Store(true)
	})
	h11Wait(t, in, 10*time.Second, "the Go job starting")
	const n = 8
	var early atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Close()
			if !finished.Load() {
				early.Add(1)
			}
		}()
	}
	h11WaitTrue(t, 10*time.Second, "Close starting", func() bool { return poolClosing(p) })
	close(release)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	h11Wait(t, all, 10*time.Second, "8 concurrent Closes")
	if early.Load() != 0 {
		t.Errorf("%d of %d concurrent Closes returned before the Go job finished", early.Load(), n)
	}
	if err := p.TryCall(func(*Task) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("TryCall after the concurrent Closes = %v, want ErrClosed", err)
	}
}
