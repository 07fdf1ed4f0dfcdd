package blitz

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// The sleep manager, after Rayon's rayon-core/src/sleep.
//
// State shared by all workers is one packed uint64, a padded
// lockfree.AtomicCounters: sleeping workers in bits 0-15, inactive workers in bits 16-31,
// the jobs event counter (JEC) in bits 32-63. Each worker also has a sleeper: a
// CoreLatch, a mutex, a condition variable and the is-blocked flag.
//
// The protocol, and the race each step closes:
//
//  1. A worker that finds no work yields SpinRounds times (rounds 0..31), checking for
//     work between yields: cheap latency for bursty work.
//  2. It announces that it is sleepy: if the JEC is odd ("active": jobs were posted since
//     the last announcement) it makes it even ("sleepy"), and saves the JEC value AFTER
//     that toggle. Saving the value after the toggle means its own toggle does not look
//     like new work later (otherwise it never sleeps: the "partial wake storm").
//  3. It looks for work once more, then sleeps: CoreLatch UNSET->SLEEPY, lock its mutex,
//     SLEEPY->SLEEPING, then re-reads the counters: if the JEC differs from the saved
//     value, some poster published work after step 2, so it does not sleep. Otherwise it
//     registers as sleeping with a CAS from exactly the value it checked: a poster that
//     toggles the JEC in between makes the CAS fail and the check runs again.
//  4. Fence, then a last look at the injected queue, the worker's mailbox and the stop
//     flag (fence 2); then it blocks on its condition variable.
//
// A poster publishes the job first, then makes the JEC odd if it was even and reads
// the counters in the same atomic step: either the sleeper's step 3 sees the new JEC,
// or the poster sees the sleeper counted as sleeping and wakes it. Injected jobs add
// fence 1 between the push and the counter update (the Treiber stack is a separate
// word from the counters).
//
// The waker, not the sleeper, decrements the sleeping count, under the sleeper's
// mutex, when it clears is-blocked: a poster that reads "1 sleeping" then knows a wake
// is owed and no other poster will count the same sleeper twice.
//
// A tempting variant is wrong: the announcing worker incrementing the JEC "if even",
// like posters. Rayon's announce_sleepy increments it if ODD (active -> sleepy) and only
// posters increment it if even (sleepy -> active). With both sides incrementing only
// from even, the JEC would stay odd forever after the first toggle and step 3 would
// never detect new work. We follow Rayon; spin/jec.pml models both.
//
// The packed word is lockfree.AtomicCounters, padded onto a cache line of its own:
// every worker reads it when it forks and writes it when it goes idle, so it must not
// share a line with the pool's other hot fields.
type sleepCounters struct {
	_ lockfree.CachePad
	lockfree.AtomicCounters
	_ lockfree.CachePad
}

// announceSleepy is the worker's step 2: odd -> even. It returns the JEC after the
// toggle, computed from the value the CAS replaced (not re-read: a poster's toggle
// landing between the CAS and a second load would be saved as ours and missed).
func (c *sleepCounters) announceSleepy() uint32 {
	jec := lockfree.ExtractJEC(c.IncrementJECIfActive())
	if jec&1 != 0 {
		jec++ // our toggle happened: odd -> even
	}
	return jec
}

// sleeper is one worker's parking place.
type sleeper struct {
	latch lockfree.CoreLatch
	// parked is true from just before the worker registers as sleeping until it is
	// awake again. Wakers read it without the lock to skip workers that are certainly
	// not asleep: the store precedes the registering CAS, so a waker that counted this
	// worker as sleeping also sees parked == true.
	parked  atomic.Bool
	mu      sync.Mutex
	cond    sync.Cond
	blocked bool // guarded by mu
	_       lockfree.CachePad
}

// idleState is a worker's progress through the sleep protocol (Rayon's IdleState).
type idleState struct {
	rounds int
	jec    uint32
}

// noWorkFound advances the idle state by one round: yield, announce, or sleep.
func (p *Pool) noWorkFound(w *Task, idle *idleState) {
	switch {
	case idle.rounds < p.spinRounds:
		runtime.Gosched()
		idle.rounds++
	case idle.rounds == p.spinRounds:
		idle.jec = p.counters.announceSleepy()
		idle.rounds++
		runtime.Gosched()
	default:
		p.sleep(w, idle)
	}
}

