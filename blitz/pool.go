package blitz

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// ErrClosed is the error (and the panic value) of using a pool after Close:
// errors.Is(err, ErrClosed) holds for it.
var ErrClosed = errors.New("blitz: pool is closed")

// ErrConfig is wrapped by every error NewPool and SetDefault return for a bad Config.
var ErrConfig = errors.New("blitz: invalid Config")

// DefaultSpinRounds is the number of yield rounds an idle worker makes before it
// announces that it is sleepy (seed 004: 32).
const DefaultSpinRounds = 32

// DefaultSplitDepth is the default Config.SplitDepth.
const DefaultSplitDepth = 1

// Config configures a Pool. The zero value is a pool with one worker per GOMAXPROCS.
type Config struct {
	// Workers is the number of worker goroutines. 0 means runtime.GOMAXPROCS(0), read
	// when the pool starts. It must not be negative or above lockfree.MaxCountedWorkers
	// (the width of the sleep manager's packed counters).
	Workers int
	// SpinRounds is the number of yield rounds an idle worker makes before it gets
	// sleepy, and a waiting joiner before it parks. 0 means DefaultSpinRounds (32). More
	// rounds lower the latency of bursty work and cost more CPU while idle. It must not
	// be negative.
	SpinRounds int
	// SplitDepth is how many unstolen jobs a worker's deque may hold before further
	// forks run inline at once (lazy binary splitting, see Task). 0 means
	// DefaultSplitDepth. Larger values offer thieves more jobs and cost more forks that
	// go through the deque. It must not be negative.
	SplitDepth int
	// EagerLevels is how many nested unjoined forks are always pushed to the deque,
	// whatever SplitDepth says, so that thieves find big jobs near the root of a fork
	// tree (see Task). 0 means min(bits.Len(Workers), 4): 1 for one worker, 2 for two
	// or three, 4 from eight on. A fork tree of depth d then pushes about d^E/E! forks;
	// more levels give thieves more big jobs and cost more pushes. It must not be
	// negative.
	EagerLevels int
	// PanicHandler receives panics of jobs started with Pool.Go, which have nobody to
	// re-raise them to. Nil means the panic crashes the program, as a panic in a
	// goroutine started with the go statement does.
	PanicHandler func(*PanicError)
}

func (c Config) validate() error {
	if c.Workers < 0 || c.Workers > lockfree.MaxCountedWorkers {
		return fmt.Errorf("%w: Workers is %d; it must be between 0 (GOMAXPROCS) and %d (the limit of the packed sleep counters)",
			ErrConfig, c.Workers, lockfree.MaxCountedWorkers)
	}
	if c.EagerLevels < 0 {
		return fmt.Errorf("%w: EagerLevels is %d; it must not be negative (0 means the default)", ErrConfig, c.EagerLevels)
	}
	if c.SplitDepth < 0 {
		return fmt.Errorf("%w: SplitDepth is %d; it must not be negative (0 means %d)", ErrConfig, c.SplitDepth, DefaultSplitDepth)
	}
	if c.SpinRounds < 0 {
		return fmt.Errorf("%w: SpinRounds is %d; it must not be negative (0 means %d)", ErrConfig, c.SpinRounds, DefaultSpinRounds)
	}
	return nil
}

// Stats are cumulative counters of a pool, for tests and tuning.
type Stats struct {
	// Executed counts jobs that went through a deque, the injection queue or a mailbox
	// and were run: stolen frames, pushed frames popped back by their owner, jobs
	// of Go, Scope.Spawn and Broadcast. Forks that were not pushed run as plain calls
	// and are not counted.
	Executed uint64
	// Stolen counts jobs taken from another worker's or a guest's deque.
	Stolen uint64
	// Injected counts jobs pushed to the injection queue (Go and Scope.Spawn).
	Injected uint64
	// Sleeps counts the times a worker blocked in the sleep protocol.
	Sleeps uint64
	// Wakes counts the times a worker was woken from that sleep.
	Wakes uint64
}

const closedBit = int64(1) << 62

// Pool is a work-stealing fork-join pool: worker goroutines, each with a Chase-Lev deque,
// that run forked jobs and steal each other's, and sleep with the JEC protocol when
// there is nothing to do. Make one with NewPool or use Default; Close it to stop the
// workers. All methods are safe for concurrent use.
type Pool struct {
	workers    []*Task
	spinRounds int
	split      int
	eager      int
	onPanic    func(*PanicError)

	counters  sleepCounters
	fenceWord lockfree.PaddedUint64
	stopping  atomic.Bool
	injected  lockfree.TreiberStack[*job]

	guests  atomic.Pointer[[]*Task] // guest Tasks, busy or free; only ever appended
	guestMu sync.Mutex

	// ops counts Calls, Go jobs and Broadcasts in flight; closedBit marks Close.
	ops       atomic.Int64
	drained   chan struct{}
	drainOnce sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup

	stats struct {
		injected, sleeps, wakes atomic.Uint64
	}
}

