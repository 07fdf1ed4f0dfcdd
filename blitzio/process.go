package blitzio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
)

// Stdio says what a child process's standard stream is connected to.
type Stdio uint8

// The choices for a child's stdin, stdout and stderr.
const (
	// Inherit connects the stream to the parent's: the default for all three (see Cmd).
	Inherit Stdio = iota
	// Null connects it to the null device.
	Null
	// Piped connects it to a pipe the parent reads or writes as a *File (Child.Stdin,
	// Child.Stdout, Child.Stderr).
	Piped
)

// Cmd describes a child process to start, like exec.Cmd, built with chained calls:
//
//	blitzio.Command("grep", "-c", "go").Stdin(blitzio.Piped).Stdout(blitzio.Piped).Spawn()
//
// By default the child inherits the environment, the working directory and the three
// standard streams of the parent (Tokio's default as well; for exec.Cmd, a nil stream
// is the null device instead). A Cmd may be spawned several times.
//
// Output and Status return lazy futures, as Tokio's Command::output and Command::status
// are async fns: the command starts at the future's first poll. Each future runs the
// command as it was when Output or Status was called; changing the Cmd afterwards
// affects later calls only.
type Cmd struct {
	name string
	args []string
	// env holds the variables given with Env ("key=value", in order; exec keeps the
	// last value of a key), added at the spawn to the environment exec makes for a nil
	// Env at that moment (the parent's, with PWD set for Dir), or to an empty one after
	// EnvClear.
	env                   []string
	envClear              bool
	dir                   string
	stdin, stdout, stderr Stdio
}

// Command returns a Cmd that runs name with args. name is looked up in PATH at Spawn
// when it has no path separator, as exec.Command does: in the parent's PATH, not in a
// PATH given with Env (Rust's std and Tokio search the child's), and not in Dir. A
// relative path with a separator ("./prog", "bin/prog") is taken relative to Dir when
// Dir is set, and a name found through a relative PATH entry fails with exec.ErrDot.
// The start errors are exec's (see Spawn).
func Command(name string, args ...string) *Cmd {
	return &Cmd{name: name, args: append([]string(nil), args...)}
}

// Arg appends arguments.
func (c *Cmd) Arg(args ...string) *Cmd { c.args = append(c.args, args...); return c }

// Env sets one environment variable for the child, on top of the environment it
// inherits: the parent's as it is at the spawn (os.Setenv calls made after Env, or
// between two spawns of the Cmd, reach the child), unless EnvClear was called. Setting
// a key again replaces its value. The inherited environment is the one exec.Cmd gives
// a command whose Env is nil: on Unix, with Dir set, that includes PWD set to the
// directory (unless Env sets PWD itself).
func (c *Cmd) Env(key, value string) *Cmd {
	c.env = append(c.env, key+"="+value)
	return c
}

// EnvClear starts the child with an empty environment: it inherits nothing, and has only
// the variables given with Env (before or after this call).
func (c *Cmd) EnvClear() *Cmd { c.envClear = true; return c }

// Dir sets the child's working directory.
func (c *Cmd) Dir(dir string) *Cmd { c.dir = dir; return c }

// Stdin sets what the child's standard input is.
func (c *Cmd) Stdin(s Stdio) *Cmd { c.stdin = s; return c }

// Stdout sets what the child's standard output is.
func (c *Cmd) Stdout(s Stdio) *Cmd { c.stdout = s; return c }

// Stderr sets what the child's standard error is.
func (c *Cmd) Stderr(s Stdio) *Cmd { c.stderr = s; return c }

// Child is a running (or finished) child process. Its piped streams are Files (async
// streams); close Stdin to send the child EOF. A File's writes are write-behind, so
// Stdin's Close (like its Flush) waits until the bytes already written are in the
// pipe: for a child that has stopped reading, it stays pending until the child reads or
// exits (Kill it first, or bound the Close with a Timeout; exec's pipe Close would drop
// the bytes instead). Once the child is gone, writes fail with EPIPE, as exec's do (the
// parent is not killed by SIGPIPE). A runtime's Close does not wait for a read or write
// of these pipes in flight: it interrupts it (see Runtime.Shutdown), and the child runs
// on. A Child that is dropped without Wait is
// still reaped when it exits: no zombie is left. Only Spawn makes a Child: the methods
// of the zero Child (or a nil *Child) panic with a message saying so.
type Child struct {
	// Stdin, Stdout and Stderr are the parent's ends of the pipes asked for with Piped,
	// nil otherwise.
	Stdin, Stdout, Stderr *File

	cmd  *exec.Cmd
	done *CompletionFuture[exitResult]
	mu   sync.Mutex
	res  *exitResult
}

type exitResult struct {
	state *os.ProcessState
	err   error
}

