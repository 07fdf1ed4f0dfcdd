package blitzio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// MaxWorkers is the largest worker count a Runtime accepts: the parked-worker bitmap is
// one uint64.
const MaxWorkers = 64

// Defaults for Config fields left zero.
const (
	DefaultMaxBlockingThreads = 512
	DefaultBlockingKeepAlive  = 10 * time.Second
)

// Backend selects the platform I/O driver the runtime uses for its sockets. Runtime.Backend
// reports the one in use and, for BackendAuto, why it fell back from the best one.
type Backend uint8

// The I/O backends. BackendAuto picks the best one the platform has: io_uring, then epoll
// on Linux; kqueue on macOS and BSDs; a portable poller elsewhere.
const (
	BackendAuto Backend = iota
	BackendIOUring
	BackendEpoll
	BackendKqueue
	BackendPortable
)

var backendNames = [...]string{"auto", "io_uring", "epoll", "kqueue", "portable"}

// String returns the backend's name ("auto", "io_uring", ...).
func (b Backend) String() string {
	if int(b) < len(backendNames) {
		return backendNames[b]
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// Config configures a Runtime. The zero Config is valid and means: GOMAXPROCS workers,
// up to 512 blocking goroutines kept 10 s when idle, automatic backend, the real clock.
type Config struct {
	// Workers is the number of scheduler goroutines: 0 means runtime.GOMAXPROCS(0) at New
	// (capped at MaxWorkers); otherwise 1..MaxWorkers.
	Workers int
	// MaxBlockingThreads caps the goroutines of the blocking pool; 0 means 512.
	MaxBlockingThreads int
	// BlockingKeepAlive is how long an idle blocking goroutine waits for more work before
	// it exits; 0 means 10 s.
	BlockingKeepAlive time.Duration
	// Backend is the I/O driver choice; see Backend. A driver the platform does not have
	// (BackendKqueue on Linux, BackendIOUring or BackendEpoll elsewhere) makes New fail
	// with ErrBackendUnavailable.
	Backend Backend
	// Clock is the time source for timers; nil means the system's monotonic clock. Pass a
	// *TestClock to move time by hand in tests.
	Clock Clock
	// KeepTimerSlack leaves the timer slack of the threads that run workers as it was. By
	// default, on Linux, a worker about to park sets its thread's timer slack to 1 µs
	// (prctl PR_SET_TIMERSLACK; threads start with 50 µs). The Go scheduler, before it
	// takes a goroutine just woken on another busy thread, sleeps for 3 µs, and with the
	// default slack that sleep lasts 50-100 µs: a worker woken by a busy one would wait
	// that long to run. The setting stays with the thread, which may later run other
	// goroutines: their timers then fire closer to their deadlines, at the cost of
	// fewer coalesced wake-ups.
	KeepTimerSlack bool
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config; the message
// names the field.
var ErrInvalidConfig = errors.New("blitzio: invalid config")

// ErrRuntimeClosed is returned by BlockOn when the runtime shuts down before the future
// finishes.
var ErrRuntimeClosed = errors.New("blitzio: runtime closed")

// ErrBackendUnavailable is wrapped, beside ErrInvalidConfig, by the error New returns
// when Config.Backend names a driver the platform does not have (kqueue on Linux,
// io_uring or epoll elsewhere).
var ErrBackendUnavailable = errors.New("blitzio: I/O backend not available on this platform")

func configError(field string, value any, rule string) error {
	return fmt.Errorf("%w: Config.%s = %v: %s", ErrInvalidConfig, field, value, rule)
}

func (c Config) validate() error {
	if c.Workers < 0 || c.Workers > MaxWorkers {
		return configError("Workers", c.Workers, fmt.Sprintf("must be 0 (GOMAXPROCS) or 1..%d", MaxWorkers))
	}
	if c.MaxBlockingThreads < 0 {
		return configError("MaxBlockingThreads", c.MaxBlockingThreads, "must be >= 0 (0 means 512)")
	}
	if c.BlockingKeepAlive < 0 {
		return configError("BlockingKeepAlive", c.BlockingKeepAlive, "must be >= 0 (0 means 10s)")
	}
	if int(c.Backend) >= len(backendNames) {
		return configError("Backend", c.Backend, "unknown backend")
	}
	if !c.Backend.available() {
		return fmt.Errorf("%w: %w: Config.Backend = %v on %s (use BackendAuto, or one of: %s)",
			ErrInvalidConfig, ErrBackendUnavailable, c.Backend, runtime.GOOS, availableBackends())
	}
	return nil
}

// available reports whether the platform has the driver b names.
func (b Backend) available() bool {
	switch b {
	case BackendIOUring, BackendEpoll:
		return runtime.GOOS == "linux" || runtime.GOOS == "android"
	case BackendKqueue:
		switch runtime.GOOS {
		case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
			return true
		}
		return false
	}
	return true // auto, portable
}

func availableBackends() string {
	var names []string
	for b := range Backend(len(backendNames)) {
		if b.available() {
			names = append(names, b.String())
		}
	}
	return strings.Join(names, ", ")
}

// Runtime runs futures as tasks on a fixed set of worker goroutines with work stealing,
// a timer wheel and a pool for blocking calls. Create one with New and stop it with Close
// or Shutdown. Several runtimes may live in one process; they share nothing.
type Runtime struct {
	cfg     Config
	workers []*worker
	inject  injectQueue
	idle    idle
	owned   ownedTasks
	timers  timerState
	// timerDriver is the id of the parked worker driving timers, or -1.
	timerDriver atomic.Int32
	blocking    blockingPool
	// io is the I/O driver (see ioDriver); never nil after New.
	io *ioDriver

	start time.Time // for the real clock: monotonic origin
	// startOffset is start - procStart, so the fast clock (sinceProcStart) gives elapsed
	// time by one subtraction.
	startOffset time.Duration
	testClock   *TestClock
	testStart   time.Time

	closed       atomic.Bool
	done         chan struct{} // closed when shutdown begins
	finished     chan struct{} // closed when all tasks are dropped and workers joined
	shutdownOnce sync.Once
	workersDone  sync.WaitGroup
	// shutdownLive and shutdownNext are the tasks Shutdown drops and how far it got;
	// only the goroutine running dropRemaining touches them.
	shutdownLive []*header
	shutdownNext int
	// shutdownG is the goroutine id of the goroutine running the shutdown (0 before), so
	// that a Drop it runs that blocks on this runtime can be told (see Close).
	shutdownG atomic.Uint64
	// timerSlackSets counts the workers' timer slack system calls (lowerTimerSlack).
	timerSlackSets atomic.Int64
}

// New starts a runtime. It returns an error wrapping ErrInvalidConfig, naming the field,
// if cfg is invalid.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = min(runtime.GOMAXPROCS(0), MaxWorkers)
	}
	if cfg.MaxBlockingThreads == 0 {
		cfg.MaxBlockingThreads = DefaultMaxBlockingThreads
	}
	if cfg.BlockingKeepAlive == 0 {
		cfg.BlockingKeepAlive = DefaultBlockingKeepAlive
	}
	drv, err := openDriver(cfg.Backend)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		io:       drv,
		cfg:      cfg,
		start:    time.Now(),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	rt.startOffset = rt.start.Sub(procStart)
	rt.timerDriver.Store(-1)
	drv.activate = func() {
		// No worker parks in the poller while nothing is registered: wake one to take
		// that duty. A worker that set its parked bit after this load re-checks live
		// before it sleeps (worker.park).
		if rt.io.polling.Load() < 0 {
			rt.notifyParked()
		}
	}
	rt.timers.init()
	rt.idle.n = int32(cfg.Workers)
	rt.blocking.init(rt, cfg.MaxBlockingThreads, cfg.BlockingKeepAlive)
	if tc, ok := cfg.Clock.(*TestClock); ok {
		rt.testClock = tc
		rt.testStart = tc.Now()
		tc.register(rt)
	}
	rt.workers = make([]*worker, cfg.Workers)
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt, i)
	}
	rt.workersDone.Add(len(rt.workers))
	for _, w := range rt.workers {
		go w.run()
	}
	return rt, nil
}

