package blitzio

import (
	"sync"
	"time"
)

// blockingPool runs blocking functions on goroutines of their own (seed 003's blocking
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
}

func (p *blockingPool) init(rt *Runtime, max int, keepAlive time.Duration) {
	p.rt, p.max, p.keepAlive = rt, max, keepAlive
	p.notify = make(chan struct{}, max)
	p.exited = make(chan struct{})
}

// blockingTask is a task whose "future" is a function run once on a pool goroutine.
type blockingTask[T any] struct {
	core[T]
	f func() T
}

func (t *blockingTask[T]) poll(*Context) bool {
	defer func() {
		if r := recover(); r != nil {
			t.err = &PanicError{Value: r, Stack: stack()}
		}
	}()
	f := t.f
	t.f = nil
	t.out = f()
	return true
}

func (t *blockingTask[T]) cancel() {
	t.f = nil
	t.err = ErrCancelled
}

func (t *blockingTask[T]) release() {
	var zero T
	t.out = zero
}

// SpawnBlocking runs f on the runtime's blocking pool and returns its handle. Use it for
// calls that block (file I/O, cgo, CPU-heavy loops): tasks must not block. Abort cancels
// f only if it has not started; a running f always runs to the end. On a closed runtime
// the handle reports ErrCancelled.
func SpawnBlocking[T any](s Spawner, f func() T) JoinHandle[T] {
	rt, _ := s.spawnTarget()
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
	p.mu.Unlock()
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