// Spawn starts the process. The error is exec's (exec.ErrNotFound wrapped in an
// *exec.Error for a missing program, an *fs.PathError for a bad directory). Near the
// RLIMIT_NOFILE limit it is EMFILE, or sometimes EBADF: that is how Go's fork/exec on
// Linux fails when the child cannot move a descriptor above the ones it inherits.
//
// The child is reaped by a goroutine that waits for it (Go's os.Process uses a pidfd
// on Linux for that wait); Wait's future is woken when it exits, so tasks wait without
// holding a worker or a blocking-pool goroutine.
//
// A Stdio value other than Inherit, Null and Piped is an error. Spawn panics if c is nil.
func (c *Cmd) Spawn() (*Child, error) {
	c.checkNil("Spawn")
	child, ends, err := c.start()
	if err != nil {
		return nil, err
	}
	if ends[0] != nil {
		child.Stdin = NewFile(ends[0])
	}
	if ends[1] != nil {
		child.Stdout = NewFile(ends[1])
	}
	if ends[2] != nil {
		child.Stderr = NewFile(ends[2])
	}
	return child, nil
}

// start starts the process and its reaper. It returns the parent's ends of the pipes
// asked for with Piped (stdin, stdout, stderr; nil for the others) as plain *os.Files:
// Spawn wraps them in Files, Status closes them.
func (c *Cmd) start() (*Child, [3]*os.File, error) {
	var ends [3]*os.File
	for i, s := range [3]Stdio{c.stdin, c.stdout, c.stderr} {
		if s > Piped {
			return nil, ends, fmt.Errorf("blitzio: Cmd: unknown Stdio value %d for %s (want Inherit, Null or Piped)",
				s, [3]string{"stdin", "stdout", "stderr"}[i])
		}
	}
	cmd := exec.Command(c.name, c.args...)
	cmd.Dir = c.dir
	if c.envClear || len(c.env) > 0 {
		// Never nil: a nil Env would make exec inherit everything despite EnvClear.
		env := make([]string, 0, len(c.env))
		if !c.envClear {
			// The inherited environment is the one exec makes for a nil Env, which is
			// more than os.Environ: with Dir set, PWD is set to it on Unix. A list of our
			// own would be taken as is (exec leaves PWD alone in a non-nil Env), so
			// adding any variable would hand the child the parent's stale PWD.
			env = cmd.Environ()
		}
		cmd.Env = append(env, c.env...)
	}
	var childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	// setup returns the child's end of stream i (0 stdin, 1 stdout, 2 stderr), or nil
	// for Null, and records the parent's end of a pipe in ends[i].
	setup := func(i int, s Stdio, std *os.File) (*os.File, error) {
		switch s {
		case Null:
			return nil, nil
		case Piped:
			r, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			if i == 0 {
				ends[i], childEnds = w, append(childEnds, r)
				return r, nil
			}
			ends[i], childEnds = r, append(childEnds, w)
			return w, nil
		}
		return std, nil
	}
	var files [3]*os.File
	var err error
	std := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i, s := range [3]Stdio{c.stdin, c.stdout, c.stderr} {
		if files[i], err = setup(i, s, std[i]); err != nil {
			break
		}
	}
	if err == nil {
		// Only a non-nil file goes into the exec.Cmd field: a nil *os.File stored in the
		// io.Reader or io.Writer field would make a non-nil interface, which exec passes
		// on as descriptor -1, so the child would start with that descriptor closed (and
		// its next open would take the number 0, 1 or 2). A nil field is what makes exec
		// open the null device for the stream, as Null promises.
		if files[0] != nil {
			cmd.Stdin = files[0]
		}
		if files[1] != nil {
			cmd.Stdout = files[1]
		}
		if files[2] != nil {
			cmd.Stderr = files[2]
		}
		err = cmd.Start()
	}
	// The child has its own copies of its ends (or failed to start): ours must close, or
	// the parent would never read EOF from the child's stdout.
	closeAll(childEnds)
	if err != nil {
		closeAll(ends[:])
		return nil, [3]*os.File{}, err
	}
	child := &Child{cmd: cmd}
	fire, done := NewCompletion[exitResult]()
	child.done = done
	go func() {
		// cmd.Wait copies nothing (every stream is an *os.File, or exec's own null
		// device, which it closes), so it returns as soon as the process has exited and
		// been reaped.
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil // a non-zero status is a result, not an error
		}
		r := exitResult{state: cmd.ProcessState, err: err}
		child.mu.Lock()
		child.res = &r
		child.mu.Unlock()
		fire.Complete(r)
	}()
	return child, ends, nil
}

// ID returns the process id.
func (ch *Child) ID() int {
	ch.check("ID")
	return ch.cmd.Process.Pid
}

