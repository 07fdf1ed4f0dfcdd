package blitzio

import (
	"io"
	"io/fs"
	"os"
)

// File is an open file for tasks: the async counterpart of *os.File (Tokio's
// tokio::fs::File). It is an AsyncReader and AsyncWriter, so package stream's helpers
// (BufReader, Copy, ReadFull, ...) work on it, and it adds positioned reads and writes,
// SeekTo, Sync, SetLen, Stat and Close as futures.
//
// Where reads and writes run: on Linux with the io_uring backend (and a kernel with
// IORING_OP_READ/WRITE, 5.6), they are completion operations on the runtime's ring:
// submitted in a batch with the driver's next poll, completed without any goroutine
// hop. A positioned read first tries preadv2(RWF_NOWAIT) on the worker, which serves a
// page-cache hit in one system call; once a file's reads have been hits many times in a
// row, its positioned reads of up to 16 KiB use a plain pread, cheaper in the kernel
// (on linux/amd64 with a TSC clock). A page evicted in between is then read from disk
// on the worker, holding it as os.File.ReadAt holds a goroutine; the reads are timed
// (about one in four on a worker, picked at random), and one seen to wait puts the
// file back on RWF_NOWAIT, needing twice the run of hits to be trusted again. O_DIRECT
// files never read on the worker. Otherwise (epoll, kqueue, other platforms, a pipe
// or terminal behind NewFile) they run on the runtime's blocking pool, the portable
// way to do file I/O without blocking a worker (regular files are always "ready" to
// epoll). The environment variable BLITZIO_FILEIO, read when a File is opened, forces
// one way: "ring", "pool", or "nowait" (the worker's non-blocking read, never a plain
// pread, then the pool).
// The memory the kernel reads or writes always belongs to the operation, never to the
// caller: a dropped operation is cancelled and cannot write into the caller's slice.
//
// Reads and writes through the stream interface run one at a time and are write-behind,
// as Tokio's: PollWrite takes the bytes and reports them written, and an error shows at the
// next operation; call Flush (or Sync, or Close) to wait for the last write and see its
// outcome (until then, other handles on the file, ReadFile included, may not see the
// bytes; this File's own operations do, as they come after it). A dropped read loses
// nothing: the bytes it brought in are served to the next read. ReadAt and WriteAt are
// independent of the file offset and may run concurrently with each other (each waits
// for a stream write in flight when it starts, so that it comes after the Write in
// program order, as with os.File); inside an Async function, AwaitReadAt reads as
// Await(co, f.ReadAt(p, off)) does without allocating when the page cache has the bytes.
//
// Errors are the ones package os returns (*fs.PathError and friends), so errors.Is(err,
// fs.ErrNotExist) works; as with os.File, the methods of a nil *File (Name and OSFile
// aside) fail with os.ErrInvalid. File operations need a runtime: poll them from tasks or
// BlockOn.
type File struct {
	b    *blockingIO
	name string
}

// NewFile returns a File for an *os.File the caller opened: a pipe or a terminal, say.
// The File owns f from then on.
//
// A pipe, terminal or socket whose descriptor is in Go's poller (os.Pipe, os.OpenFile of
// a terminal, a socket made non-blocking) waits on the blocking pool without a system
// call in progress, and Close makes such a read end. One in blocking mode (os.Stdin of a
// terminal, os.NewFile of a blocking descriptor, any *os.File whose Fd method was
// called) is read by a read(2) that nothing interrupts, as with os.File: Close returns
// at once, but the read, and the pool goroutine it holds, end only when input comes,
// and the runtime's Close and Shutdown wait for that goroutine (give Shutdown a
// deadline). Tokio's stdin has the same limit. A read or write in flight on a
// descriptor in Go's poller, by contrast, is interrupted by the runtime's shutdown
// instead of waited for (see Runtime.Shutdown).
func NewFile(f *os.File) *File {
	if f == nil {
		panic("blitzio: NewFile with a nil *os.File")
	}
	return &File{b: newBlockingIO(f), name: f.Name()}
}

// Name returns the name the file was opened with (the *os.File's, for NewFile). Like
// os.File's, it panics on a nil *File.
func (f *File) Name() string { return f.name }