// Workers returns the number of worker goroutines.
func (rt *Runtime) Workers() int { return len(rt.workers) }

// Now returns the runtime's clock reading: the system time, or the TestClock's.
func (rt *Runtime) Now() time.Time {
	if rt.testClock != nil {
		return rt.testClock.Now()
	}
	return time.Now()
}

// elapsed is the time since the runtime started, on its clock.
func (rt *Runtime) elapsed() time.Duration {
	if rt.testClock != nil {
		return rt.testClock.Now().Sub(rt.testStart)
	}
	return time.Since(rt.start)
}

// toElapsed converts an absolute time on the runtime's clock to elapsed time.
func (rt *Runtime) toElapsed(t time.Time) time.Duration {
	if rt.testClock != nil {
		return t.Sub(rt.testStart)
	}
	return t.Sub(rt.start)
}

// Spawner is where a task is spawned: a *Runtime (from any goroutine: the task goes to
// the injection queue) or the *Context of a running task (the task goes to the current
// worker's queue, which is cheaper and keeps related tasks together).
type Spawner interface {
	spawnTarget() (*Runtime, *Context)
}

func (rt *Runtime) spawnTarget() (*Runtime, *Context) {
	if rt == nil {
		panic("blitzio: spawn on a nil *Runtime")
	}
	return rt, nil
}

