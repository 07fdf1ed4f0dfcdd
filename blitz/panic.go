package blitz

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// PanicError carries a panic out of forked work to the goroutine that joins it. Join,
// Join2, JoinN, TryJoin, Scope, Call and Broadcast re-raise panics of their children
// with panic(*PanicError) after the sibling work has finished, so a recover in the
// caller sees the original value and the stack of the goroutine where it happened.
//
// A *PanicError that crosses several nested joins is re-raised as is, not wrapped again.
type PanicError struct {
	// Value is the value the job passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked, taken when the panic was
	// recovered (it still shows the frames of the panicking job).
	Stack []byte
}

// Error returns "blitz: panic in forked job: " followed by the value. The stack is not
// part of the message; read it from Stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("blitz: panic in forked job: %v", e.Value)
}

// Unwrap returns Value if it is an error (so errors.Is and errors.As see through a
// PanicError to, say, a runtime.Error or ErrClosed), and nil otherwise.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// wrapPanic turns a recovered value into a *PanicError. It must be called from the
// deferred function that recovered, so debug.Stack still sees the panicking frames.
func wrapPanic(r any) *PanicError {
	if pe, ok := r.(*PanicError); ok {
		return pe
	}
	return &PanicError{Value: r, Stack: debug.Stack()}
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
	return t.protectCall(f)
}
