package blitzio

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// blockingPool runs blocking functions on goroutines of their own (Tokio's blocking
// pool): started on demand up to max, each retired after keepAlive without work, and a
// FIFO queue when all of them are busy. The workers never run blocking code, so a
// blocking call cannot stall the tasks queued behind it.
type blockingPool struct {
	rt        *Runtime
	max       int
	keepAlive time.Duration

	mu      sync.Mutex
	queue   []*header // FIFO of scheduled blocking tasks; head at queue[0]
	threads int       // goroutines alive
	idle    int       // goroutines waiting for work, not yet handed a token
	closed  bool
	// notify carries one token per idle goroutine woken; it is buffered to max, and
	// tokens are sent under mu, so a sender never blocks and a goroutine that times out
	// can take a token that was meant for "some idle goroutine".
	notify chan struct{}
	exited chan struct{} // closed when shut down and the last goroutine has exited
	// ids holds the goroutine ids of the pool's goroutines, so that Close called from a
	// job of this pool can tell (see callerThread). closers counts such Close calls now
	// waiting, and othersDone is closed once every goroutine left is one of them.
	ids        map[uint64]struct{}
	closers    int
	othersDone chan struct{}
}

func (p *blockingPool) init(rt *Runtime, max int, keepAlive time.Duration) {
	p.rt, p.max, p.keepAlive = rt, max, keepAlive
	p.notify = make(chan struct{}, max)
	p.exited = make(chan struct{})
	p.ids = make(map[uint64]struct{})
	p.othersDone = make(chan struct{})
}

// blockingTask is a task whose "future" is a function run once on a pool goroutine.
type blockingTask[T any] struct {
	core[T]
	f func() T
}

func (t *blockingTask[T]) poll(*Context) bool {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			t.err = newPanicError(r, false)
			return
		}
		// runtime.Goexit in f: the pool goroutine ends after the deferred calls, so
		// blockingPool.run's finish never runs. Complete the task here; work replaces
		// the goroutine.
		t.err = ErrGoexit
		t.header.finish(nil)
	}()
	f := t.f
	t.f = nil
	t.out = f()
	returned = true
	return true
}

// blockingJob marks the tasks of the blocking pool (they run on goroutines of their own,
// not on the workers).
type blockingJob interface{ isBlockingJob() }

func (t *blockingTask[T]) isBlockingJob() {}

func (t *blockingTask[T]) cancel(*Context) {
	t.f = nil
	t.err = ErrCancelled
}

func (t *blockingTask[T]) release() {
	var zero T
	t.out = zero
}

// SpawnBlocking runs f on the runtime's blocking pool and returns its handle. Use it for
// calls that block (file I/O, cgo, CPU-heavy loops): tasks must not block. Abort cancels
// f only if it has not started (the handle then reports ErrCancelled at once, even while
// every pool goroutine is busy); a running f always runs to the end and its handle keeps
// its result. Close and Shutdown wait for running jobs: one that never returns keeps
// Close from returning (give Shutdown a deadline). On a closed runtime
// the handle reports ErrCancelled. SpawnBlocking panics if s or f is nil.
func SpawnBlocking[T any](s Spawner, f func() T) JoinHandle[T] {
	if f == nil {
		panic("blitzio: SpawnBlocking called with a nil func")
	}
	rt, _ := spawnTargetOf("SpawnBlocking", s)
	t := &blockingTask[T]{f: f}
	t.state.v.Store(initialState)
	t.ownIdx = -1 // blocking tasks are tracked by the pool, not the owned list
	t.rt = rt
	t.vt = t
	rt.blocking.submit(&t.header)
	return JoinHandle[T]{c: &t.core}
}

func (p *blockingPool) submit(h *header) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		h.state.toShutdown()
		h.cancelOwned(nil)
		return
	}
	p.queue = append(p.queue, h)
	switch {
	case p.idle > 0:
		p.idle--
		p.notify <- struct{}{}
	case p.threads < p.max:
		p.threads++
		go p.work()
	}
	// Otherwise every goroutine is busy and at the cap: the job waits in the queue.
	p.mu.Unlock()
}

