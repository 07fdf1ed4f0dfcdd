package blitz

import (
	"iter"
	"sync"
)

// iter.Seq interop, in the manner of Rayon's par_bridge: a sequence is pulled sequentially
// (it is not safe to call concurrently), batched, and the batches are processed by the
// workers.

const (
	seqBatch       = 256 // default elements per batch (WithGrain overrides)
	seqInflightPer = 4   // batches in flight per worker: enough to keep workers busy
)

// seqBridge runs consumers on every worker of the pool, in the background. Each consumer
// takes batches from jobs until the channel is closed or quit is closed. A consumer that
// panics closes quit (the fuse) so that the producer stops pulling and the other consumers
// stop taking batches; the panic itself is recorded and re-raised by wait in the caller.
type seqBridge[B any] struct {
	jobs     chan B
	quit     chan struct{}
	quitOnce sync.Once
	done     chan struct{}
	panicked any
}

func newSeqBridge[B any](p *Pool, inflight int, consume func(b B)) *seqBridge[B] {
	br := &seqBridge[B]{
		jobs: make(chan B, inflight),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	w := p.NumWorkers()
	go func() {
		defer close(br.done)
		defer func() {
			if r := recover(); r != nil {
				br.panicked = r
				br.stop()
			}
		}()
		p.Call(func(t *Task) { seqConsumers(t, w, br, consume) })
	}()
	return br
}

func (br *seqBridge[B]) stop() { br.quitOnce.Do(func() { close(br.quit) }) }

// seqConsumers forks n consumer loops.
func seqConsumers[B any](t *Task, n int, br *seqBridge[B], consume func(b B)) {
	if n > 1 {
		Join(t,
			func(t *Task) { seqConsumers(t, n/2, br, consume) },
			func(t *Task) { seqConsumers(t, n-n/2, br, consume) })
		return
	}
	ok := false
	defer func() {
		if !ok {
			br.stop() // fuse: a panicking consumer stops the producer and its siblings
		}
	}()
	for {
		select {
		case <-br.quit:
			ok = true
			return
		case b, more := <-br.jobs:
			if !more {
				ok = true
				return
			}
			consume(b)
		}
	}
}

// send hands b to the consumers; it reports false if they have stopped.
func (br *seqBridge[B]) send(b B) bool {
	select {
	case br.jobs <- b:
		return true
	case <-br.quit:
		return false
	}
}

// wait closes the job channel, waits for the consumers and re-raises their panic.
func (br *seqBridge[B]) wait() {
	close(br.jobs)
	<-br.done
	if br.panicked != nil {
		panic(br.panicked)
	}
}

// seqBatchSize resolves the batch size from opts.
func seqBatchSize(opts []Option) (*Pool, int) {
	c := parResolve(0, 1, opts)
	b := seqBatch
	for _, o := range opts {
		if o.grain > 0 {
			b = o.grain
		}
	}
	return c.pool, b
}

// ForEachSeq calls f on every element of seq in parallel and returns when all calls have
// returned. seq is iterated on the caller's goroutine (never concurrently, so any sequence
// works), in batches of WithGrain elements (default 256) that the pool's workers take as
// they become free. A panic in f stops the iteration of seq (its loop sees a break) and the
// remaining batches, and re-raises in the caller (as *PanicError with the worker's stack).
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
		// seq itself panicked (on this goroutine): stop and wait for the consumers so
		// none is left blocked on the job channel, and let the panic continue.
		if !finished {
			br.stop()
			close(br.jobs)
			<-br.done
		}
	}()
	batch := make([]T, 0, bs)
	for v := range seq {
		batch = append(batch, v)
		if len(batch) == bs {
			if !br.send(batch) {
				break
			}
			batch = make([]T, 0, bs)
		}
	}
	if len(batch) > 0 {
		br.send(batch)
	}
	finished = true
	br.wait()
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
// four batches per worker in flight. When the loop over the result stops early (break,
// return), the remaining batches are dropped, the workers stop taking new ones, and seq is
// stopped; a panic in f stops the work the same way and re-raises in the loop.
func MapSeq[T, U any](seq iter.Seq[T], f func(T) U, opts ...Option) iter.Seq[U] {
	if seq == nil {
		parNil("MapSeq", "seq")
	}
	if f == nil {
		parNil("MapSeq", "f")
	}
	p, bs := seqBatchSize(opts)
	return func(yield func(U) bool) {
		next, stopSeq := iter.Pull(seq)
		defer stopSeq()
		inflight := seqInflightPer * p.NumWorkers()
		// results has room for every batch in flight, so a worker never blocks on it.
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
			// Early exit or panic from yield: stop the workers and wait for them, so no
			// goroutine keeps running f after the loop is over.
			if !finished {
				br.stop()
				close(br.jobs)
				<-br.done
			}
		}()
		// sent-want batches are in flight or finished but waiting for an earlier one:
		// bounding that (not just the ones in flight) bounds the read-ahead and the
		// memory held in pending when one batch is slow.
		pending := map[int][]U{}
		sent, want, active := 0, 0, 0
		eof := false
		for {
			for !eof && sent-want < inflight {
				in := make([]T, 0, bs)
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
				active++
			}
			if active == 0 {
				break
			}
			select {
			case r := <-results:
				active--
				pending[r.k] = r.out
			case <-br.quit:
				// A consumer panicked: collect the panic and re-raise it here.
				finished = true
				br.wait()
				return
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
		finished = true
		br.wait()
	}
}
