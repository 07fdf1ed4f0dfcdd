package blitz

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// PanicError carries a panic out of forked work to the goroutine that joins it. Join,
// Join2, JoinN, TryJoin, Scope, Call and Broadcast re-raise panics of their children
// with panic(*PanicError) after the sibling work has finished, so a recover in the
// caller sees the original value and the stack of the goroutine where it happened.
//
// A *PanicError that crosses several nested joins is re-raised as is, not wrapped again.
//
// Its message is one line (unless the panic value's own text has several): the value and
// the file:line where the user's code panicked,
//
//	blitz: panic in forked job: runtime error: index out of range [5] with length 3 [at parse.go:42]
//
// so a re-raise that nobody recovers crashes the program with a message naming the
// panicking line, not only the join that re-raised it. The full stack is in Stack, and
// formatting with %+v prints the message, a newline and the stack. blitzio.PanicError
// has the same shape.
type PanicError struct {
	// Value is the value the job passed to panic (ErrGoexit if the job's goroutine
	// called runtime.Goexit).
	Value any
	// Stack is the stack of the goroutine that panicked, taken when the panic was
	// recovered (it still shows the frames of the panicking job), as debug.Stack
	// formats it.
	Stack []byte

	// pcs are the program counters of the panicking goroutine, taken with Stack. The
	// panic site named by Error is found in them when the message is formatted, not at
	// recover time, so a panic that nobody prints costs no symbol lookup.
	pcs []uintptr
}

// Error returns one line: "blitz: panic in forked job: ", the value, and, when it is
// known, " [at file.go:line]" naming the frame that panicked. That frame is the first
// one below the panic that is neither in the Go runtime or standard library nor in the
// code of blitz, blitzio or lockfree (their tests excepted): for panic("x") it is the
// line of that call, for a runtime error such as an index out of range it is the line of
// the faulty expression, for a panic that blitz raises (a misused Future, say) it is the
// user's call into blitz, and for ErrGoexit it is the line that called runtime.Goexit
// (t.Fatal in a test). The line is known for the PanicErrors that blitz creates while
// user code is on the panicking stack (not, say, for a stolen job found returning with
// its forks unjoined, which blitz checks after the job's code is gone), and not for one
// built as a literal. The stack is not part of the message: read it from Stack or format
// with %+v.
func (e *PanicError) Error() string {
	msg := fmt.Sprintf("blitz: panic in forked job: %v", e.Value)
	if at := panicSite(e.pcs); at != "" {
		msg += " [at " + at + "]"
	}
	return msg
}

// Format implements fmt.Formatter: %v and %s print Error() (one line), %q, %x and %X
// print it quoted or in hex as for any error, and %+v prints Error(), a newline and
// Stack.
func (e *PanicError) Format(s fmt.State, verb rune) {
	switch {
	case verb == 'v' && s.Flag('+'):
		io.WriteString(s, e.Error())
		if len(e.Stack) > 0 {
			io.WriteString(s, "\n")
			s.Write(e.Stack)
		}
	case verb == 'v' && s.Flag('#'):
		fmt.Fprintf(s, "&blitz.PanicError{Value:%#v, Stack:[]byte{ /* %d bytes */ }}", e.Value, len(e.Stack))
	case strings.ContainsRune("vsqxX", verb):
		// As fmt prints any error for these verbs: the message, with s's flags.
		fmt.Fprintf(s, fmt.FormatString(s, verb), e.Error())
	default:
		fmt.Fprintf(s, "%%!%c(*blitz.PanicError=%s)", verb, e.Error())
	}
}

// Unwrap returns Value if it is an error (so errors.Is and errors.As see through a
// PanicError to, say, a runtime.Error, ErrClosed or ErrGoexit), and nil otherwise.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// wrapPanic turns a recovered value into a *PanicError. It must be called from the
// deferred function that recovered (or, for ErrGoexit, that runs during the Goexit), so
// the stack still shows the panicking frames. A *PanicError is returned as is: a panic
// re-raised by a nested join keeps its value, stack and site.
func wrapPanic(r any) *PanicError {
	if pe, ok := r.(*PanicError); ok {
		return pe
	}
	return &PanicError{Value: r, Stack: debug.Stack(), pcs: callers()}
}

// maxPanicPCs bounds the program counters a PanicError keeps. The panic site is near the
// top of the stack (under the recovering function, runtime.gopanic and a few runtime
// frames), unless it is deep in blitz's own frames; 64 covers both.
const maxPanicPCs = 64

