package blitzio

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// maxBlockingChunk bounds one read or write handed to the blocking pool: the bytes are
// copied through a buffer the operation owns (a dropped future must not leave a
// goroutine writing into the caller's slice later), so huge slices go in pieces.
const maxBlockingChunk = 1 << 20

// blockingIO turns an *os.File (a file, a pipe, a terminal) into an AsyncReader and
// AsyncWriter by running its reads and writes on the blocking pool, one at a time, the
// way Tokio's File does.
//
// A system call cannot be taken back, so an operation outlives a future that is
// dropped: the bytes a read brought in are kept and served to the next read (a dropped
// read loses nothing). Writes are write-behind, as in Tokio: PollWrite copies the bytes
// once into a buffer the operation owns, starts the write and reports them accepted;
// the write's error, if any, is reported by the next operation, and PollFlush waits for
// it. The caller's slices are never handed to the blocking goroutine.
type blockingIO struct {
	f  *os.File
	mu sync.Mutex
	op *blockingOp // the operation in flight, nil if none
	// rbuf holds bytes read but not yet delivered (by a read whose future was dropped,
	// or beyond the len(p) of the read that collected them); rerr is that read's error
	// (io.EOF included), reported once rbuf is drained.
	rbuf []byte
	rerr error
	// werr is the error of a finished write, reported by the next operation.
	werr error
	// writing is set while op is a stream write, or a SeekTo or SetLen (set when op is
	// started, cleared by settle, both with mu held): ReadAt and WriteAt wait for it
	// (settleWrite), read without mu.
	writing atomic.Bool
	// nw is the state of readNoWait for this file.
	nw noWait

	// The io_uring path (file_ring.go): the descriptor number (-1: none), the
	// operations in flight on it, the ways this File may use, whether the file is
	// regular, has positions (ReadAt and WriteAt may skip the pool: see ringTarget),
	// and was opened O_APPEND. ringOff is set when the ring refused an operation on
	// this file for good (EOPNOTSUPP): the pool takes over.
	fd         int
	refs       fileRefs
	io         fileIO
	regular    bool
	positional bool
	appendMode bool
	ringOff    atomic.Bool
	// pos is the file position while posOwned (guarded by mu). Stream reads and writes
	// on the ring pass it as an explicit offset instead of asking the kernel to use and
	// move the position: on Linux 6.18 a short write through the ring (a full disk) left
	// the kernel's position where the write began. The kernel's position is brought up
	// to date (syncPos) before anything that uses it: a pool operation, a Seek, OSFile.
	pos      int64
	posOwned bool
	// closeInline is set for a file OpenFile opened on the worker, for reading only:
	// Close may run on the polling goroutine (see closeCannotBlock).
	closeInline bool
}

type blockingOp struct {
	write bool
	// inOrder marks a SeekTo or SetLen running on the pool (h), which holds the slot
	// of the stream operations until it ends (see afterIdle); it has no bytes.
	inOrder bool
	// ring is the io_uring operation when the ring runs this one, nil on the pool.
	ring *ringOp
	// seekBack, for a write, is the count of bytes read ahead and not delivered: the
	// write starts that far back, where the reader's position is.
	seekBack int64
	buf      []byte
	n        int
	err      error
	h        JoinHandle[struct{}]
	// pio registers the pool's read or write with the runtime's shutdown, which
	// interrupts it if the descriptor is in Go's poller (blockingPool.fileIO); cut says
	// it did so to a read before it took any byte: neither the end of the file nor an
	// error, the next read reads again.
	pio poolFileIO
	cut bool
}

func newBlockingIO(f *os.File) *blockingIO {
	b := &blockingIO{f: f, fd: -1, io: fileIOFromEnv()}
	if b.io&(fileNoWait|fileRingRead|fileRingWrite) != 0 {
		direct := false
		if rc, err := f.SyscallConn(); err == nil {
			b.fd, b.regular, b.positional, b.appendMode, direct = ringTarget(rc)
		}
		// An O_DIRECT read bypasses the page cache: RWF_NOWAIT does not make it return
		// at once (it waits for the disk), so such a file's reads never run on a worker.
		b.nw.on = b.io&fileNoWait != 0 && b.fd >= 0 && !direct
		b.nw.plain = b.nw.on && b.regular && b.io&filePlainRead != 0 && plainReadClock()
		if b.nw.on && b.regular {
			b.refs.makeShards() // workers may read it at once (ReadAt)
		}
	}
	return b
}

