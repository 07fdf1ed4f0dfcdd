package blitz

import (
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
)

// iter.Seq interop, in the manner of Rayon's par_bridge: a sequence is pulled sequentially
// (it is not safe to call concurrently), batched, and the batches are processed by the
// workers.
//
// No job of the bridge ever blocks. A job that waits on a channel (a consumer loop taking
// batches until the sequence ends) is a trap in a work-stealing pool: a worker that waits in
// a join, say inside f because f runs a parallel loop on the same pool, steals such a job
// and runs it on top of its own stack, so the f below it cannot return until the whole
// sequence ends; MapSeq, which yields in order and bounds its read-ahead, then waits
// forever for that f's batch. So every batch gets its own short job (Pool.Go) that takes
// at most one batch from a queue without waiting, runs f on it and returns. Only the
// caller's goroutine, which pulls the sequence, ever waits, and before it waits it runs
// the queued batches itself: it never waits for a batch that nobody has started, so it
// also finishes when it is itself a pool worker, or the only one.

const (
	seqBatch       = 256 // default elements per batch (WithGrain overrides)
	seqInflightPer = 4   // batches in flight per worker: enough to keep workers busy
	// seqBatchCap is the most a batch preallocates: a huge WithGrain (up to math.MaxInt)
	// must not allocate its whole size up front; bigger batches grow by append.
	seqBatchCap = 4096
)

// errSeqGoexit is the panic of ForEachSeq and MapSeq when f called runtime.Goexit on a
// pool worker: the batch it was running never finished. It wraps ErrGoexit, so that the
// one test the rest of the package documents for a Goexit that reached the caller,
// errors.Is(err, ErrGoexit), holds for the bridges too.
var errSeqGoexit = fmt.Errorf("blitz: ForEachSeq/MapSeq: f called runtime.Goexit on a pool worker; its batch was abandoned: %w", ErrGoexit)

// seqBridge hands batches of type B from the caller's goroutine to the pool.
//
// unfinished counts the batches queued or running; queue holds those nobody has taken
// yet. A batch is finished when its run returns, whether it ran f, skipped it after a
// failure, or was drained by the caller. The first failure (a panic in f, Goexit, a pool
// that refuses jobs) is kept in failure and closes quit: the runners stop calling f, the
// caller stops pulling, drains the queue, waits for the running batches and re-raises it.
type seqBridge[B any] struct {
	pool       *Pool
	work       func(b B)
	queue      chan B
	unfinished atomic.Int64
	// progress has room for one token: a finishing batch leaves one (without blocking) so
	// that a caller blocked in wait rechecks unfinished.
	progress chan struct{}
	quit     chan struct{}
	quitOnce sync.Once
	failure  any // written once, before quit is closed
}

func newSeqBridge[B any](p *Pool, inflight int, work func(b B)) *seqBridge[B] {
	return &seqBridge[B]{
		pool:     p,
		work:     work,
		queue:    make(chan B, inflight),
		progress: make(chan struct{}, 1),
		quit:     make(chan struct{}),
	}
}

// fail records the first failure and closes quit.
func (br *seqBridge[B]) fail(r any) {
	br.quitOnce.Do(func() {
		br.failure = r
		close(br.quit)
	})
}

// stop closes quit without a failure (the loop over MapSeq's result ended early).
func (br *seqBridge[B]) stop() { br.fail(nil) }

func (br *seqBridge[B]) stopped() bool {
	select {
	case <-br.quit:
		return true
	default:
		return false
	}
}

// run runs work on one batch (unless the bridge has stopped) and marks it finished. A panic
// or Goexit in work is recorded as the bridge's failure; a panic is recovered here, so it
// never reaches the pool (a Go job's panic would crash the program) or, when the caller
// runs the batch itself, unwinds the caller before the other batches are waited for.
func (br *seqBridge[B]) run(b B) {
	normal := false
	defer func() {
		if !normal {
			if r := recover(); r != nil {
				br.fail(wrapPanic(r))
			} else {
				br.fail(errSeqGoexit) // runtime.Goexit: nothing to recover
			}
		}
		br.finish()
	}()
	if !br.stopped() {
		br.work(b)
	}
	normal = true
}

func (br *seqBridge[B]) finish() {
	br.unfinished.Add(-1)
	select {
	case br.progress <- struct{}{}:
	default: // a token is already there: the waiter will recheck anyway
	}
}

// runQueued takes one queued batch, if there is one, and runs it on the calling goroutine.
// It never waits. It is the whole of every pool job of the bridge.
func (br *seqBridge[B]) runQueued() bool {
	select {
	case b := <-br.queue:
		br.run(b)
		return true
	default:
		return false
	}
}

