package blitzio

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ---- item 13: polling a finished future again returns the same result ----

// strict is a child future that is ready with v after pendingPolls pending polls (waking
// its waker each time, so a runtime re-polls it). It reports, through errs, every poll
// made after it returned ready or after it was dropped: a finished combinator must not
// poll its children again.
type strict[T any] struct {
	name         string
	v            T
	pendingPolls int
	polls, drops int
	finished     bool
	errs         *[]string
}

func (s *strict[T]) Poll(cx *Context) (T, bool) {
	s.polls++
	if s.finished {
		*s.errs = append(*s.errs, s.name+" polled after it returned ready")
	}
	if s.drops > 0 {
		*s.errs = append(*s.errs, s.name+" polled after Drop")
	}
	if s.pendingPolls > 0 {
		s.pendingPolls--
		cx.Waker().Wake()
		var zero T
		return zero, false
	}
	s.finished = true
	return s.v, true
}

func (s *strict[T]) Drop() { s.drops++ }

// pollRepeat polls f by hand until it is ready (at most 100 polls), then three more
// times, and fails unless every later poll returns the first result.
func pollRepeat[T any](t *testing.T, name string, cx *Context, f Future[T]) T {
	t.Helper()
	var first T
	ok := false
	for range 100 {
		if first, ok = f.Poll(cx); ok {
			break
		}
	}
	if !ok {
		t.Fatalf("%s: never ready", name)
	}
	for i := range 3 {
		v, ok := f.Poll(cx)
		if !ok {
			t.Errorf("%s: poll %d after ready returned pending", name, i+1)
			continue
		}
		if !reflect.DeepEqual(v, first) {
			t.Errorf("%s: poll %d after ready returned %+v, first result was %+v", name, i+1, v, first)
		}
	}
	return first
}

func TestCombPollAfterReadyCombinators(t *testing.T) {
	var errs []string
	st := func(name string, v, pending int) *strict[int] {
		return &strict[int]{name: name, v: v, pendingPolls: pending, errs: &errs}
	}
	res := func(name string, v, pending int, err error) *strictResult {
		return &strictResult{strict: st(name, v, pending), err: err}
	}
	boom := errors.New("boom")
	cx := NewContext(nil, Waker{})
	for _, c := range []struct {
		name string
		f    func() any // returns the finished value after pollRepeat
	}{
		{"Select2 first wins", func() any {
			return pollRepeat(t, "Select2", cx, Select2[int, int](st("a", 1, 0), st("b", 2, 0)))
		}},
		{"Select2 second wins", func() any {
			return pollRepeat(t, "Select2", cx, Select2[int, int](st("a", 1, 5), st("b", 2, 1)))
		}},
		{"Select3", func() any {
			return pollRepeat(t, "Select3", cx, Select3[int, int, int](st("a", 1, 3), st("b", 2, 2), st("c", 3, 1)))
		}},
		{"Join2", func() any { return pollRepeat(t, "Join2", cx, Join2[int, int](st("a", 1, 1), st("b", 2, 3))) }},
		{"Join3", func() any {
			return pollRepeat(t, "Join3", cx, Join3[int, int, int](st("a", 1, 1), st("b", 2, 3), st("c", 3, 0)))
		}},
		{"JoinAll", func() any {
			return pollRepeat(t, "JoinAll", cx, JoinAll[int](st("a", 1, 1), st("b", 2, 3), st("c", 3, 0)))
		}},
		{"SelectN", func() any { return pollRepeat(t, "SelectN", cx, SelectN[int](st("a", 1, 4), st("b", 2, 2))) }},
		{"Race", func() any { return pollRepeat(t, "Race", cx, Race[int](st("a", 1, 4), st("b", 2, 2))) }},
		{"TryJoin ok", func() any {
			return pollRepeat(t, "TryJoin", cx, TryJoin[int](res("a", 1, 2, nil), res("b", 2, 0, nil)))
		}},
		{"TryJoin error", func() any {
			return pollRepeat(t, "TryJoin", cx, TryJoin[int](res("a", 1, 2, nil), res("b", 2, 1, boom)))
		}},
		{"All", func() any {
			return pollRepeat(t, "All", cx, All[int](res("a", 1, 2, boom), res("b", 2, 1, nil)))
		}},
		{"Map", func() any {
			calls := 0
			v := pollRepeat(t, "Map", cx, Map[int, int](st("a", 1, 2), func(x int) int { calls++; return x*10 + calls }))
			if calls != 1 {
				errs = append(errs, fmt.Sprintf("Map called fn %d times", calls))
			}
			return v
		}},
		{"AndThen", func() any {
			calls := 0
			v := pollRepeat(t, "AndThen", cx, AndThen[int, int](st("a", 1, 1), func(x int) Future[int] {
				calls++
				return st("second", x+calls, 2)
			}))
			if calls != 1 {
				errs = append(errs, fmt.Sprintf("AndThen called fn %d times", calls))
			}
			return v
		}},
		{"Lazy", func() any {
			calls := 0
			v := pollRepeat(t, "Lazy", cx, Lazy(func() int { calls++; return calls }))
			if calls != 1 {
				errs = append(errs, fmt.Sprintf("Lazy called f %d times", calls))
			}
			return v
		}},
		{"Timeout that succeeded", func() any {
			return pollRepeat(t, "Timeout", cx, Timeout[int](time.Hour, st("a", 7, 0)))
		}},
		{"Deadline that succeeded", func() any {
			return pollRepeat(t, "Deadline", cx, Deadline[int](time.Now().Add(time.Hour), st("a", 7, 0)))
		}},
		{"Erase", func() any {
			return pollRepeat(t, "Erase", cx, Erase[Selected2[int, int]](Select2[int, int](st("a", 1, 1), st("b", 2, 0))))
		}},
		{"YieldNow", func() any { return pollRepeat(t, "YieldNow", cx, YieldNow()) }},
	} {
		errs = errs[:0]
		v := c.f()
		for _, e := range errs {
			t.Errorf("%s (value %+v): %s", c.name, v, e)
		}
	}
}