// sleep is steps 3 and 4 of the protocol.
func (p *Pool) sleep(w *Task, idle *idleState) {
	s := w.sleeper
	if !s.latch.GetSleepy() {
		// Set since we last reset it (mail or stop): go and look.
		*idle = idleState{}
		return
	}
	s.mu.Lock()
	if !s.latch.FallAsleep() {
		s.mu.Unlock()
		s.latch.WakeUp()
		*idle = idleState{}
		return
	}
	s.parked.Store(true)
	for {
		c := p.counters.Load()
		if lockfree.ExtractJEC(c) != idle.jec {
			// New work was posted since we announced: do not sleep; re-announce after one
			// more look (Rayon's wake_partly).
			s.parked.Store(false)
			s.mu.Unlock()
			s.latch.WakeUp()
			idle.rounds = p.spinRounds
			return
		}
		if p.counters.TryAddSleeping(c) {
			break
		}
	}
	// Fence 2: the registering CAS above and the loads below are
	// sequentially consistent atomics, so a job injected before a poster read our
	// registration is visible here; the explicit fence keeps the protocol's structure.
	p.fence()
	// s.latch.Probe: a Set (frame finished, mail, stop) after our FallAsleep.
	if !p.injected.Empty() || !w.mail.Empty() || p.stopping.Load() || s.latch.Probe() {
		// We registered but never blocked, so no waker can have decremented for us:
		// undo our own registration (the one case where the sleeper decrements).
		p.counters.SubSleeping()
		s.parked.Store(false)
		s.mu.Unlock()
		s.latch.WakeUp()
		*idle = idleState{}
		return
	}
	p.stats.sleeps.Add(1)
	s.blocked = true
	for s.blocked {
		s.cond.Wait()
	}
	s.parked.Store(false)
	s.mu.Unlock()
	s.latch.WakeUp()
	*idle = idleState{}
}

// wakeSpecific wakes worker i if it is blocked, and reports whether it did. The waker
// decrements the sleeping count (see the file comment).
func (p *Pool) wakeSpecific(i int) bool {
	s := p.workers[i].sleeper
	if !s.parked.Load() {
		return false
	}
	s.mu.Lock()
	woke := false
	if s.blocked {
		s.blocked = false
		p.counters.SubSleeping()
		s.cond.Signal()
		woke = true
	}
	s.mu.Unlock()
	if woke {
		p.stats.wakes.Add(1)
	}
	return woke
}

// wakeThreads wakes up to n blocked workers.
func (p *Pool) wakeThreads(n uint32) {
	for i := range p.workers {
		if n == 0 {
			return
		}
		if p.wakeSpecific(i) {
			n--
		}
	}
}

// newJobs is the poster's side of the protocol (Rayon's new_jobs):
// toggle the JEC so a worker between its announcement and its sleep sees the change,
// and wake sleepers only when the awake-but-idle workers cannot take the new jobs.
func (p *Pool) newJobs(n uint32, queueWasEmpty bool) {
	// The counts in the value before the toggle are the counts after it: the CAS
	// changes only the JEC.
	c := p.counters.IncrementJECIfSleepy()
	sleeping := lockfree.ExtractSleeping(c)
	if sleeping == 0 {
		return
	}
	inactive := lockfree.ExtractInactive(c)
	awakeButIdle := uint32(0)
	if inactive > sleeping {
		awakeButIdle = inactive - sleeping
	}
	var toWake uint32
	if queueWasEmpty {
		if awakeButIdle < n {
			toWake = min(n-awakeButIdle, sleeping)
		}
	} else {
		toWake = min(n, sleeping)
	}
	p.wakeThreads(toWake)
}

// fence is a full memory fence: a sequentially consistent read-modify-write. Go's
// atomics are all sequentially consistent, so the protocol's two fences are implied by the
// surrounding atomics; this makes them explicit and robust to refactoring. It only runs
// on the injection and going-to-sleep paths.
func (p *Pool) fence() { p.fenceWord.Add(1) }
