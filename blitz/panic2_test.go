package blitz

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
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

// recoverRun runs f on a goroutine of its own under a watchdog and returns what it
// panicked with (nil if it returned).
func recoverRun(t *testing.T, what string, f func()) (r any) {
	t.Helper()
	within(t, 20*time.Second, what, func() {
		defer func() { r = recover() }()
		f()
	})
	return r
}

// checkOneLine checks that r is a *PanicError whose Error() is exactly the one line
// "blitz: panic in forked job: <value> [at panic2_test.go:<line>]".
func checkOneLine(t *testing.T, what string, r any, value string, line int) *PanicError {
	t.Helper()
	pe, ok := r.(*PanicError)
	if !ok {
		t.Fatalf("%s: recovered %T %v, want *PanicError", what, r, r)
	}
	want := fmt.Sprintf("blitz: panic in forked job: %s [at panic2_test.go:%d]", value, line)
	if got := pe.Error(); got != want {
		t.Fatalf("%s: Error() =\n\t%q\nwant\n\t%q", what, got, want)
	}
	if len(pe.Stack) == 0 {
		t.Fatalf("%s: PanicError without Stack", what)
	}
	return pe
}

// stealOrTimeout waits until started is set (by a fork that a worker stole) or two
// seconds pass; the test then checks whichever way the fork ran.
func stealOrTimeout(started *atomic.Bool) {
	for deadline := time.Now().Add(2 * time.Second); !started.Load() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
}

// Error is one line naming the panic value and the panicking line of the test, through
// every blitz boundary that re-raises a panic, whether the panicking work ran on the
// caller's goroutine or on a thief.
func TestPanicErrorSiteEveryBoundary(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	type result struct {
		r    any
		line int
	}
	cases := []struct {
		name string
		run  func() result
	}{
		{"Call", func() (res result) {
			res.r = recoverRun(t, "Call", func() {
				p.Call(func(*Task) {
					res.line = lineBelow()
					panic("boom")
				})
			})
			return
		}},
		{"Join a", func() (res result) {
			res.r = recoverRun(t, "Join a", func() {
				p.Call(func(t *Task) {
					Join(t, func(*Task) {
						res.line = lineBelow()
						panic("boom")
					}, func(*Task) {})
				})
			})
			return
		}},
		{"Join b, stolen", func() (res result) {
			res.r = recoverRun(t, "Join b", func() {
				var started atomic.Bool
				p.Call(func(t *Task) {
					Join(t, func(*Task) { stealOrTimeout(&started) }, func(*Task) {
						started.Store(true)
						res.line = lineBelow()
						panic("boom")
					})
				})
			})
			return
		}},
		{"Future.Join of a stolen job", func() (res result) {
			res.r = recoverRun(t, "Future.Join", func() {
				var started atomic.Bool
				p.Call(func(t *Task) {
					var j Job[int, int]
					fu := j.Fork(t, func(t *Task, _ int) int {
						started.Store(true)
						res.line = lineBelow()
						panic("boom")
					}, 0)
					stealOrTimeout(&started)
					fu.Join(t)
				})
			})
			return
		}},
		{"JoinN", func() (res result) {
			res.r = recoverRun(t, "JoinN", func() {
				p.Call(func(t *Task) {
					JoinN(t, func(*Task) {}, func(*Task) {}, func(*Task) {
						res.line = lineBelow()
						panic("boom")
					})
				})
			})
			return
		}},
		{"TryJoin", func() (res result) {
			res.r = recoverRun(t, "TryJoin", func() {
				p.Call(func(t *Task) {
					_ = TryJoin(t, func(*Task) error { return nil }, func(*Task) error {
						res.line = lineBelow()
						panic("boom")
					})
				})
			})
			return
		}},
		{"Scope.Spawn", func() (res result) {
			res.r = recoverRun(t, "Scope", func() {
				p.Call(func(t *Task) {
					Scope(t, func(s *Spawner) {
						s.Spawn(func(*Task) {
							res.line = lineBelow()
							panic("boom")
						})
					})
				})
			})
			return
		}},
		{"Broadcast", func() (res result) {
			var line atomic.Int64
			res.r = recoverRun(t, "Broadcast", func() {
				p.Broadcast(func(i int) {
					line.Store(int64(lineBelow()))
					panic("boom")
				})
			})
			res.line = int(line.Load())
			return
		}},
		{"For leaf", func() (res result) {
			var line atomic.Int64
			res.r = recoverRun(t, "For", func() {
				For(1<<12, func(lo, hi int) {
					line.Store(int64(lineBelow()))
					panic("boom")
				}, WithPool(p), WithGrain(16))
			})
			res.line = int(line.Load())
			return
		}},
		{"Catch", func() (res result) {
			res.r = recoverRun(t, "Catch", func() {
				p.Call(func(t *Task) {
					pe := Catch(t, func(*Task) {
						res.line = lineBelow()
						panic("boom")
					})
					panic(pe) // a user's re-raise of a caught PanicError
				})
			})
			return
		}},
	}
	for _, c := range cases {
		for i := 0; i < 3; i++ {
			res := c.run()
			checkOneLine(t, c.name, res.r, "boom", res.line)
		}
	}
}

