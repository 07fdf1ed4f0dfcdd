package blitzio

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// lineBelow returns the line number after the line that calls it: a test calls it just
// above the panic whose site it checks.
func lineBelow() int {
	_, _, line, _ := runtime.Caller(1)
	return line + 1
}

// findPanicError returns the *PanicError in err with the given InDrop, looking through
// errors.Join (errors.As stops at the first *PanicError).
func findPanicError(err error, inDrop bool) *PanicError {
	var pe *PanicError
	if errors.As(err, &pe) && pe.InDrop == inDrop {
		return pe
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if pe := findPanicError(e, inDrop); pe != nil {
				return pe
			}
		}
	}
	return nil
}

// checkOneLine checks that err holds a *PanicError (InDrop as given) whose Error() is
// exactly the one line "blitzio: <where>: <value> [at panic2_test.go:<line>]".
func checkOneLine(t *testing.T, what string, err error, inDrop bool, value string, line int) *PanicError {
	t.Helper()
	pe := findPanicError(err, inDrop)
	if pe == nil {
		t.Fatalf("%s: error %v (%T), want a *PanicError with InDrop %v", what, err, err, inDrop)
	}
	where := "task panicked"
	if inDrop {
		where = "task's Drop panicked"
	}
	want := fmt.Sprintf("blitzio: %s: %s [at panic2_test.go:%d]", where, value, line)
	if got := pe.Error(); got != want {
		t.Fatalf("%s: Error() =\n\t%q\nwant\n\t%q", what, got, want)
	}
	if len(pe.Stack) == 0 {
		t.Fatalf("%s: PanicError without Stack", what)
	}
	return pe
}

// A task's panic prints as one line naming the value and the panicking line, whatever
// ran the code: a task's Poll (directly or below a combinator), BlockOn, SpawnBlocking.
func TestPanicErrorSiteEverywhere(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	type result struct {
		err  error
		line int
	}
	cases := []struct {
		name string
		run  func() result
	}{
		{"Spawn", func() (res result) {
			_, res.err = waitHandle(t, Spawn(rt, PollFn(func(*Context) (int, bool) {
				res.line = lineBelow()
				panic("boom")
			})))
			return
		}},
		{"Spawn, a child of Join2", func() (res result) {
			var line atomic.Int64
			_, res.err = waitHandle(t, Spawn(rt, Join2(Ready(1), PollFn(func(*Context) (int, bool) {
				line.Store(int64(lineBelow()))
				panic("boom")
			}))))
			res.line = int(line.Load())
			return
		}},
		{"Spawn, after a Sleep", func() (res result) {
			var line atomic.Int64
			_, res.err = waitHandle(t, Spawn(rt, AndThen(Sleep(time.Millisecond), func(struct{}) Future[int] {
				line.Store(int64(lineBelow()))
				panic("boom")
			})))
			res.line = int(line.Load())
			return
		}},
		{"BlockOn", func() (res result) {
			_, res.err = BlockOn(rt, PollFn(func(*Context) (int, bool) {
				res.line = lineBelow()
				panic("boom")
			}))
			return
		}},
		{"SpawnBlocking", func() (res result) {
			_, res.err = waitHandle(t, SpawnBlocking(rt, func() int {
				res.line = lineBelow()
				panic("boom")
			}))
			return
		}},
	}
	for _, c := range cases {
		for i := 0; i < 3; i++ {
			res := c.run()
			pe := checkOneLine(t, c.name, res.err, false, "boom", res.line)
			if msg := fmt.Sprint(res.err); strings.Contains(msg, "\n") || msg != pe.Error() {
				t.Fatalf("%s: fmt.Sprint(err) is not the one line %q:\n%s", c.name, pe.Error(), msg)
			}
		}
	}
}

// A runtime error is reported at the faulty expression, and errors.As finds the
// runtime.Error through the PanicError.
func TestPanicErrorRuntimeErrorSite(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var line int
	_, err := waitHandle(t, Spawn(rt, PollFn(func(*Context) (int, bool) {
		s := make([]int, 2)
		i := len(s) + 1
		line = lineBelow()
		return s[i], true
	})))
	checkOneLine(t, "index out of range", err, false, "runtime error: index out of range [3] with length 2", line)
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Fatalf("errors.As(%v, *runtime.Error) failed", err)
	}
}

// A panic raised inside the standard library (strings.Repeat with a negative count) is
// reported at the user's call.
func TestPanicErrorSiteOfStdlibPanic(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	n := -1
	var line int
	_, err := waitHandle(t, Spawn(rt, PollFn(func(*Context) (string, bool) {
		line = lineBelow()
		return strings.Repeat("x", n), true
	})))
	checkOneLine(t, "strings.Repeat", err, false, "strings: negative Repeat count", line)
}

