package blitz

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// ErrClosed is the error (and the panic value) of using a pool after Close:
// errors.Is(err, ErrClosed) holds for it.
var ErrClosed = errors.New("blitz: pool is closed")

// ErrGoexit is the Value of the *PanicError that a job's joiner receives when the
// goroutine running the job ended with runtime.Goexit (testing.T.FailNow and t.Fatal
// call it) before the job finished: Join, Scope, Broadcast and the parallel functions
// re-raise it like a panic, and errors.Is(err, ErrGoexit) holds for that *PanicError.
// Goexit cannot be stopped: it ends the goroutine running the job, and with it any
// other job that goroutine was running (a job runs other jobs while it waits for a
// stolen fork), whose joiners receive ErrGoexit too. A worker that exits is replaced by
// a new goroutine; a Go job that exits ends silently, as a goroutine does.
var ErrGoexit = errors.New("blitz: the goroutine running the job exited (runtime.Goexit) before the job finished")

// ErrConfig is wrapped by every error NewPool and SetDefault return for a bad Config.
var ErrConfig = errors.New("blitz: invalid Config")

// DefaultSpinRounds is the number of yield rounds an idle worker makes before it
// announces that it is sleepy (Rayon's ROUNDS_UNTIL_SLEEPY, 32).
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
	// re-raise them to. It runs on the goroutine that ran the job, with no other work
	// beneath it, while Close still counts the job as running (so it must not call
	// the pool's Close: that panics). If it calls runtime.Goexit, its goroutine ends
	// as a Go job's would (a worker is replaced); if it panics, the program crashes.
	// Nil means the panic crashes the program, as a panic in a goroutine started with
	// the go statement does; it never surfaces anywhere else.
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
	// closing is set when Close begins, refusing once Close has drained the pool (see
	// enter). checkOpen reads them rather than ops, which every Call writes.
	closing, refusing atomic.Bool
	// isDefault marks the default pool, which Close refuses to close.
	isDefault bool
	injected  lockfree.TreiberStack[*job]

	// Guest Tasks (see acquireGuest). The pinned guests are pinned[0:nPinned]: made on
	// demand, at most len(pinned) of them, never moved or dropped, claimed and released
	// with their inUse flag alone. Beyond them, overflow guests: the busy ones are
	// guestSlots[0:nGuests]; released ones go to free, at most guestKeep of them, the
	// rest are dropped, their counters folded into retired. Workers scan the pinned
	// guests and the busy overflow guests.
	pinned        []atomic.Pointer[Task]
	nPinned       atomic.Int32
	guestSlots    atomic.Pointer[[]atomic.Pointer[Task]]
	nGuests       atomic.Int32
	guestMu       sync.Mutex
	free          []*Task // guarded by guestMu
	guestKeep     int
	guestRNGState uint64                            // guarded by guestMu
	retired       struct{ executed, stolen uint64 } // guarded by guestMu

	// serial identifies the pool on the stacks of the goroutines running its work
	// (see withMark).
	serial uint64

	// ops counts Calls, Go jobs and Broadcasts in flight; closedBit marks Close. Every
	// Call writes it twice: the padding keeps it off the lines of the fields above,
	// which idle workers read in every search for work.
	_         lockfree.CachePad
	ops       atomic.Int64
	_         lockfree.CachePad
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
		w.inUse.Store(true)
		p.workers[i] = w
	}
	p.guestKeep = max(2*n, 8)
	p.pinned = make([]atomic.Pointer[Task], min(p.guestKeep, maxPinnedGuests))
	p.guestRNGState = seed ^ 0xD1B54A32D192ED03
	slots := make([]atomic.Pointer[Task], 8)
	p.guestSlots.Store(&slots)
	p.serial = newSerial()
	p.wg.Add(n)
	for _, w := range p.workers {
		go p.runWorker(w)
	}
	return p, nil
}

// NumWorkers returns the number of worker goroutines.
func (p *Pool) NumWorkers() int {
	if p == nil {
		panic(nilPool("NumWorkers"))
	}
	return len(p.workers)
}