// check panics, naming op, if ch is not a Child that Spawn returned.
func (ch *Child) check(op string) {
	if ch == nil || ch.cmd == nil || ch.done == nil {
		panic("blitzio: Child." + op + " called on a Child that Spawn did not return (a zero or nil Child)")
	}
}

// Wait returns a future of the child's exit status. Several futures may wait for the
// same child, each getting the same *os.ProcessState (exec.Cmd.Wait may be called only
// once), and dropping one (a Timeout that expires, the losing arm of a select, an
// aborted task) does not affect the others, nor the child, which runs on. Close the
// child's Stdin first if it reads it to the end.
//
// As with Tokio's Child::wait, and unlike exec.Cmd.Wait, which returns an
// *exec.ExitError for them, a non-zero exit and a death by a signal are not errors:
// the Result's Err is nil, and the *os.ProcessState says what happened (Success,
// ExitCode, which is -1 for a signal, and on Unix Sys().(syscall.WaitStatus)). Its
// String is the text exec's ExitError would have.
func (ch *Child) Wait() Future[Result[*os.ProcessState]] {
	ch.check("Wait")
	// Each Wait gets a waiter with its own registration on the exit completion, so its
	// Drop (through Map's) removes its own waker and never another Wait's.
	return Map(Future[exitResult](ch.done.waiter()), func(r exitResult) Result[*os.ProcessState] {
		return Result[*os.ProcessState]{Value: r.state, Err: r.err}
	})
}

// TryWait returns the exit status if the child has exited, or (nil, false, nil) if it
// still runs.
func (ch *Child) TryWait() (*os.ProcessState, bool, error) {
	ch.check("TryWait")
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.res == nil {
		return nil, false, nil
	}
	return ch.res.state, true, ch.res.err
}

// Kill sends the child SIGKILL (TerminateProcess on Windows). Killing a child that has
// already exited returns os.ErrProcessDone.
func (ch *Child) Kill() error {
	ch.check("Kill")
	return ch.cmd.Process.Kill()
}

// Signal sends the child a signal. A kind the platform lacks is an error.
func (ch *Child) Signal(kind SignalKind) error {
	ch.check("Signal")
	s := kind.Signal()
	if s == nil {
		return errors.New("blitzio: signal " + kind.String() + " is not available on this platform")
	}
	return ch.cmd.Process.Signal(s)
}

// Output is what Cmd.Output collects.
type Output struct {
	Status *os.ProcessState
	Stdout []byte
	Stderr []byte
}

// Output returns a future that runs the command with stdin from the null device and
// stdout and stderr piped, whatever Stdin, Stdout and Stderr say (exec.Cmd.Output
// keeps a Stdin that was set), collects both to the end, and waits for the exit. Like
// Tokio's Command::output, and unlike exec.Cmd.Output, which returns an *exec.ExitError,
// it is not an error for the command to exit with a non-zero status or be killed by a
// signal (see Child.Wait): check Status.Success.
//
// The future is lazy, like the one of Tokio's Command::output: the command starts at its
// first poll (a start error, such as exec.ErrNotFound, is then its result), and a future
// dropped before it was polled starts nothing. It runs c as it is now: changing c later
// does not change this run. Dropped after the start (a Timeout that expires, the losing
// arm of a select, an aborted task), it kills the child, which is then reaped in the
// background. Output panics if c is nil.
func (c *Cmd) Output() Future[Result[Output]] {
	c.checkNil("Output")
	cc := c.clone()
	cc.stdin, cc.stdout, cc.stderr = Null, Piped, Piped
	return &outputFuture{cmd: cc}
}

// Status returns a future that runs the command (streams as configured) and returns its
// exit status. A non-zero exit or a death by a signal is not an error (see Child.Wait).
//
// The future is lazy, like the one of Tokio's Command::status: the command starts at its
// first poll (a start error is then its result), and a future dropped before it was
// polled starts nothing. It runs c as it is now: changing c later does not change this
// run. Dropped after the start, it lets the child run on (Tokio's default,
// kill_on_drop(false)); the child is reaped when it exits, so it leaves no zombie. Spawn
// the command instead to keep a Child to Kill.
//
// Like Tokio's Command::status, the parent's ends of the streams configured Piped are
// closed right after the spawn: nobody could reach them, since Status returns only the
// exit status, and a child that waits on them would otherwise never finish. So a child
// reading a piped stdin reads end of file at once, and one writing to a piped stdout or
// stderr gets EPIPE (or is killed by SIGPIPE). Use Null for a stream the child should
// be able to write to freely, or Output to collect what it writes. Status panics if c is
// nil.
func (c *Cmd) Status() Future[Result[*os.ProcessState]] {
	c.checkNil("Status")
	return &statusFuture{cmd: c.clone()}
}