func (cx *Context) spawnTarget() (*Runtime, *Context) {
	if cx == nil {
		panic("blitzio: spawn on a nil *Context")
	}
	if cx.rt == nil {
		panic("blitzio: Spawn with a Context that has no Runtime")
	}
	return cx.rt, cx
}

// spawnTargetOf is s.spawnTarget with nil checks whose panic names the caller (op).
func spawnTargetOf(op string, s Spawner) (*Runtime, *Context) {
	switch v := s.(type) {
	case nil:
		panic("blitzio: " + op + " called with a nil Spawner (want a *Runtime or a task's *Context)")
	case *Runtime:
		if v == nil {
			panic("blitzio: " + op + " called with a nil *Runtime")
		}
	case *Context:
		if v == nil {
			panic("blitzio: " + op + " called with a nil *Context")
		}
	}
	return s.spawnTarget()
}

// isNilFuture reports whether f is nil: a nil interface, pointer or function, or an
// interface holding a nil pointer or function. Such a future would panic with a nil
// dereference on its first poll, on a worker, far from the mistake.
func isNilFuture[F any](f F) bool {
	switch reflect.TypeFor[F]().Kind() {
	case reflect.Pointer, reflect.Func, reflect.UnsafePointer, reflect.Map, reflect.Chan:
		// One pointer word, nil exactly when the value is nil.
		return *(*unsafe.Pointer)(unsafe.Pointer(&f)) == nil
	case reflect.Interface:
		// Two words: the type (nil for a nil interface) and the data, which is nil only
		// when the dynamic value is a nil pointer-shaped value (a non-pointer value is
		// stored behind a pointer, never nil).
		w := (*[2]unsafe.Pointer)(unsafe.Pointer(&f))
		return w[0] == nil || w[1] == nil
	}
	return false
}

// Spawn starts f as a new task and returns its handle. Spawning costs one allocation:
// the task holds header, future (F is stored by value) and result together. On a closed
// runtime the task is dropped at once and its handle reports ErrCancelled.
//
// Spawn panics, naming the argument, if s is nil (a nil interface, *Runtime or *Context)
// or f is nil (a nil interface, pointer or function, or an interface holding a nil
// pointer or function): such a task could only fail later, on a worker, with a nil
// dereference.
func Spawn[F Future[T], T any](s Spawner, f F) JoinHandle[T] {
	if isNilFuture(f) {
		panic("blitzio: Spawn called with a nil future")
	}
	rt, cx := spawnTargetOf("Spawn", s)
	t := &task[F, T]{fut: f}
	// A plain store: nobody else can see the task yet (publication through a queue
	// orders it before any atomic access), and an atomic store costs an XCHG.
	*(*uint64)(unsafe.Pointer(&t.state.v)) = initialState
	t.rt = rt
	t.vt = t
	h := &t.header
	if !rt.owned.insert(h) {
		h.state.toShutdown()
		h.cancelOwned(nil)
		return JoinHandle[T]{c: &t.core}
	}
	rt.schedule(h, cx, false)
	return JoinHandle[T]{c: &t.core}
}