// nilPool is the panic message of a method called on a nil *Pool.
func nilPool(method string) string { return "blitz: Pool." + method + ": nil *Pool" }

// Stats returns the pool's counters. Reading them while the pool runs gives a recent
// snapshot, not an atomic one.
func (p *Pool) Stats() Stats {
	if p == nil {
		panic(nilPool("Stats"))
	}
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
	// Pinned guests never move. Under guestMu no overflow guest moves between the busy
	// slots, the free list and retired, so none is counted twice or missed.
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	for i := range int(p.nPinned.Load()) {
		add(p.pinned[i].Load())
	}
	slots := *p.guestSlots.Load()
	for i := range int(p.nGuests.Load()) {
		add(slots[i].Load())
	}
	for _, g := range p.free {
		add(g)
	}
	s.Executed += p.retired.executed
	s.Stolen += p.retired.stolen
	return s
}

// enter registers an operation (Call, Go, Broadcast) so Close waits for it.
//
// Once Close has begun (closedBit set) it accepts only operations started by the
// pool's own work, recognised by the pool's mark on the calling goroutine's stack
// (onStack): work that Close waits for may make nested calls (every parallel loop
// inside a job is a Call), and refusing them would fail work that Close promised to
// let finish. Operations from other goroutines are refused at once: accepting them
// too let callers that call in a loop keep the count above zero forever, and Close
// never returned. The stack walk happens only during that window. Once the count has
// reached closedBit nothing can raise it again (the CAS below never succeeds from
// there), so Close's drain is final.
func (p *Pool) enter() error {
	v := p.ops.Load()
	if v&closedBit == 0 && p.ops.CompareAndSwap(v, v+1) {
		return nil
	}
	return p.enterSlow()
}

func (p *Pool) enterSlow() error {
	checked := false
	for {
		v := p.ops.Load()
		if v == closedBit {
			return ErrClosed
		}
		if v&closedBit != 0 && !checked {
			if !p.onStack() {
				return ErrClosed
			}
			checked = true
		}
		if p.ops.CompareAndSwap(v, v+1) {
			return nil
		}
	}
}

// enterMore registers one more operation for a caller that already holds one (an
// entry enter granted and not yet exited). While that entry is held, the count cannot
// reach closedBit, so Close has not drained and must wait for the new operation too:
// unlike enter it can neither fail nor walk the stack. It serves work the pool has
// already accepted (a Group's queued functions) and that must be able to get a job to
// run on, whoever asks for it.
func (p *Pool) enterMore() {
	p.ops.Add(1)
}

func (p *Pool) exit() {
	if p.ops.Add(-1) == closedBit {
		p.drain()
	}
}

// drain tells Close that the last operation in flight finished (ops is closedBit).
func (p *Pool) drain() {
	p.drainOnce.Do(func() {
		p.refusing.Store(true)
		close(p.drained)
	})
}

// checkOptsOpen is checkOpen for the pool that opts name, if any, for the paths of the
// parallel functions that finish without resolving their options (parResolve), such as
// a sort of a few elements. Without WithPool there is nothing to check: the default
// pool cannot be closed, and looking at it would start it.
func checkOptsOpen(opts []Option) {
	for i := len(opts) - 1; i >= 0; i-- { // the last WithPool wins, as in parResolve
		if p := opts[i].pool; p != nil {
			p.checkOpen()
			return
		}
	}
}

// checkOpen panics with ErrClosed if the pool refuses new work, as Call would. Every
// parallel function calls it (parResolve), whatever the size of its input, so that on
// a closed pool a small input, which would run on the caller's goroutine without
// entering the pool, fails like a large one instead of working.
func (p *Pool) checkOpen() {
	if p.closing.Load() && (p.refusing.Load() || !p.onStack()) {
		panic(ErrClosed) // as enter would refuse it
	}
}

