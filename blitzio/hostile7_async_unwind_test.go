package blitzio

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

// Hostile review of Async and Await: what an Async function's own recover, deferred
// calls, panics and runtime.Goexit do to its unwinding.

// hostile7Log is a log that the function's goroutine and the test share.
type hostile7Log struct {
	mu    sync.Mutex
	lines []string
}

func (l *hostile7Log) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *hostile7Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}

// A deferred recover that swallows the unwinding of a dropped function: the function
// goes on running (it is plain Go code), but every Await after that unwinds again at
// once, dropping the future it was given without polling it; what the function returns
// is thrown away and the handle says ErrCancelled. This is what Await's documentation
// promises (do not recover that panic and carry on awaiting).
func TestHostile7AsyncRecoverSwallowsUnwinding(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var log hostile7Log
	var polls, drops, started atomic.Int64
	h := Spawn(rt, Async(func(co *Co) (r int) {
		defer log.add("outer deferred call")
		defer func() {
			p := recover()
			log.add("recovered %v", p != nil)
			again := hostile7Recover(func() { Await(co, Future[int](dropFuture{&polls, &drops})) })
			log.add("second Await panicked %v", again != nil)
			r = 99 // thrown away: the task was aborted
		}()
		started.Add(1)
		return Await(co, Pending[int]())
	}))
	waitFor(t, "the function to suspend", func() bool { return started.Load() == 1 })
	h.Abort()
	v, err := waitHandle(t, h)
	if !errors.Is(err, ErrCancelled) || v != 0 {
		t.Fatalf("got %v, %v; want ErrCancelled (the recovered function's result thrown away)", v, err)
	}
	want := "recovered true; second Await panicked true; outer deferred call"
	if got := log.String(); got != want {
		t.Fatalf("the function ran as %q, want %q", got, want)
	}
	if polls.Load() != 0 || drops.Load() != 1 {
		t.Fatalf("the future awaited after the recover was polled %d times and dropped %d; want 0, 1",
			polls.Load(), drops.Load())
	}
}

// A deferred call that awaits while the function panics (cleanup that needs I/O): the
// function suspends in the middle of its panic and resumes there, and the panic still
// reaches the handle. Aborted while suspended there, it unwinds like any Await: the
// cancellation replaces the panic, the deferred call does not resume, and the next
// function on the worker runs normally.
func TestHostile7AsyncDeferredAwaitDuringPanic(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var log hostile7Log
	_, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		defer func() {
			Await(co, Sleep(time.Millisecond))
			Await(co, YieldNow())
			log.add("cleanup done")
		}()
		Await(co, YieldNow())
		panic("boom")
	})))
	if hostile7PanicText(err) != "boom" || log.String() != "cleanup done" {
		t.Fatalf("got %v, log %q; want the panic boom after the cleanup", err, log.String())
	}

	var in atomic.Bool
	var tail hostile7Log
	h := Spawn(rt, Async(func(co *Co) int {
		defer tail.add("outer deferred call")
		defer func() {
			in.Store(true)
			Await(co, Pending[int]())
			tail.add("resumed")
		}()
		Await(co, YieldNow())
		panic("boom2")
	}))
	waitFor(t, "the deferred call to suspend", in.Load)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted in a deferred call during a panic: %v, want ErrCancelled", err)
	}
	if got := tail.String(); got != "outer deferred call" {
		t.Fatalf("deferred calls ran as %q, want only the outer one", got)
	}
	if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { Await(co, YieldNow()); return 7 }))); v != 7 || err != nil {
		t.Fatalf("the next function: %v, %v", v, err)
	}
}