// A runtime error is reported at the faulty expression, and errors.As finds the
// runtime.Error through the PanicError.
func TestPanicErrorRuntimeErrorSite(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	var line int
	r := recoverRun(t, "index out of range", func() {
		var started atomic.Bool
		p.Call(func(t *Task) {
			Join(t, func(*Task) { stealOrTimeout(&started) }, func(*Task) {
				started.Store(true)
				var s []int
				i := 5
				line = lineBelow()
				_ = s[i]
			})
		})
	})
	pe := checkOneLine(t, "index out of range", r, "runtime error: index out of range [5] with length 0", line)
	var re runtime.Error
	if !errors.As(pe, &re) {
		t.Fatalf("errors.As(%v, *runtime.Error) failed", pe)
	}
}

// A panic that blitz raises itself (a Future joined out of order) is reported at the
// user's call into blitz, not inside blitz.
func TestPanicErrorSiteOfMisuseIsTheCall(t *testing.T) {
	p := newPool(t, Config{Workers: 1, SplitDepth: 4})
	var line int
	r := recoverRun(t, "join out of order", func() {
		p.Call(func(t *Task) {
			a := fibJob.Fork(t, fib, 3)
			b := fibJob.Fork(t, fib, 4)
			line = lineBelow()
			a.Join(t) // b must be joined first
			b.Join(t)
		})
	})
	pe := checkOneLine(t, "join out of order", r, errJoinOrder.Error(), line)
	if !errors.Is(pe, errJoinOrder) {
		t.Fatalf("errors.Is(%v, errJoinOrder) failed", pe)
	}
}

// A panic raised inside the standard library (strings.Repeat with a negative count) is
// reported at the user's call, and panic(nil) at the panic call.
func TestPanicErrorSiteOfStdlibPanic(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	n := -1
	var line int
	r := recoverRun(t, "strings.Repeat", func() {
		p.Call(func(t *Task) {
			JoinN(t, func(*Task) {
				line = lineBelow()
				_ = strings.Repeat("x", n)
			})
		})
	})
	checkOneLine(t, "strings.Repeat", r, "strings: negative Repeat count", line)

	r = recoverRun(t, "panic(nil)", func() {
		p.Call(func(t *Task) {
			JoinN(t, func(*Task) {
				line = lineBelow()
				panic(nil)
			})
		})
	})
	pe, _ := r.(*PanicError)
	var pn *runtime.PanicNilError
	if pe == nil || !errors.As(pe, &pn) {
		t.Fatalf("panic(nil): recovered %v, want a PanicError wrapping *runtime.PanicNilError", r)
	}
	checkOneLine(t, "panic(nil)", r, pn.Error(), line)
}

// A panic that blitz raises with no user frame below it (a stolen job found returning
// with a fork unjoined, checked by the worker after the job's code returned) has no site
// rather than one inside blitz; run on the caller's goroutine, the same misuse is
// reported at the user's call.
func TestPanicErrorNoSiteInsideBlitz(t *testing.T) {
	p := newPool(t, Config{Workers: 2, SplitDepth: 8})
	stolen := 0
	defer func() { t.Logf("%d of 5 jobs were stolen", stolen) }()
	for i := 0; i < 5; i++ {
		var stole atomic.Bool
		var line int
		r := recoverRun(t, "unjoined fork in a stolen job", func() {
			line = lineBelow()
			p.Call(func(t *Task) {
				var j Job[int, int]
				fu := j.Fork(t, func(t *Task, _ int) int {
					if t.WorkerIndex() >= 0 {
						stole.Store(true)
					}
					fibJob.Fork(t, fib, 5) // never joined
					return 0
				}, 0)
				stealOrTimeout(&stole)
				fu.Join(t)
			})
		})
		pe, ok := r.(*PanicError)
		if !ok || pe.Value != errUnjoined {
			t.Fatalf("recovered %T %v, want a PanicError of errUnjoined", r, r)
		}
		want := "blitz: panic in forked job: " + errUnjoined.Error()
		if stole.Load() {
			stolen++
		} else {
			want += fmt.Sprintf(" [at panic2_test.go:%d]", line)
		}
		if got := pe.Error(); got != want {
			t.Fatalf("stolen %v: Error() =\n\t%q\nwant\n\t%q", stole.Load(), got, want)
		}
	}
}

