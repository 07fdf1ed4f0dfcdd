package blitzio

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// PanicError is the error of a task whose Poll panicked (or whose SpawnBlocking function
// did, or of BlockOn when its future's Poll did): it carries the panic value and the
// stack of the goroutine at the panic. The worker that polled the task survives.
//
// A panic in the Drop of a task's future (when the task is cancelled, or dropped after a
// panic in Poll) is reported too, never swallowed, as Tokio reports it on the JoinHandle:
// the handle's error is then errors.Join of ErrCancelled (or the Poll's *PanicError) and
// a *PanicError with InDrop set. errors.Is(err, ErrCancelled) and errors.As still work.
//
// Its message is one line (unless the panic value's own text has several): the value and
// the file:line where the user's code panicked,
//
//	blitzio: task panicked: runtime error: invalid memory address or nil pointer dereference [at server.go:17]
//
// so logging a task's error costs one line per failure. The full stack is in Stack, and
// formatting with %+v prints the message, a newline and the stack. blitz.PanicError has
// the same shape.
type PanicError struct {
	// Value is the value the task's code passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked, taken when the panic was
	// recovered (it still shows the panicking frames), as debug.Stack formats it.
	Stack []byte
	// InDrop is true when the panic came from the future's Drop, not from its Poll.
	InDrop bool

	// pcs are the program counters of the panicking goroutine, taken with Stack. The
	// panic site named by Error is found in them when the message is formatted, not at
	// recover time, so a panic that nobody prints costs no symbol lookup.
	pcs []uintptr
}

// Error returns one line: "blitzio: task panicked: " (or "blitzio: task's Drop panicked: "
// if InDrop), the value, and, when it is known, " [at file.go:line]" naming the frame
// that panicked. That frame is the first one below the panic that is neither in the Go
// runtime or standard library nor in the code of blitzio, blitz or lockfree (their tests
// excepted): for panic("x") it is the line of that call, for a runtime error such as a
// nil dereference it is the line of the faulty expression, for a panic that blitzio
// raises (BlockOn called inside a task, say) it is the user's call into blitzio. The
// line is known for the PanicErrors that blitzio creates while user code is on the
// panicking stack, not for one built as a literal. The stack is not part of the message: read it from Stack or format with %+v.
func (e *PanicError) Error() string {
	where := "task panicked"
	if e.InDrop {
		where = "task's Drop panicked"
	}
	msg := fmt.Sprintf("blitzio: %s: %v", where, e.Value)
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
		fmt.Fprintf(s, "&blitzio.PanicError{Value:%#v, Stack:[]byte{ /* %d bytes */ }, InDrop:%t}",
			e.Value, len(e.Stack), e.InDrop)
	case strings.ContainsRune("vsqxX", verb):
		// As fmt prints any error for these verbs: the message, with s's flags.
		fmt.Fprintf(s, fmt.FormatString(s, verb), e.Error())
	default:
		fmt.Fprintf(s, "%%!%c(*blitzio.PanicError=%s)", verb, e.Error())
	}
}

// Unwrap returns the panic value when it is an error, so errors.Is and errors.As see
// through a panic(err).
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// newPanicError turns a recovered value into a *PanicError, InDrop if it came from a
// Drop. It must be called from the deferred function that recovered, so the stack still
// shows the panicking frames. A *PanicError (a task's error that user code re-raised, or
// TestClock.Advance's) is not wrapped again: it keeps its value, stack and site.
func newPanicError(r any, inDrop bool) *PanicError {
	if pe, ok := r.(*PanicError); ok {
		if pe.InDrop == inDrop {
			return pe
		}
		c := *pe
		c.InDrop = inDrop
		return &c
	}
	return &PanicError{Value: r, Stack: stack(), InDrop: inDrop, pcs: callers()}
}

func stack() []byte { return debug.Stack() }

// maxPanicPCs bounds the program counters a PanicError keeps. The panic site is near the
// top of the stack (under the recovering function, runtime.gopanic and a few runtime
// frames), unless it is deep in blitzio's own frames; 64 covers both.
const maxPanicPCs = 64

// callers returns the program counters of its caller's caller and up: the deferred
// function that recovered, runtime.gopanic, the panicking frame...
func callers() []uintptr {
	var buf [maxPanicPCs]uintptr
	n := runtime.Callers(3, buf[:]) // skip runtime.Callers, callers and newPanicError
	return append([]uintptr(nil), buf[:n]...)
}

// ownPackages prefix the function names of blitzio, blitz and shared/lockfree. Their
// frames, outside test files, are never the panic site to report: a panic that blitzio
// raises itself is reported at the user's call into blitzio, and a blitz re-raise inside
// a task at the user's call of the blitz function.
var ownPackages = [...]string{
	"github.com/blitzgo/blitz/blitzio.",
	"github.com/blitzgo/blitz/blitz.",
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
// skips the frames of the Go runtime and standard library and of blitzio's non-test code.
// If it skips every frame (a panic that blitzio raised on one of its own goroutines, with
// no user frame below it), there is no site: naming blitzio's own line would send the
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
// standard library, or of blitzio's own code outside its tests.
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