// send queues b and starts a job for it. When the queue is full the caller runs queued
// batches itself until there is room. It reports false if the bridge has stopped.
func (br *seqBridge[B]) send(b B) bool {
	// Counted before it is queued (a job may take and finish it at once), and uncounted
	// if it never is: the bridge stopped, or a batch run here to make room ended this
	// goroutine (runtime.Goexit in f), which the caller's deferred drain then waits out.
	br.unfinished.Add(1)
	queued := false
	defer func() {
		if !queued {
			br.unfinished.Add(-1)
		}
	}()
	for !br.stopped() {
		select {
		case br.queue <- b:
			queued = true
			br.spawn()
			return true
		default:
			br.runQueued()
		}
	}
	return false
}

// spawn starts one job that runs one queued batch, if any is left when it starts. A pool
// that refuses the job (closed) is a failure of the bridge, like a panic.
func (br *seqBridge[B]) spawn() {
	defer func() {
		if r := recover(); r != nil {
			br.fail(r)
		}
	}()
	br.pool.Go(func(*Task) { br.runQueued() })
}

// helpOrWait runs one queued batch on the caller's goroutine or, if none is queued, waits
// until some batch finishes or the bridge stops. The batches it waits for are running on
// other goroutines, so they finish without the caller's help.
func (br *seqBridge[B]) helpOrWait() {
	if br.runQueued() {
		return
	}
	select {
	case <-br.progress:
	case <-br.quit:
	}
}

// drain waits until every batch has finished: queued batches are run (or skipped, after a
// stop) on the caller's goroutine, running ones are waited for.
func (br *seqBridge[B]) drain() {
	for br.unfinished.Load() > 0 {
		if br.runQueued() {
			continue
		}
		<-br.progress
	}
}

// close stops the bridge (unless it finished normally), waits for every batch and
// re-raises the first failure.
func (br *seqBridge[B]) close(stop bool) {
	if stop {
		br.stop()
	}
	br.drain()
	if br.stopped() && br.failure != nil { // failure is written before quit is closed
		panic(br.failure)
	}
}

// seqBatchSize resolves the pool and the batch size from opts, and panics with
// ErrClosed if the pool is closed (see seqOptions).
func seqBatchSize(opts []Option) (*Pool, int) {
	p, b := seqOptions(opts)
	p.checkOpen()
	return p, b
}

// seqOptions resolves the pool and the batch size from opts without looking at whether
// the pool is open: MapSeq only builds a sequence, and it is the loop over it that runs
// on the pool, so the loop is what panics with ErrClosed (on any sequence, an empty one
// included, as ForEachSeq does), not the call that builds it.
func seqOptions(opts []Option) (*Pool, int) {
	var p *Pool
	b := seqBatch
	for _, o := range opts {
		if o.pool != nil {
			p = o.pool
		}
		if o.grain > 0 {
			b = o.grain
		}
	}
	if p == nil {
		p = Default()
	}
	return p, b
}

// ForEachSeq calls f on every element of seq in parallel and returns when all calls have
// returned. seq is iterated on the caller's goroutine (never concurrently, so any sequence
// works), in batches of WithGrain elements (default 256) that the pool's workers take as
// they become free; while the caller waits for room or for the last batches, it runs
// queued batches itself. f may itself use the pool (a parallel loop, a sort, another
// ForEachSeq or MapSeq): no job of ForEachSeq ever blocks, so that cannot deadlock.
//
// A panic in f stops the iteration of seq (its loop sees a break) and the remaining
// batches, and re-raises in the caller (as *PanicError with the stack of the goroutine
// that panicked) once the batches already running have returned. An f that calls
// runtime.Goexit on a pool worker makes ForEachSeq panic with an error that says so
// and wraps ErrGoexit (errors.Is(err, ErrGoexit) holds, as for the other functions); on
// the caller's goroutine Goexit ends that goroutine, as it would in a plain loop, once the
// batches running on the workers have returned (as Join is left only after its stolen
// half). A closed pool makes ForEachSeq panic with ErrClosed.
func ForEachSeq[T any](seq iter.Seq[T], f func(T), opts ...Option) {
	if seq == nil {
		parNil("ForEachSeq", "seq")
	}
	if f == nil {
		parNil("ForEachSeq", "f")
	}
	p, bs := seqBatchSize(opts)
	br := newSeqBridge(p, seqInflightPer*p.NumWorkers(), func(b []T) {
		for _, v := range b {
			f(v)
		}
	})
	finished := false
	defer func() {
		// seq panicked or called runtime.Goexit, or so did f in a batch run on this
		// goroutine (in send, or in close's drain at the end): stop and wait for the
		// batches running elsewhere so none runs f after ForEachSeq is gone, and let the
		// panic or Goexit continue.
		if !finished {
			br.stop()
			br.drain()
		}
	}()
	batch := make([]T, 0, min(bs, seqBatchCap))
	for v := range seq {
		batch = append(batch, v)
		if len(batch) == bs {
			if !br.send(batch) {
				break
			}
			batch = make([]T, 0, min(bs, seqBatchCap))
		}
	}
	if len(batch) > 0 {
		br.send(batch)
	}
	// finished only once close has drained the bridge: close runs queued batches on this
	// goroutine, and an f there that calls runtime.Goexit must still wait for the others.
	br.close(false)
	finished = true
}