// A panic that blitzio raises itself (BlockOn called from a task's Poll) is reported at
// the user's call into blitzio.
func TestPanicErrorSiteOfMisuseIsTheCall(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var line int
	_, err := waitHandle(t, Spawn(rt, PollFn(func(*Context) (int, bool) {
		line = lineBelow()
		v, _ := BlockOn(rt, Ready(1))
		return v, true
	})))
	pe := findPanicError(err, false)
	if pe == nil {
		t.Fatalf("BlockOn inside a task: %v, want a *PanicError", err)
	}
	if want := fmt.Sprintf(" [at panic2_test.go:%d]", line); !strings.HasSuffix(pe.Error(), want) ||
		!strings.Contains(pe.Error(), "cannot block from within a runtime") {
		t.Fatalf("BlockOn inside a task: Error() = %q, want the blitzio message and %q", pe.Error(), want)
	}
}

type panic2Err struct{ code int }

func (e panic2Err) Error() string { return "panic2Err " + strconv.Itoa(e.code) }

// Formatting: %v and %s are Error(), %q quotes it, %+v adds the stack (which shows the
// panicking function), and errors.Is/As see through to an error value.
func TestPanicErrorFormatAndUnwrap(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var line int
	_, err := waitHandle(t, Spawn(rt, PollFn(func(*Context) (int, bool) {
		line = lineBelow()
		panic(fmt.Errorf("wrapped: %w", panic2Err{7}))
	})))
	pe := checkOneLine(t, "panic(error)", err, false, "wrapped: panic2Err 7", line)
	msg := pe.Error()
	for _, f := range []string{"%v", "%s"} {
		if got := fmt.Sprintf(f, err); got != msg {
			t.Errorf("Sprintf(%q) = %q, want Error() %q", f, got, msg)
		}
	}
	if got, want := fmt.Sprintf("%q", pe), strconv.Quote(msg); got != want {
		t.Errorf("%%q = %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%x", pe), fmt.Sprintf("%x", msg); got != want {
		t.Errorf("%%x = %s, want %s", got, want)
	}
	full := fmt.Sprintf("%+v", pe)
	if !strings.HasPrefix(full, msg+"\n") || !strings.HasSuffix(full, string(pe.Stack)) {
		t.Errorf("%%+v is not Error(), newline, Stack:\n%s", full)
	}
	if !strings.Contains(full, "TestPanicErrorFormatAndUnwrap") ||
		!strings.Contains(full, "panic2_test.go:"+strconv.Itoa(line)) {
		t.Errorf("%%+v does not show the panicking frame (panic2_test.go:%d):\n%s", line, full)
	}
	if got := fmt.Sprintf("%#v", pe); !strings.HasPrefix(got, "&blitzio.PanicError{Value:") {
		t.Errorf("%%#v = %s", got)
	}
	var pe2 panic2Err
	if !errors.As(err, &pe2) || pe2.code != 7 {
		t.Errorf("errors.As(err, *panic2Err) failed: %v", err)
	}

	sentinel := errors.New("sentinel")
	_, err = BlockOn(rt, PollFn(func(*Context) (int, bool) { panic(sentinel) }))
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, sentinel) failed", err)
	}
	if (&PanicError{Value: 3}).Unwrap() != nil {
		t.Errorf("Unwrap of a non-error value is not nil")
	}
	// A PanicError built as a literal has no known site.
	lit := &PanicError{Value: "v", InDrop: true}
	if got := lit.Error(); got != "blitzio: task's Drop panicked: v" {
		t.Errorf("literal PanicError: Error() = %q", got)
	}
	if got := fmt.Sprintf("%+v", lit); got != "blitzio: task's Drop panicked: v" {
		t.Errorf("literal PanicError: %%+v = %q", got)
	}
}

type panic2DropFuture struct {
	polled *atomic.Bool
	line   *atomic.Int64
}

func (f panic2DropFuture) Poll(*Context) (int, bool) { f.polled.Store(true); return 0, false }

func (f panic2DropFuture) Drop() {
	f.line.Store(int64(lineBelow()))
	panic("drop-boom")
}

// A panic in Drop is an InDrop PanicError whose one-line message says so and names the
// Drop's panicking line; the cancellation and a Poll panic are still seen.
func TestPanicErrorInDrop(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var polled atomic.Bool
	var line atomic.Int64
	h := Spawn[panic2DropFuture, int](rt, panic2DropFuture{&polled, &line})
	waitFor(t, "first poll", polled.Load)
	h.Abort()
	_, err := waitHandle(t, h)
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted task: %v, want ErrCancelled", err)
	}
	checkOneLine(t, "Drop of an aborted task", err, true, "drop-boom", int(line.Load()))

	var pollLine, dropLine atomic.Int64
	_, err = waitHandle(t, Spawn(rt, WithDrop(PollFn(func(*Context) (int, bool) {
		pollLine.Store(int64(lineBelow()))
		panic("poll-boom")
	}), func() {
		dropLine.Store(int64(lineBelow()))
		panic("drop-boom")
	})))
	checkOneLine(t, "Poll", err, false, "poll-boom", int(pollLine.Load()))
	checkOneLine(t, "Drop after Poll panicked", err, true, "drop-boom", int(dropLine.Load()))
}

