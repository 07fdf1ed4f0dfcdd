package blitzio

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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

	// ioOps holds the reads and writes of Files that jobs of the pool are making now,
	// which the shutdown interrupts (see fileIO); ioClosed is set once it has, after
	// which no such call starts. Both are guarded by ioMu, apart from mu so that the
	// registration does not contend with submit.
	ioMu     sync.Mutex
	ioClosed bool
	ioOps    map[*poolFileIO]struct{}
}

func (p *blockingPool) init(rt *Runtime, max int, keepAlive time.Duration) {
	p.rt, p.max, p.keepAlive = rt, max, keepAlive
	p.notify = make(chan struct{}, max)
	p.exited = make(chan struct{})
	p.ids = make(map[uint64]struct{})
	p.othersDone = make(chan struct{})
	p.ioOps = make(map[*poolFileIO]struct{})
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
// Close from returning (give Shutdown a deadline; a File's own reads and writes of a
// pipe are interrupted instead, see Runtime.Shutdown). On a closed runtime
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
	p.interruptIO()
}

// poolFileIO is a read or write of a File's *os.File made by a job of the pool (a
// stream operation of blockingIO), registered in ioOps while it runs.
type poolFileIO struct {
	f     *os.File
	write bool
	// interrupted is set (under ioMu) when the shutdown has given f a deadline in the
	// past for this call.
	interrupted bool
}

// testHookFileIO, if set, is called by fileIO with the file before the call is
// registered (tests: to start a call while the shutdown runs).
var testHookFileIO atomic.Pointer[func(*os.File)]

// fileIO makes f.Read(buf), or f.Write(buf) if write, for a job of this pool, such that
// the runtime's shutdown can interrupt it when f's descriptor is in Go's poller. It
// reports interrupted when the call was cut short by the shutdown (then n bytes were
// transferred, 0 for a read, and err is to be ignored) or not made at all, because the
// shutdown had already begun.
//
// Why: Close and Shutdown wait for the running jobs of the pool, since a call that
// blocks cannot be taken back. But a File's read of a pipe (a child's stdout) or write
// to a full one waits for the other end, for as long as it likes, after the task that
// started it has been dropped by the shutdown: Close would wait for the child. Tokio's
// shutdown does not wait for such reads because its pipes, child streams and sockets
// are driven by the reactor (non-blocking descriptors whose readiness the driver
// polls), never by blocking-pool threads: shutting the driver down ends them. Our File
// runs them on the pool, but for a descriptor in Go's poller (anything os.File accepts
// a deadline for: os.Pipe's ends, a terminal opened by name, a non-blocking socket)
// os.File.Read and Write are not in a system call while they wait: they park in the
// netpoller, and a deadline in the past wakes them with os.ErrDeadlineExceeded. That is
// what the shutdown does to every call registered here (interruptIO): the job returns,
// its goroutine exits, and Close returns at once, as Tokio's does. A descriptor the
// poller does not manage (a regular file; a pipe, terminal or socket in blocking mode)
// refuses the deadline (os.ErrNoDeadline), or sees it only before its read(2) starts,
// and its job is waited for, as NewFile and Runtime.Shutdown document.
//
// Nothing is lost that File promises: an interrupted read took no byte from the pipe
// (the poller wakes it before it reads), so the File's next read reads again; an
// interrupted write made a short write, whose error the File's next operation reports
// (write-behind). The deadline is set under ioMu and cleared by the job once it has
// left the registry, so no deadline of ours outlives the call, and the file works on
// (from another runtime, or through File.OSFile). os.File cannot tell us a deadline the
// user set through OSFile, so an interrupted call clears that one too (documented on
// OSFile and Runtime.Shutdown).
func (p *blockingPool) fileIO(op *poolFileIO, buf []byte) (n int, err error, interrupted bool) {
	f := op.f
	if h := testHookFileIO.Load(); h != nil {
		(*h)(f)
	}
	p.ioMu.Lock()
	if p.ioClosed {
		// The shutdown began after this job was taken from the queue: the call is not
		// started, so it cannot hold the shutdown.
		p.ioMu.Unlock()
		return 0, nil, true
	}
	p.ioOps[op] = struct{}{}
	p.ioMu.Unlock()
	if op.write {
		n, err = f.Write(buf)
	} else {
		n, err = f.Read(buf)
	}
	p.ioMu.Lock()
	delete(p.ioOps, op)
	cut := op.interrupted
	p.ioMu.Unlock()
	if !cut {
		return n, err, false
	}
	setDeadline(f, op.write, time.Time{})
	// A call that ended on its own (bytes came, the file was closed) keeps its outcome.
	return n, err, errors.Is(err, os.ErrDeadlineExceeded)
}

// setDeadline sets f's write deadline if write, its read deadline otherwise.
func setDeadline(f *os.File, write bool, t time.Time) error {
	if write {
		return f.SetWriteDeadline(t)
	}
	return f.SetReadDeadline(t)
}

// interruptIO interrupts the reads and writes of Files in flight on the pool, and
// keeps any from starting later (see fileIO). The shutdown calls it once no worker
// polls any more.
func (p *blockingPool) interruptIO() {
	p.ioMu.Lock()
	defer p.ioMu.Unlock()
	p.ioClosed = true
	past := time.Unix(1, 0)
	for op := range p.ioOps {
		// Under ioMu: the job clears the deadline only after it has left ioOps, so it
		// cannot clear it before it is set. Setting a deadline does not block. It fails
		// for a descriptor outside Go's poller (os.ErrNoDeadline) and for a closed file:
		// then nothing is to be cleared either.
		op.interrupted = setDeadline(op.f, op.write, past) == nil
	}
}

// ioShutDown reports whether interruptIO has run (tests).
func (p *blockingPool) ioShutDown() bool {
	p.ioMu.Lock()
	defer p.ioMu.Unlock()
	return p.ioClosed
}

// threadCount returns the number of pool goroutines alive (tests).
func (p *blockingPool) threadCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.threads
}
