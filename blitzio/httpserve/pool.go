//go:build linux || darwin || freebsd

package httpserve

import (
	"runtime"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// handlerPool keeps parked goroutines that run handlers, so that dispatching a request
// costs a channel send to a parked goroutine instead of starting one. It is a LIFO stack:
// the most recently used goroutine (hot stack, hot cache) serves next, and the ones at
// the bottom, unused for idleWorkerTTL, are told to exit by a sweep.
//
// Measured against blitzio.SpawnBlocking (BenchmarkDispatch in this package): the pool
// is faster, so it is what the server uses; see the package documentation.
type handlerPool struct {
	maxIdle  int // set by Serve: maxIdleWorkers
	mu       sync.Mutex
	idle     []*hworker
	closed   bool
	sweeping bool
	sweep    *time.Timer
	ttl      time.Duration // how long a parked goroutine may stay unused; 0 means idleWorkerTTL (tests shorten it)
}

// job is what a pooled goroutine runs: a connection with a request in flight.
type job interface{ serve(w *hworker) }

// hworker is one pooled handler goroutine; ch hands it a connection to serve.
type hworker struct {
	ch       chan job
	lastUsed time.Time
	// cx is the Context of a read-ahead: the runtime and the task's waker of the
	// connection being served, rewritten for each busy period (a Context of its own per
	// period would be an allocation per keep-alive request). The driver keeps only the
	// waker it holds, never the Context, so reusing it for another connection is safe.
	cx blitzio.Context
	// batch and batchOff: the pipelined heads being parsed, as one string, and the
	// read-buffer offset it was copied from (see headString).
	batch    string
	batchOff int
}

const idleWorkerTTL = 10 * time.Second

func (p *handlerPool) idleTTL() time.Duration {
	if p.ttl > 0 {
		return p.ttl
	}
	return idleWorkerTTL
}

func (p *handlerPool) get() *hworker {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return w
	}
	p.mu.Unlock()
	w := &hworker{ch: make(chan job, 1)}
	go w.loop(p)
	return w
}

// maxIdleWorkers bounds the parked goroutines: enough for handlers that compute (a few
// per core); handlers that block get more goroutines while they block, and those beyond
// the bound exit when they finish instead of parking, so a burst does not leave
// thousands of parked stacks behind.
func maxIdleWorkers() int { return 4 * runtime.GOMAXPROCS(0) }

// put returns w to the stack; false tells w to exit (the server has stopped, or enough
// goroutines are parked).
func (p *handlerPool) put(w *hworker) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.maxIdle {
		return false
	}
	w.lastUsed = now
	p.idle = append(p.idle, w)
	if !p.sweeping {
		p.sweeping = true
		if p.sweep == nil {
			p.sweep = time.AfterFunc(p.idleTTL(), p.sweepIdle)
		} else {
			p.sweep.Reset(p.idleTTL())
		}
	}
	return true
}

// sweepIdle tells the goroutines idle for longer than idleWorkerTTL to exit: they are
// at the bottom of the stack.
func (p *handlerPool) sweepIdle() {
	cutoff := time.Now().Add(-p.idleTTL())
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.idle) && p.idle[n].lastUsed.Before(cutoff) {
		close(p.idle[n].ch)
		n++
	}
	if n > 0 {
		k := copy(p.idle, p.idle[n:])
		clear(p.idle[k:])
		p.idle = p.idle[:k]
	}
	if len(p.idle) > 0 && !p.closed {
		p.sweep.Reset(p.idleTTL())
	} else {
		p.sweeping = false
	}
}

// closeIdle ends every parked goroutine; busy ones exit when their request ends.
func (p *handlerPool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		close(w.ch)
	}
	clear(p.idle)
	p.idle = nil
	if p.sweep != nil {
		p.sweep.Stop()
	}
}

func (w *hworker) loop(p *handlerPool) {
	for j := range w.ch {
		j.serve(w)
		if !p.put(w) {
			return
		}
	}
}

// parker parks a goroutine that waits for a socket: its Context's waker sends on ch.
// Parkers are pooled, so a wait allocates nothing in the steady state.
type parker struct {
	ch chan struct{}
	cx *blitzio.Context
}

var parkers = sync.Pool{New: func() any {
	p := &parker{ch: make(chan struct{}, 1)}
	p.cx = blitzio.NewContext(nil, blitzio.WakerFunc(p.wake))
	return p
}}

func (p *parker) wake() {
	select {
	case p.ch <- struct{}{}:
	default:
	}
}

func getParker() *parker { return parkers.Get().(*parker) }

func putParker(p *parker) {
	select {
	case <-p.ch:
	default:
	}
	parkers.Put(p)
}
