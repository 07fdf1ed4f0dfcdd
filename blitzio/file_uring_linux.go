package blitzio

import (
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
	"golang.org/x/sys/unix"
)

// ringFiles is the I/O driver's table of file reads and writes in flight on its
// io_uring (IORING_OP_READ and IORING_OP_WRITE): the completion-based path of File, with
// no hop to the blocking pool.
//
// Protocol. A future starts an operation with start: the driver takes a record
// (ringOp) from the table, and the submission's user_data token names the record's
// index and generation. The SQE waits in the ring's queue for the driver's next poll,
// which hands every queued SQE to the kernel in one io_uring_enter (a page-cache read
// completes during that call, and the same poll reaps it); only when a worker is
// blocked in the ring already, which would not see a new submission, does start submit
// at once. The completion reaches ioDriver.turn as an event with the token; completeOp
// finds the record, stores the result (or submits the rest of a short transfer), and
// the turn's caller wakes the waiting task.
//
// Ownership. The record owns the memory the kernel reads or writes: a read goes into
// the record's buffer, never into the caller's slice, and is copied out when the future
// completes; a write's bytes are the future's own copy. A future dropped while its
// operation is in flight marks the record dropped and asks the kernel to cancel
// (IORING_OP_ASYNC_CANCEL); the record, and the memory the kernel may still be writing,
// stay the driver's until the operation's last completion arrives, and only then go
// back to the table. So Drop returns at once, and the caller's buffer is never written
// after it.
type ringFiles struct {
	fc poller.FileCompleter

	mu     sync.Mutex
	ops    []*ringOp // by index; records are reused, their generation moves on
	free   []uint32
	closed bool // the ring is closed: no record is handed out again
}

func newRingFiles(fc poller.FileCompleter) *ringFiles { return &ringFiles{fc: fc} }

// ringOp states.
const (
	ringIdle    uint8 = iota // in the free list
	ringPending              // the kernel has (or will have) the operation
	ringDone                 // completed; the future has not taken the result yet
	ringDropped              // the future was dropped while pending: freed on completion
)

// ringMaxKeep is the largest buffer a record keeps for reuse; a larger read gets a
// buffer of its own.
const ringMaxKeep = 1 << 20

// ringOp is one file operation the driver owns. Fields after mu are guarded by it.
type ringOp struct {
	rf  *ringFiles
	idx uint32
	gen uint32 // guarded by rf.mu; moves on when the record is freed

	mu    sync.Mutex
	state uint8
	write bool
	// full asks for the whole buffer: a short transfer is continued (ReadAt, WriteAt
	// and stream writes); a stream read reports the first count, as read(2) does.
	full bool
	fd   int
	off  int64 // offset of the next transfer; -1: the file position
	buf  []byte
	mem  []byte // the record's own buffer, reused by reads
	n    int    // bytes transferred so far
	err  error  // a syscall.Errno from the kernel, or why the ring could not go on
	// waker and others are the tasks to wake on completion. One operation may be
	// awaited by several tasks: a File's stream operation in flight is settled by
	// whichever of its users polls first (a writer's Flush, another task's Stat or
	// Close), so every distinct waiter is kept, as a JoinHandle keeps its awaiters;
	// keeping only the last one would leave the others asleep for good. The first
	// waiter, the common (and ReadAt's only) case, needs no allocation; others keeps
	// its capacity when the record is reused, its entries cleared.
	waker  Waker
	others []Waker
	refs   *fileRefs
	drv    *ioDriver
}

func (op *ringOp) token() uint64 { return uint64(op.gen)<<32 | uint64(op.idx) }

// fileRing returns the ring file operations of cx's runtime, or nil when it has none
// (epoll backend, a kernel without IORING_OP_READ, a hand-made Context).
func fileRing(cx *Context) *ringFiles {
	if cx == nil || cx.rt == nil {
		return nil
	}
	if u, ok := cx.rt.io.p.(uringReadiness); ok {
		return u.files
	}
	return nil
}