// OSFile returns the underlying *os.File, for calls this type lacks (nil for a nil f).
// Using it while an operation of f is in flight races with that operation. With none in
// flight, its offset is where f's reads and writes have reached: bytes a dropped stream
// read brought in and f had not delivered yet are given back (the offset moves back
// over them, and f's next read reads the file again from there), so reads through the
// *os.File and then through f again continue where the other stopped. Close f with
// Close, not through the *os.File: f's reads use the descriptor number directly (kept
// open by f's own count of operations in flight, which only Close waits for), so after
// a direct close they could reach whatever file is opened next under that number. A
// read or write deadline set on the *os.File applies to f's reads and writes on the
// blocking pool too, and is cleared if a runtime's shutdown interrupts one of them (see
// Runtime.Shutdown: os.File offers no way to read a deadline back, to restore it).
func (f *File) OSFile() *os.File {
	if f == nil {
		return nil
	}
	b := f.b
	b.mu.Lock()
	if b.op == nil {
		b.syncPos() // its offset is where f's reads and writes have reached
		if n := len(b.rbuf); n > 0 {
			// Read ahead and not delivered: the kernel's offset is past the reader's.
			// A file that cannot seek back (a pipe) keeps them for f's next read.
			if _, err := b.f.Seek(-int64(n), io.SeekCurrent); err == nil {
				b.rbuf, b.rerr = nil, nil
			}
		}
	}
	b.mu.Unlock()
	return b.f
}

// nilFile is the future of a method of a nil *File: os.ErrInvalid, as os.File's
// methods return for a nil *os.File.
func nilFile[T any]() Future[Result[T]] { return Ready(Result[T]{Err: os.ErrInvalid}) }

// PollRead implements AsyncReader, with os.File.Read's outcomes: 0 and io.EOF at the end
// of the file, 0 and no error for an empty p (an *fs.PathError wrapping fs.ErrClosed
// after Close, for any p).
func (f *File) PollRead(cx *Context, p []byte) (Result[int], bool) {
	if f == nil {
		return Result[int]{Err: os.ErrInvalid}, true
	}
	return f.b.PollRead(cx, p)
}

// PollWrite implements AsyncWriter. It is write-behind (see File): it takes the bytes and
// reports them written, and a failure shows at the next operation (Flush, say). An
// empty write does nothing and reports 0 and no error, as Tokio's does, where
// os.File.Write makes a system call of 0 bytes (which fails with EBADF on a file not open
// for writing); after Close it fails with os.File's error for a closed file.
func (f *File) PollWrite(cx *Context, p []byte) (Result[int], bool) {
	if f == nil {
		return Result[int]{Err: os.ErrInvalid}, true
	}
	return f.b.PollWrite(cx, p)
}

// PollFlush waits for the write in flight and reports its error.
func (f *File) PollFlush(cx *Context) (Result[struct{}], bool) {
	if f == nil {
		return Result[struct{}]{Err: os.ErrInvalid}, true
	}
	return f.b.PollFlush(cx)
}

// Flush returns a future that waits for the writes already accepted and reports the
// first error among them.
func (f *File) Flush() Future[Result[struct{}]] {
	if f == nil {
		return nilFile[struct{}]()
	}
	return PollFn(f.b.PollFlush)
}

// afterIdle is a future that waits until f has no stream operation in flight, then runs
// call on the blocking pool and returns its result. readAhead is the count of bytes read
// ahead and not delivered when call starts (SeekTo and SetLen adjust by it).
//
// Bytes read ahead (by a stream read that was dropped, or that found more than its
// caller took) put the kernel's file position past the reader's. A call that neither
// uses nor moves the position, nor changes the bytes (Stat, Sync, SetPermissions) keeps
// them, to be served to the next read as if the call had not been made: keepReadAhead.
// The other calls discard them, and move the position back over them when the file
// should keep it (SeekTo counts from the reader's position, SetLen seeks back over them)
// or have no use for it (Close). Tokio's File does the same.
//
// A call that moves the position or changes the bytes (SeekTo, SetLen: inOrder) takes
// the stream operations' slot while it runs on the pool, so that the reads and writes
// after it, and ReadAt and WriteAt, wait for it: one whose future is dropped after the
// call started still takes effect before the next operation, as if it had completed,
// never in the middle of later reads.
type afterIdle[T any] struct {
	b *blockingIO
	// gate, if set, must report true (after the stream operations are idle) before
	// call starts; it keeps cx's waker when it reports false.
	gate func(cx *Context) bool
	// inline, if set, is asked once the gate has passed whether call cannot block;
	// then call runs on the polling goroutine instead of the blocking pool.
	inline func() bool
	call   func(readAhead int) (T, error)
	h      JoinHandle[Result[T]]
	start  bool
	done   bool
	direct bool // see callerBlocks: call runs on the polling goroutine
	// keepReadAhead keeps the bytes read ahead for the next read (see above).
	keepReadAhead bool
	// close makes this Close's future: it waits for a write in flight but not for a
	// read (idleForClose), and closes the file even when it reports a write's error.
	close bool
	// inOrder makes the call take the stream slot while it runs (see above): slotOp
	// holds it, and the call's outcome is in slotRes once slot has completed.
	inOrder bool
	slot    JoinHandle[struct{}]
	slotOp  *blockingOp
	slotRes *Result[T]
	result  Result[T]
}