// newBlockingIOKnown is newBlockingIO for a regular file whose descriptor number and
// open flags the caller knows (it opened the file itself): no fstat and fcntl to find
// them. mode is the fileIOFromEnv the caller read.
func newBlockingIOKnown(f *os.File, mode fileIO, fd int, flag int) *blockingIO {
	b := &blockingIO{f: f, fd: fd, io: mode, regular: true, positional: true, appendMode: flag&os.O_APPEND != 0}
	b.nw.on = mode&fileNoWait != 0 && !directIO(flag) // see newBlockingIO
	b.nw.plain = b.nw.on && mode&filePlainRead != 0 && plainReadClock()
	if b.nw.on {
		b.refs.makeShards() // workers may read it at once (ReadAt)
	}
	return b
}

// ring returns the io_uring operations of cx's runtime if this File may use them for a
// read (write false) or a write, nil otherwise.
func (b *blockingIO) ring(cx *Context, write bool) *ringFiles {
	want := fileRingRead
	if write {
		want = fileRingWrite
	}
	if b.io&want == 0 || b.fd < 0 || b.ringOff.Load() {
		return nil
	}
	return fileRing(cx)
}

// start runs op on the io_uring of cx's runtime when it can (a regular file, nothing
// to seek back over first), on its blocking pool otherwise. Called with b.mu held.
func (b *blockingIO) start(cx *Context, op *blockingOp) {
	if b.regular && !b.appendMode && op.seekBack == 0 {
		if rf := b.ring(cx, op.write); rf != nil && b.ownPos() {
			// A write must go in full; a read reports what it got, as read(2) does.
			r, err := rf.start(cx.rt.io, &b.refs, b.fd, op.write, op.write, op.buf, len(op.buf), b.pos)
			if err == nil {
				op.ring = r
				b.op = op
				return
			}
		}
	}
	b.startPool(cx, op)
}

// ownPos makes b.pos the file position, reading the kernel's once. Called with b.mu
// held.
func (b *blockingIO) ownPos() bool {
	if b.posOwned {
		return true
	}
	if !b.refs.incref() {
		return false // closing: the descriptor number may be gone
	}
	off, err := b.f.Seek(0, io.SeekCurrent)
	wakeRef(b.refs.decref())
	if err != nil {
		return false
	}
	b.pos, b.posOwned = off, true
	return true
}

// syncPos gives the position back to the kernel, before an operation that uses it.
// Called with b.mu held and no operation in flight.
func (b *blockingIO) syncPos() error {
	if !b.posOwned {
		return nil
	}
	b.posOwned = false
	_, err := b.f.Seek(b.pos, io.SeekStart)
	return err
}

// startPool runs op on the blocking pool. Called with b.mu held.
func (b *blockingIO) startPool(cx *Context, op *blockingOp) {
	if err := b.syncPos(); err != nil {
		// The position cannot be set: the operation fails with why.
		op.err = err
	}
	f := b.f
	if op.err != nil {
		op.h = SpawnBlocking(cx, func() struct{} { return struct{}{} })
		b.op = op
		return
	}
	if b.regular {
		// Never in Go's poller: nothing could interrupt the call.
		op.h = SpawnBlocking(cx, func() struct{} {
			if !op.seekBackFailed(f) {
				if op.write {
					op.n, op.err = f.Write(op.buf)
				} else {
					op.n, op.err = f.Read(op.buf)
				}
			}
			return struct{}{}
		})
		b.op = op
		return
	}
	// A pipe, a terminal, a socket, or a file whose type is unknown: the runtime's
	// shutdown interrupts the call if the descriptor is in Go's poller, rather than wait
	// for the other end (see blockingPool.fileIO).
	pool := &cx.rt.blocking
	op.pio = poolFileIO{f: f, write: op.write}
	op.h = SpawnBlocking(cx, func() struct{} {
		if op.seekBackFailed(f) {
			return struct{}{}
		}
		n, err, cut := pool.fileIO(&op.pio, op.buf)
		switch {
		case !cut:
			op.n, op.err = n, err
		case op.write:
			// n bytes went in; the rest, which PollWrite accepted, did not: the File's
			// next operation reports it, as it does a failed write.
			op.n, op.err = n, &fs.PathError{Op: "write", Path: f.Name(), Err: ErrRuntimeClosed}
		default:
			op.n, op.cut = n, true // no byte taken: nothing lost
		}
		return struct{}{}
	})
	b.op = op
}

// seekBackFailed moves a write's position back over the bytes read ahead (seekBack),
// on the pool before the write, and reports whether that failed (op.err says why).
func (op *blockingOp) seekBackFailed(f *os.File) bool {
	if !op.write || op.seekBack == 0 {
		return false
	}
	if _, err := f.Seek(-op.seekBack, io.SeekCurrent); err != nil {
		op.err = err
		return true
	}
	return false
}