// Close stops the pool: it waits for the Calls, Go jobs and Broadcasts in flight, then
// stops the workers and returns once every worker goroutine has exited. Close is
// idempotent; concurrent calls all return after the pool stopped.
//
// While Close waits, the work in flight may still start new Calls, Go jobs and
// Broadcasts (a parallel loop inside a job is a Call), and Close waits for those too.
// Calls, Go jobs and Broadcasts from any other goroutine (one that is not running the
// pool's work, including a goroutine that such work started with the go statement)
// are refused from the moment Close begins: Call, Go and Broadcast panic with
// ErrClosed (TryCall returns it), and so do the parallel functions given the pool with
// WithPool, whatever the size of their input. Once the work in flight has finished,
// everything is refused.
//
// Close panics if p is the default pool (see Default): the package-level functions of
// the whole process share it, so nobody owns it. Close also panics if it is called
// from inside the pool's own work (a Call's function, a
// job, a Go job, a Broadcast share, a loop body run by the pool): it would wait for
// itself. It cannot detect a call made on another goroutine that such work waits for;
// that deadlocks.
func (p *Pool) Close() {
	if p == nil {
		panic(nilPool("Close"))
	}
	if p.isDefault {
		panic("blitz: Pool.Close: the default pool cannot be closed: every package-level function of the " +
			"process (Sum, For, Sort...) runs on it; close a pool made with NewPool instead")
	}
	if p.onStack() {
		panic("blitz: Pool.Close called from inside the pool's own work (a Call, job or Go job of the same pool): " +
			"Close waits for that work to finish, so it would wait for itself; close the pool from outside it")
	}
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		if p.ops.Or(closedBit) == 0 {
			p.drain()
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
		for _, w := range p.workers {
			// A worker's Task kept by a job and used now is used after its pool ended.
			w.inUse.Store(false)
		}
		freeSerial(p.serial)
	})
}

// runWorker runs w's worker loop on the calling goroutine, with the pool's mark on the
// stack (see withMark).
func (p *Pool) runWorker(w *Task) { p.withMark(nil, func(*Task) { w.workerLoop() }) }

// workerLoop is a worker's main loop (Rayon's main_loop): run work while there is some; when
// there is none, go through the sleep protocol until work or the stop signal arrives.
//
// A job that calls runtime.Goexit ends the worker's goroutine: the deferred calls of
// protect and protectCall on the way up have then completed the jobs it was running
// and unwound the Task's frames, and the deferred call here starts a new goroutine for
// the same Task, so the pool keeps its workers (without it, a pool whose workers all
// exited would run nothing and Close would wait forever).
func (w *Task) workerLoop() {
	p := w.pool
	returned := false
	defer func() {
		if !returned {
			// Goexit (or a panic that is crashing the program: then starting a goroutine
			// is harmless). The new goroutine takes over this one's wg count.
			go p.runWorker(w)
			return
		}
		p.wg.Done()
	}()
	w.loop()
	returned = true
}

