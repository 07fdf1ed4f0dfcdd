package blitzio

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
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
	// nw is the state of readNoWait for this file.
	nw noWait
}

type blockingOp struct {
	write bool
	// seekBack, for a write, is the count of bytes read ahead and not delivered: the
	// write starts that far back, where the reader's position is.
	seekBack int64
	buf      []byte
	n        int
	err      error
	h        JoinHandle[struct{}]
}

func newBlockingIO(f *os.File) *blockingIO {
	b := &blockingIO{f: f}
	// The RawConn for readNoWait, made here once: concurrent ReadAt futures only read it.
	if rc, err := f.SyscallConn(); err == nil {
		b.nw.rc = rc
	}
	return b
}

// start runs op on the blocking pool of cx's runtime. Called with b.mu held.
func (b *blockingIO) start(cx *Context, op *blockingOp) {
	f := b.f
	op.h = SpawnBlocking(cx, func() struct{} {
		if op.write {
			if op.seekBack > 0 {
				if _, err := f.Seek(-op.seekBack, io.SeekCurrent); err != nil {
					op.err = err
					return struct{}{}
				}
			}
			op.n, op.err = f.Write(op.buf)
		} else {
			op.n, op.err = f.Read(op.buf)
		}
		return struct{}{}
	})
	b.op = op
}

// settle absorbs the result of the operation in flight, if any. It returns false if the
// operation is still running (cx's task is woken when it ends). Called with b.mu held.
func (b *blockingIO) settle(cx *Context) bool {
	op := b.op
	if op == nil {
		return true
	}
	r, ok := op.h.Poll(cx)
	if !ok {
		return false
	}
	b.op = nil
	err := op.err
	if err == nil && r.Err != nil {
		err = r.Err // the runtime closed before the call ran
	}
	if op.write {
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
	case op.n == 0:
		b.rerr = io.EOF
	}
	return true
}

// PollRead implements AsyncReader.
func (b *blockingIO) PollRead(cx *Context, p []byte) (Result[int], bool) {
	if len(p) == 0 {
		return Result[int]{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if len(b.rbuf) > 0 {
			n := copy(p, b.rbuf)
			b.rbuf = b.rbuf[n:]
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
		if n, ok, _ := readNoWait(b.f, &b.nw, p, -1); ok {
			// Straight into p: the bytes were in memory (page cache, pipe buffer).
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

// PollWrite implements AsyncWriter (write-behind: see blockingIO).
func (b *blockingIO) PollWrite(cx *Context, p []byte) (Result[int], bool) {
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
	b.start(cx, &blockingOp{write: true, seekBack: back, buf: append([]byte(nil), p[:n]...)})
	return Result[int]{Value: n}, true
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
	return len(b.rbuf), true
}

// noWait is what readNoWait keeps per file: whether non-blocking reads were found
// unsupported (atomic: ReadAt futures of one file run concurrently), and the file's
// syscall.RawConn, made when the File is (nil: no non-blocking reads).
type noWait struct {
	off atomic.Bool
	rc  syscall.RawConn
}