func (a *afterIdle[T]) onCallerGoroutine() { a.direct = true }

func (a *afterIdle[T]) Poll(cx *Context) (Result[T], bool) {
	if a.done {
		return a.result, true
	}
	if !a.start {
		b := a.b
		b.mu.Lock()
		var (
			readAhead int
			ok        bool
		)
		if a.close {
			ok = b.idleForClose(cx)
		} else {
			readAhead, ok = b.idle(cx)
		}
		if ok && a.gate != nil {
			ok = a.gate(cx)
		}
		if !ok {
			b.mu.Unlock()
			return Result[T]{}, false
		}
		werr := b.werr
		b.werr = nil
		if werr != nil && !a.close {
			// The write's error is this call's outcome; the bytes read ahead stay (no
			// call moved the position).
			b.mu.Unlock()
			a.done, a.result = true, Result[T]{Err: werr}
			return a.result, true
		}
		switch {
		case a.close:
			// The bytes read ahead go with the file; the error owed to a reader whose
			// read Close took away (see idleForClose) stays for it.
			b.rbuf = nil
			if !isClosedRead(b.rerr) {
				b.rerr = nil
			}
		case !a.keepReadAhead:
			b.rbuf, b.rerr = nil, nil
		}
		if a.inOrder && !a.direct {
			// In the stream slot, taken before b.mu is released (see afterIdle).
			call, res := a.call, new(Result[T])
			a.slot = SpawnBlocking(cx, func() struct{} {
				v, err := call(readAhead)
				*res = Result[T]{Value: v, Err: err}
				return struct{}{}
			})
			a.slotOp = &blockingOp{inOrder: true, h: a.slot}
			b.op = a.slotOp
			b.writing.Store(true)
			b.mu.Unlock()
			a.slotRes, a.start = res, true
		} else {
			b.mu.Unlock()
			if v, ok := a.startCall(cx, werr, readAhead); ok {
				return v, true
			}
		}
	}
	if a.slotRes != nil {
		r, ok := a.slot.Poll(cx)
		if !ok {
			return Result[T]{}, false
		}
		a.done = true
		if r.Err != nil {
			a.result = Result[T]{Err: r.Err} // the runtime closed before the call ran
		} else {
			a.result = *a.slotRes
		}
		// Give the slot back, unless an operation after it has settled it already.
		b := a.b
		b.mu.Lock()
		if b.op == a.slotOp {
			b.op = nil
			b.writing.Store(false)
		}
		b.mu.Unlock()
		a.slotOp = nil
		return a.result, true
	}
	r, ok := a.h.Poll(cx)
	if !ok {
		return Result[T]{}, false
	}
	a.done = true
	if r.Err != nil {
		a.result = Result[T]{Err: r.Err}
	} else {
		a.result = r.Value
	}
	return a.result, true
}

// startCall runs the call on the polling goroutine when it may, and reports its result
// (true), or starts it on the blocking pool (false). werr is the write error a Close
// reports.
func (a *afterIdle[T]) startCall(cx *Context, werr error, readAhead int) (Result[T], bool) {
	call := a.call
	if werr != nil {
		// Close still closes the file (the descriptor must not leak), and reports the
		// write's error, the first one.
		closeFile := call
		call = func(readAhead int) (T, error) {
			v, _ := closeFile(readAhead)
			return v, werr
		}
	}
	if a.direct || a.inline != nil && a.inline() {
		v, err := call(readAhead)
		a.done, a.result = true, Result[T]{Value: v, Err: err}
		return a.result, true
	}
	a.h = SpawnBlocking(cx, func() Result[T] {
		v, err := call(readAhead)
		return Result[T]{Value: v, Err: err}
	})
	a.start = true
	return Result[T]{}, false
}