// NewPool starts a pool with the given configuration. It returns an error wrapping
// ErrConfig, naming the field, when the configuration is invalid.
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := cfg.Workers
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{
		spinRounds: cfg.SpinRounds,
		onPanic:    cfg.PanicHandler,
		drained:    make(chan struct{}),
	}
	if p.spinRounds == 0 {
		p.spinRounds = DefaultSpinRounds
	}
	p.split = cfg.SplitDepth
	if p.split == 0 {
		p.split = DefaultSplitDepth
	}
	p.eager = cfg.EagerLevels
	if p.eager == 0 {
		p.eager = min(bits.Len(uint(n)), 4)
	}
	seed := uint64(time.Now().UnixNano())
	p.workers = make([]*Task, n)
	for i := range p.workers {
		w := newTask(p, i, seed+uint64(i)*0x9E3779B97F4A7C15)
		w.sleeper = &sleeper{}
		w.sleeper.cond.L = &w.sleeper.mu
		p.workers[i] = w
	}
	empty := []*Task{}
	p.guests.Store(&empty)
	p.wg.Add(n)
	for _, w := range p.workers {
		go w.workerLoop()
	}
	return p, nil
}

// NumWorkers returns the number of worker goroutines.
func (p *Pool) NumWorkers() int { return len(p.workers) }

// Stats returns the pool's counters. Reading them while the pool runs gives a recent
// snapshot, not an atomic one.
func (p *Pool) Stats() Stats {
	s := Stats{
		Injected: p.stats.injected.Load(),
		Sleeps:   p.stats.sleeps.Load(),
		Wakes:    p.stats.wakes.Load(),
	}
	add := func(t *Task) {
		s.Executed += t.count.executed.Load()
		s.Stolen += t.count.stolen.Load()
	}
	for _, w := range p.workers {
		add(w)
	}
	for _, g := range *p.guests.Load() {
		add(g)
	}
	return s
}

// enter registers an operation (Call, Go, Broadcast) so Close waits for it.
func (p *Pool) enter() error {
	if p.ops.Add(1)&closedBit != 0 {
		p.exit()
		return ErrClosed
	}
	return nil
}

func (p *Pool) exit() {
	if p.ops.Add(-1) == closedBit {
		p.drainOnce.Do(func() { close(p.drained) })
	}
}

// Close stops the pool: it waits for the Calls, Go jobs and Broadcasts in flight, then
// stops the workers and returns once every worker goroutine has exited. Close is
// idempotent; concurrent calls all return after the pool stopped.
//
// After Close, Call, Go and Broadcast panic with ErrClosed (TryCall returns it). Close
// must not be called from a job running on the same pool: it would wait for itself.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		if p.ops.Or(closedBit) == 0 {
			p.drainOnce.Do(func() { close(p.drained) })
		}
		<-p.drained
		p.stopping.Store(true)
		for i, w := range p.workers {
			// Set makes a worker between its checks and its block give up sleeping;
			// wakeSpecific wakes one that is blocked. Either way it sees stopping.
			w.sleeper.latch.Set()
			p.wakeSpecific(i)
		}
		p.wg.Wait()
	})
}

// workerLoop is a worker's main loop (seed 004): run work while there is some; when
// there is none, go through the sleep protocol until work or the stop signal arrives.
func (w *Task) workerLoop() {
	p := w.pool
	defer p.wg.Done()
	for !p.stopping.Load() {
		if j := w.findWork(); j != nil {
			w.execute(j)
			continue
		}
		// Idle: we count as inactive (sleep protocol).
		p.counters.AddInactive()
		var idle idleState
		found := false
		for !p.stopping.Load() {
			if w.sleeper.latch.Probe() {
				// A Set (mail or stop) reached us; consume it, the checks below see why.
				w.sleeper.latch.Reset()
			}
			if j := w.findWork(); j != nil {
				found = true
				// Finding work while idle suggests there is more: wake up to two others.
				p.wakeThreads(p.counters.SubInactive())
				w.execute(j)
				break
			}
			p.noWorkFound(w, &idle)
		}
		if !found {
			p.counters.SubInactive()
		}
	}
}

// acquireGuest returns a free guest Task, making one if all are busy.
func (p *Pool) acquireGuest() *Task {
	for _, g := range *p.guests.Load() {
		if !g.busy.Load() && g.busy.CompareAndSwap(false, true) {
			return g
		}
	}
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	old := *p.guests.Load()
	g := newTask(p, -1, uint64(time.Now().UnixNano())+uint64(len(old)))
	g.busy.Store(true)
	gs := make([]*Task, len(old)+1)
	copy(gs, old)
	gs[len(old)] = g
	p.guests.Store(&gs)
	return g
}

// Call runs f on the pool and waits for it, from any goroutine: outside the pool, or
// inside a job of this or another pool (nesting never deadlocks).
//
// The calling goroutine does not hand f to a worker. It becomes a guest worker of the
// pool for the duration of the call (the seeds' main_worker): f runs right here with a
// guest Task whose deque the pool's workers steal from, and while f waits for stolen
// work the caller steals too. So a call costs no hand-off, and any number of goroutines
// may call at once (each gets its own guest Task; guest Tasks are reused). Note that
// during a call the caller computes alongside the Workers workers.
//
// A panic in f, or in work it forked, is re-raised here as a *PanicError. Call panics
// with ErrClosed after Close.
func (p *Pool) Call(f func(t *Task)) {
	if err := p.TryCall(f); err != nil {
		panic(err)
	}
}

