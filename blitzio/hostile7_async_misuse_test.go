package blitzio

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile review of Async and Await: misuses of a *Co and of an Async future that used to
// corrupt the coroutine hand-over (a function resumed after its task was cancelled, a
// task that never finished, a made-up result), now clear panics.

// hostile7PanicText returns the text of the *PanicError in err ("" if there is none).
func hostile7PanicText(err error) string {
	var pe *PanicError
	if !errors.As(err, &pe) {
		return ""
	}
	return fmt.Sprint(pe.Value)
}

// An inner Async function that awaits with the outer function's *Co (a closure that
// captured the wrong co) switched the outer coroutine from the inner goroutine: the
// worker took the outer function for suspended while it was not, and when the task was
// aborted the outer function went on running after its Await as if nothing happened.
// Await must refuse the outer *Co there with a panic that says so.
func TestHostile7AsyncOuterCoInNestedAsync(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	var polled, resumed atomic.Int32
	rel := &trigger{}
	h := Spawn(rt, Async(func(co *Co) int {
		v := Await(co, Async(func(inner *Co) int {
			polled.Add(1)
			return Await(co, rel.future(1)) // the outer co, by mistake
		}))
		resumed.Add(1)
		return v
	}))
	waitFor(t, "the inner function to run", func() bool { return polled.Load() > 0 || h.IsFinished() })
	h.Abort()
	_, err := waitHandle(t, h)
	if resumed.Load() != 0 {
		t.Fatalf("the outer function ran on after its Await though its task was aborted (err %v)", err)
	}
	if msg := hostile7PanicText(err); !strings.Contains(msg, "Await") || !strings.Contains(msg, "already awaiting") {
		t.Fatalf("the task reported %v; want a panic of Await naming the misuse (a *Co that is already awaiting)", err)
	}
	// The worker and its kept coroutines are sound: the next Async functions run.
	for i := range 3 {
		if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { Await(co, YieldNow()); return i }))); v != i || err != nil {
			t.Fatalf("Async function %d after the misuse: %v, %v", i, v, err)
		}
	}
}

// The same misuse through a combinator (the inner function is a child of Join2) and from
// a goroutine that Await's poll blocks on: refused while the function is polling.
func TestHostile7AsyncOuterCoWhilePolling(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 2})
	_, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		r := Await(co, Join2(Ready(1), Async(func(*Co) int { Await(co, YieldNow()); return 2 })))
		return r.V1 + r.V2
	})))
	if msg := hostile7PanicText(err); !strings.Contains(msg, "already awaiting") {
		t.Fatalf("outer co inside a Join2 child: %v, want the misuse panic", err)
	}
	// A future whose Poll hands the *Co to a goroutine and waits for it (a blocking Poll,
	// against the contract, but the misuse must still be named, not corrupt anything).
	v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) string {
		return Await(co, PollFn(func(*Context) (string, bool) {
			ch := make(chan string, 1)
			go func() { ch <- fmt.Sprint(hostile7Recover(func() { Await(co, Ready(1)) })) }()
			select {
			case s := <-ch:
				return s, true
			case <-time.After(10 * time.Second):
				return "the goroutine's Await hung", true
			}
		}))
	})))
	if err != nil || !strings.Contains(v, "already awaiting") {
		t.Fatalf("Await from a goroutine while the function polls: %q, %v; want the misuse panic", v, err)
	}
}

// An Await inside a callback of the future being awaited (a Map callback under a
// JoinAll), on the function's own goroutine: the coroutine suspended in the middle of
// JoinAll's poll, which had set the worker's shared Context up for its child (cx.child)
// and had not restored it, so the next task the worker polled registered the JoinAll
// child's Waker for its own Sleep and was never woken. Await must refuse to suspend
// inside a Poll, and the other task must finish.
func TestHostile7AsyncAwaitInsideAwaitedPoll(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	var inCallback atomic.Bool
	a := Spawn(rt, Async(func(co *Co) int {
		r := Await(co, JoinAll[int](Map(Ready(1), func(v int) int {
			inCallback.Store(true)
			Await(co, Sleep(20*time.Millisecond))
			return v
		}), Ready(2)))
		return r[0] + r[1]
	}))
	waitFor(t, "the Map callback to run", inCallback.Load)
	b := Spawn(rt, Async(func(co *Co) int {
		Await(co, Sleep(time.Millisecond))
		return 5
	}))
	if v, err := waitHandle(t, b); v != 5 || err != nil {
		t.Fatalf("the other task: %v, %v", v, err)
	}
	_, err := waitHandle(t, a)
	if msg := hostile7PanicText(err); !strings.Contains(msg, "already awaiting") {
		t.Fatalf("Await inside a Map callback: %v; want the panic saying the *Co is already awaiting", err)
	}
}