// callers returns the program counters of its caller's caller and up: the deferred
// function that recovered, runtime.gopanic (or runtime.Goexit), the panicking frame...
func callers() []uintptr {
	var buf [maxPanicPCs]uintptr
	n := runtime.Callers(3, buf[:]) // skip runtime.Callers, callers and wrapPanic
	return append([]uintptr(nil), buf[:n]...)
}

// ownPackages prefix the function names of blitz, blitzio and shared/lockfree. Their
// frames, outside test files, are never the panic site to report: a panic that blitz
// raises itself (a misused Future, say) is reported at the user's call into blitz, and
// a blitz re-raise inside a blitzio task at the user's call of the blitz function.
var ownPackages = [...]string{
	"github.com/blitzgo/blitz/blitz.",
	"github.com/blitzgo/blitz/blitzio.",
	"github.com/blitzgo/blitz/shared/lockfree.",
}

// goSrc is the directory of the Go standard library's sources ("/usr/local/go/src/"),
// taken from the file of runtime.Callers itself, or "" if the binary was built with
// -trimpath (the standard library's files are then "runtime/panic.go" and the like,
// which cannot be told apart from a module's by path: only runtime frames are skipped).
var goSrc = func() string {
	var pc [1]uintptr
	if runtime.Callers(0, pc[:]) == 0 {
		return ""
	}
	f, _ := runtime.CallersFrames(pc[:]).Next()
	i := strings.LastIndex(f.File, "/runtime/")
	if i <= 0 {
		return ""
	}
	return f.File[:i+1]
}()

// panicSite returns "file.go:line" of the frame that panicked in pcs (see Error), or ""
// if there is none. It starts below the innermost runtime.gopanic or runtime.Goexit (the
// frames above them are the deferred function that recovered, and the runtime's) and
// skips the frames of the Go runtime and standard library and of blitz's non-test code.
// If it skips every frame (a panic that blitz raised on one of its own goroutines, with
// no user frame below it), there is no site: naming blitz's own line would send the
// reader to the wrong code.
func panicSite(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	below := false
	for more := len(pcs) > 0; more; {
		var f runtime.Frame
		f, more = frames.Next()
		switch {
		case !below:
			below = f.Function == "runtime.gopanic" || f.Function == "runtime.Goexit"
		case !skipFrame(f):
			return fileLine(f)
		}
	}
	return ""
}

// fileLine formats f's position as base name and line, as log.Lshortfile does.
func fileLine(f runtime.Frame) string {
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	return file + ":" + strconv.Itoa(f.Line)
}

// skipFrame reports whether panicSite looks past f: a frame of the Go runtime, of the
// standard library, or of blitz's own code outside its tests.
func skipFrame(f runtime.Frame) bool {
	if strings.HasPrefix(f.Function, "runtime.") || strings.HasPrefix(f.Function, "internal/") ||
		goSrc != "" && strings.HasPrefix(f.File, goSrc) {
		return true
	}
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range ownPackages {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	return false
}

// errJoinOrder is the panic of a Future joined out of order, twice, or on a foreign Task.
var errJoinOrder = errors.New("blitz: Future.Join: the future is not the most recent unjoined fork of this Task " +
	"(joins must be LIFO, each future joined once, with the Task that forked it)")

// errNilFork is the panic of a fork with a nil function.
var errNilFork = errors.New("blitz: Job.Fork: nil function")

// errNilJoinTask is the panic of Future.Join with a nil Task.
var errNilJoinTask = errors.New("blitz: Future.Join: nil *Task")

// nilTask panics for a nil *Task given to fn.
func nilTask(fn string) { panic("blitz: " + fn + ": nil *Task") }

// nilFunc panics for a nil function given to fn as arg.
func nilFunc(fn, arg string) { panic("blitz: " + fn + ": nil function " + arg) }

// errUnjoined is the panic when a job returns while futures it forked are still unjoined.
var errUnjoined = errors.New("blitz: a job returned with forked futures it never joined (every Fork needs a Join before the forking function returns)")

// Catch runs f(t) and returns its panic as a *PanicError instead of letting it
// propagate, or nil if f returned normally.
//
// Use Catch, not a bare recover, to survive a panic inside a job: a panic that unwinds
// past a Fork skips its Join, and Catch cleans up those forks (a fork nobody took is
// dropped, one a thief took is waited for) so the Task can go on forking. A job that
// returns with unjoined forks, whether it forgot a Join or recovered such a panic
// itself, panics with an error saying so.
//
// Catch panics (without catching it) if t or f is nil.
func Catch(t *Task, f func(t *Task)) *PanicError {
	if t == nil {
		nilTask("Catch")
	}
	if f == nil {
		nilFunc("Catch", "f")
	}
	t.checkLive("Catch")
	return t.protectCall(f)
}
