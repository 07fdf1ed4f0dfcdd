package blitzio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// MaxWorkers is the largest worker count a Runtime accepts: the parked-worker bitmap is
// one uint64 (seed 003: MAX_WORKERS).
const MaxWorkers = 64

// Defaults for Config fields left zero (seed 003).
const (
	DefaultMaxBlockingThreads = 512
	DefaultBlockingKeepAlive  = 10 * time.Second
)

// Backend selects the platform I/O driver the runtime will use for networking and files
// (they arrive in later versions; the runtime records the choice now so configuration
// written today keeps working).
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
	// Backend is the I/O driver choice; see Backend.
	Backend Backend
	// Clock is the time source for timers; nil means the system's monotonic clock. Pass a
	// *TestClock to move time by hand in tests.
	Clock Clock
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config; the message
// names the field.
var ErrInvalidConfig = errors.New("blitzio: invalid config")

// ErrRuntimeClosed is returned by BlockOn when the runtime shuts down before the future
// finishes.
var ErrRuntimeClosed = errors.New("blitzio: runtime closed")

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
	return nil
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
	rt := &Runtime{
		cfg:      cfg,
		start:    time.Now(),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	rt.startOffset = rt.start.Sub(procStart)
	rt.timerDriver.Store(-1)
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

func (rt *Runtime) spawnTarget() (*Runtime, *Context) { return rt, nil }

func (cx *Context) spawnTarget() (*Runtime, *Context) {
	if cx.rt == nil {
		panic("blitzio: Spawn with a Context that has no Runtime")
	}
	return cx.rt, cx
}

// Spawn starts f as a new task and returns its handle. Spawning costs one allocation:
// the task holds header, future (F is stored by value) and result together. On a closed
// runtime the task is dropped at once and its handle reports ErrCancelled.
func Spawn[F Future[T], T any](s Spawner, f F) JoinHandle[T] {
	rt, cx := s.spawnTarget()
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
	if id := rt.idle.popParked(); id >= 0 {
		// The woken worker starts out searching; counting it now keeps other producers
		// from waking more workers for the same burst.
		rt.idle.searching.Add(1)
		rt.workers[id].unpark <- struct{}{}
	}
}

// unparkWorker wakes worker id if it is parked.
func (rt *Runtime) unparkWorker(id int) bool {
	if rt.idle.clear(id) {
		rt.idle.searching.Add(1)
		rt.workers[id].unpark <- struct{}{}
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

// Close is Shutdown without a deadline.
func (rt *Runtime) Close() error { return rt.Shutdown(context.Background()) }

// Shutdown stops the runtime: every task is cancelled and dropped (its futures' Drop
// methods run, its JoinHandle reports ErrCancelled), the workers exit, queued blocking
// jobs are cancelled, and Shutdown waits for blocking jobs already running to return and
// for every goroutine the runtime started to exit. If ctx ends first it returns ctx.Err()
// with the remaining blocking goroutines still finishing; call it again to wait more.
// Shutdown is idempotent and safe to call concurrently.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	first := false
	rt.shutdownOnce.Do(func() { first = true })
	if first {
		rt.shutdownTasks()
	}
	select {
	case <-rt.finished:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-rt.blocking.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rt *Runtime) shutdownTasks() {
	rt.closed.Store(true)
	close(rt.done)
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
	live := rt.owned.closeAndTake()
	rt.dropInjected()
	for _, h := range live {
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
	// Cancellation woke join wakers of other (already dropped) tasks into the injection
	// queue; clear it so the runtime holds no task.
	rt.dropInjected()
	rt.timers.clear()
	close(rt.finished)
}

func (rt *Runtime) dropInjected() {
	for h := rt.inject.pop(); h != nil; h = rt.inject.pop() {
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
}

// parker is the Waker target of a plain goroutine blocked in BlockOn or Wait.
type parker struct{ ch chan struct{} }

func newParker() *parker { return &parker{ch: make(chan struct{}, 1)} }

func (p *parker) wake(*Context) {
	select {
	case p.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// pollCatch polls f, turning a panic into a *PanicError.
func pollCatch[T any](f Future[T], cx *Context) (v T, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: stack()}
		}
	}()
	v, ok = f.Poll(cx)
	return v, ok, nil
}

// BlockOn drives f to completion on the calling goroutine (not a worker) and returns its
// value. Futures polled this way can spawn tasks and use timers of rt. It returns
// ErrRuntimeClosed if rt shuts down before f finishes (f is dropped), and a *PanicError
// if f's Poll panics. Do not call it from inside a task: it blocks.
func BlockOn[T any](rt *Runtime, f Future[T]) (T, error) {
	var zero T
	if rt.closed.Load() {
		return zero, ErrRuntimeClosed
	}
	p := newParker()
	cx := &Context{waker: Waker{t: p}, rt: rt}
	for {
		cx.budget = budgetPerPoll
		v, ok, err := pollCatch(f, cx)
		if err != nil {
			Drop(f)
			return zero, err
		}
		if ok {
			return v, nil
		}
		select {
		case <-p.ch:
		case <-rt.done:
			Drop(f)
			return zero, ErrRuntimeClosed
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
