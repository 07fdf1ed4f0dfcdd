//go:build linux

package poller

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Completion kinds of the file operations (Linux only: no other Poller has them).
const (
	// OpRead is the completion of a FileCompleter.ReadAt: Res is the byte count (0 at
	// end of file) or -errno.
	OpRead Op = OpCancel + 1 + iota
	// OpWrite is the completion of a FileCompleter.WriteAt: Res is the byte count or
	// -errno.
	OpWrite
)

// FileReadWrite says the kernel has IORING_OP_READ and IORING_OP_WRITE with offset -1
// meaning the file position (Linux 5.6): FileCompleter's operations work.
const FileReadWrite Features = RingMessage << 1

// FileCompleter is implemented by the io_uring Poller when Features has FileReadWrite:
// reads and writes of files (regular files above all, which readiness cannot serve: they
// are always "ready", and a read that misses the page cache blocks) as completion
// operations. The kernel serves a read from the page cache while the submission is
// handed over, and runs the others on its own worker threads; either way the caller
// learns of the outcome from an Event, and no thread of the process blocks.
type FileCompleter interface {
	Completer
	// ReadAt submits a read of up to len(p) bytes from fd at offset off (off = -1: at
	// the file position, which the read moves). p is pinned and kept reachable until
	// the operation's Event (OpRead) arrives; the kernel writes into it until then, so
	// the caller must neither read nor reuse it before. At most 1 GiB is read per call.
	ReadAt(fd int, token uint64, p []byte, off int64) error
	// WriteAt submits a write of p to fd at offset off (-1: at the file position, or
	// at the end for an O_APPEND file). p is pinned and kept reachable until the Event
	// (OpWrite) arrives and must not be modified before. At most 1 GiB per call.
	WriteAt(fd int, token uint64, p []byte, off int64) error
}

// uringMaxFileIO caps one ReadAt or WriteAt (the kernel's cap on a transfer is a little
// under 2 GiB); the Event reports the count, and the caller goes on from there.
const uringMaxFileIO = 1 << 30

// ReadAt queues an IORING_OP_READ of p at off on fd. See FileCompleter.
func (r *ioUring) ReadAt(fd int, token uint64, p []byte, off int64) error {
	return r.fileOp("ReadAt", slotRead, uringOpRead, fd, token, p, off)
}

// WriteAt queues an IORING_OP_WRITE of p at off on fd. See FileCompleter.
func (r *ioUring) WriteAt(fd int, token uint64, p []byte, off int64) error {
	return r.fileOp("WriteAt", slotWrite, uringOpWrite, fd, token, p, off)
}

func (r *ioUring) fileOp(name string, kind uint8, opcode uint8, fd int, token uint64, p []byte, off int64) error {
	if r.features&FileReadWrite == 0 {
		return fmt.Errorf("%w: io_uring %s: this kernel has no IORING_OP_READ/WRITE with the file position (Linux 5.6)", ErrUnsupported, name)
	}
	if off < -1 {
		return fmt.Errorf("poller: io_uring %s: %w", name, os.NewSyscallError("io_uring "+name, unix.EINVAL))
	}
	if len(p) > uringMaxFileIO {
		p = p[:uringMaxFileIO]
	}
	if fd < 0 || fd > math.MaxInt32 {
		return fmt.Errorf("poller: io_uring %s: %w", name, os.NewSyscallError("io_uring "+name, unix.EBADF))
	}
	// sqe.off is unsigned: -1 becomes all ones, the kernel's "current position".
	sqe := uringSQE{opcode: opcode, fd: int32(fd), off: uint64(off), len: uint32(len(p))}
	return r.submitOp(name, kind, fd, token, &sqe, p)
}