func (w *Task) loop() {
	p := w.pool
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

// maxPinnedGuests bounds the pinned guests of a pool (see acquireGuest).
const maxPinnedGuests = 64

// acquireGuest returns a guest Task for a Call (or a detached Go job), marked in use.
// Workers steal from it until releaseGuest.
//
// The fast path, for up to len(pinned) concurrent Calls, claims a pinned guest with one
// compare-and-swap of its inUse flag: no lock, and no write that an idle worker reads.
// Workers scan every pinned guest that was ever made, busy or not: a free one has an
// empty deque, and looking at it costs a worker less than it would cost every Call to
// publish itself in a list that the workers read (the cache line would move between
// the caller's core and the workers' on each Call). The pinned guests are made on
// demand, so a program that calls from one goroutine has one.
//
// Beyond them, overflow guests come from a free list (or are made) under guestMu, and
// the busy ones are kept compact in guestSlots[0:nGuests], so an idle worker scans the
// pinned guests plus exactly the overflow Calls in flight, not every guest ever made.
// Workers read the slots without the lock; a guest moved by releaseGuest can be missed
// by a scan running at that moment, which only delays a steal: a guest joins its own
// forks whenever nobody took them, so no work depends on a worker finding it.
func (p *Pool) acquireGuest() *Task {
	// The first pinned guest, inlined: the one a single caller always gets.
	if g := p.pinned[0].Load(); g != nil && !g.inUse.Load() && g.inUse.CompareAndSwap(false, true) {
		return g
	}
	return p.acquireGuestSlow()
}

func (p *Pool) acquireGuestSlow() *Task {
	for i := 1; i < int(p.nPinned.Load()); i++ {
		g := p.pinned[i].Load()
		if !g.inUse.Load() && g.inUse.CompareAndSwap(false, true) {
			return g
		}
	}
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	// A pinned guest may have been released since the scan; look once more, then make
	// a new pinned guest while there is room (only here, under the lock, so nPinned
	// counts made guests only).
	n := int(p.nPinned.Load())
	for i := range n {
		g := p.pinned[i].Load()
		if !g.inUse.Load() && g.inUse.CompareAndSwap(false, true) {
			return g
		}
	}
	if n < len(p.pinned) {
		g := p.newGuest()
		g.pinnedGuest = true
		g.inUse.Store(true)
		// Publish the Task before the count that lets workers and callers read it.
		p.pinned[n].Store(g)
		p.nPinned.Store(int32(n + 1))
		return g
	}
	var g *Task
	if k := len(p.free); k > 0 {
		g = p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
	} else {
		g = p.newGuest()
	}
	g.inUse.Store(true)
	n = int(p.nGuests.Load())
	slots := *p.guestSlots.Load()
	if n == len(slots) {
		// Grow: publish the bigger copy before the new guest is counted, so a worker
		// that reads the new count reads a slot array that holds it.
		grown := make([]atomic.Pointer[Task], 2*n)
		for i := range slots {
			grown[i].Store(slots[i].Load())
		}
		p.guestSlots.Store(&grown)
		slots = grown
	}
	g.guestSlot = n
	slots[n].Store(g)
	p.nGuests.Store(int32(n + 1))
	return g
}

// newGuest makes a guest Task. Call with guestMu held.
func (p *Pool) newGuest() *Task {
	p.guestRNGState += 0x9E3779B97F4A7C15
	return newTask(p, -1, p.guestRNGState)
}

// releaseGuest ends g's use by a Call. A pinned guest is only marked free. An overflow
// guest is taken off the busy guests and kept for reuse, or dropped when guestKeep
// guests are free already: the guests retained are bounded by len(pinned) + guestKeep
// plus the Calls in flight.
func (p *Pool) releaseGuest(g *Task) {
	if !g.pinnedGuest {
		p.releaseOverflow(g)
		return
	}
	// Everything g's user did happens before the next claim's CAS reads false.
	g.inUse.Store(false)
}

func (p *Pool) releaseOverflow(g *Task) {
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	g.inUse.Store(false)
	slots := *p.guestSlots.Load()
	last := int(p.nGuests.Load()) - 1
	if i := g.guestSlot; i != last {
		moved := slots[last].Load()
		moved.guestSlot = i
		slots[i].Store(moved)
	}
	slots[last].Store(nil)
	p.nGuests.Store(int32(last))
	g.guestSlot = -1
	if len(p.free) < p.guestKeep {
		p.free = append(p.free, g)
	} else {
		p.retired.executed += g.count.executed.Load()
		p.retired.stolen += g.count.stolen.Load()
	}
	if last < len(slots)/4 && len(slots) > 64 {
		// Shrink the slot array after a burst of Calls, so it too is bounded by the
		// Calls in flight. Workers still scanning the old array see a prefix of it.
		shrunk := make([]atomic.Pointer[Task], len(slots)/2)
		for i := range last {
			shrunk[i].Store(slots[i].Load())
		}
		p.guestSlots.Store(&shrunk)
	}
}

// Call runs f on the pool and waits for it, from any goroutine: outside the pool, or
// inside a job of this or another pool (nesting never deadlocks).
//
// The calling goroutine does not hand f to a worker (as Rayon's in_worker_cold does,
// blocking the caller meanwhile). It becomes a guest worker of the pool for the
// duration of the call: f runs right here with a guest Task whose deque the pool's
// workers steal from, and while f waits for stolen work the caller steals too. So a
// call costs no hand-off, and any number of goroutines may call at once (each gets its
// own guest Task; guest Tasks are reused). Note that during a call the caller computes
// alongside the Workers workers.
//
// A panic in f, or in work it forked, is re-raised here as a *PanicError. If f calls
// runtime.Goexit, the calling goroutine exits as it would calling f directly (after
// the work f forked has finished). Call panics with ErrClosed once a Close has
// finished waiting for the pool's work (see Close), and with a message naming the
// argument if p or f is nil.
//
// Which form to use: Call (or the function Call, for a result) when f cannot fail, so
// that a panic stays a panic; TryCall (or the function TryCall) when f returns an
// error, or when the caller wants every failure, a panic or a closed pool included, as
// an error value.
func (p *Pool) Call(f func(t *Task)) {
	if p == nil {
		panic(nilPool("Call"))
	}
	if f == nil {
		panic("blitz: Pool.Call: nil function")
	}
	if err := p.call(f); err != nil {
		panic(err)
	}
}

// TryCall runs f on the pool like Call and returns every failure as an error instead
// of panicking: the error f returns; a panic in f or in work it forked, as a
// *PanicError (carrying the value and the panicking stack; errors.As finds it); or
// ErrClosed once a Close has finished waiting for the pool's work, in which case f does
// not run. It returns nil if f returned nil. If f calls runtime.Goexit, the calling
// goroutine exits, as with Call. TryCall panics with a message naming the argument if
// p or f is nil.
//
// TryCall is where work leaves the pool for ordinary code, so it turns panics into
// errors; TryJoin, used inside a Task, re-raises them instead, so that they cross every
// join up to the Call.
func (p *Pool) TryCall(f func(t *Task) error) error {
	if p == nil {
		panic(nilPool("TryCall"))
	}
	if f == nil {
		panic("blitz: Pool.TryCall: nil function")
	}
	var ferr error
	if err := p.call(func(t *Task) { ferr = f(t) }); err != nil {
		return err
	}
	return ferr
}

// Call runs f on p like Pool.Call and returns its result. It panics like Pool.Call:
// with f's panic as a *PanicError, with ErrClosed, or naming a nil argument.
func Call[T any](p *Pool, f func(t *Task) T) T {
	if p == nil {
		panic("blitz: Call: nil *Pool")
	}
	if f == nil {
		panic("blitz: Call: nil function")
	}
	var out T
	if err := p.call(func(t *Task) { out = f(t) }); err != nil {
		panic(err)
	}
	return out
}

// TryCall runs f on p like Pool.TryCall and returns its result and error: f's own, a
// panic in f or in work it forked as a *PanicError, or ErrClosed if the pool is closed
// (f does not run). On a panic or ErrClosed the result is T's zero value. It panics
// with a message naming the argument if p or f is nil.
func TryCall[T any](p *Pool, f func(t *Task) (T, error)) (T, error) {
	if p == nil {
		panic("blitz: TryCall: nil *Pool")
	}
	if f == nil {
		panic("blitz: TryCall: nil function")
	}
	var out T
	var ferr error
	if err := p.call(func(t *Task) { out, ferr = f(t) }); err != nil {
		var zero T
		return zero, err
	}
	return out, ferr
}

// call runs f as a Call: on a guest Task, under the pool's mark. It returns ErrClosed
// if the pool is closed (f did not run), f's panic as a *PanicError, or nil.
func (p *Pool) call(f func(*Task)) error {
	// enter, written out (the inliner refuses it).
	if v := p.ops.Load(); v&closedBit != 0 || !p.ops.CompareAndSwap(v, v+1) {
		if err := p.enterSlow(); err != nil {
			return err
		}
	}
	// acquireGuest's and leaveCall's fast paths, written out here because the
	// inliner's budget refuses them: with enter, they are most of the cost of an
	// empty Call.
	g := p.pinned[0].Load()
	if g == nil || g.inUse.Load() || !g.inUse.CompareAndSwap(false, true) {
		g = p.acquireGuestSlow()
	}
	// If f calls runtime.Goexit, this goroutine never returns here: protectGuest
	// leaves the call on the way out instead (a guest and an operation left
	// registered would make Close wait forever).
	pe := p.withMark(g, f)
	if g.pinnedGuest {
		g.inUse.Store(false)
	} else {
		p.releaseOverflow(g)
	}
	p.exit()
	if pe != nil {
		return pe
	}
	return nil
}

func (p *Pool) leaveCall(g *Task) {
	p.releaseGuest(g)
	p.exit()
}

// protectGuest runs the body f of a Call on its guest g, like protectCall. If f calls
// runtime.Goexit it also ends the Call (releases g, unregisters the operation) after
// unwinding g's frames, since the goroutine never returns to Pool.call. It is not
// protectCall because only the outermost frame of a Call may end it: a Goexit inside a
// Join in f passes through protectCall first.
func (g *Task) protectGuest(f func(*Task)) (pe *PanicError) {
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		g.unwindTo(0)
		if r != nil {
			pe = wrapPanic(r)
			return
		}
		g.pool.leaveCall(g)
	}()
	f(g)
	if g.depth != 0 {
		panic(errUnjoined)
	}
	finished = true
	return nil
}