// schedule queues a scheduled task: on the current worker when cx is one of ours,
// otherwise on the injection queue (waking a parked worker if none is searching).
func (rt *Runtime) schedule(h *header, cx *Context, yield bool) {
	if cx != nil && cx.w != nil && cx.rt == rt {
		cx.w.scheduleLocal(h, yield)
		return
	}
	rt.inject.push(h)
	rt.notifyParked()
}

// notifyParked wakes one parked worker if no worker is searching (see idle).
func (rt *Runtime) notifyParked() {
	if rt.idle.searching.Load() != 0 || rt.idle.parked.Load() == 0 {
		return
	}
	rt.unparkOne()
}

func (rt *Runtime) unparkOne() {
	// Prefer a worker parked on its channel to the one parked in the I/O driver: waking
	// the first is a channel send, the second a system call (eventfd write or io_uring
	// message) and a return from epoll_wait or io_uring_enter; and the poller keeps
	// watching the sockets meanwhile (Tokio unparks a sleeping worker the same way and
	// leaves the driver to whoever holds it).
	if p := rt.io.polling.Load(); p >= 0 {
		if others := rt.idle.parked.Load() &^ (1 << p); others != 0 {
			if id := bits.TrailingZeros64(others); rt.idle.clear(id) {
				rt.idle.searching.Add(1)
				rt.workers[id].unpark <- struct{}{}
				rt.wakeIOPoller(id) // it took the driver after our load: wake it there
				return
			}
		}
	}
	if id := rt.idle.popParked(); id >= 0 {
		// The woken worker starts out searching; counting it now keeps other producers
		// from waking more workers for the same burst.
		rt.idle.searching.Add(1)
		rt.workers[id].unpark <- struct{}{}
		rt.wakeIOPoller(id)
	}
}

// wakeIOPoller wakes worker id out of the I/O driver if it parked there. The worker
// publishes polling before it sets its parked bit, so whoever cleared that bit reads it.
func (rt *Runtime) wakeIOPoller(id int) {
	if rt.io.polling.Load() == int32(id) {
		rt.io.wake()
	}
}

// unparkWorker wakes worker id if it is parked.
func (rt *Runtime) unparkWorker(id int) bool {
	if rt.idle.clear(id) {
		rt.idle.searching.Add(1)
		rt.workers[id].unpark <- struct{}{}
		rt.wakeIOPoller(id)
		return true
	}
	return false
}

// hasWork reports whether any queue holds a task (racy; see idle for why it is enough).
func (rt *Runtime) hasWork() bool {
	if !rt.inject.isEmpty() {
		return true
	}
	for _, w := range rt.workers {
		if w.q.len() > 0 {
			return true
		}
	}
	return false
}

// Close is Shutdown without a deadline: it returns when the runtime has stopped and
// every goroutine it started has exited.
//
// Close and Shutdown block, so they must not be called from inside a task of any runtime
// (a Poll, a Drop or a waker run by a worker): the worker would wait for its own poll to
// end, which with one worker (or a Close of the runtime the task runs on) never happens.
// Called on a worker goroutine (or inside an Async function) they panic with a message
// that says so, before changing anything: the runtime keeps running. With a context
// that is already done, Shutdown only starts the shutdown instead (see Shutdown). To
// stop a runtime from one of its tasks, call Shutdown with a cancelled context, or Close
// from a goroutine of your own, or from a SpawnBlocking job.
//
// Called from a SpawnBlocking job of the same runtime, Close returns once everything else
// has stopped, without waiting for the job that called it (which cannot finish while
// Close blocks it); that job's goroutine exits when the job returns. Called from a
// future's Drop that the runtime's own shutdown runs (it would wait for itself), Close
// panics; the panic is reported on that task's JoinHandle.
func (rt *Runtime) Close() error { return rt.Shutdown(context.Background()) }