// settle absorbs the result of the operation in flight, if any. It returns false if the
// operation is still running (cx's task is woken when it ends). Called with b.mu held.
func (b *blockingIO) settle(cx *Context) bool {
	op := b.op
	if op == nil {
		return true
	}
	var err error
	if op.ring != nil {
		n, rerr, done := op.ring.poll(cx)
		if !done {
			return false
		}
		op.ring.release()
		op.ring = nil
		b.pos += int64(n)
		if rerr != nil && n == 0 && ringFallback(rerr) {
			// The ring cannot do it (see ringFallback): the pool does, this time and
			// from now on if the file refused the operation itself.
			if isPermanentRingErr(rerr) {
				b.ringOff.Store(true)
			}
			b.startPool(cx, op)
			return b.settle(cx)
		}
		op.n = n
		if rerr != nil {
			name := "read"
			if op.write {
				name = "write"
			}
			op.err = pathErr(name, b.f.Name(), rerr)
		}
		err = op.err
	} else {
		r, ok := op.h.Poll(cx)
		if !ok {
			return false
		}
		err = op.err
		if err == nil && r.Err != nil {
			err = r.Err // the runtime closed before the call ran
		}
	}
	b.op = nil
	if op.inOrder {
		// Its outcome is the SeekTo's or SetLen's own to report.
		b.writing.Store(false)
		return true
	}
	if op.write {
		b.writing.Store(false)
		if err == nil && op.n < len(op.buf) {
			err = io.ErrShortWrite
		}
		if err != nil && b.werr == nil {
			b.werr = err
		}
		return true
	}
	b.rbuf = op.buf[:op.n]
	switch {
	case err != nil:
		b.rerr = err
	case op.n == 0 && !op.cut:
		b.rerr = io.EOF
	}
	return true
}