// strictResult is a strict child whose value is a Result.
type strictResult struct {
	*strict[int]
	err error
}

func (s *strictResult) Poll(cx *Context) (Result[int], bool) {
	v, ok := s.strict.Poll(cx)
	if !ok {
		return Result[int]{}, false
	}
	return Result[int]{Value: v, Err: s.err}, true
}

// TestCombPollAfterReadyLeaves: a finished leaf (Ready, Sleep) polled again returns its
// value again; with the task's budget spent it defers (pending, with a self-wake) like
// any leaf poll, never reporting a different outcome. A Timeout that expired reports
// ErrTimeout again without polling its dropped inner future.
func TestCombPollAfterReadyLeaves(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	var woken atomic.Int32
	budgeted := func(b int32) *Context {
		return &Context{rt: rt, waker: WakerFunc(func() { woken.Add(1) }), budget: b}
	}

	r := Ready(5)
	cx := budgeted(1)
	if v, ok := r.Poll(cx); !ok || v != 5 {
		t.Fatalf("Ready: (%v, %v)", v, ok)
	}
	if _, ok := r.Poll(cx); ok || woken.Load() != 1 {
		t.Errorf("Ready polled again with its budget spent: ready %v, %d wakes; want pending with 1 wake", ok, woken.Load())
	}
	if v, ok := r.Poll(budgeted(1)); !ok || v != 5 {
		t.Errorf("Ready polled again: (%v, %v), want (5, true)", v, ok)
	}

	s := Sleep(time.Millisecond)
	cx = budgeted(2)
	if _, ok := s.Poll(cx); ok {
		t.Fatal("Sleep(1ms) ready before the clock moved")
	}
	clk.Advance(time.Millisecond)
	for i := range 3 {
		if _, ok := s.Poll(budgeted(1)); !ok {
			t.Fatalf("a finished Sleep polled again (%d) is pending", i)
		}
	}

	var errs []string
	inner := &strict[int]{name: "inner", pendingPolls: 1 << 30, errs: &errs}
	to := Timeout[int](time.Millisecond, inner)
	cx = NewContext(rt, Waker{})
	if _, ok := to.Poll(cx); ok {
		t.Fatal("Timeout ready before the clock moved")
	}
	clk.Advance(time.Millisecond)
	res := pollRepeat(t, "expired Timeout", cx, to)
	if !errors.Is(res.Err, ErrTimeout) {
		t.Errorf("expired Timeout: %v, want ErrTimeout", res.Err)
	}
	if polls := inner.polls; polls != 2 || inner.drops != 1 {
		t.Errorf("expired Timeout: inner polled %d times and dropped %d times, want 2 and 1", polls, inner.drops)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// ---- item 16: a hand-made Context never runs out of budget ----

func TestCombNewContextBudgetNeverRunsOut(t *testing.T) {
	for _, rt := range []*Runtime{nil, newRT(t, Config{Workers: 1})} {
		cx := NewContext(rt, Waker{})
		for i := range 10 * budgetPerPoll {
			if v, ok := Ready(i).Poll(cx); !ok || v != i {
				t.Fatalf("rt=%v: Ready(%d) polled with a NewContext after %d completions: (%v, %v)", rt != nil, i, i, v, ok)
			}
		}
		// A join of many ready futures through the same Context finishes in one poll.
		fs := make([]Future[int], 1000)
		for i := range fs {
			fs[i] = Ready(i)
		}
		if _, ok := JoinAll(fs...).Poll(cx); !ok {
			t.Fatalf("rt=%v: JoinAll of 1000 Ready polled once with a NewContext is pending", rt != nil)
		}
	}
}

// ---- item 17: due sleeps are ready at once; test-clock deadlines are exact ----

func TestCombDueSleepReadyAtOnce(t *testing.T) {
	rtTest, clk := newTestClockRT(t, 1)
	clk.Advance(300 * time.Microsecond) // not a whole millisecond
	rtReal := newRT(t, Config{Workers: 1})
	for _, rt := range []*Runtime{rtTest, rtReal} {
		name := "real clock"
		if rt.testClock != nil {
			name = "test clock"
		}
		for _, d := range []time.Duration{0, -1, -time.Hour, -1 << 63} {
			cx := NewContext(rt, Waker{})
			if _, ok := Sleep(d).Poll(cx); !ok {
				t.Errorf("%s: Sleep(%v) not ready on its first poll", name, d)
			}
			if res, ok := Timeout[int](d, Pending[int]()).Poll(cx); !ok || !errors.Is(res.Err, ErrTimeout) {
				t.Errorf("%s: Timeout(%v, Pending) on its first poll: (%v, %v), want ErrTimeout", name, d, res, ok)
			}
		}
		for _, at := range []time.Time{rt.Now(), rt.Now().Add(-time.Nanosecond), rt.Now().Add(-time.Hour), {}} {
			cx := NewContext(rt, Waker{})
			if _, ok := SleepUntil(at).Poll(cx); !ok {
				t.Errorf("%s: SleepUntil(now%+v) not ready on its first poll", name, at.Sub(rt.Now()))
			}
		}
	}
}

func TestCombTestClockDeadlinesExact(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	cases := [][2]time.Duration{ // offset of the clock, sleep duration
		{300 * time.Microsecond, 1500 * time.Microsecond},
		{0, 1500 * time.Microsecond},
		{999_999, time.Millisecond},
		{1, 1},
		{time.Millisecond - 1, 2},
		{5 * time.Millisecond, 64*time.Millisecond + 1},
		{123_457, 5*time.Second + 7},
		{7, 13 * 24 * time.Hour},
	}
	for range 20 {
		cases = append(cases, [2]time.Duration{time.Duration(rng.Int64N(int64(10 * time.Millisecond))), 1 + time.Duration(rng.Int64N(int64(3*time.Second)))})
	}
	for _, c := range cases {
		off, d := c[0], c[1]
		clk := NewTestClock(epoch)
		rt := newRT(t, Config{Workers: 1, Clock: clk})
		clk.Advance(off)
		var woken atomic.Int32
		cx := NewContext(rt, WakerFunc(func() { woken.Add(1) }))
		s := Sleep(d)
		u := SleepUntil(clk.Now().Add(d))
		if _, ok := s.Poll(cx); ok {
			t.Fatalf("seed %d: offset %v: Sleep(%v) ready at once", seed, off, d)
		}
		if _, ok := u.Poll(cx); ok {
			t.Fatalf("seed %d: offset %v: SleepUntil(+%v) ready at once", seed, off, d)
		}
		clk.Advance(d - 1)
		_, sok := s.Poll(cx)
		_, uok := u.Poll(cx)
		if woken.Load() != 0 || sok || uok {
			t.Errorf("seed %d: offset %v: sleep of %v fired 1ns early (woken %d, ready %v %v)", seed, off, d, woken.Load(), sok, uok)
		}
		clk.Advance(1)
		if woken.Load() != 2 {
			t.Errorf("seed %d: offset %v: Advance to the deadline of a sleep of %v woke %d of 2 sleeps", seed, off, d, woken.Load())
		}
		_, sok = s.Poll(cx)
		_, uok = u.Poll(cx)
		if !sok || !uok {
			t.Errorf("seed %d: offset %v: sleep of %v not ready at its deadline (Sleep %v, SleepUntil %v)", seed, off, d, sok, uok)
		}
		rt.Close()
	}
}

// ---- item 18: a panicking waker does not keep other fired timers asleep ----

func TestCombPanickingWakerAdvance(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	var good atomic.Int32
	const n = 10
	var sleeps []*SleepFuture
	for i := range n {
		w := WakerFunc(func() { good.Add(1) })
		if i%3 == 1 {
			w = WakerFunc(func() { panic(fmt.Sprintf("waker %d panicked", i)) })
		}
		s := Sleep(time.Millisecond)
		if _, ok := s.Poll(NewContext(rt, w)); ok {
			t.Fatal("sleep ready at once")
		}
		sleeps = append(sleeps, s)
	}
	var got any
	func() {
		defer func() { got = recover() }()
		clk.Advance(time.Millisecond)
	}()
	if want := int32(n - n/3); good.Load() != want {
		t.Errorf("a waker panicked: %d of %d other fired timers were woken", good.Load(), want)
	}
	if got == nil {
		t.Fatal("TestClock.Advance swallowed the waker's panic")
	}
	var pe *PanicError
	if err, ok := got.(error); !ok || !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "panicked") {
		t.Errorf("TestClock.Advance re-raised %v, want a *PanicError carrying the waker's panic", got)
	}
	for i, s := range sleeps {
		if _, ok := s.Poll(NewContext(rt, Waker{})); !ok {
			t.Errorf("sleep %d not ready after it fired", i)
		}
	}
	if c := rt.timerCount(); c != 0 {
		t.Errorf("%d timers left", c)
	}
}

// logCapture redirects the standard logger for the test.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func TestCombPanickingWakerOnWorker(t *testing.T) {
	capture := &logCapture{}
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(capture)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	rt := newRT(t, Config{Workers: 2})
	for round := range 3 {
		fired := make(chan int, 8)
		for i := range 6 {
			w := WakerFunc(func() { fired <- i })
			if i%2 == 0 {
				w = WakerFunc(func() { panic(fmt.Sprintf("waker %d of round %d panicked", i, round)) })
			}
			if _, ok := Sleep(time.Millisecond).Poll(NewContext(rt, w)); ok {
				t.Fatal("sleep ready at once")
			}
		}
		// The sleeps fire on a worker (the timer driver or a maintenance pass).
		for range 3 {
			select {
			case <-fired:
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: a waker panicked on a worker: the other fired timers were not woken", round)
			}
		}
		waitFor(t, "the waker panic reported", func() bool {
			return strings.Contains(capture.String(), fmt.Sprintf("round %d panicked", round))
		})
	}
	// The runtime still works.
	h := Spawn(rt, AndThen(Sleep(time.Millisecond), func(struct{}) Future[int] { return Ready(3) }))
	if v, err := waitHandle(t, h); err != nil || v != 3 {
		t.Fatalf("after waker panics: (%v, %v)", v, err)
	}
}