// TryCall is Call that returns ErrClosed instead of panicking when the pool is closed.
// Panics of f are still re-raised.
func (p *Pool) TryCall(f func(t *Task)) error {
	if f == nil {
		panic("blitz: Pool.Call: nil function")
	}
	if err := p.enter(); err != nil {
		return err
	}
	g := p.acquireGuest()
	pe := g.protectCall(f)
	g.busy.Store(false)
	p.exit()
	if pe != nil {
		panic(pe)
	}
	return nil
}

// Call runs f on p like Pool.Call and returns its result.
func Call[T any](p *Pool, f func(t *Task) T) T {
	var out T
	p.Call(func(t *Task) { out = f(t) })
	return out
}

// heapJob is an allocated job: injected (Go, Scope.Spawn) or mailed (Broadcast).
type heapJob struct {
	job
	f     func(t *Task)
	after func(p *PanicError)
}

func runHeapJob(t *Task, j *job) { (*heapJob)(unsafe.Pointer(j)).f(t) }

func doneHeapJob(j *job, p *PanicError) { (*heapJob)(unsafe.Pointer(j)).after(p) }

func newHeapJob(f func(*Task), after func(*PanicError)) *heapJob {
	h := &heapJob{f: f, after: after}
	h.job.run = runHeapJob
	h.job.done = doneHeapJob
	return h
}

// inject pushes a job to the injection queue and wakes a worker for it (with fence 1
// of seed 002 between the push and the sleep manager's counters).
func (p *Pool) inject(j *job) {
	wasEmpty := p.injected.Empty()
	p.injected.Push(j)
	p.stats.injected.Add(1)
	p.fence()
	p.newJobs(1, wasEmpty)
}

// Go runs f on a pool worker without waiting for it (fire and forget, like the go
// statement). Close waits for jobs started with Go. A panic in f goes to
// Config.PanicHandler, or crashes the program if there is none. Go panics with ErrClosed
// after Close.
func (p *Pool) Go(f func(t *Task)) {
	if f == nil {
		panic("blitz: Pool.Go: nil function")
	}
	if err := p.enter(); err != nil {
		panic(err)
	}
	h := newHeapJob(f, func(pe *PanicError) {
		p.exit()
		if pe != nil {
			if p.onPanic == nil {
				panic(pe)
			}
			p.onPanic(pe)
		}
	})
	p.inject(&h.job)
}

// Broadcast runs f(i) exactly once on every worker i of the pool, concurrently, and
// waits for all of them. Use it to initialise or flush per-worker state. A panic in
// any f is re-raised as a *PanicError after all have finished (the first one by worker
// index). Broadcast panics with ErrClosed after Close.
//
// Broadcast must not be called from a job running on the same pool: that job's worker
// could not run its share while it waits.
func (p *Pool) Broadcast(f func(workerIndex int)) {
	if f == nil {
		panic("blitz: Pool.Broadcast: nil function")
	}
	if err := p.enter(); err != nil {
		panic(err)
	}
	defer p.exit()
	n := len(p.workers)
	latch := lockfree.NewCountLatch(n)
	panics := make([]*PanicError, n)
	for i, w := range p.workers {
		h := newHeapJob(func(*Task) { f(i) }, func(pe *PanicError) {
			panics[i] = pe
			latch.Decrement()
		})
		w.mail.Push(&h.job)
		// Set makes a worker between its checks and its block give up sleeping;
		// wakeSpecific wakes one that is blocked. Either way it then finds the mail.
		w.sleeper.latch.Set()
		p.wakeSpecific(i)
	}
	latch.Wait()
	for _, pe := range panics {
		if pe != nil {
			panic(pe)
		}
	}
}

var defaultPool struct {
	mu  sync.Mutex
	p   atomic.Pointer[Pool]
	cfg Config
}

// Default returns the default pool, starting it on first use with the configuration
// given to SetDefault (or the zero Config). Nothing starts at package initialisation.
func Default() *Pool {
	if p := defaultPool.p.Load(); p != nil {
		return p
	}
	defaultPool.mu.Lock()
	defer defaultPool.mu.Unlock()
	if p := defaultPool.p.Load(); p != nil {
		return p
	}
	p, err := NewPool(defaultPool.cfg)
	if err != nil {
		panic(err) // unreachable: SetDefault validated the configuration
	}
	defaultPool.p.Store(p)
	return p
}

// SetDefault sets the configuration of the default pool. It must be called before the
// first use of Default; afterwards it returns an error and changes nothing. An invalid
// configuration is an error wrapping ErrConfig.
func SetDefault(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	defaultPool.mu.Lock()
	defer defaultPool.mu.Unlock()
	if defaultPool.p.Load() != nil {
		return errors.New("blitz: SetDefault: the default pool has already started")
	}
	defaultPool.cfg = cfg
	return nil
}