// Shutdown stops the runtime: every task is cancelled and dropped (its futures' Drop
// methods run, its JoinHandle reports ErrCancelled), the workers exit, queued blocking
// jobs are cancelled, and Shutdown waits for blocking jobs already running to return and
// for every goroutine the runtime started to exit.
//
// A File's read or write running on the blocking pool on a descriptor in Go's poller (a
// pipe: a child's piped Stdin, Stdout or Stderr, os.Pipe's ends; a terminal opened by
// name; a non-blocking socket) is not waited for but interrupted, as Tokio's shutdown
// ends the I/O of its reactor-driven pipes: a deadline in the past makes the call
// return. An interrupted read has taken no byte, so the File's next read (on another
// runtime, say) reads again; an interrupted write may have written part of its bytes,
// and the File's next operation reports an *fs.PathError wrapping ErrRuntimeClosed, as
// it reports a failed write. The call then clears the file's read (write) deadline,
// including one set through File.OSFile. A read or write of a descriptor the poller
// cannot interrupt (a regular file; a pipe, terminal or socket in blocking mode: see
// NewFile) is waited for like any blocking job.
//
// The shutdown runs on a goroutine of its own, so a poll that is stuck (a task that
// blocks, against the Future contract) cannot hold Shutdown past its deadline: if ctx
// ends first, Shutdown returns ctx.Err() at once while the shutdown goes on in the
// background; call it again (or Close) to wait more. In particular Shutdown with a
// context that is already cancelled starts the shutdown and returns without blocking,
// which is how a task can stop the runtime it runs on. Shutdown is idempotent and safe
// to call concurrently. See Close for calls from inside the runtime.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("blitzio: Runtime.Shutdown called with a nil context.Context")
	}
	// A call that would block on a worker panics before it changes anything: the
	// misuse must not also stop the runtime behind the caller's back.
	if ctx.Err() == nil {
		switch onRuntimeGoroutine() {
		case onWorker:
			panic("blitzio: cannot block from within a runtime: Close or Shutdown called by a task's " +
				"code on a worker goroutine would wait for its own poll to end; call Shutdown with a " +
				"cancelled context to only start the shutdown, or Close from a goroutine of your own")
		case onCoroutine:
			panic("blitzio: cannot block from within a runtime: Close or Shutdown called inside an " +
				"Async function would wait for the poll running it; call Shutdown with a cancelled " +
				"context to only start the shutdown")
		}
	}
	first := false
	rt.shutdownOnce.Do(func() { first = true })
	if first {
		rt.closed.Store(true)
		close(rt.done)
		rt.io.wake() // a worker parked in the I/O driver does not watch done
		go rt.shutdownTasks()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	switch onRuntimeGoroutine() {
	case onShutdown:
		if rt.isShutdownGoroutine() {
			panic("blitzio: cannot block from within a runtime: Close or Shutdown called by a " +
				"future's Drop that the runtime's own shutdown is running would wait for itself")
		}
	case onBlockingPool:
		if rt.blocking.callerThread() {
			// A blocking job of this runtime closing it: wait for everything but
			// ourselves (see Close).
			return rt.waitShutdown(ctx, true)
		}
	}
	return rt.waitShutdown(ctx, false)
}