// ---- item 14: a sleep moved between runtimes ----

// TestCombSleepMovedBetweenRuntimes: a sleep queued on A, reset (cancelled while still in
// A's pending stack) and polled on B fires on B, and A's drains never touch B's list.
func TestCombSleepMovedBetweenRuntimes(t *testing.T) {
	clkA, clkB := NewTestClock(epoch), NewTestClock(epoch)
	a := newRT(t, Config{Workers: 1, Clock: clkA})
	b := newRT(t, Config{Workers: 1, Clock: clkB})
	for round := range 50 {
		var woken atomic.Int32
		s := Sleep(time.Hour)
		if _, ok := s.Poll(NewContext(a, Waker{})); ok {
			t.Fatal("ready at once")
		}
		s.Reset(time.Millisecond) // cancelled while queued on A
		// Another sleep queued on B before ours: A must never walk into B's list.
		other := Sleep(time.Millisecond)
		var otherWoken atomic.Int32
		other.Poll(NewContext(b, WakerFunc(func() { otherWoken.Add(1) })))
		cx := NewContext(b, WakerFunc(func() { woken.Add(1) }))
		if _, ok := s.Poll(cx); ok {
			t.Fatal("ready at once on B")
		}
		if round%2 == 0 {
			a.timerCount() // A drains its pending stack
		} else {
			clkA.Advance(2 * time.Hour) // A fires everything due
		}
		if c := a.timerCount(); c != 0 {
			t.Fatalf("round %d: runtime A holds %d timers after the sleep moved to B", round, c)
		}
		clkB.Advance(time.Millisecond)
		if woken.Load() != 1 || otherWoken.Load() != 1 {
			t.Fatalf("round %d: after B's clock passed the deadlines: moved sleep woken %d times, B's own sleep %d times (want 1 and 1)",
				round, woken.Load(), otherWoken.Load())
		}
		if _, ok := s.Poll(cx); !ok {
			t.Fatalf("round %d: the moved sleep is not ready on B", round)
		}
	}
}