// heapJob is an allocated job: injected (Go, Scope.Spawn) or mailed (Broadcast).
type heapJob struct {
	job
	f     func(t *Task)
	after func(p *PanicError)
}

func runHeapJob(t *Task, j *job) { (*heapJob)(unsafe.Pointer(j)).f(t) }

func doneHeapJob(j *job, p *PanicError) { (*heapJob)(unsafe.Pointer(j)).after(p) }

// goPanic is the panic value that crashes the program when a Go job panics and the pool
// has no PanicHandler. Its first line names the value and, as PanicError.Error does,
// the file:line where the job panicked; then comes the job's own stack, since the
// crash report shows the stack of the goroutine that re-raises it.
type goPanic struct{ *PanicError }

func (e goPanic) Error() string {
	at := ""
	if site := panicSite(e.pcs); site != "" {
		at = " [at " + site + "]"
	}
	return fmt.Sprintf("blitz: panic in a Pool.Go job (the pool has no Config.PanicHandler): %v%s\n\njob's goroutine stack:\n%s",
		e.Value, at, e.Stack)
}

func newHeapJob(f func(*Task), after func(*PanicError)) *heapJob {
	h := &heapJob{f: f, after: after}
	h.job.run = runHeapJob
	h.job.done = doneHeapJob
	return h
}