// PollRead implements AsyncReader.
//
// A read served at once (from the read-ahead buffer, or from the page cache on Linux)
// spends the task's cooperative budget, as a socket read does: a task reading a file to
// its end in small pieces yields to the others every so often. With the budget spent
// it yields before taking any bytes, so that none are taken by a poll that cannot
// report them.
//
// Once Close has begun, a read fails with os.File's error for a read of a closed file
// (an *fs.PathError, Op "read", wrapping fs.ErrClosed), an empty one included, as
// os.File.Read's does.
func (b *blockingIO) PollRead(cx *Context, p []byte) (Result[int], bool) {
	if len(p) == 0 {
		if b.refs.closing.Load() {
			return Result[int]{Err: b.closedErr("read")}, true
		}
		return Result[int]{}, true
	}
	if cx.budgetSpent() {
		cx.wakeSelfYield()
		return Result[int]{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if len(b.rbuf) > 0 {
			n := copy(p, b.rbuf)
			b.rbuf = b.rbuf[n:]
			cx.ConsumeBudget()
			return Result[int]{Value: n}, true
		}
		if !b.settle(cx) {
			return Result[int]{}, false
		}
		if len(b.rbuf) > 0 {
			continue
		}
		if err := b.takeErr(); err != nil {
			return Result[int]{Err: err}, true
		}
		if b.refs.closing.Load() {
			// Not the error of a call on the closed file (the position's seek, say).
			return Result[int]{Err: b.closedErr("read")}, true
		}
		// At the file position: the kernel's, or ours while ring operations own it
		// (the kernel's is stale then).
		off := int64(-1)
		if b.posOwned {
			off = b.pos
		}
		if n, ok := readNoWait(cx, b, p, off); ok {
			// Straight into p: the bytes were in memory (page cache, pipe buffer).
			if b.posOwned {
				b.pos += int64(n)
			}
			cx.ConsumeBudget()
			if n == 0 {
				return Result[int]{Err: io.EOF}, true
			}
			return Result[int]{Value: n}, true
		}
		b.start(cx, &blockingOp{buf: make([]byte, min(len(p), maxBlockingChunk))})
	}
}

// takeErr returns and clears the pending write error, or else the pending read error.
// A read error is cleared once reported: a file can grow after EOF, and a later read
// tries again. Called with b.mu held.
func (b *blockingIO) takeErr() error {
	if err := b.werr; err != nil {
		b.werr = nil
		return err
	}
	err := b.rerr
	b.rerr = nil
	return err
}

// PollWrite implements AsyncWriter (write-behind: see blockingIO). Once Close has begun,
// a write, an empty one included, fails at once with os.File's error for a write to a
// closed file.
func (b *blockingIO) PollWrite(cx *Context, p []byte) (Result[int], bool) {
	if b.refs.closing.Load() {
		return Result[int]{Err: b.closedErr("write")}, true
	}
	if len(p) == 0 {
		return Result[int]{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.settle(cx) {
		return Result[int]{}, false
	}
	if err := b.werr; err != nil {
		b.werr = nil
		return Result[int]{Err: err}, true
	}
	// Bytes read ahead and not delivered put the kernel's offset past the reader's
	// position: the write seeks back over them first, so it lands where the caller
	// expects.
	back := int64(len(b.rbuf))
	b.rbuf, b.rerr = nil, nil
	n := min(len(p), maxBlockingChunk)
	b.writing.Store(true)
	b.start(cx, &blockingOp{write: true, seekBack: back, buf: append([]byte(nil), p[:n]...)})
	return Result[int]{Value: n}, true
}

// settleWrite waits for the stream write in flight, if any (or a SeekTo or SetLen on the
// pool), and reports whether none is left (if one is, cx's task is woken when it ends).
// ReadAt and WriteAt call it before they start, so that they come after the bytes Write
// accepted, in program order as with os.File: a ReadAt after a Write reads what it
// wrote, and a WriteAt over the same bytes wins. The write's error stays for the next
// stream operation.
func (b *blockingIO) settleWrite(cx *Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.op == nil || !b.op.write && !b.op.inOrder {
		return true
	}
	return b.settle(cx)
}

// PollFlush waits for the write in flight and reports its error.
func (b *blockingIO) PollFlush(cx *Context) (Result[struct{}], bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.settle(cx) {
		return Result[struct{}]{}, false
	}
	err := b.werr
	b.werr = nil
	return Result[struct{}]{Err: err}, true
}

// idle waits for the operation in flight and reports whether none is left; with it the
// caller may use b.f directly (seek, stat, close). readAhead is the count of bytes read
// but not delivered. Called with b.mu held.
func (b *blockingIO) idle(cx *Context) (readAhead int, ok bool) {
	if !b.settle(cx) {
		return 0, false
	}
	b.syncPos() // an error shows in the caller's own use of the position
	return len(b.rbuf), true
}

// idleForClose is idle for Close, which waits for a write in flight (its outcome is
// Close's to report), and for a SeekTo or SetLen, but not for a read: as with os.File,
// whose Close makes a Read blocked on the file return, a read may wait for data that
// never comes (a pipe whose writer stays open), and Close must not wait with it. It
// reports whether the file may be closed now; if not, cx's task is woken when the write
// ends. Called with b.mu held.
//
// A read on the blocking pool is left in flight: it is os.File.Read, which Close makes
// return (an *fs.PathError wrapping fs.ErrClosed for a read waiting on a pipe or
// terminal in Go's poller), and the reader settles that outcome as any read's. A read
// on the io_uring is detached instead: cancelled, forgotten by the File, and its
// waiters woken, to find the read failed as one of a closed file (closeReads). Its
// record keeps the buffer the kernel writes into, and its place in the count of
// operations in flight that Close's gate waits on, until its completion arrives: the
// descriptor is closed only once the kernel has let go of it.
func (b *blockingIO) idleForClose(cx *Context) bool {
	op := b.op
	if op == nil || op.write || op.inOrder {
		return b.settle(cx)
	}
	if op.ring != nil {
		b.op = nil
		b.closeReads()
		op.ring.detach()
		op.ring = nil
	}
	return true
}

// closeReads discards the bytes read ahead and makes the next stream read fail with
// os's error for a read of a closed file (later ones fail on the closed file itself).
// Called by Close, with b.mu held, when it takes a read away.
func (b *blockingIO) closeReads() {
	b.rbuf = nil
	b.rerr = b.closedErr("read")
}

// closedErr is os.File's error for operation op on a closed file.
func (b *blockingIO) closedErr(op string) error {
	return &fs.PathError{Op: op, Path: b.f.Name(), Err: os.ErrClosed}
}

// isClosedRead reports whether err is the error closeReads leaves for the next read.
func isClosedRead(err error) bool {
	pe, ok := err.(*fs.PathError)
	return ok && pe.Op == "read" && pe.Err == os.ErrClosed
}

// noWait is what readNoWait keeps per file: whether it may try non-blocking reads (set
// when the File is made, then only read), and whether they were found unsupported
// (atomic: ReadAt futures of one file run concurrently).
type noWait struct {
	on  bool
	off atomic.Bool
	// misses counts the attempts in a row that found the data not in memory (up to
	// noWaitMissLimit); skips counts the attempts skipped since (see readNoWait).
	misses atomic.Uint32
	skips  atomic.Uint32
	// plain says whether a trusted file's positioned reads may use a plain pread (a
	// regular file, BLITZIO_FILEIO=auto, and a cycle counter to time the reads with);
	// credit counts the non-blocking reads in a row that found their data in memory,
	// and demotions the plain reads seen to wait (see readNoWait).
	plain     bool
	credit    atomic.Int64
	demotions atomic.Uint32
}

// noWaitMissLimit is how many misses in a row make readNoWait stop trying, except for
// one probe every noWaitProbe calls: a file read at random beyond the page cache pays
// the failed system call on almost none of its reads, and one that becomes cached is
// noticed within noWaitProbe reads.
const (
	noWaitMissLimit = 4
	noWaitProbe     = 16
)