// A task that re-raises another task's PanicError does not wrap it again: its handle
// gives the very same *PanicError, with the original site. A Drop that re-raises one
// gives an InDrop copy, leaving the original as it was.
func TestPanicErrorNestedReraiseNotWrapped(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var line atomic.Int64
	inner := Spawn(rt, PollFn(func(*Context) (int, bool) {
		line.Store(int64(lineBelow()))
		panic("inner")
	}))
	outer := Spawn(rt, Map(inner, func(r Result[int]) int {
		if r.Err != nil {
			panic(r.Err) // re-raise the inner task's error
		}
		return r.Value
	}))
	_, innerErr := waitHandle(t, inner)
	_, outerErr := waitHandle(t, outer)
	pe := checkOneLine(t, "inner", innerErr, false, "inner", int(line.Load()))
	if outerErr != error(pe) {
		t.Fatalf("the re-raised PanicError was replaced: outer %v, inner %v", outerErr, pe)
	}
	if n := strings.Count(outerErr.Error(), "blitzio:"); n != 1 {
		t.Fatalf("message has %d prefixes: %q", n, outerErr.Error())
	}

	var polled atomic.Bool
	h := Spawn(rt, WithDrop(PollFn(func(*Context) (int, bool) { polled.Store(true); return 0, false }),
		func() { panic(pe) }))
	waitFor(t, "first poll", polled.Load)
	h.Abort()
	_, err := waitHandle(t, h)
	dropped := checkOneLine(t, "Drop re-raising", err, true, "inner", int(line.Load()))
	if dropped == pe || pe.InDrop {
		t.Fatalf("the InDrop report changed the original PanicError")
	}
}

// runtime.Goexit in a task gives ErrGoexit, not a PanicError, as a one-line error; in
// a Drop it is joined to the cancellation.
func TestPanicErrorGoexitSentinel(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	_, err := waitHandle(t, Spawn(rt, PollFn(func(*Context) (int, bool) {
		runtime.Goexit()
		return 0, true
	})))
	var pe *PanicError
	if !errors.Is(err, ErrGoexit) || errors.As(err, &pe) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Goexit in Poll: %q, want ErrGoexit", err)
	}
	var polled atomic.Bool
	h := Spawn(rt, WithDrop(PollFn(func(*Context) (int, bool) { polled.Store(true); return 0, false }),
		func() { runtime.Goexit() }))
	waitFor(t, "first poll", polled.Load)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrGoexit) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("Goexit in Drop: %v, want ErrGoexit and ErrCancelled", err)
	}
}

// A Waker that panics while TestClock.Advance fires timers: Advance re-raises a
// PanicError naming the waker's panicking line.
func TestPanicErrorWakerSite(t *testing.T) {
	rt, clk := newTestClockRT(t, 1)
	var line int
	w := WakerFunc(func() {
		line = lineBelow()
		panic("waker-boom")
	})
	s := Sleep(time.Millisecond)
	if _, ok := s.Poll(NewContext(rt, w)); ok {
		t.Fatal("sleep ready at once")
	}
	var got any
	func() {
		defer func() { got = recover() }()
		clk.Advance(time.Millisecond)
	}()
	err, _ := got.(error)
	checkOneLine(t, "waker", err, false, "waker-boom", line)
}

// Many waiters on one handle get the same *PanicError and format it at the same time
// (the site is computed from read-only program counters: no race, the same text).
func TestPanicErrorSharedByWaiters(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var line atomic.Int64
	release := make(chan struct{})
	h := Spawn(rt, AndThen(SpawnBlocking(rt, func() int { <-release; return 0 }), func(Result[int]) Future[int] {
		line.Store(int64(lineBelow()))
		panic("shared")
	}))
	const waiters = 16
	type seen struct{ msg, full string }
	seens := make(chan seen, waiters)
	for i := 0; i < waiters; i++ {
		go func() {
			_, err := h.Wait()
			seens <- seen{err.Error(), fmt.Sprintf("%+v", err)}
		}()
	}
	time.Sleep(time.Millisecond)
	close(release)
	timeout := time.After(20 * time.Second)
	for i := 0; i < waiters; i++ {
		select {
		case s := <-seens:
			// The panic (and the store of its line) happened before Wait returned.
			want := fmt.Sprintf("blitzio: task panicked: shared [at panic2_test.go:%d]", line.Load())
			if s.msg != want || !strings.HasPrefix(s.full, want+"\n") {
				t.Fatalf("waiter saw %q (%%+v %q...), want %q", s.msg, s.full[:min(len(s.full), 100)], want)
			}
		case <-timeout:
			t.Fatal("waiters did not all return within 20s")
		}
	}
}