// TestCombSleepMovedBetweenRuntimesConcurrent moves sleeps between two real-clock
// runtimes whose workers drain their pending stacks concurrently.
func TestCombSleepMovedBetweenRuntimesConcurrent(t *testing.T) {
	a := newRT(t, Config{Workers: 2})
	b := newRT(t, Config{Workers: 2})
	const movers = 8
	var wg sync.WaitGroup
	errc := make(chan error, movers)
	for g := range movers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rts := [2]*Runtime{a, b}
			s := Sleep(time.Hour)
			for i := range 300 {
				rt := rts[(i+g)%2]
				s.Reset(time.Duration(rand.IntN(3)) * time.Hour)
				fired := make(chan struct{}, 1)
				if i%10 == 9 {
					s.Reset(time.Millisecond)
				}
				cx := NewContext(rt, WakerFunc(func() {
					select {
					case fired <- struct{}{}:
					default:
					}
				}))
				if _, ok := s.Poll(cx); ok {
					continue
				}
				if i%10 == 9 {
					select {
					case <-fired:
					case <-time.After(20 * time.Second):
						errc <- fmt.Errorf("mover %d: a 1ms sleep moved to runtime %d never fired", g, (i+g)%2)
						return
					}
					if _, ok := s.Poll(cx); !ok {
						errc <- fmt.Errorf("mover %d: woken sleep not ready", g)
						return
					}
				}
			}
			s.Drop()
		}()
	}
	waitGroupOrDump(t, &wg, "sleeps moved between runtimes")
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for _, rt := range []*Runtime{a, b} {
		if c := rt.timerCount(); c != 0 {
			t.Errorf("%d timers left after every sleep was dropped", c)
		}
	}
}