// SeekTo returns a future that sets the offset for the next read or write, like
// os.File.Seek, after the operations in flight. Bytes read ahead are accounted for: a
// relative seek is from the position the reader has reached (they are discarded, the
// next read reads the file at the new offset). A SeekTo dropped before it completes has
// either not moved the offset or moves it before any operation started after the drop
// (it never lands between later reads).
func (f *File) SeekTo(offset int64, whence int) Future[Result[int64]] {
	if f == nil {
		return nilFile[int64]()
	}
	file := f.b.f
	return &afterIdle[int64]{b: f.b, inOrder: true, call: func(readAhead int) (int64, error) {
		if whence == io.SeekCurrent {
			offset -= int64(readAhead)
		}
		return file.Seek(offset, whence)
	}}
}

// Sync returns a future that writes the file's data and metadata to stable storage
// (fsync), after the writes in flight.
func (f *File) Sync() Future[Result[struct{}]] {
	if f == nil {
		return nilFile[struct{}]()
	}
	file := f.b.f
	return &afterIdle[struct{}]{b: f.b, keepReadAhead: true,
		call: func(int) (struct{}, error) { return struct{}{}, file.Sync() }}
}

// SetLen returns a future that truncates or extends the file to size bytes, after the
// writes in flight. Like os.File.Truncate, it does not move the offset: the next read
// reads the file as it is after the change, from where the reader had reached. A SetLen
// dropped before it completes either has not run or is done before any operation of f
// started after the drop, ReadAt and WriteAt included.
func (f *File) SetLen(size int64) Future[Result[struct{}]] {
	if f == nil {
		return nilFile[struct{}]()
	}
	file := f.b.f
	return &afterIdle[struct{}]{b: f.b, inOrder: true, call: func(readAhead int) (struct{}, error) {
		// Bytes read ahead are discarded rather than kept: those past a smaller size
		// would no longer be in the file, and an end of file seen before a larger
		// size no longer holds. So the position goes back over them first, where the
		// reader is, and the next read reads the file as it is after the change (as
		// os.File's reads would, never having read ahead). Tokio's set_len does the same.
		if readAhead > 0 {
			if _, err := file.Seek(-int64(readAhead), io.SeekCurrent); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, file.Truncate(size)
	}}
}

// Stat returns a future of the file's metadata, after the writes in flight.
func (f *File) Stat() Future[Result[fs.FileInfo]] {
	if f == nil {
		return nilFile[fs.FileInfo]()
	}
	file := f.b.f
	return &afterIdle[fs.FileInfo]{b: f.b, keepReadAhead: true,
		call: func(int) (fs.FileInfo, error) { return file.Stat() }}
}

// SetPermissions returns a future that changes the file's mode, like os.File.Chmod.
func (f *File) SetPermissions(mode fs.FileMode) Future[Result[struct{}]] {
	if f == nil {
		return nilFile[struct{}]()
	}
	file := f.b.f
	return &afterIdle[struct{}]{b: f.b, keepReadAhead: true,
		call: func(int) (struct{}, error) { return struct{}{}, file.Chmod(mode) }}
}

// Close returns a future that waits for the writes in flight, closes the file, and
// reports the first error (a failed write that was not yet reported included). ReadAt
// and WriteAt operations already on the io_uring finish first (the kernel must not see
// the descriptor number reused under them); ones started after Close began fail with
// an *fs.PathError wrapping fs.ErrClosed.
//
// Close does not wait for a stream read in flight, which may be waiting for data that
// never comes (a pipe whose writer stays open): as os.File.Close does to a blocked
// Read, it makes that read end, with an *fs.PathError wrapping fs.ErrClosed (or with
// the bytes, if the read got them first), and wakes the task waiting on it (a read of a
// descriptor in blocking mode ends only when data comes: see NewFile).
//
// On Linux, a file that OpenFile opened on the worker for reading only (a regular file
// of a local file system, see OpenFile) is closed on the worker too, unless it has been
// unlinked: closing its last descriptor would then free its blocks, work for the pool.
// Such a close does no I/O, with one rare exception: on ext4, the first close after
// another process truncated the file and wrote it again (auto_da_alloc) starts the
// writeback of that data, without waiting for it.
func (f *File) Close() Future[Result[struct{}]] {
	if f == nil {
		return nilFile[struct{}]()
	}
	file := f.b.f
	a := &afterIdle[struct{}]{b: f.b, gate: f.b.refs.closeGate, close: true,
		call: func(int) (struct{}, error) { return struct{}{}, file.Close() }}
	if f.b.closeInline {
		a.inline = f.b.closeCannotBlock
	}
	return a
}

// positioned is the future of ReadAt and WriteAt, and of an AwaitReadAt that has to wait
// (detached: it reads into a buffer of its own, which AwaitReadAt copies into the
// caller's slice once the future completes). A read is tried without blocking on
// the worker first (readNoWait: the page cache), straight into the caller's slice, then
// goes to the runtime's io_uring (a completion, no goroutine hop) or else to the blocking
// pool. Those two work on a buffer the operation owns, copied into the caller's slice only
// when the future is polled to completion, so p is never written after Drop. A first try
// that found only part of the range in the page cache has already filled the front of p,
// though: copying every read through a buffer of the future's own to avoid that would
// cost the common, fully cached read a copy.
type positioned struct {
	b *blockingIO
	// p is the caller's slice for a ReadAt, the bytes to write (a copy) for a WriteAt.
	// A detached read (AwaitReadAt's, after its first try missed) has no caller's slice:
	// p is nil until the read completes, then the bytes it read: in the pool's buffer,
	// or in the ring record's, which the future keeps (in ring) until AwaitReadAt has
	// copied them (releaseDetached).
	p    []byte
	n    int // the length of the read or write
	off  int64
	ring *ringOp
	// pool is the operation on the blocking pool, if it went there. It is apart
	// because a cached read (the common case) never needs it: the future, allocated
	// by every ReadAt, stays in a smaller size class (96 bytes instead of 128).
	pool     *positionedPool
	res      Result[int]
	state    uint8
	write    bool
	detached bool
	direct   bool // see callerBlocks: os.File's call on the polling goroutine
}

func (f *positioned) onCallerGoroutine() { f.direct = !f.detached }

// positionedPool is a positioned operation on the blocking pool: its handle, and for a read
// the buffer the pool's goroutine fills (copied into p only when the future completes).
type positionedPool struct {
	h   JoinHandle[Result[int]]
	buf []byte
}

// positioned states.
const (
	posStart uint8 = iota
	posRing
	posPool
	posDone
)

func (f *positioned) Poll(cx *Context) (Result[int], bool) {
	switch f.state {
	case posDone:
		return f.res, true
	case posStart:
		if f.b.writing.Load() && !f.b.settleWrite(cx) {
			return Result[int]{}, false // after the stream write in flight
		}
		// A read served on the worker completes without ever returning pending: spend
		// the task's budget first, so a task looping over cached reads yields.
		if !cx.ConsumeBudget() {
			return Result[int]{}, false
		}
		if f.direct || f.n == 0 {
			// On BlockOn's goroutine, which waits either way: os.File's own call, into
			// the caller's slice (the future cannot be dropped during the call). An
			// empty read or write is os.File's call too, wherever it runs: it makes no
			// system call, and answers as os does (0 and nil even on a file not open
			// for that, an error for a negative offset or an O_APPEND WriteAt), where
			// an empty transfer on the ring would report EBADF.
			var n int
			var err error
			if f.write {
				n, err = f.b.f.WriteAt(f.p, f.off)
				f.p = nil
			} else {
				n, err = f.b.f.ReadAt(f.p, f.off)
			}
			f.state, f.res = posDone, Result[int]{Value: n, Err: err}
			return f.res, true
		}
		if f.startRing(cx) {
			break
		}
		if f.state == posDone {
			return f.res, true
		}
		f.startPool(cx)
	}
	if f.state == posRing {
		n, err, done := f.ring.poll(cx)
		if !done {
			return Result[int]{}, false
		}
		if err != nil && n == 0 && ringFallback(err) {
			f.ring.release()
			f.ring = nil
			if isPermanentRingErr(err) {
				f.b.ringOff.Store(true)
			}
			f.startPool(cx)
		} else {
			f.finishRing(n, err)
			return f.res, true
		}
	}
	r, ok := f.pool.h.Poll(cx)
	if !ok {
		return Result[int]{}, false
	}
	f.state = posDone
	if r.Err != nil {
		f.res = Result[int]{Err: r.Err}
	} else {
		f.res = r.Value
		switch {
		case f.detached:
			f.p = f.pool.buf[:f.res.Value]
		case !f.write:
			copy(f.p, f.pool.buf[:f.res.Value])
		}
	}
	f.pool = nil
	return f.res, true
}

// startRing starts the operation without the pool if it can: a read served from the
// page cache on the worker (then the future is done), or an io_uring operation. It
// reports whether an operation is in flight on the ring.
func (f *positioned) startRing(cx *Context) bool {
	b := f.b
	// A negative offset fails on the pool, with os.File's error; so does a file without
	// positions (a pipe, a terminal: ESPIPE), which the ring would read at no offset.
	if f.off < 0 || !b.positional {
		return false
	}
	if !f.write && !f.detached {
		// In the page cache: read it here, straight into p. A short read (end of file,
		// or only part of the range cached) goes on below, which gives ReadAt's exact
		// semantics.
		if n, ok := readNoWait(cx, b, f.p, f.off); ok && n == len(f.p) {
			f.state, f.res = posDone, Result[int]{Value: n}
			return false
		}
	} else if b.appendMode {
		return false // os.File.WriteAt refuses O_APPEND files: let it say so
	}
	rf := b.ring(cx, f.write)
	if rf == nil {
		return false
	}
	var (
		r   *ringOp
		err error
	)
	if f.write {
		r, err = rf.start(cx.rt.io, &b.refs, b.fd, true, true, f.p, len(f.p), f.off)
	} else {
		r, err = rf.start(cx.rt.io, &b.refs, b.fd, false, true, nil, f.n, f.off)
	}
	if err != nil {
		return false
	}
	f.ring, f.state = r, posRing
	return true
}

func (f *positioned) startPool(cx *Context) {
	file, off := f.b.f, f.off
	pool := &positionedPool{}
	var call func(buf []byte) (int, error)
	if f.write {
		pool.buf = f.p
		call = func(buf []byte) (int, error) { return file.WriteAt(buf, off) }
	} else {
		pool.buf = make([]byte, f.n)
		call = func(buf []byte) (int, error) { return file.ReadAt(buf, off) }
	}
	buf := pool.buf
	f.pool, f.state = pool, posPool
	pool.h = SpawnBlocking(cx, func() Result[int] {
		n, err := call(buf)
		return Result[int]{Value: n, Err: err}
	})
}

// finishRing takes a completed ring operation's outcome in os.File's form.
func (f *positioned) finishRing(n int, err error) {
	switch {
	case f.detached:
		// AwaitReadAt copies the bytes straight out of the record's buffer and then
		// releases the record (releaseDetached): no buffer of the read's size is made
		// per read.
		f.p = f.ring.bytes()
	case !f.write:
		copy(f.p, f.ring.bytes())
	}
	if !f.detached {
		f.ring.release()
		f.ring = nil
	}
	f.state = posDone
	if f.write {
		f.p = nil // the copy is no longer needed
	}
	switch {
	case err != nil:
		op := "read"
		if f.write {
			op = "write"
		}
		f.res = Result[int]{Value: n, Err: pathErr(op, f.b.f.Name(), err)}
	case !f.write && n < f.n:
		f.res = Result[int]{Value: n, Err: io.EOF} // the file ended first
	default:
		f.res = Result[int]{Value: n}
	}
}

// Drop abandons the operation. One in flight on the ring is cancelled, and the driver
// keeps its buffer until the kernel lets go of it; p is never written after Drop.
func (f *positioned) Drop() {
	if f.ring != nil {
		// In flight (cancelled), or a detached read's record kept for its bytes.
		f.ring.drop()
		f.ring = nil
	}
	f.state = posDone
	f.res = Result[int]{Err: ErrCancelled}
}

// ReadAt returns a future that reads len(p) bytes at offset off, like os.File.ReadAt
// (io.EOF if the file ends first, with the count read). It does not use or move the
// file offset and may run beside other operations. p is written only while the future
// is polled, never after it is dropped; but a ReadAt dropped before it completes may
// already have filled part of p (its first poll reads what the page cache holds
// straight into p), so treat p's contents as unspecified after a Drop. Inside an Async
// function, AwaitReadAt does the same read without allocating a future when the page
// cache has the bytes.
func (f *File) ReadAt(p []byte, off int64) Future[Result[int]] {
	if f == nil {
		return nilFile[int]()
	}
	return &positioned{b: f.b, p: p, n: len(p), off: off}
}

// AwaitReadAt reads len(p) bytes at offset off from inside an Async function: what
// Await(co, f.ReadAt(p, off)) returns, in os.File.ReadAt's form (io.EOF if the file ends
// first, with the count read). It is the cheaper form for a task that reads in a loop:
// a read the page cache serves at once (on Linux) is done on the spot, with no future
// allocated and p not kept anywhere, so a buffer the function makes for its reads can
// live on its stack (ReadAt's future holds p, which makes it escape to the heap). Only a
// read that has to wait (for the disk, on the io_uring or the blocking pool) makes a
// future, which reads into a buffer of its own, copied into p when it completes.
//
// The read spends the task's budget as ReadAt's does: a task looping over cached reads
// yields every so often. If the Async future is dropped while the read waits,
// AwaitReadAt unwinds like Await and p is not written after that; as with ReadAt, a read
// that found only the front of the range cached may have filled that front before it
// waited. co must be the *Co of the running Async function (AwaitReadAt panics
// otherwise, as Await does).
func (f *File) AwaitReadAt(co *Co, p []byte, off int64) (int, error) {
	if f == nil {
		return 0, os.ErrInvalid
	}
	// The checks Await makes; if one fails, the Await below panics with its message.
	if co != nil && co.active.Load() && !co.unwinding && !co.polling && off >= 0 && len(p) > 0 &&
		f.b.positional && !f.b.writing.Load() {
		if co.cx.budgetSpent() {
			Await(co, YieldNow()) // polled again with a fresh budget
		}
		co.cx.ConsumeBudget()
		if n, ok := readNoWait(co.cx, f.b, p, off); ok && n == len(p) {
			return n, nil
		}
	}
	// A detached read: p is not handed over, so that it does not escape here either.
	fut := &positioned{b: f.b, n: len(p), off: off, detached: true}
	r := Await[Result[int]](co, fut)
	copy(p, fut.p)
	fut.releaseDetached()
	return r.Value, r.Err
}

// releaseDetached gives back the ring record a completed detached read kept for its
// bytes (see finishRing), once they are copied out.
func (f *positioned) releaseDetached() {
	f.p = nil
	if f.ring != nil {
		f.ring.release()
		f.ring = nil
	}
}

// WriteAt returns a future that writes p at offset off, like os.File.WriteAt. The bytes
// are copied once when WriteAt is called, so p may be reused at once. A WriteAt dropped
// before it completes may still have written some or all of p: a system call in
// progress cannot be taken back (on the ring, the cancellation stops only a write the
// kernel has not started).
func (f *File) WriteAt(p []byte, off int64) Future[Result[int]] {
	if f == nil {
		return nilFile[int]()
	}
	return &positioned{b: f.b, write: true, p: append([]byte(nil), p...), n: len(p), off: off}
}

// OpenOptions says how to open a file, the fields of Rust's OpenOptions (and of
// os.OpenFile's flags, spelled out). At least one of Read, Write and Append must be set.
type OpenOptions struct {
	Read     bool
	Write    bool
	Append   bool // writes go to the end of the file (implies Write)
	Create   bool // create the file if it does not exist
	Truncate bool // cut the file to 0 bytes (needs Write)
	// Exclusive creates the file and fails with fs.ErrExist if it already exists
	// (O_CREATE|O_EXCL; implies Create).
	Exclusive bool
	// Mode is the permission of a created file before the umask; 0 means 0o666.
	Mode fs.FileMode
}

// flags returns the os.OpenFile flags for o.
func (o OpenOptions) flags() (int, error) {
	var flag int
	write := o.Write || o.Append
	switch {
	case o.Read && write:
		flag = os.O_RDWR
	case write:
		flag = os.O_WRONLY
	case o.Read:
		flag = os.O_RDONLY
	default:
		return 0, errInvalidOpen("none of Read, Write or Append is set")
	}
	if o.Append {
		flag |= os.O_APPEND
	}
	if o.Create || o.Exclusive {
		if !write {
			return 0, errInvalidOpen("Create and Exclusive need Write or Append")
		}
		flag |= os.O_CREATE
	}
	if o.Exclusive {
		flag |= os.O_EXCL
	}
	if o.Truncate {
		if !write {
			return 0, errInvalidOpen("Truncate needs Write")
		}
		flag |= os.O_TRUNC
	}
	return flag, nil
}

type errInvalidOpen string

func (e errInvalidOpen) Error() string { return "blitzio: invalid OpenOptions: " + string(e) }

// Is makes errors.Is(err, fs.ErrInvalid) true.
func (e errInvalidOpen) Is(target error) bool { return target == fs.ErrInvalid }

// Open returns a future that opens name with these options. Invalid options fail with
// an *fs.PathError wrapping fs.ErrInvalid.
func (o OpenOptions) Open(name string) Future[Result[*File]] {
	flag, err := o.flags()
	if err != nil {
		return Ready(Result[*File]{Err: &fs.PathError{Op: "open", Path: name, Err: err}})
	}
	mode := o.Mode
	if mode == 0 {
		mode = 0o666
	}
	return OpenFile(name, flag, mode)
}

// OpenFile returns a future that opens a file like os.OpenFile.
//
// On Linux, opening an existing regular file of a local file system without O_CREATE or
// O_TRUNC is done by the worker itself when it cannot block: the path resolved from the
// kernel's caches only (openat2 RESOLVE_CACHED), the file's type checked before it is
// opened (a FIFO's open waits for a writer), a file lease held elsewhere failing the
// open rather than making it wait. Anything else (a path not in the caches, a network or
// FUSE file system, creating or truncating) runs os.OpenFile on the blocking pool. The
// environment variable BLITZIO_FILEIO=pool or ring, read at each call, skips the
// worker's attempt. Dropped while its open runs on the pool (a Timeout that expired), the
// future lets the open finish and closes the file it opened.
func OpenFile(name string, flag int, perm fs.FileMode) Future[Result[*File]] {
	return &openFuture{name: name, flag: flag, perm: perm}
}

// openFuture is OpenFile's future: the worker's non-blocking attempt, then the pool.
type openFuture struct {
	name   string
	flag   int
	perm   fs.FileMode
	pool   *blockingFuture[*File]
	res    Result[*File]
	done   bool
	direct bool // see callerBlocks
}

func (o *openFuture) onCallerGoroutine() { o.direct = true }

func (o *openFuture) Poll(cx *Context) (Result[*File], bool) {
	if o.done {
		return o.res, true
	}
	if o.direct && o.pool == nil {
		// On BlockOn's goroutine: open as os does, with no attempt that cannot block first.
		o.done = true
		if f, err := os.OpenFile(o.name, o.flag, o.perm); err != nil {
			o.res = Result[*File]{Err: err}
		} else {
			o.res = Result[*File]{Value: &File{b: newBlockingIO(f), name: o.name}}
		}
		return o.res, true
	}
	if o.pool == nil {
		if !cx.ConsumeBudget() {
			return Result[*File]{}, false // may complete on the worker: yield first when due
		}
		mode := fileIOFromEnv()
		if mode&fileNoWait != 0 {
			if f, fd, ok, err := openNoWait(o.name, o.flag); ok {
				o.done = true
				if err != nil {
					o.res = Result[*File]{Err: err}
				} else {
					b := newBlockingIOKnown(f, mode, fd, o.flag)
					b.closeInline = o.flag&(os.O_WRONLY|os.O_RDWR) == 0
					o.res = Result[*File]{Value: &File{b: b, name: o.name}}
				}
				return o.res, true
			}
		}
		name, flag, perm := o.name, o.flag, o.perm
		o.pool = blockingCall(func() (*File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return &File{b: newBlockingIO(f), name: name}, nil
		})
	}
	res, ok := o.pool.Poll(cx)
	if ok {
		o.done, o.res, o.pool = true, res, nil
	}
	return res, ok
}

// Drop implements Dropper. An open already handed to the blocking pool cannot be taken
// back and goes on; the File it makes will never reach anyone, so its descriptor is
// closed as soon as the open is done (a goroutine waits for it), rather than left to a
// garbage collection that may not come before the process runs out of descriptors (a
// server timing out slow opens, say). An open that fails or is cancelled with its
// runtime leaves nothing to close.
func (o *openFuture) Drop() {
	p := o.pool
	if o.done || p == nil || !p.start {
		return
	}
	o.done, o.pool = true, nil
	o.res = Result[*File]{Err: ErrCancelled}
	h := p.h
	go func() {
		if r, err := h.Wait(); err == nil && r.Err == nil && r.Value != nil {
			r.Value.b.f.Close()
		}
	}()
}

// Open returns a future that opens name for reading, like os.Open.
func Open(name string) Future[Result[*File]] { return OpenFile(name, os.O_RDONLY, 0) }

// Create returns a future that creates or truncates name for writing and reading, like
// os.Create.
func Create(name string) Future[Result[*File]] {
	return OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}