// seqJob is one batch of MapSeq: its position in the input and its inputs; out receives
// the results.
type seqJob[T, U any] struct {
	k   int
	in  []T
	out chan<- seqResult[U]
}

type seqResult[U any] struct {
	k   int
	out []U
}

// MapSeq returns a sequence of f(v) for every element v of seq, in the order of seq, with f
// computed in parallel. Iterating the result pulls seq on the caller's goroutine (through
// iter.Pull, never concurrently), sends batches of WithGrain elements (default 256) to the
// pool, and yields the results on the caller's goroutine in input order, keeping at most
// four batches per worker in flight; while the caller waits for the next result it runs
// queued batches itself. f may itself use the pool (a parallel loop, a sort, another
// MapSeq): no job of MapSeq ever blocks, so that cannot deadlock.
//
// When the loop over the result stops early (break, return), the remaining batches are
// dropped, the batches already running are waited for (no f runs after the loop is over),
// and seq is stopped; a panic in f stops the work the same way and re-raises in the loop
// (as *PanicError). An f that calls runtime.Goexit on a pool worker makes the loop panic
// with an error that says so and wraps ErrGoexit; on the goroutine of the loop it ends
// that goroutine, once the batches running on the workers have returned. A closed pool
// makes the loop panic with ErrClosed (MapSeq itself, which only builds the sequence,
// does not look at the pool).
func MapSeq[T, U any](seq iter.Seq[T], f func(T) U, opts ...Option) iter.Seq[U] {
	if seq == nil {
		parNil("MapSeq", "seq")
	}
	if f == nil {
		parNil("MapSeq", "f")
	}
	p, bs := seqOptions(opts)
	return func(yield func(U) bool) {
		p.checkOpen() // a closed pool makes the loop panic, whatever seq holds
		next, stopSeq := iter.Pull(seq)
		defer stopSeq()
		inflight := seqInflightPer * p.NumWorkers()
		// results has room for every batch in flight, so a batch never blocks on it.
		results := make(chan seqResult[U], inflight)
		br := newSeqBridge(p, inflight, func(j seqJob[T, U]) {
			out := make([]U, len(j.in))
			for i, v := range j.in {
				out[i] = f(v)
			}
			j.out <- seqResult[U]{j.k, out}
		})
		finished := false
		defer func() {
			// Early exit or panic from yield or seq: stop the batches and wait for the
			// running ones, so no goroutine keeps running f after the loop is over.
			if !finished {
				br.stop()
				br.drain()
			}
		}()
		// sent-want batches are in flight or finished but waiting for an earlier one:
		// bounding that (not just the ones in flight) bounds the read-ahead and the
		// memory held in pending when one batch is slow. It also bounds the queue and
		// results, so send never has to run a batch itself to make room.
		pending := map[int][]U{}
		sent, want := 0, 0
		eof := false
		for {
			for !eof && sent-want < inflight {
				in := make([]T, 0, min(bs, seqBatchCap))
				for len(in) < bs {
					v, ok := next()
					if !ok {
						eof = true
						break
					}
					in = append(in, v)
				}
				if len(in) == 0 {
					break
				}
				if !br.send(seqJob[T, U]{sent, in, results}) {
					break
				}
				sent++
			}
			if want == sent || br.stopped() {
				break
			}
			// Wait for batch want: take the results that are in, run a queued batch
			// here, or wait for a running one.
			select {
			case r := <-results:
				pending[r.k] = r.out
			default:
				br.helpOrWait()
				continue
			}
			for out, ok := pending[want]; ok; out, ok = pending[want] {
				delete(pending, want)
				want++
				for _, u := range out {
					if !yield(u) {
						return
					}
				}
			}
		}
		// As in ForEachSeq, finished only once close has drained the bridge.
		br.close(want != sent)
		finished = true
	}
}