// An Async future polled from inside its own function (it awaits itself) used to call
// iter.Pull's next from the coroutine, whose panic dropped the future from inside too:
// the coroutine stopped itself, the worker took the task for pending, and it never
// finished. It must panic (the task's handle reports it) and leave the worker working.
func TestHostile7AsyncPolledFromItsOwnFunction(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	var f Future[int]
	f = Async(func(co *Co) int {
		Await(co, YieldNow())
		return Await(co, f)
	})
	var err error
	watchdog(t, 10*time.Second, "a task whose Async function awaits its own future", func() {
		_, err = Spawn(rt, f).Wait()
	})
	if msg := hostile7PanicText(err); !strings.Contains(msg, "Async future polled") {
		t.Fatalf("got %v; want a panic saying the Async future was polled while its function runs", err)
	}
	if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { Await(co, YieldNow()); return 4 }))); v != 4 || err != nil {
		t.Fatalf("the next task: %v, %v", v, err)
	}
}

// Dropped from inside its own function: the same corruption (the task finished with a
// zero value while the function stayed blocked for ever). It must panic instead.
func TestHostile7AsyncDroppedFromItsOwnFunction(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	var f Future[int]
	var after atomic.Bool
	f = Async(func(co *Co) int {
		Await(co, YieldNow())
		Drop(f)
		after.Store(true)
		return 5
	})
	var err error
	var v int
	watchdog(t, 10*time.Second, "a task whose Async function drops its own future", func() {
		v, err = Spawn(rt, f).Wait()
	})
	if msg := hostile7PanicText(err); !strings.Contains(msg, "Async future dropped") || after.Load() {
		t.Fatalf("got %v, %v (the function went on: %v); want a panic saying the Async future "+
			"was dropped while its function runs", v, err, after.Load())
	}
	if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { Await(co, YieldNow()); return 4 }))); v != 4 || err != nil {
		t.Fatalf("the next task: %v, %v", v, err)
	}
}

// An Async future whose function called runtime.Goexit, polled again (from a deferred
// call of the goroutine that Goexit is ending): it reported ready with a zero value the
// function never returned. It must panic.
func TestHostile7AsyncPolledAgainAfterGoexit(t *testing.T) {
	f := Async(func(co *Co) int {
		Await(co, YieldNow())
		runtime.Goexit()
		return 1
	})
	res := make(chan string, 1)
	go func() {
		cx := NewContext(nil, Waker{})
		defer func() {
			p := hostile7Recover(func() {
				v, ok := f.Poll(cx)
				res <- fmt.Sprintf("ready with %d, %v", v, ok)
			})
			if p != nil {
				res <- fmt.Sprint("panic: ", p)
			}
		}()
		for {
			if _, ok := f.Poll(cx); ok {
				res <- "the first polls finished"
				return
			}
		}
	}()
	select {
	case s := <-res:
		if !strings.Contains(s, "panic") || !strings.Contains(s, "Goexit") {
			t.Fatalf("polled after its function's runtime.Goexit: %s; want a panic naming Goexit", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("polling after Goexit hung")
	}
}

// The cancellation panic value, recovered by a function being unwound and re-raised by
// another Async function that is not (a panic catcher that forwards panics, in the
// style of conc's panics.Catcher): that function's task reported success with a zero
// value. It must report a panic.
func TestHostile7AsyncForwardedCancellationIsAPanic(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	caught := make(chan any, 1)
	var polled atomic.Bool
	child := Spawn(rt, Async(func(co *Co) int {
		defer func() { caught <- recover() }()
		polled.Store(true)
		return Await(co, Pending[int]())
	}))
	waitFor(t, "the child to suspend", polled.Load)
	child.Abort()
	if _, err := waitHandle(t, child); !errors.Is(err, ErrCancelled) {
		t.Fatalf("child: %v", err)
	}
	var p any
	select {
	case p = <-caught:
	case <-time.After(10 * time.Second):
		t.Fatal("the child's deferred call did not run")
	}
	if p == nil {
		t.Fatal("the child's recover got nothing: it was not unwound")
	}
	v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		Await(co, YieldNow())
		panic(p) // forwarded
	})))
	if err == nil || hostile7PanicText(err) == "" {
		t.Fatalf("a function that panics with a forwarded value reported %v, %v; want a *PanicError", v, err)
	}
}
