package blitzio

import (
	"runtime"
	"time"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// Scheduler constants.
const (
	maxLIFOPolls = 3 // LIFO polls in a row before the LIFO task goes to the back of the queue
	// The global queue is checked first every globalInterval ticks so injected tasks are
	// not starved by a worker that keeps its local queue full. The interval adapts to the
	// mean poll time (Tokio's stats.rs): about targetGlobalLatency between checks.
	defaultGlobalInterval = 31
	minGlobalInterval     = 2
	maxGlobalInterval     = 127
	targetGlobalLatency   = 200 * time.Microsecond
)

// worker is one scheduler goroutine and the state only it touches (except q, which
// others steal from, and unpark, which others send to).
type worker struct {
	id int
	rt *Runtime
	q  localQueue
	// lifo is the LIFO slot: the task woken last by this worker runs next. runTask caps
	// the LIFO polls in a row at maxLIFOPolls (then the LIFO task goes to the back of the
	// queue), so two tasks waking each other cannot starve the queue.
	lifo      *header
	cx        Context
	tick      uint32
	searching bool
	rng       lockfree.XorShift64Star
	unpark    chan struct{} // capacity 1: a token from whoever cleared our parked bit
	timer     *time.Timer
	// ioWakers is the buffer of the I/O driver's turns made by this worker.
	ioWakers []Waker
	// coros are Async coroutines parked between two function bodies, for the next Async
	// function this worker starts (see coroutine). Used by whoever polls with w's
	// Context: the worker's goroutine, or an Async function's coroutine while the
	// worker waits on it.
	coros []*coroutine

	// parks counts this worker's parks, for lowerTimerSlack.
	parks uint32
	// plainReads counts the plain file reads made on this worker (see preadPlain).
	plainReads uint32

	globalInterval uint32
	// statStart is the real monotonic time (sinceProcStart) at the last interval
	// measurement. The poll-time statistics read the real clock even when the runtime
	// runs on a TestClock: a fake time jump must not feed the tuning of a real scheduler.
	statStart    time.Duration
	statPolls    uint32
	pollTimeEWMA float64 // nanoseconds
}

func newWorker(rt *Runtime, id int) *worker {
	w := &worker{
		id:             id,
		rt:             rt,
		unpark:         make(chan struct{}, 1),
		rng:            lockfree.NewXorShift64Star(uint64(id)*0x9E3779B97F4A7C15 + 1),
		globalInterval: defaultGlobalInterval,
	}
	w.cx = Context{rt: rt, w: w}
	return w
}

// run is the worker loop: find a task (local queue, then the injection queue, then steal),
// run it, and park when there is nothing to do.
func (w *worker) run() {
	returned := false
	defer func() {
		if !returned {
			w.replace()
		}
	}()
	rt := w.rt
	for !rt.closed.Load() {
		h := w.nextTask()
		if h == nil && rt.io.pollNow(w) > 0 {
			continue // I/O readiness woke tasks (into the local queue)
		}
		if h == nil {
			h = w.search()
		}
		if h == nil && w.searching {
			h = w.spin()
		}
		if h == nil {
			w.park()
			continue
		}
		w.runTask(h)
	}
	w.drain()
	returned = true
	w.rt.workersDone.Done()
}

// replace continues the worker on a new goroutine after a task's code called
// runtime.Goexit on this one (the task's guard, in task.poll or dropAfterFailure, has
// completed that task). The worker's queues are intact; only the goroutine is lost, so
// with Workers: 1 nothing would run again without this. A panic cannot get here: polls
// and drops recover panics, so the goroutine ends only by Goexit.
func (w *worker) replace() {
	w.cx.task = nil
	w.cx.waker = Waker{}
	if h := w.lifo; h != nil {
		// The guard may have woken the task's awaiter into the LIFO slot, which only
		// runTask drains: queue it where the new goroutine (and park's check) sees it.
		w.lifo = nil
		w.q.pushBack(h, &w.rt.inject)
	}
	go w.run()
}

func (w *worker) nextTask() *header {
	w.tick++
	w.statPolls++
	if w.tick%w.globalInterval == 0 {
		w.maintenance()
		if h := w.rt.inject.pop(); h != nil {
			return h
		}
		return w.q.pop()
	}
	if h := w.q.pop(); h != nil {
		return h
	}
	return w.pullGlobalBatch()
}

// maintenance runs every globalInterval ticks: adapt the interval, and drive timers if
// they are due (worker 0 is the primary driver; any worker helps when due).
func (w *worker) maintenance() {
	rt := w.rt
	now := sinceProcStart()
	if w.statStart != 0 && w.statPolls > 0 {
		per := float64(now-w.statStart) / float64(w.statPolls)
		if w.pollTimeEWMA == 0 {
			w.pollTimeEWMA = per
		} else {
			w.pollTimeEWMA = 0.9*w.pollTimeEWMA + 0.1*per
		}
		iv := uint32(maxGlobalInterval)
		if w.pollTimeEWMA > 0 {
			if f := float64(targetGlobalLatency) / w.pollTimeEWMA; f < maxGlobalInterval {
				iv = uint32(f)
			}
		}
		w.globalInterval = max(iv, minGlobalInterval)
	}
	w.statStart, w.statPolls = now, 0
	// Between tasks, every globalInterval ticks: take the I/O events that are ready
	// without waiting, so a busy runtime still serves its sockets.
	rt.io.pollNow(w)
	if rt.testClock == nil && rt.timers.due(nowTick(rt.elapsed())) {
		rt.processTimers(true) // never wait for the lock between tasks
	}
}

// pullGlobalBatch moves a fair share of the injection queue (at most maxGlobalBatch, at
// most what fits) to the local queue and returns the first task.
func (w *worker) pullGlobalBatch() *header {
	rt := w.rt
	if rt.inject.isEmpty() {
		return nil
	}
	want := int(rt.inject.n.Load())/len(rt.workers) + 1
	free := localCap - w.q.len()
	want = min(want, maxGlobalBatch, free)
	if want <= 0 {
		return rt.inject.pop()
	}
	first, n := rt.inject.popBatch(want)
	if n == 0 {
		return nil
	}
	for h := first.next; h != nil; {
		next := h.next
		h.next = nil
		w.q.pushBack(h, &rt.inject)
		h = next
	}
	first.next = nil
	return first
}

// search steals from the other workers, starting at a random one, then tries the
// injection queue. At most half the workers search at once.
func (w *worker) search() *header {
	rt := w.rt
	if !w.searching {
		if !rt.idle.tryStartSearching() {
			return nil
		}
		w.searching = true
	}
	n := len(rt.workers)
	start := w.rng.Intn(n)
	for i := 0; i < n; i++ {
		v := rt.workers[(start+i)%n]
		if v == w {
			continue
		}
		if h := v.q.stealInto(&w.q); h != nil {
			return h
		}
	}
	return w.pullGlobalBatch()
}

// runTask polls h and then up to maxLIFOPolls tasks from the LIFO slot.
func (w *worker) runTask(h *header) {
	if w.searching {
		// We found work: stop searching. If we were the last searcher, wake another
		// worker, since where there was one task there may be more (chained wake-up).
		w.searching = false
		if w.rt.idle.stopSearching() {
			w.rt.notifyParked()
		}
	}
	w.poll(h)
	for i := 0; i < maxLIFOPolls; i++ {
		h = w.lifo
		if h == nil {
			return
		}
		w.lifo = nil
		w.poll(h)
	}
	if w.lifo != nil {
		// LIFO cap reached: a pair of tasks waking each other must not starve the queue.
		h, w.lifo = w.lifo, nil
		// Wake a parked worker only if the queue already held work. With an empty queue,
		// h is the next task this worker pops: a woken worker could only steal it from us
		// and leave us idle, so a pair of tasks in request/reply would bounce between
		// workers (a futex wake and a park per bounce, and every cache line they share
		// moved) every maxLIFOPolls polls. No wake-up is lost: this worker is running and
		// pops h next, and a searching worker may still steal it.
		hadWork := w.q.len() != 0
		w.q.pushBack(h, &w.rt.inject)
		if hadWork {
			w.rt.notifyParked()
		}
	}
}

// poll runs one scheduling point of h: the worker owns h while it is running.
func (w *worker) poll(h *header) {
	cx := &w.cx
	switch h.state.toRunning() {
	case actSkip:
		return
	case actCancel:
		h.cancelOwned(cx)
		return
	}
	cx.waker = Waker{t: h}
	cx.task = h
	cx.budget = budgetPerPoll
	cx.yield = false
	done := h.vt.poll(cx)
	cx.task = nil
	if done {
		h.finish(cx)
		return
	}
	if cx.yield {
		if h.state.toYield() {
			w.q.pushBack(h, &w.rt.inject)
			w.rt.notifyParked()
		} else {
			h.cancelOwned(cx)
		}
		return
	}
	switch h.state.toIdle() {
	case idleReschedule:
		// Woken during its own poll (a yield, an exhausted budget, a wake that raced the
		// poll): to the back of the queue, not the LIFO slot, so it does not run again
		// before its neighbours.
		w.q.pushBack(h, &w.rt.inject)
		w.rt.notifyParked()
	case idleCancel:
		h.cancelOwned(cx)
	}
}

// scheduleLocal queues a task woken or spawned by code running on this worker.
func (w *worker) scheduleLocal(h *header, yield bool) {
	if yield {
		w.q.pushBack(h, &w.rt.inject)
		w.rt.notifyParked()
		return
	}
	prev := w.lifo
	w.lifo = h
	if prev != nil {
		w.q.pushBack(prev, &w.rt.inject)
		w.rt.notifyParked()
	}
}

// park blocks the worker until another worker or a producer wakes it, the next timer is
// due (if it is the timer driver), or the runtime shuts down.
func (w *worker) park() {
	rt := w.rt
	if w.searching {
		w.searching = false
		if rt.idle.stopSearching() && rt.hasWork() {
			// We were the last searcher and work arrived while we searched: a producer
			// that saw us searching did not wake anyone, so we must.
			rt.notifyParked()
		}
	}
	// Timer duty: the first worker to park while timers are pending drives them and
	// parks only until the next deadline ("worker 0 or the parked worker with
	// the nearest deadline"); the others park without a timeout.
	driver := rt.testClock == nil && rt.timers.active.Load() && rt.timerDriver.CompareAndSwap(-1, int32(w.id))
	// I/O duty: the worker that wins the driver's try-lock parks inside the Poller
	// (epoll_wait, io_uring_enter) instead of on its channel. It publishes polling
	// before its parked bit, so a producer that clears the bit also sees that it must
	// call Poller.Wake (Runtime.wakeIOPoller).
	// Nothing registered (live is zero): park on the channel, which a new task wakes
	// with a channel send rather than a system call; the first registration wakes a
	// parked worker back into the poller (ioDriver.activate).
	ioPoll := rt.io.live.Load() > 0 && rt.io.pollMu.TryLock()
	if ioPoll {
		rt.io.polling.Store(int32(w.id))
	}
	releaseIO := func() {
		if ioPoll {
			rt.io.polling.Store(-1)
			rt.io.pollMu.Unlock()
			ioPoll = false
		}
	}
	rt.idle.setParked(w.id)
	// The re-checks after the parked bit (each pairs with a producer that writes, then
	// reads the parked bits): a task queued, the timer duty free, or a first I/O
	// registration made while we decided not to poll (ioDriver.activate saw no parked
	// bit, so nobody else will wake us for it).
	if rt.closed.Load() || rt.hasWork() || (!driver && rt.timers.active.Load() && rt.testClock == nil && rt.timerDriver.Load() < 0) ||
		(!ioPoll && rt.io.live.Load() > 0 && rt.io.polling.Load() < 0) {
		releaseIO()
		if !rt.idle.clear(w.id) {
			<-w.unpark // someone cleared our bit and counted us as searching
			w.searching = true
		}
		if driver {
			rt.releaseTimerDriver()
		}
		return
	}
	var timeout <-chan time.Time
	ioTimeout := time.Duration(-1)
	if driver {
		// Take the pending registrations into the wheel first. One pushed after this drain
		// reads parkedUntil after its push: still MaxInt64 (from our release) or the value
		// stored below, so it wakes us if its deadline is earlier.
		rt.timers.mu.Lock()
		wakers := rt.timers.drainLocked(nil, nowTick(rt.elapsed()))
		next, ok := rt.timers.w.nextExpiration()
		rt.timers.mu.Unlock()
		if len(wakers) > 0 {
			// Some were already due: run their tasks instead of parking. Wake them after
			// giving up the parked bit and the timer duty: a waker that calls
			// runtime.Goexit ends this goroutine in wakeAll (run replaces the worker), and
			// must not leave either held, or no worker would drive the timers again.
			releaseIO()
			if !rt.idle.clear(w.id) {
				<-w.unpark // someone cleared our bit and counted us as searching
				w.searching = true
			}
			rt.releaseTimerDriver()
			wakeAll(wakers)
			return
		}
		if ok {
			rt.timers.parkedUntil.Store(int64(next))
			d := parkDuration(next, nowTick(rt.elapsed()))
			if ioPoll {
				ioTimeout = d
			} else {
				if w.timer == nil {
					w.timer = time.NewTimer(d)
				} else {
					w.timer.Reset(d)
				}
				timeout = w.timer.C
			}
		}
	}
	w.lowerTimerSlack()
	if ioPoll {
		// Blocks until an I/O event, the timer deadline, or a Wake (a producer cleared
		// our parked bit, or shutdown began). turn clears polling before it wakes the
		// tasks it found, so their scheduling does not Wake us again for nothing.
		w.ioWakers = rt.io.turn(ioTimeout, w.id, w.ioWakers[:0])
		releaseIO()
		if !rt.idle.clear(w.id) {
			<-w.unpark // someone cleared our bit and counted us as searching
			w.searching = true
		}
	} else {
		select {
		case <-w.unpark:
			w.searching = true
		case <-rt.done:
		case <-timeout:
			if !rt.idle.clear(w.id) {
				<-w.unpark
				w.searching = true
			}
		}
		if w.timer != nil {
			w.timer.Stop()
		}
	}
	if driver {
		rt.releaseTimerDriver()
		rt.processTimers(false)
	}
	// Wake the tasks whose sockets became ready last, holding nothing: a waker that
	// panics is reported, one that calls runtime.Goexit ends this goroutine (run
	// replaces the worker) without leaving the driver, timer duty or parked bit held.
	w.ioWakers = wakeIO(w, w.ioWakers)
}

// lowerTimerSlack sets the timer slack of the thread running w to 1 µs before it parks
// (see Config.KeepTimerSlack). The thread is the one the Go scheduler then has look for
// other goroutines: when it finds one just woken on another P that is running, it sleeps
// 3 µs (usleep) before taking it, so that P may run it first, and Linux stretches that
// sleep by the thread's timer slack, 50 µs by default. A worker woken by a busy worker
// (the chained wake-up of the sleep protocol) or by a task's completion waits behind
// that sleep. The setting is per thread and stays with it, and the goroutine moves
// between a few threads, so the system call is made on the first 64 parks and then on
// one in 16: about 11 ns a park on average.
func (w *worker) lowerTimerSlack() {
	if w.rt.cfg.KeepTimerSlack {
		return
	}
	w.parks++
	if w.parks <= 64 || w.parks%16 == 0 {
		setTimerSlack()
		w.rt.timerSlackSets.Add(1)
	}
}

// maxParkDuration caps a timer driver's park: a deadline decades away must not overflow
// the Duration arithmetic (a negative park would spin).
const maxParkDuration = 24 * time.Hour

// parkDuration is how long the timer driver parks for the next event at tick next.
func parkDuration(next, now uint64) time.Duration {
	if next <= now {
		return 0
	}
	if next-now >= uint64(maxParkDuration/time.Millisecond) {
		return maxParkDuration
	}
	return time.Duration(next-now) * time.Millisecond
}

// drain drops every task left in the worker's queues at shutdown.
func (w *worker) drain() {
	cancel := func(h *header) {
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
	if w.lifo != nil {
		cancel(w.lifo)
		w.lifo = nil
	}
	w.q.drain(cancel)
	w.stopIdleCoroutines()
}

// spinBeforePark is how long a worker that has run out of work keeps looking before it
// parks, yielding its P between looks. Work often comes back within microseconds (the
// next batch of a loop that spawns, waits and spawns again; a reply on a socket): a
// parked worker woken for it starts late, because the Go scheduler places the woken
// goroutine in the waker's runnext slot, which another P steals only after a 3 us sleep
// that Linux stretches by the thread's timer slack. Rayon's workers likewise yield for
// a few rounds before they sleep, and Go's scheduler spins idle Ms before stopping them.
// Only the searching worker spins (at most half of the workers search at once), so a
// runtime out of work stops spinning within this time: an idle runtime costs nothing.
// Measured on a 2-vCPU guest: 64 tasks x 16 cached 4 KiB reads 7-10% faster, a JoinAll
// of 1,000 tasks 4% faster, 1,000 chained spawns 8% slower.
const spinBeforePark = 20 * time.Microsecond

// spin looks for work (its queues, the other workers; the I/O driver only through
// nextTask's periodic maintenance, as a system call per look would cost more than the
// spin saves) until spinBeforePark has passed, yielding the P between looks
// (runtime.Gosched: a goroutine that is runnable on this P, the task's producer say,
// runs first). It returns a task, or nil when the time is up or the runtime closes.
func (w *worker) spin() *header {
	start := time.Now()
	for time.Since(start) < spinBeforePark && !w.rt.closed.Load() {
		runtime.Gosched()
		if h := w.nextTask(); h != nil {
			return h
		}
		if h := w.search(); h != nil {
			return h
		}
	}
	return nil
}
