package blitzio

import (
	"io/fs"
	"os"
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
)

// defaultFileIO is BLITZIO_FILEIO=auto. A read served from the page cache costs one
// preadv2 on the worker, cheaper than a ring round trip; anything else (a page-cache
// miss, a write) goes to the ring, which needs no goroutine hop. See the fs suite of
// blitzbench for the figures behind the choice.
const defaultFileIO = fileNoWait | fileRingRead | fileRingWrite

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

// fileRefs counts the io_uring operations in flight on a File's descriptor, plus
// fileClosing once Close has begun. The kernel resolves the descriptor number when it
// takes a submission, which may be after the submitting call returned: closing the
// descriptor before that (and the number being reused by another open) would have the
// operation read or write someone else's file. So Close waits until the count drops to
// zero, and operations refuse to start once it has begun.
type fileRefs struct {
	n      atomic.Int64
	mu     sync.Mutex
	closer Waker // the Close waiting for the count, if any
}

const fileClosing = 1 << 62

// incref admits an operation; false once Close has begun.
func (r *fileRefs) incref() bool {
	if r.n.Add(1)&fileClosing != 0 {
		wakeRef(r.decref())
		return false
	}
	return true
}

// decref ends an operation and returns the waker of a Close to wake (the caller wakes
// it once it holds no lock).
func (r *fileRefs) decref() Waker {
	if r.n.Add(-1) != fileClosing {
		return Waker{}
	}
	r.mu.Lock()
	w := r.closer
	r.closer = Waker{}
	r.mu.Unlock()
	return w
}

// closeGate starts the close (no operation starts from now on) and reports whether
// the operations in flight have all completed; if not, cx's task is woken when they
// have.
//
// Lost wake-up and what prevents it: the last decref reads closer after its count
// reached fileClosing; we store closer, then read the count again. Either that read
// sees fileClosing, or the decref came after our store and takes our waker.
func (r *fileRefs) closeGate(cx *Context) bool {
	for {
		v := r.n.Load()
		if v&fileClosing != 0 || r.n.CompareAndSwap(v, v|fileClosing) {
			break
		}
	}
	if r.n.Load() == fileClosing {
		return true
	}
	r.mu.Lock()
	r.closer = cx.Waker()
	r.mu.Unlock()
	return r.n.Load() == fileClosing
}

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