// start submits a read (write false) or a write of buf at off (-1: the file position)
// on fd. For a read, buf nil means "n bytes into the record's own buffer" (read them
// with ringOp.bytes before release). refs is the file's reference count, held until the
// operation's last completion so that the fd is not closed (and its number reused)
// under the kernel. It fails with os.ErrClosed when the file is closing, and with the
// ring's error when the submission cannot be queued (the caller then uses the
// blocking pool).
func (rf *ringFiles) start(d *ioDriver, refs *fileRefs, fd int, write, full bool, buf []byte, n int, off int64) (*ringOp, error) {
	if !refs.incref() {
		return nil, errFileClosed
	}
	rf.mu.Lock()
	if rf.closed {
		rf.mu.Unlock()
		wakeRef(refs.decref())
		return nil, errDriverClosed
	}
	var op *ringOp
	if k := len(rf.free); k > 0 {
		op = rf.ops[rf.free[k-1]]
		rf.free = rf.free[:k-1]
	} else {
		op = &ringOp{rf: rf, idx: uint32(len(rf.ops)), gen: 1}
		rf.ops = append(rf.ops, op)
	}
	tok := op.token()
	rf.mu.Unlock()

	if buf == nil {
		if cap(op.mem) < n {
			op.mem = make([]byte, n)
		}
		buf = op.mem[:n]
	}
	// No other goroutine can see op before the submission below publishes its token;
	// the lock orders these writes before completeOp's reads all the same.
	op.mu.Lock()
	op.state, op.write, op.full, op.fd, op.off = ringPending, write, full, fd, off
	op.buf, op.n, op.err, op.refs, op.drv = buf, 0, nil, refs, d
	d.addLive() // the driver polls while operations are in flight
	err := op.submitLocked(tok)
	op.mu.Unlock()
	if err != nil {
		d.live.Add(-1)
		op.mu.Lock()
		op.state = ringIdle
		op.buf, op.refs, op.drv = nil, nil, nil
		op.mu.Unlock()
		rf.put(op)
		wakeRef(refs.decref())
		return nil, err
	}
	rf.kick(d)
	return op, nil
}

// submitLocked queues the transfer of op.buf[op.n:]. Called with op.mu held.
func (op *ringOp) submitLocked(tok uint64) error {
	p := op.buf[op.n:]
	if op.write {
		return op.rf.fc.WriteAt(op.fd, tok, p, op.off)
	}
	return op.rf.fc.ReadAt(op.fd, tok, p, op.off)
}

// kick hands queued submissions to the kernel now if a worker is blocked in the ring:
// its io_uring_enter took the queue as it was when it started, and would sleep on ours.
// Otherwise the next poll (a worker between tasks, or one about to park) submits them
// with whatever else is queued. The order closes the race with a worker starting to
// park: it publishes polling before its Poll drains the queue, and we read polling
// after queueing, so either it sees our SQE or we see it polling.
func (rf *ringFiles) kick(d *ioDriver) {
	if d.polling.Load() >= 0 {
		rf.fc.Flush()
	}
}

// put returns a record to the free list with a new generation (a completion still
// carrying the old token would not match it).
func (rf *ringFiles) put(op *ringOp) {
	rf.mu.Lock()
	op.gen++
	if op.gen == 0 {
		op.gen = 1
	}
	if cap(op.mem) > ringMaxKeep {
		op.mem = nil
	}
	if !rf.closed {
		rf.free = append(rf.free, op.idx)
	}
	rf.mu.Unlock()
}

// poll reports the operation's outcome once it completed; otherwise it adds cx's waker
// to the operation's waiters (unless it is there already) and reports false.
func (op *ringOp) poll(cx *Context) (n int, err error, done bool) {
	op.mu.Lock()
	if op.state == ringDone {
		n, err = op.n, op.err
		op.mu.Unlock()
		return n, err, true
	}
	op.addWaiterLocked(cx.Waker())
	op.mu.Unlock()
	return 0, nil, false
}

// addWaiterLocked adds w to the tasks to wake on completion, unless one of them is w's
// task already. Called with op.mu held.
func (op *ringOp) addWaiterLocked(w Waker) {
	if op.waker.IsZero() || op.waker.WillWake(w) {
		op.waker = w
		return
	}
	for i := range op.others {
		if op.others[i].WillWake(w) {
			op.others[i] = w
			return
		}
	}
	op.others = append(op.others, w)
}