func (p *blockingPool) work() {
	returned := false
	defer func() {
		if !returned {
			// A job called runtime.Goexit (blockingTask.poll completed its task): this
			// goroutine is ending, so start a replacement, which takes over its place in
			// threads; without it the count would never drop and Shutdown would wait
			// for a goroutine that is gone.
			go p.work()
		}
	}()
	// Record who we are (a goroutine id costs a short stack trace, once per goroutine;
	// the pool keeps its goroutines for keepAlive, so it is paid rarely).
	id := goroutineID()
	p.mu.Lock()
	p.ids[id] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.ids, id)
		p.mu.Unlock()
	}()
	var timer *time.Timer
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			h := p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
			p.mu.Unlock()
			p.run(h)
			continue
		}
		if p.closed {
			p.exit()
			returned = true
			return
		}
		p.idle++
		p.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(p.keepAlive)
		} else {
			timer.Reset(p.keepAlive)
		}
		select {
		case <-p.notify:
			timer.Stop()
		case <-timer.C:
			p.mu.Lock()
			select {
			case <-p.notify:
				// A submitter counted us out of idle just as we timed out: take the
				// job it queued.
				p.mu.Unlock()
				continue
			default:
			}
			p.idle--
			p.exit()
			returned = true
			return
		}
	}
}

// exit retires the calling goroutine; p.mu is held and is released.
func (p *blockingPool) exit() {
	p.threads--
	if p.closed && p.threads == 0 {
		close(p.exited)
	}
	p.checkOthersLocked()
	p.mu.Unlock()
}

// checkOthersLocked closes othersDone once the pool is shut down and every goroutine
// still alive is a job blocked in Close of this runtime (p.mu held).
func (p *blockingPool) checkOthersLocked() {
	if p.closed && p.closers > 0 && p.threads <= p.closers {
		select {
		case <-p.othersDone:
		default:
			close(p.othersDone)
		}
	}
}

// callerThread reports whether the calling goroutine is one of this pool's goroutines
// (a blocking job of this runtime), and its id.
func (p *blockingPool) callerThread() bool {
	id := goroutineID()
	p.mu.Lock()
	_, ok := p.ids[id]
	p.mu.Unlock()
	return ok
}

// othersExited counts the caller, a job of this pool, as blocked in Close, and returns a
// channel closed when every pool goroutine has exited except the ones blocked in Close
// (the caller among them): a job closing its own runtime cannot wait for itself. The
// caller calls closerDone when it stops waiting.
func (p *blockingPool) othersExited() chan struct{} {
	p.mu.Lock()
	p.closers++
	p.checkOthersLocked()
	p.mu.Unlock()
	return p.othersDone
}

func (p *blockingPool) closerDone() {
	p.mu.Lock()
	p.closers--
	p.mu.Unlock()
}

// goroutineID returns the id of the calling goroutine, parsed from the first line of its
// stack trace ("goroutine 42 [running]:"). Go offers no cheaper way; callers use it only
// off the hot paths.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

func (p *blockingPool) run(h *header) {
	switch h.state.toRunning() {
	case actSkip:
		return
	case actCancel:
		h.cancelOwned(nil)
		return
	}
	h.vt.poll(nil)
	h.finish(nil)
}

// shutdown cancels queued jobs and retires idle goroutines; running jobs finish, and
// exited closes when the last goroutine is gone.
func (p *blockingPool) shutdown() {
	p.mu.Lock()
	p.closed = true
	queued := p.queue
	p.queue = nil
	for ; p.idle > 0; p.idle-- {
		p.notify <- struct{}{}
	}
	if p.threads == 0 {
		close(p.exited)
	}
	p.checkOthersLocked()
	p.mu.Unlock()
	for _, h := range queued {
		if h.state.toShutdown() {
			h.cancelOwned(nil)
		}
	}
}

// threadCount returns the number of pool goroutines alive (tests).
func (p *blockingPool) threadCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.threads
}