// ---- item 15: join combinators are linear ----

// countingReady is a leaf that is ready at once (consuming budget, like Ready) and counts
// its polls.
type countingReady struct {
	polls *atomic.Int64
	v     int
}

func (c countingReady) Poll(cx *Context) (int, bool) {
	c.polls.Add(1)
	if !cx.ConsumeBudget() {
		return 0, false
	}
	return c.v, true
}

// combGate is pending until open is set; then it is ready (consuming budget). open() wakes
// every waiter.
type combGate struct {
	mu     sync.Mutex
	opened bool
	wakers []Waker
	polls  atomic.Int64
}

type combGateFuture struct {
	g *combGate
	v int
}

func (f combGateFuture) Poll(cx *Context) (int, bool) {
	g := f.g
	g.polls.Add(1)
	g.mu.Lock()
	if !g.opened {
		g.wakers = append(g.wakers, cx.Waker())
		g.mu.Unlock()
		return 0, false
	}
	g.mu.Unlock()
	if !cx.ConsumeBudget() {
		return 0, false
	}
	return f.v, true
}

func (g *combGate) open() {
	g.mu.Lock()
	g.opened = true
	ws := g.wakers
	g.wakers = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

func TestCombJoinCombinatorsPollLinear(t *testing.T) {
	const n = 30_000
	rt := newRT(t, Config{Workers: 1})
	check := func(name string, polls int64, limit int64) {
		t.Helper()
		if polls > limit {
			t.Errorf("%s of %d children: %d child polls, want <= %d (linear)", name, n, polls, limit)
		}
	}
	{
		var polls atomic.Int64
		fs := make([]Future[int], n)
		for i := range fs {
			fs[i] = countingReady{&polls, i}
		}
		v, err := waitHandle(t, Spawn(rt, JoinAll(fs...)))
		if err != nil || len(v) != n || v[n-1] != n-1 {
			t.Fatalf("JoinAll: %v", err)
		}
		check("JoinAll of ready futures", polls.Load(), 2*n)
	}
	{
		var polls atomic.Int64
		fs := make([]Future[Result[int]], n)
		for i := range fs {
			fs[i] = Map[int, Result[int]](countingReady{&polls, i}, func(v int) Result[int] { return Result[int]{Value: v} })
		}
		r, err := waitHandle(t, Spawn(rt, TryJoin(fs...)))
		if err != nil || r.Err != nil || len(r.Value) != n {
			t.Fatalf("TryJoin: %v %v", err, r.Err)
		}
		check("TryJoin of ready futures", polls.Load(), 2*n)
		polls.Store(0)
		for i := range fs {
			fs[i] = Map[int, Result[int]](countingReady{&polls, i}, func(v int) Result[int] { return Result[int]{Value: v} })
		}
		r, err = waitHandle(t, Spawn(rt, All(fs...)))
		if err != nil || r.Err != nil || len(r.Value) != n {
			t.Fatalf("All: %v %v", err, r.Err)
		}
		check("All of ready futures", polls.Load(), 2*n)
	}
	{
		g := &combGate{}
		fs := make([]Future[int], n)
		for i := range fs {
			fs[i] = combGateFuture{g, i}
		}
		h := Spawn(rt, JoinAll(fs...))
		waitFor(t, "every child polled once", func() bool { return g.polls.Load() >= n })
		g.open()
		if _, err := waitHandle(t, h); err != nil {
			t.Fatal(err)
		}
		check("JoinAll of futures woken all at once", g.polls.Load(), 3*n)
	}
	{
		// SelectN whose children are all refused by a spent budget: each poll must cost
		// O(1) children, not O(n).
		fs := make([]Future[int], n)
		gates := make([]*combGate, n)
		for i := range fs {
			gates[i] = &combGate{opened: true}
			fs[i] = combGateFuture{gates[i], i}
		}
		spend := &budgetSpender{}
		sel := SelectN(fs...)
		h := Spawn(rt, PollFn(func(cx *Context) (Selected[int], bool) {
			if spend.Poll(cx) {
				return sel.Poll(cx)
			}
			return Selected[int]{}, false
		}))
		if _, err := waitHandle(t, h); err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, g := range gates {
			total += g.polls.Load()
		}
		check("SelectN polled with its budget spent", total, 2*budgetPerPoll)
	}
}

// budgetSpender spends the task's whole budget on its first poll (then is done).
type budgetSpender struct{ spent bool }

func (b *budgetSpender) Poll(cx *Context) bool {
	if !b.spent {
		b.spent = true
		for cx.ConsumeBudget() {
		}
	}
	return true
}

// TestCombJoinAllManyHandles awaits many task handles with JoinAll, TryJoin and All.
func TestCombJoinAllManyHandles(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const n = 20_000
	hs := make([]Future[Result[int]], n)
	js := make([]Future[Result[int]], n)
	for i := range hs {
		h := Spawn(rt, AndThen(YieldNow(), func(struct{}) Future[int] { return Ready(i) }))
		hs[i] = h
		js[i] = Spawn(rt, Ready(i))
	}
	r, err := waitHandle(t, Spawn(rt, TryJoin(hs...)))
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	for i, v := range r.Value {
		if v != i {
			t.Fatalf("TryJoin[%d] = %d", i, v)
		}
	}
	all, err := waitHandle(t, Spawn(rt, All(js...)))
	if err != nil || all.Err != nil || len(all.Value) != n {
		t.Fatal(err, all.Err)
	}
}

// countdown is ready after it has been woken `left` times (each wake from another
// goroutine); it keeps the latest waker like any leaf.
type countdown struct {
	mu    sync.Mutex
	left  int
	w     Waker
	polls atomic.Int64
}

func (c *countdown) Poll(cx *Context) (int, bool) {
	c.polls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left <= 0 {
		return 1, true
	}
	c.w = cx.Waker()
	return 0, false
}

func (c *countdown) tick() {
	c.mu.Lock()
	c.left--
	w := c.w
	c.mu.Unlock()
	w.Wake()
}

// TestCombJoinAllConcurrentWakes wakes the children of JoinAll and SelectN from many
// goroutines at once, in random order, while the parent is being polled: no wake is
// lost (the join finishes), and each child is polled at most once per wake plus once.
func TestCombJoinAllConcurrentWakes(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	const n, wakes, wakers = 2000, 3, 8
	for round := range 3 {
		cs := make([]*countdown, n)
		fs := make([]Future[int], n)
		for i := range cs {
			cs[i] = &countdown{left: wakes}
			fs[i] = cs[i]
		}
		h := Spawn(rt, JoinAll(fs...))
		waitFor(t, "every child polled", func() bool {
			for _, c := range cs {
				if c.polls.Load() == 0 {
					return false
				}
			}
			return true
		})
		var wg sync.WaitGroup
		for g := range wakers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				order := rand.Perm(n)
				for k := range wakes {
					for _, i := range order {
						if (i+k)%wakers == g {
							cs[i].tick()
						}
					}
				}
			}()
		}
		waitGroupOrDump(t, &wg, "JoinAll wakers")
		v, err := waitHandle(t, h)
		if err != nil || len(v) != n {
			t.Fatalf("round %d: %v", round, err)
		}
		var polls int64
		for _, c := range cs {
			polls += c.polls.Load()
		}
		if polls > n*(wakes+1) {
			t.Errorf("round %d: %d child polls for %d children woken %d times each", round, polls, n, wakes)
		}
		// SelectN: one child finishes; the others are dropped.
		sel := make([]Future[int], n)
		ss := make([]*countdown, n)
		for i := range sel {
			ss[i] = &countdown{left: 1 + i%2}
			sel[i] = ss[i]
		}
		hs := Spawn(rt, SelectN(sel...))
		waitFor(t, "select children polled", func() bool { return ss[n-1].polls.Load() > 0 })
		for g := range wakers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += wakers {
					ss[i].tick()
				}
			}()
		}
		waitGroupOrDump(t, &wg, "SelectN wakers")
		if r, err := waitHandle(t, hs); err != nil || r.Index%2 != 0 {
			t.Fatalf("round %d: SelectN: %+v %v", round, r, err)
		}
	}
}

// waitGroupOrDump waits for wg, failing the test with every goroutine's stack if it takes
// more than 60 s (a hang in the code under test, such as a cycle in a pending stack).
func waitGroupOrDump(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%s: goroutines still running after 60 s:\n%s", what, buf[:n])
	}
}