// checkNil panics, naming op, if c is nil.
func (c *Cmd) checkNil(op string) {
	if c == nil {
		panic("blitzio: Cmd." + op + " called on a nil *Cmd (make one with Command)")
	}
}

// clone returns a copy of c that shares no slice with it, so that a lazy future runs
// the command as it was when the future was made.
func (c *Cmd) clone() Cmd {
	cc := *c
	cc.args = slices.Clone(c.args)
	cc.env = slices.Clone(c.env)
	return cc
}

// statusFuture is the future of Status: it starts the command at its first poll, then
// waits for the exit.
type statusFuture struct {
	cmd  Cmd
	wait Future[Result[*os.ProcessState]] // nil until the start
	done bool
	res  Result[*os.ProcessState]
}

// Poll implements Future.
func (f *statusFuture) Poll(cx *Context) (Result[*os.ProcessState], bool) {
	if f.done {
		return f.res, true
	}
	if f.wait == nil {
		child, ends, err := f.cmd.start()
		if err != nil {
			f.done, f.res = true, Result[*os.ProcessState]{Err: err}
			return f.res, true
		}
		for _, e := range ends {
			if e != nil {
				e.Close()
			}
		}
		f.wait = child.Wait()
	}
	r, ok := f.wait.Poll(cx)
	if !ok {
		return r, false
	}
	f.done, f.res = true, r
	return r, true
}

// Drop implements Dropper: before the start there is nothing to release; after it, the
// wait's registration is removed and the child runs on (it is reaped when it exits).
func (f *statusFuture) Drop() {
	if !f.done {
		f.done = true
		if f.wait != nil {
			Drop(f.wait)
		}
	}
}

// collect reads a stream to its end. Each read that brings bytes spends one unit of the
// task's cooperative budget, as a leaf future's completion does: a child that keeps its
// pipe full must not hold the worker (or keep a Timeout around Output from firing) until
// it stops writing. The streams are the child's pipes, Files, whose PollRead spends that
// unit itself for bytes it has at once (and yields before reading once the budget is
// spent); the loop spends only for a read that did not, so that a task collecting output
// does not yield twice as often as one reading the pipe directly.
type collect struct {
	r    AsyncReader
	buf  []byte
	done bool
	err  error
}

func (c *collect) poll(cx *Context) bool {
	for !c.done {
		if cap(c.buf)-len(c.buf) < 512 {
			c.buf = append(c.buf, make([]byte, 4096)...)[:len(c.buf)]
		}
		budget := cx.budget
		r, ok := c.r.PollRead(cx, c.buf[len(c.buf):cap(c.buf)])
		if !ok {
			return false // waiting for bytes, or the budget is spent (re-scheduled)
		}
		switch {
		case r.Err == io.EOF:
			c.done = true
		case r.Err != nil:
			c.done, c.err = true, r.Err
		default:
			c.buf = c.buf[:len(c.buf)+r.Value]
			// A read that spent nothing (a reader other than a File) is charged here.
			if cx.budget == budget && !cx.ConsumeBudget() {
				return false // the task is re-scheduled
			}
		}
	}
	return true
}

// outputFuture is the future of Output: it starts the command at its first poll, then
// collects stdout and stderr and waits for the exit.
type outputFuture struct {
	cmd       Cmd
	child     *Child // nil until the start
	out, errs collect
	wait      Future[Result[*os.ProcessState]]
	done      bool
	res       Result[Output]
}

// Poll implements Future.
func (o *outputFuture) Poll(cx *Context) (Result[Output], bool) {
	if o.done {
		return o.res, true
	}
	if o.child == nil {
		child, err := o.cmd.Spawn()
		if err != nil {
			o.done, o.res = true, Result[Output]{Err: err}
			return o.res, true
		}
		o.child, o.wait = child, child.Wait()
		o.out, o.errs = collect{r: child.Stdout}, collect{r: child.Stderr}
	}
	a, b := o.out.poll(cx), o.errs.poll(cx)
	if !a || !b {
		return Result[Output]{}, false
	}
	w, ok := o.wait.Poll(cx)
	if !ok {
		return Result[Output]{}, false
	}
	o.done = true
	o.child.Stdout.b.f.Close()
	o.child.Stderr.b.f.Close()
	err := errors.Join(w.Err, o.out.err, o.errs.err)
	o.res = Result[Output]{Value: Output{Status: w.Value, Stdout: o.out.buf, Stderr: o.errs.buf}, Err: err}
	return o.res, true
}

// Drop implements Dropper: before the start there is nothing to release; after it, the
// child is killed (its output is no longer wanted) and reaped in the background.
func (o *outputFuture) Drop() {
	if !o.done {
		o.done = true
		if o.child == nil {
			return
		}
		Drop(o.wait)
		o.child.Kill()
		o.child.Stdout.b.f.Close()
		o.child.Stderr.b.f.Close()
	}
}