// inject pushes a job to the injection queue and wakes a worker for it (with a fence
// between the push and the sleep manager's counters: see sleep.go).
func (p *Pool) inject(j *job) {
	wasEmpty := p.injected.Empty()
	p.injected.Push(j)
	p.stats.injected.Add(1)
	p.fence()
	p.newJobs(1, wasEmpty)
}

// Go runs f on a pool worker without waiting for it (fire and forget, like the go
// statement). Close waits for jobs started with Go.
//
// A Go job runs in isolation, never beneath unrelated work: a worker that is idle runs
// it; a worker or a Call's goroutine that finds it while waiting for a stolen fork (the
// moment it would otherwise run other work) starts it on a goroutine of its own
// instead. So a Go job that blocks, panics or exits holds up and surfaces in nothing
// else. A panic in f goes to Config.PanicHandler, or, if there is none, crashes the
// program as a panic in a goroutine started with the go statement does (the report
// shows f's stack). If f calls runtime.Goexit, the job ends silently and the worker's
// goroutine is replaced. A *PanicError wrapping ErrGoexit that a Join in f re-raises (a
// fork it joined ran on a goroutine that exited) is a panic of f like any other: it goes
// to the PanicHandler, or crashes the program.
//
// Go panics with ErrClosed when the pool refuses new work (see Close): from the moment
// Close begins if the caller is not running the pool's work, and once Close has finished
// waiting for that work in any case. A refused f never runs.
func (p *Pool) Go(f func(t *Task)) {
	if p == nil {
		panic(nilPool("Go"))
	}
	if f == nil {
		panic("blitz: Pool.Go: nil function")
	}
	if err := p.enter(); err != nil {
		panic(err)
	}
	p.goEntered(f)
}