// takeWakersLocked appends the operation's waiters to buf and forgets them. Called with
// op.mu held.
func (op *ringOp) takeWakersLocked(buf []Waker) []Waker {
	if !op.waker.IsZero() {
		buf = append(buf, op.waker)
		op.waker = Waker{}
	}
	if len(op.others) > 0 {
		buf = append(buf, op.others...)
		op.clearOthersLocked()
	}
	return buf
}

// clearOthersLocked forgets the waiters beyond the first, keeping the slice's capacity
// (a record is reused) but not the tasks it pointed at. Called with op.mu held.
func (op *ringOp) clearOthersLocked() {
	clear(op.others)
	op.others = op.others[:0]
}

// bytes returns the bytes a completed read brought in (valid until release).
func (op *ringOp) bytes() []byte { return op.buf[:op.n] }

// release gives a completed operation's record back to the driver.
func (op *ringOp) release() {
	op.mu.Lock()
	op.state = ringIdle
	op.buf, op.err, op.waker, op.refs, op.drv = nil, nil, Waker{}, nil, nil
	op.clearOthersLocked()
	op.mu.Unlock()
	op.rf.put(op)
}

// drop abandons the operation: a completed one is released; a pending one is marked
// dropped and cancelled, and its record (with the memory the kernel may be writing) is
// freed by completeOp when the last completion arrives. The waiters are forgotten, not
// woken: drop is for the operation's only user, a future being dropped.
func (op *ringOp) drop() { op.abandon(nil) }

// detach is drop for an operation other tasks may be waiting on (a File's stream read
// that Close takes away): its waiters are woken, to find out that it is gone.
func (op *ringOp) detach() {
	var one [1]Waker
	wakeAll(op.abandon(one[:0]))
}

// abandon is drop, appending the waiters to wake to buf if it is not nil (they are
// woken by the caller, once op.mu is released).
func (op *ringOp) abandon(buf []Waker) []Waker {
	op.mu.Lock()
	switch op.state {
	case ringDone:
		// Completed: the waiters were woken then.
		op.mu.Unlock()
		op.release()
		return buf
	case ringPending:
		op.state = ringDropped
		if buf != nil {
			buf = op.takeWakersLocked(buf)
		} else {
			op.waker = Waker{}
			op.clearOthersLocked()
		}
		tok, d := op.token(), op.drv
		op.mu.Unlock()
		// An error means the ring is closed: its Close cancels everything itself.
		if op.rf.fc.Cancel(tok) == nil {
			op.rf.kick(d)
		}
		return buf
	}
	op.mu.Unlock()
	return buf
}

// completeOp handles a completion event of the ring: a file operation's result. It
// appends the waker of the task to wake to buf (the turn's caller wakes it after
// releasing the driver's locks).
func (d *ioDriver) completeOp(ev poller.Event, buf []Waker) []Waker {
	if ev.Op != poller.OpRead && ev.Op != poller.OpWrite {
		return buf
	}
	u, ok := d.p.(uringReadiness)
	if !ok || u.files == nil {
		return buf
	}
	rf := u.files
	idx, gen := uint32(ev.Token), uint32(ev.Token>>32)
	rf.mu.Lock()
	if int(idx) >= len(rf.ops) || rf.ops[idx].gen != gen {
		rf.mu.Unlock()
		return buf // cannot happen: a record outlives its operation's completions
	}
	op := rf.ops[idx]
	rf.mu.Unlock()

	op.mu.Lock()
	if op.state == ringDropped {
		// Nobody wants the result; the kernel is done with the memory.
		refs := op.refs
		op.state = ringIdle
		op.buf, op.refs, op.drv = nil, nil, nil
		op.mu.Unlock()
		rf.put(op)
		d.live.Add(-1)
		if w := refs.decref(); !w.IsZero() {
			buf = append(buf, w)
		}
		return buf
	}
	if op.state != ringPending {
		op.mu.Unlock()
		return buf
	}
	res := ev.Res
	switch {
	case res > 0:
		op.n += int(res)
		if op.off >= 0 {
			op.off += int64(res)
		}
		if op.full && op.n < len(op.buf) {
			// A short transfer: go on with the rest, as os.File's loops do. A read
			// that reaches the end of the file completes with 0 next time.
			if err := op.submitLocked(op.token()); err == nil {
				op.mu.Unlock()
				return buf // submitted by this poll's caller at its next poll
			} else {
				op.err = err
			}
		}
	case res == -int32(unix.EINTR):
		if err := op.submitLocked(op.token()); err == nil {
			op.mu.Unlock()
			return buf
		} else {
			op.err = err
		}
	case res < 0:
		op.err = syscall.Errno(-res)
	case op.write && op.n < len(op.buf):
		op.err = io.ErrShortWrite // the kernel took nothing and reported no error
	}
	op.state = ringDone
	buf = op.takeWakersLocked(buf)
	refs := op.refs
	op.mu.Unlock()
	d.live.Add(-1)
	if w := refs.decref(); !w.IsZero() {
		buf = append(buf, w)
	}
	return buf
}