type panic2Err struct{ code int }

func (e panic2Err) Error() string { return "panic2Err " + strconv.Itoa(e.code) }

// Formatting: %v and %s are Error(), %q quotes it, %+v adds the stack (which shows the
// panicking function), and errors.Is/As see through to an error value.
func TestPanicErrorFormatAndUnwrap(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	sentinel := errors.New("sentinel")
	var line int
	r := recoverRun(t, "panic(error)", func() {
		p.Call(func(t *Task) {
			Join(t, func(*Task) {}, func(*Task) {
				line = lineBelow()
				panic(fmt.Errorf("wrapped: %w", panic2Err{7}))
			})
		})
	})
	pe := checkOneLine(t, "panic(error)", r, "wrapped: panic2Err 7", line)
	msg := pe.Error()
	if strings.Contains(msg, "\n") {
		t.Fatalf("Error() spans lines: %q", msg)
	}
	for _, f := range []string{"%v", "%s"} {
		if got := fmt.Sprintf(f, pe); got != msg {
			t.Errorf("Sprintf(%q) = %q, want Error() %q", f, got, msg)
		}
	}
	if got := fmt.Sprint(pe); got != msg {
		t.Errorf("Sprint = %q, want %q", got, msg)
	}
	if got, want := fmt.Sprintf("%q", pe), strconv.Quote(msg); got != want {
		t.Errorf("%%q = %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%x", pe), fmt.Sprintf("%x", msg); got != want {
		t.Errorf("%%x = %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%d", pe); got != "%!d(*blitz.PanicError="+msg+")" {
		t.Errorf("%%d = %s", got)
	}
	full := fmt.Sprintf("%+v", pe)
	if !strings.HasPrefix(full, msg+"\n") || !strings.HasSuffix(full, string(pe.Stack)) {
		t.Errorf("%%+v is not Error(), newline, Stack:\n%s", full)
	}
	if !strings.Contains(full, "TestPanicErrorFormatAndUnwrap") ||
		!strings.Contains(full, "panic2_test.go:"+strconv.Itoa(line)) {
		t.Errorf("%%+v does not show the panicking frame (panic2_test.go:%d):\n%s", line, full)
	}
	if got := fmt.Sprintf("%#v", pe); !strings.HasPrefix(got, "&blitz.PanicError{Value:") {
		t.Errorf("%%#v = %s", got)
	}
	var pe2 panic2Err
	if !errors.As(pe, &pe2) || pe2.code != 7 {
		t.Errorf("errors.As(PanicError, *panic2Err) failed: %v", pe)
	}
	// An error wrapped by a caller still formats as one line through %v and %w.
	wrapped := fmt.Errorf("request 3: %w", pe)
	if got := fmt.Sprint(wrapped); got != "request 3: "+msg {
		t.Errorf("wrapped: %q", got)
	}
	var back *PanicError
	if !errors.As(wrapped, &back) || back != pe {
		t.Errorf("errors.As through a wrapping error failed")
	}

	r = recoverRun(t, "panic(sentinel)", func() {
		p.Call(func(t *Task) { JoinN(t, func(*Task) { panic(sentinel) }) })
	})
	if err, _ := r.(error); !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, sentinel) failed", r)
	}
	// A non-error value unwraps to nil.
	if (&PanicError{Value: 3}).Unwrap() != nil {
		t.Errorf("Unwrap of a non-error value is not nil")
	}
	// A PanicError built as a literal has no known site: no "[at", no crash.
	lit := &PanicError{Value: "v"}
	if got := lit.Error(); got != "blitz: panic in forked job: v" {
		t.Errorf("literal PanicError: Error() = %q", got)
	}
	if got := fmt.Sprintf("%+v", lit); got != "blitz: panic in forked job: v" {
		t.Errorf("literal PanicError: %%+v = %q", got)
	}
}