// goEntered starts f as Go does, for a caller that has already registered it with enter
// or enterMore: the job's completion exits that registration.
func (p *Pool) goEntered(f func(t *Task)) {
	var h *heapJob
	h = newHeapJob(f, func(pe *PanicError) {
		// Only ever called at the bottom of a goroutine (an idle worker's loop or a
		// detached goroutine, see Task.runOther): no recover above can catch the
		// crash below, and no unrelated job is on this stack.
		//
		// Only a Goexit of this job's own goroutine ends it silently (goexited). A
		// *PanicError carrying ErrGoexit that f received from a Join (a fork it joined
		// ran on a goroutine that exited) is a panic of f like any other: f was cut
		// short, and the handler (or the crash) must tell, as a Call would.
		if pe != nil && !h.job.goexited {
			if p.onPanic == nil {
				// The job stays counted: Close cannot return (and the program end
				// normally) before this crash.
				panic(goPanic{pe})
			}
			// Deferred: a handler that calls runtime.Goexit (or panics) must not leave
			// the job counted, or Close would wait for it forever.
			defer p.exit()
			p.onPanic(pe)
			return
		}
		p.exit()
	})
	h.job.isolated = true
	p.inject(&h.job)
}

// runDetached runs a Go job j on a new goroutine, as a guest of the pool (see
// Task.runOther).
func (p *Pool) runDetached(j *job) {
	go p.withMark(nil, func(*Task) {
		g := p.acquireGuest()
		defer p.releaseGuest(g)
		g.execute(j)
	})
}