// abandonAll fails the operations whose completions the ring's Close swallowed (the
// runtime shut down with them in flight). The kernel no longer touches their memory,
// or Close kept it allocated for good; either way no record is reused. Their wakers are
// woken on a goroutine of their own: the driver's lock is held here.
func (rf *ringFiles) abandonAll() {
	rf.mu.Lock()
	rf.closed = true
	ops := rf.ops
	rf.mu.Unlock()
	var wakers []Waker
	for _, op := range ops {
		op.mu.Lock()
		switch op.state {
		case ringPending, ringDropped:
			refs := op.refs
			if op.state == ringPending {
				op.state = ringDone
				op.err = errDriverClosed
				wakers = op.takeWakersLocked(wakers)
			} else {
				op.state = ringIdle
			}
			op.waker = Waker{}
			op.clearOthersLocked()
			op.refs = nil
			op.mu.Unlock()
			if w := refs.decref(); !w.IsZero() {
				wakers = append(wakers, w)
			}
			continue
		}
		op.mu.Unlock()
	}
	if len(wakers) > 0 {
		go wakeAll(wakers)
	}
}

// ringFallback reports whether a ring operation's error means "use the blocking pool
// instead" rather than a failure to report: a file the ring cannot read without
// blocking (EAGAIN from an O_NONBLOCK descriptor), an operation the file does not
// support through the ring (EOPNOTSUPP, EINVAL), a cancellation nobody asked for
// (ECANCELED, an io_uring worker exiting), or the ring refusing the submission.
func ringFallback(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return true // not a kernel result: the submission itself failed
	}
	switch errno {
	case unix.EAGAIN, unix.EOPNOTSUPP, unix.EINVAL, unix.ECANCELED:
		return true
	}
	return false
}

// ringTarget finds what the ring needs to know of f: its descriptor number, whether it
// is a regular file (stream reads and writes go through the ring only then: a pipe or
// terminal opened non-blocking would fail with EAGAIN there), whether it has positions
// (a regular file or a block device: ReadAt and WriteAt go through the ring only then,
// since the ring reads a pipe at no offset where pread fails with ESPIPE), and whether
// it was opened O_APPEND (positioned writes then go to the pool, which reports os's
// error for them) or O_DIRECT (see newBlockingIO). fd is -1 when the descriptor cannot
// be had.
func ringTarget(rc syscall.RawConn) (fd int, regular, positional, appendMode, direct bool) {
	fd = -1
	if rc == nil {
		return
	}
	rc.Control(func(sysfd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(sysfd), &st) != nil {
			return
		}
		fl, err := unix.FcntlInt(sysfd, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		fd = int(sysfd)
		regular = st.Mode&unix.S_IFMT == unix.S_IFREG
		positional = regular || st.Mode&unix.S_IFMT == unix.S_IFBLK
		appendMode = fl&unix.O_APPEND != 0
		direct = fl&unix.O_DIRECT != 0
	})
	return
}

// isPermanentRingErr reports the ring errors that say the file will never work through
// the ring (as opposed to EAGAIN or an unasked-for cancellation, which may pass, or
// EINVAL, which a bad offset of one call also gives).
func isPermanentRingErr(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP)
}