// Aborted while awaiting a future whose Drop panics: the function's deferred calls still
// run (the Drop's panic unwinds them), and the handle reports the cancellation joined
// with the Drop's panic. A future whose Poll panics and whose Drop panics too: the Poll's
// panic is reported, the Drop ran once.
func TestHostile7AsyncAwaitedFuturePanicsInDrop(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var polled, deferred atomic.Bool
	var line atomic.Int64
	h := Spawn(rt, Async(func(co *Co) int {
		defer deferred.Store(true)
		return Await[int](co, panic2DropFuture{&polled, &line})
	}))
	waitFor(t, "the awaited future to be polled", polled.Load)
	h.Abort()
	_, err := waitHandle(t, h)
	pe := findPanicError(err, true)
	if !errors.Is(err, ErrCancelled) || pe == nil || pe.Value != "drop-boom" {
		t.Fatalf("got %v; want ErrCancelled joined with the Drop's panic", err)
	}
	if !deferred.Load() {
		t.Fatal("the function's deferred call did not run")
	}

	var drops atomic.Int32
	_, err = waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		return Await[int](co, &dropCounted{act: func() { panic("poll-boom") }, drops: &drops})
	})))
	if hostile7PanicText(err) != "poll-boom" {
		t.Fatalf("got %v; want the Poll's panic", err)
	}
	if drops.Load() != 1 {
		t.Fatalf("the future whose Poll panicked was dropped %d times, want 1", drops.Load())
	}
}

// runtime.Goexit in a deferred call of a function that returns normally, and Goexit in
// a deferred call of a function that panics: the task reports ErrGoexit, the worker is
// replaced, and a function after it starts on a new coroutine and runs normally.
func TestHostile7AsyncGoexitInDeferredCall(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	for _, panics := range []bool{false, true} {
		_, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
			defer runtime.Goexit()
			Await(co, YieldNow())
			if panics {
				panic("boom")
			}
			return 1
		})))
		if !errors.Is(err, ErrGoexit) {
			t.Fatalf("panics=%v: got %v, want ErrGoexit", panics, err)
		}
		if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { Await(co, YieldNow()); return 2 }))); v != 2 || err != nil {
			t.Fatalf("panics=%v: the next function: %v, %v", panics, v, err)
		}
	}
}

// A coroutine reused after bodies that panicked, recovered their own panics, awaited in
// a deferred call during a panic, or were nested: every body sees a clean *Co (a
// Context, no stale panic, no unwinding) and returns its own value.
func TestHostile7AsyncReusedCoroutineCarriesNothing(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	check := func(co *Co) error {
		if co.Context() == nil || co.unwinding || co.panicked != nil || co.polling {
			return fmt.Errorf("stale Co: cx %v, unwinding %v, panicked %v, polling %v",
				co.Context() != nil, co.unwinding, co.panicked, co.polling)
		}
		return nil
	}
	bodies := []func(co *Co) error{
		func(co *Co) error { Await(co, YieldNow()); panic("boom") },
		func(co *Co) error {
			defer func() { recover() }()
			Await(co, YieldNow())
			panic("recovered")
		},
		func(co *Co) error {
			defer func() { Await(co, YieldNow()) }()
			Await(co, YieldNow())
			panic("awaited during the panic")
		},
		func(co *Co) error {
			return Await(co, Async(func(inner *Co) error { Await(inner, YieldNow()); return check(inner) }))
		},
	}
	for round := range 3 {
		for i, body := range bodies {
			waitHandle(t, Spawn(rt, Async(body)))
			v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) error {
				if err := check(co); err != nil {
					return err
				}
				Await(co, YieldNow())
				return check(co)
			})))
			if err != nil || v != nil {
				t.Fatalf("round %d, after body %d: %v, %v", round, i, v, err)
			}
		}
	}
}

// A deferred call that spawns with the function's *Co while a Drop unwinds it: there is
// no poll (co.Context() is nil), so Spawn cannot use the worker; it panics, and the
// panic said the *Co was used outside its running function, which it was not. It must
// say the function is being unwound.
func TestHostile7AsyncSpawnWhileUnwinding(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var started atomic.Bool
	var log hostile7Log
	h := Spawn(rt, Async(func(co *Co) int {
		defer func() {
			log.add("context nil %v", co.Context() == nil)
			log.add("%v", hostile7Recover(func() { Spawn(co, Ready(1)) }))
			// Spawning with the runtime works.
			Spawn(rt, Ready(1)).Detach()
		}()
		started.Store(true)
		return Await(co, Pending[int]())
	}))
	waitFor(t, "the function to suspend", started.Load)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) || findPanicError(err, true) != nil {
		t.Fatalf("got %v; want a clean ErrCancelled", err)
	}
	if got := log.String(); !strings.HasPrefix(got, "context nil true; ") || !strings.Contains(got, "being unwound") {
		t.Fatalf("in the unwound function's deferred call: %q; want a nil Context and a Spawn "+
			"panic saying the function is being unwound", got)
	}
}
