package blitzio

import (
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// fileIO says which ways a File may read and write. The environment variable
// BLITZIO_FILEIO, read when the File is made, picks one: "ring" (io_uring operations
// only), "pool" (the blocking pool only), "nowait" (a non-blocking read on the worker
// first, then the blocking pool), or "auto" (unset: the measured best, see
// defaultFileIO). The io_uring ways apply only where the runtime's driver has them
// (Backend io_uring on Linux 5.6 or later); elsewhere they fall back to the pool.
type fileIO uint8

const (
	// fileNoWait tries preadv2(RWF_NOWAIT) on the worker before anything else.
	fileNoWait fileIO = 1 << iota
	// fileRingRead and fileRingWrite send reads and writes through the io_uring.
	fileRingRead
	fileRingWrite
	// filePlainRead lets a positioned read of a file whose reads have been page-cache
	// hits use a plain pread instead of preadv2(RWF_NOWAIT) (see readNoWait).
	filePlainRead
)

// defaultFileIO is BLITZIO_FILEIO=auto. A read served from the page cache costs one
// preadv2 on the worker, cheaper than a ring round trip; anything else (a page-cache
// miss, a write) goes to the ring, which needs no goroutine hop. See the fs suite of
// blitzbench for the figures behind the choice.
const defaultFileIO = fileNoWait | fileRingRead | fileRingWrite | filePlainRead

// fileIOEnv names the environment variable read by fileIOFromEnv.
const fileIOEnv = "BLITZIO_FILEIO"

func fileIOFromEnv() fileIO {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(fileIOEnv))) {
	case "ring":
		return fileRingRead | fileRingWrite
	case "pool":
		return 0
	case "nowait":
		return fileNoWait
	}
	return defaultFileIO
}

// errFileClosed is what an operation started after Close fails with (inside an
// *fs.PathError, as package os reports it).
var errFileClosed = os.ErrClosed

// fileRefs counts the operations that use a File's descriptor number directly: the
// io_uring operations in flight, and the worker's non-blocking reads (readNoWait) while
// their system call runs. The kernel resolves the descriptor number when it takes a
// submission, which may be after the submitting call returned, and a read on the worker
// passes the number without os.File's own reference count: closing the descriptor
// before they are done (and the number being reused by another open) would have them
// read or write someone else's file. So Close sets closing and waits until the count
// drops to zero, and operations refuse to start once closing is set.
//
// The count is split in shards, each on its own cache line: base for the ring's
// operations and for callers off a worker, and one per worker (modulo the shard count)
// for the worker's reads. A page-cache read takes about a microsecond; with one shared
// count, its increment and decrement moved the count's cache line between the cores
// reading the same file on every read. An operation increments and decrements the same
// shard, so every shard is the count of the operations in flight on it, never negative.
//
// The protocol, and the races it closes:
//   - An operation adds one to its shard, then reads closing; if set, it takes the one
//     back and does not start. Close stores closing, then sums the shards. These are
//     sequentially consistent, so an operation either sees closing or is seen by the
//     sum (no operation starts unseen after Close checked the count).
//   - The sum is not a snapshot: shards are read one by one. A shard read as zero has no
//     operation that started before closing was set (any such one is in flight until it
//     decrements, and a later one sees closing); an operation starting after it was read
//     sees closing and backs off. So a zero sum means no operation is in flight, or will
//     be: one that incremented after closing is about to back off without using the fd.
//   - Lost wake-up: an operation that brings its shard to zero while closing is set sums
//     the shards and, on zero, takes the stored closer. Close stores its waker, then
//     sums again: either that sum sees every decrement, or a decrement came after the
//     store and its own sum takes the waker. Two decrements may both wake it: harmless.
type fileRefs struct {
	base atomic.Int64
	// shards, if made (makeShards), spread the workers' reads; nil: all use base.
	shards  []refShard
	closing atomic.Bool
	mu      sync.Mutex
	closer  Waker // the Close waiting for the count, if any
}

// refShard is one shard of a fileRefs. The shards are allocated together, 128 bytes
// each (a size class aligned to it): every count alone on its pair of cache lines
// (adjacent-line prefetch pairs lines on many x86 parts).
type refShard struct {
	n atomic.Int64
	_ [120]byte
}

// maxRefShards caps the shards of a File (workers beyond share them): 1 KiB per File at
// most, so that a program holding thousands of files open on a many-core machine does
// not pay a cache line pair per core for each.
const maxRefShards = 8

// makeShards gives r one shard per worker of a runtime of GOMAXPROCS workers, rounded up
// to a power of two (at most maxRefShards). Called before r is shared.
func (r *fileRefs) makeShards() {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxRefShards {
		n <<= 1
	}
	if n > 1 {
		r.shards = make([]refShard, n)
	}
}

// shardFor returns the shard for operations started by cx's worker: its own when the
// file has shards and cx is a worker's, base otherwise.
func (r *fileRefs) shardFor(cx *Context) *atomic.Int64 {
	if cx != nil && cx.w != nil && len(r.shards) > 0 {
		return &r.shards[cx.w.id&(len(r.shards)-1)].n
	}
	return &r.base
}

// incref admits an operation counted in base; false once Close has begun.
func (r *fileRefs) incref() bool { return r.increfIn(&r.base) }

// decref ends an operation counted in base and returns the waker of a Close to wake
// (the caller wakes it once it holds no lock).
func (r *fileRefs) decref() Waker { return r.decrefIn(&r.base) }

// increfIn admits an operation counted in shard s (of r); false once Close has begun.
func (r *fileRefs) increfIn(s *atomic.Int64) bool {
	s.Add(1)
	if r.closing.Load() {
		wakeRef(r.decrefIn(s))
		return false
	}
	return true
}

// decrefIn ends an operation counted in shard s (the one its increfIn used) and returns
// the waker of a Close to wake, if this was the last operation in flight.
func (r *fileRefs) decrefIn(s *atomic.Int64) Waker {
	if s.Add(-1) != 0 || !r.closing.Load() || r.total() != 0 {
		return Waker{}
	}
	r.mu.Lock()
	w := r.closer
	r.closer = Waker{}
	r.mu.Unlock()
	return w
}

// total sums the shards (see fileRefs for what a zero sum means).
func (r *fileRefs) total() int64 {
	n := r.base.Load()
	for i := range r.shards {
		n += r.shards[i].n.Load()
	}
	return n
}

// closeGate starts the close (no operation starts from now on) and reports whether
// the operations in flight have all completed; if not, cx's task is woken when they
// have (see fileRefs for the lost wake-up this avoids).
func (r *fileRefs) closeGate(cx *Context) bool {
	r.closing.Store(true)
	if r.total() == 0 {
		return true
	}
	if h := closeGateHook.Load(); h != nil {
		(*h)(r)
	}
	r.mu.Lock()
	r.closer = cx.Waker()
	r.mu.Unlock()
	return r.total() == 0
}

// closeGateHook, set by tests only, runs in closeGate between its first look at the count
// and the store of its waker: the window a last operation's decrement may fall into.
var closeGateHook atomic.Pointer[func(*fileRefs)]

// pathErr puts a ring operation's error in package os's form.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// wakeRef wakes w unless it is the zero Waker (through wakeAll: a waker that panics is
// reported, not thrown at the caller).
func wakeRef(w Waker) {
	if !w.IsZero() {
		wakeAll([]Waker{w})
	}
}