// Broadcast runs f(i) exactly once on every worker i of the pool, concurrently, and
// waits for all of them. Use it to initialise or flush per-worker state. A panic in
// any f is re-raised as a *PanicError after all have finished (the first one by worker
// index). Broadcast panics with ErrClosed after Close.
//
// Broadcast panics if it is called on one of the pool's workers (from a job, or from a
// Call that a job made): that worker could not run its share while it waits. From a
// Call on any other goroutine it works. Detecting this walks the caller's stack, a
// microsecond or so per Broadcast.
func (p *Pool) Broadcast(f func(workerIndex int)) {
	if p == nil {
		panic(nilPool("Broadcast"))
	}
	if f == nil {
		panic("blitz: Pool.Broadcast: nil function")
	}
	if _, onWorker := p.stackMarks(); onWorker {
		panic("blitz: Pool.Broadcast called from a job running on a worker of the same pool: that worker " +
			"cannot run its share while it waits, so Broadcast would wait forever; call it from outside the pool's workers")
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
// The parallel functions run on it unless given WithPool. It lives as long as the
// process: its Close panics, since every package-level function shares it.
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
	p.isDefault = true // before it is published
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

// poolSerials numbers the pools for withMark. Close gives a pool's number back, so the
// numbers of the live pools stay small and their marks short. 0 is never used.
var poolSerials struct {
	mu   sync.Mutex
	next uint64
	free []uint64
}

func newSerial() uint64 {
	poolSerials.mu.Lock()
	defer poolSerials.mu.Unlock()
	if n := len(poolSerials.free); n > 0 {
		s := poolSerials.free[n-1]
		poolSerials.free = poolSerials.free[:n-1]
		return s
	}
	poolSerials.next++
	return poolSerials.next
}

// freeSerial gives the number of a closed pool back. Its work has finished, so no mark
// of it is on a stack where it could be mistaken for the next pool's.
func freeSerial(s uint64) {
	poolSerials.mu.Lock()
	defer poolSerials.mu.Unlock()
	poolSerials.free = append(poolSerials.free, s)
}

// withMark runs f under the pool's mark: the pool's serial number written on the
// goroutine's call stack, so that Close can tell whether it is called from inside the
// pool's work (onStack). Go has no goroutine-local storage; the call stack is the one
// piece of a goroutine's state its own code can read (runtime.Callers). The serial is
// written in base 16, lowest digit first, as a chain of calls to the marker functions
// markD0 ... markDF, the last of which runs the work. Every goroutine that
// runs the pool's work does so under a mark: workers, Calls and detached Go jobs.
//
// With g == nil, f(nil) runs (a worker's loop, a detached Go job). Otherwise
// g.protectGuest(f) runs and its panic is returned: a Call's body runs right under the
// last marker frame, with no closure between them. A mark costs one call per digit
// plus one (two calls for the first 15 live pools), a few nanoseconds per Call. The
// calls are direct, not through a table of functions, so that escape analysis sees
// that f does not escape: a Call allocates nothing.
func (p *Pool) withMark(g *Task, f func(*Task)) *PanicError { return markNext(p.serial, g, f) }

// markNext calls the marker function of the lowest digit of rest (which is not 0), and
// that one continues the mark with the other digits, or runs the work.
func markNext(rest uint64, g *Task, f func(*Task)) *PanicError {
	r := rest >> 4
	switch rest & 15 {
	case 0:
		return markD0(r, g, f)
	case 1:
		return markD1(r, g, f)
	case 2:
		return markD2(r, g, f)
	case 3:
		return markD3(r, g, f)
	case 4:
		return markD4(r, g, f)
	case 5:
		return markD5(r, g, f)
	case 6:
		return markD6(r, g, f)
	case 7:
		return markD7(r, g, f)
	case 8:
		return markD8(r, g, f)
	case 9:
		return markD9(r, g, f)
	case 10:
		return markDA(r, g, f)
	case 11:
		return markDB(r, g, f)
	case 12:
		return markDC(r, g, f)
	case 13:
		return markDD(r, g, f)
	case 14:
		return markDE(r, g, f)
	default:
		return markDF(r, g, f)
	}
}

//go:noinline
func markD0(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD1(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD2(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD3(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD4(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD5(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD6(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD7(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD8(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markD9(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDA(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDB(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDC(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDD(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDE(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

//go:noinline
func markDF(rest uint64, g *Task, f func(*Task)) *PanicError {
	if rest != 0 {
		return markNext(rest, g, f)
	}
	if g != nil {
		return g.protectGuest(f)
	}
	f(nil)
	return nil
}

// markDigitOf maps the names of the marker functions to their digits.
var markDigitOf = sync.OnceValue(func() map[string]uint64 {
	m := make(map[string]uint64, 16)
	for d, f := range []func(uint64, *Task, func(*Task)) *PanicError{
		markD0, markD1, markD2, markD3, markD4, markD5, markD6, markD7,
		markD8, markD9, markDA, markDB, markDC, markDD, markDE, markDF,
	} {
		m[runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()] = uint64(d)
	}
	return m
})

// onStack reports whether the calling goroutine is running the pool's work: whether a
// mark of p (see withMark) is on its stack.
func (p *Pool) onStack() bool {
	in, _ := p.stackMarks()
	return in
}

// stackMarks reads the marks on the calling goroutine's stack: inPool, whether one of
// them is p's, and onWorker, whether the goroutine is one of p's workers (p's mark
// made by runWorker, at the bottom of the stack). It costs a stack walk: it serves
// Close and Broadcast, not the paths that run per job.
func (p *Pool) stackMarks() (inPool, onWorker bool) {
	pcs := make([]uintptr, 128)
	for {
		n := runtime.Callers(1, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	digits := markDigitOf()
	frames := runtime.CallersFrames(pcs)
	// Innermost first, a mark reads from its highest digit down; a mark is a run of
	// marker frames, with markNext (and the inlined withMark) frames between and after
	// them, skipped. The frame right outside p's mark tells who made it.
	inMark, ours := false, false
	var v uint64
	for {
		fr, more := frames.Next()
		switch d, ok := digits[fr.Function]; {
		case ok:
			if !inMark {
				inMark, v = true, 0
			}
			v = v<<4 | d
		case strings.HasSuffix(fr.Function, ".markNext") || strings.HasSuffix(fr.Function, ".(*Pool).withMark"):
		default:
			if inMark && v == p.serial {
				inPool, ours = true, true
			}
			if ours && strings.HasSuffix(fr.Function, ".(*Pool).runWorker") {
				onWorker = true
			}
			inMark = false
			if !strings.HasSuffix(fr.Function, ".(*Pool).runWorker") {
				ours = false
			}
		}
		if !more {
			if inMark && v == p.serial {
				inPool = true
			}
			return inPool, onWorker
		}
	}
}