// waitShutdown waits for the shutdown to finish; inPool says the caller is a job of this
// runtime's blocking pool, which is then not waited for.
func (rt *Runtime) waitShutdown(ctx context.Context, inPool bool) error {
	select {
	case <-rt.finished:
	case <-ctx.Done():
		return ctx.Err()
	}
	exited := rt.blocking.exited
	if inPool {
		exited = rt.blocking.othersExited()
		defer rt.blocking.closerDone()
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rt *Runtime) dropInjected() {
	for h := rt.inject.pop(); h != nil; h = rt.inject.pop() {
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
}

// shutdownTasks is the shutdown proper, on a goroutine of its own (rt.closed is set and
// rt.done closed).
func (rt *Runtime) shutdownTasks() {
	if rt.testClock != nil {
		rt.testClock.unregister(rt)
	}
	// Workers finish the poll they are in (polls do not block), drop what is in their
	// own queues and exit.
	rt.workersDone.Wait()
	rt.blocking.shutdown()
	// Now nothing polls any more. Close the owned list first, so that a Spawn racing
	// with us is refused instead of feeding the queues forever; then drop what is left:
	// the injection queue, and every task still alive (idle tasks waiting for a waker are
	// in no queue). Each task can be pushed again only by an idle -> scheduled transition,
	// and once we own it that cannot happen, so the drains below terminate.
	rt.shutdownLive = rt.owned.closeAndTake()
	rt.dropRemaining()
}

// dropRemaining drops the tasks left at shutdown. A Drop that calls runtime.Goexit ends
// this goroutine (the task's guard completes that task): then the rest is dropped on a
// new goroutine, continuing where this one stopped, so that Shutdown still finishes.
func (rt *Runtime) dropRemaining() {
	returned := false
	defer func() {
		if !returned {
			go rt.dropRemaining()
		}
	}()
	rt.shutdownG.Store(goroutineID()) // once per goroutine: a replacement has a new id
	rt.dropInjected()
	for rt.shutdownNext < len(rt.shutdownLive) {
		h := rt.shutdownLive[rt.shutdownNext]
		rt.shutdownLive[rt.shutdownNext] = nil
		rt.shutdownNext++
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
	// Cancellation woke join wakers of other (already dropped) tasks into the injection
	// queue; clear it so the runtime holds no task.
	rt.dropInjected()
	rt.timers.clear()
	// Close every socket still open (and the poller): Close returning means no fd left.
	rt.io.shutdown()
	returned = true
	close(rt.finished)
}

// parker is the Waker target of a plain goroutine blocked in BlockOn or Wait.
type parker struct {
	ch   chan struct{}
	gone atomic.Bool // its BlockOn returned: a JoinHandle may drop its entry
}

func newParker() *parker { return &parker{ch: make(chan struct{}, 1)} }

func (p *parker) wake(*Context) {
	select {
	case p.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func (p *parker) waiterGone() bool { return p.gone.Load() }

// pollCatch polls f, turning a panic into a *PanicError.
func pollCatch[T any](f Future[T], cx *Context) (v T, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r, false)
		}
	}()
	v, ok = f.Poll(cx)
	return v, ok, nil
}

// BlockOn drives f to completion on the calling goroutine (not a worker) and returns its
// value. Futures polled this way can spawn tasks and use timers of rt. A file-system
// future given to BlockOn itself (Open, ReadFile, File.ReadAt, File.Close, Stat, ...; not
// one inside a combinator) makes its system calls on the calling goroutine, as package
// os would, since that goroutine waits for it either way: no trip to the blocking pool,
// and a shutdown of rt does not cut such a call short. It returns
// ErrRuntimeClosed if rt shuts down before f finishes (f is dropped), and a *PanicError
// if f's Poll panics (f is dropped then too). A panic of that Drop is joined to the
// error, as a *PanicError with InDrop set. If f calls runtime.Goexit, the calling
// goroutine exits as Goexit says; rt is not affected.
//
// BlockOn blocks, so it must not be called from inside a task (Tokio panics with "cannot
// start a runtime from within a runtime"): with one worker, or enough such calls, the
// runtime deadlocks. BlockOn and JoinHandle.Wait detect a call on a worker goroutine of
// any blitzio runtime (from a task's Poll, a future's Drop, or a waker the worker runs,
// however deeply nested), and a call inside an Async function (whose goroutine the
// poller is suspended on), and panic with "blitzio: cannot block from within a runtime";
// so does Wait called by a Drop that a runtime's shutdown runs, on a task of that
// runtime that is not finished (the shutdown would have to drop it first).
// Go has no goroutine-local storage, so the check looks for the worker's frame at the
// bottom of the calling goroutine's stack; it costs about a microsecond and runs only
// when BlockOn starts and when Wait is about to block. What it cannot see: blocking on a
// goroutine that a task is waiting for by other means (a task that blocks on a channel
// fed by a goroutine in BlockOn), and blocking calls other than these two. Calls from a
// SpawnBlocking job or any goroutine of your own are fine.
//
// BlockOn panics if rt or f is nil.
func BlockOn[T any](rt *Runtime, f Future[T]) (T, error) {
	var zero T
	if rt == nil {
		panic("blitzio: BlockOn called with a nil *Runtime")
	}
	if isNilFuture(f) {
		panic("blitzio: BlockOn called with a nil future")
	}
	if rt.closed.Load() {
		return zero, ErrRuntimeClosed
	}
	switch onRuntimeGoroutine() {
	case onWorker:
		panic("blitzio: cannot block from within a runtime: BlockOn called by a task's code on a " +
			"worker goroutine would block the worker (and deadlock a runtime whose workers all " +
			"wait); await the future inside the task instead")
	case onCoroutine:
		panic("blitzio: cannot block from within a runtime: BlockOn called inside an Async " +
			"function would block the goroutine polling it; use Await instead")
	}
	if d, ok := f.(callerBlocks); ok {
		d.onCallerGoroutine() // a file-system call: make it here (see callerBlocks)
	}
	p := newParker()
	defer p.gone.Store(true)
	cx := &Context{waker: Waker{t: p}, rt: rt, blockOn: p}
	for {
		cx.budget = budgetPerPoll
		v, ok, err := pollCatch(f, cx)
		if err != nil {
			return zero, errors.Join(err, dropCatch(f))
		}
		if ok {
			return v, nil
		}
		if cx.yield {
			// The future yielded (a spent budget, Yield): poll again now, unless the
			// runtime is shutting down.
			cx.yield = false
			if !rt.closed.Load() {
				continue
			}
		}
		select {
		case <-p.ch:
		case <-rt.done:
			if derr := dropCatch(f); derr != nil {
				return zero, errors.Join(ErrRuntimeClosed, derr)
			}
			return zero, ErrRuntimeClosed
		}
	}
}

// dropCatch drops f and returns a panic of its Drop as a *PanicError with InDrop set
// (nil if Drop returned), so that BlockOn reports it with the outcome that made it drop
// f, as a task reports a panicking Drop after its own failure, instead of letting it
// escape in place of that outcome.
func dropCatch(f any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r, true)
		}
	}()
	Drop(f)
	return nil
}