// A panic crossing many nested joins (each level forks, the innermost panics on
// whichever goroutine ran it) is re-raised as the one *PanicError, not wrapped again,
// and keeps the innermost site.
func TestPanicErrorNestedReraiseNotWrapped(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	for round := 0; round < 20; round++ {
		var line atomic.Int64
		var nest func(t *Task, d int)
		nest = func(t *Task, d int) {
			if d == 0 {
				line.Store(int64(lineBelow()))
				panic("deep")
			}
			Join(t, func(t *Task) { time.Sleep(time.Duration(round%3) * 50 * time.Microsecond) },
				func(t *Task) { nest(t, d-1) })
		}
		r := recoverRun(t, "nested", func() { p.Call(func(t *Task) { nest(t, 6) }) })
		pe := checkOneLine(t, "nested joins", r, "deep", int(line.Load()))
		if _, double := pe.Value.(*PanicError); double {
			t.Fatalf("PanicError wraps a PanicError: %v", pe)
		}
		if n := strings.Count(pe.Error(), "blitz:"); n != 1 {
			t.Fatalf("message has %d prefixes: %q", n, pe.Error())
		}
	}
}

// A job whose goroutine calls runtime.Goexit gives its joiner a PanicError wrapping
// ErrGoexit, whose site is the line that called Goexit.
func TestPanicErrorGoexitSite(t *testing.T) {
	p, _ := NewPool(Config{Workers: 2})
	defer func() { within(t, 10*time.Second, "Close", p.Close) }()
	checked := 0
	for i := 0; i < 5 && checked < 2; i++ {
		var stole atomic.Bool
		var line atomic.Int64
		r, exited := goexitOutcome(t, "stolen fork with Goexit", func() {
			p.Call(func(t *Task) {
				var j Job[int, int]
				fu := j.Fork(t, func(t *Task, _ int) int {
					if t.WorkerIndex() >= 0 {
						stole.Store(true)
						line.Store(int64(lineBelow()))
						runtime.Goexit()
					}
					return 0
				}, 0)
				stealOrTimeout(&stole)
				fu.Join(t)
			})
		})
		if !stole.Load() {
			continue
		}
		checked++
		if exited {
			t.Fatalf("the joiner's goroutine exited, want a PanicError")
		}
		pe := checkOneLine(t, "Goexit", r, ErrGoexit.Error(), int(line.Load()))
		if !errors.Is(pe, ErrGoexit) {
			t.Fatalf("errors.Is(%v, ErrGoexit) failed", pe)
		}
	}
	if checked == 0 {
		t.Log("no fork was stolen; nothing checked")
	}
}

const crashEnv = "BLITZ_PANIC2_CRASH"

// An unrecovered re-raise crashes the program with a message naming the user's
// panicking line (not only the join that re-raised it). The test re-runs its own binary
// with crashEnv set; that child panics in a forked job, nobody recovers, and its stderr
// must show the panic's site in the "panic:" line.
func TestPanicErrorCrashNamesUserLine(t *testing.T) {
	if os.Getenv(crashEnv) == "1" {
		crashInForkedJob()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicErrorCrashNamesUserLine$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the crashing child did not exit within 60s; stderr:\n%s", stderr.String())
	}
	if err == nil {
		t.Fatalf("the child exited normally; want a crash. stdout:\n%s", stdout.String())
	}
	m := regexp.MustCompile(`SITE (\d+)`).FindSubmatch(stdout.Bytes())
	if m == nil {
		t.Fatalf("the child did not report its panic site; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	want := "panic: blitz: panic in forked job: crash-boom [at panic2_test.go:" + string(m[1]) + "]"
	if !strings.Contains(stderr.String(), want) {
		t.Fatalf("crash output does not contain %q:\n%s", want, stderr.String())
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	t.Logf("crash message: %s", first)
}

// crashInForkedJob panics in a job that a worker stole (if one steals it in time) and
// lets the re-raise crash the process.
func crashInForkedJob() {
	p, _ := NewPool(Config{Workers: 2})
	var started atomic.Bool
	p.Call(func(t *Task) {
		Join(t, func(*Task) { stealOrTimeout(&started) }, func(*Task) {
			started.Store(true)
			line := lineBelow() + 1
			fmt.Printf("SITE %d\n", line)
			panic("crash-boom")
		})
	})
}