// goroutineKind says which of the runtime's goroutines the caller runs on.
type goroutineKind uint8

const (
	onOther        goroutineKind = iota
	onWorker                     // a scheduler worker (of any Runtime)
	onBlockingPool               // a blocking-pool goroutine (of any Runtime)
	onShutdown                   // the goroutine of a Runtime's shutdown (it runs Drops)
	// onCoroutine is the goroutine of an Async function: its poller (a worker, usually)
	// is suspended in a coroutine switch until the function awaits or returns, so the
	// function blocking blocks the poller.
	onCoroutine
)

// Entry names of the runtime's goroutines, computed once from the functions themselves
// so that a rename cannot silently break the check.
var (
	workerRunName    = funcName((*worker).run)
	blockingRunName  = funcName((*blockingPool).work)
	shutdownRunName  = funcName((*Runtime).shutdownTasks)
	shutdownDropName = funcName((*Runtime).dropRemaining)
	coroutineName    = funcName(runCoroutine)
)

func funcName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}

// onRuntimeGoroutine reports whether the calling goroutine is a worker or a blocking-pool
// goroutine of some Runtime. Go has no goroutine-local storage, but a goroutine's first
// frames are its entry function (under the go statement's wrapper and runtime.goexit),
// so we look at the bottom of the stack. It costs a stack walk (about a microsecond);
// callers use it only where they are about to block.
func onRuntimeGoroutine() goroutineKind {
	var buf [64]uintptr
	pcs := buf[:]
	n := runtime.Callers(2, pcs)
	for n == len(pcs) && len(pcs) < 1<<20 {
		pcs = make([]uintptr, 4*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	// The bottom frames: runtime.goexit, the go statement's wrapper and the entry
	// function; for an Async function's coroutine, runtime.goexit, runtime.corostart,
	// iter.Pull's closure, coroutine.loop and runCoroutine.
	for _, pc := range pcs[max(0, n-6):n] {
		if k := frameKind(pc); k != onOther {
			return k
		}
	}
	return onOther
}

// frameKinds caches frameKind's answers by return address. Naming a frame costs more
// than the stack walk itself (FuncForPC, which builds a Func for an inlined frame, and
// its Name), while the bottom frames of the goroutines that block are a few distinct
// addresses: the go statements and entry functions of the program. Each entry is
// pc<<3 | kind, 0 when free; an address whose probe window is full is named every time.
var frameKinds [256]atomic.Uint64

// frameKindProbes bounds the slots looked at for one address.
const frameKindProbes = 8

// frameKind says which of the runtime's goroutines a frame with return address pc
// belongs to (onOther: none).
func frameKind(pc uintptr) goroutineKind {
	h := uint64(pc) * 0x9e3779b97f4a7c15 >> 56 // Fibonacci hashing: the top 8 bits
	for i := range uint64(frameKindProbes) {
		slot := &frameKinds[(h+i)%uint64(len(frameKinds))]
		v := slot.Load()
		if v>>3 == uint64(pc) {
			return goroutineKind(v & 7)
		}
		if v == 0 {
			k := nameFrameKind(pc)
			slot.CompareAndSwap(0, uint64(pc)<<3|uint64(k))
			return k
		}
	}
	return nameFrameKind(pc)
}

// nameFrameKind is frameKind without the cache: by the name of the function at pc.
func nameFrameKind(pc uintptr) goroutineKind {
	// pc-1: a return address may be the first byte of the next function. FuncForPC
	// names the innermost function at pc, so this works whether or not the entry
	// function was inlined into the go statement's wrapper (and, unlike CallersFrames,
	// it does not allocate).
	f := runtime.FuncForPC(pc - 1)
	if f == nil {
		return onOther
	}
	switch f.Name() {
	case workerRunName:
		return onWorker
	case blockingRunName:
		return onBlockingPool
	case shutdownRunName, shutdownDropName:
		return onShutdown
	case coroutineName:
		return onCoroutine
	}
	return onOther
}

// isShutdownGoroutine reports whether the caller runs rt's shutdown (checked only after
// onRuntimeGoroutine said onShutdown: a goroutine id costs a stack trace).
func (rt *Runtime) isShutdownGoroutine() bool {
	return rt.shutdownG.Load() == goroutineID()
}

// panicIfOnWorker panics, naming op, if the caller is a worker goroutine, or the
// shutdown of h's runtime, which would wait for itself: it drops the task h, which op
// waits for.
func panicIfOnWorker(op string, h *header) {
	switch onRuntimeGoroutine() {
	case onWorker:
		panic("blitzio: cannot block from within a runtime: " + op + " called by a task's code on a " +
			"worker goroutine would block the worker (and deadlock a runtime whose workers all " +
			"wait); await the handle inside the task instead")
	case onCoroutine:
		panic("blitzio: cannot block from within a runtime: " + op + " called inside an Async " +
			"function would block the goroutine polling it; use Await(co, handle) instead")
	case onShutdown:
		// A blocking job keeps running during the shutdown, so waiting for one is fine.
		if _, job := h.vt.(blockingJob); !job && h.rt.isShutdownGoroutine() {
			panic("blitzio: cannot block from within a runtime: " + op + " called by a future's " +
				"Drop that the runtime's own shutdown is running would wait for itself")
		}
	}
}

// timeToTick converts elapsed runtime time to a wheel tick (1 ms), rounding up so a
// timer never fires early.
func timeToTick(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	if d >= time.Duration(math.MaxInt64)-time.Millisecond {
		return uint64(math.MaxInt64 / int64(time.Millisecond))
	}
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}

// nowTick is the current tick: elapsed time rounded down.
func nowTick(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d / time.Millisecond)
}
