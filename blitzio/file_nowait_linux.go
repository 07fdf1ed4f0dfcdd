//go:build linux

package blitzio

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readNoWait reads into p at off (off < 0: at the file offset, moving it) only if that
// cannot block: preadv2 with RWF_NOWAIT (Linux 4.14+) fails with EAGAIN instead of
// waiting for the disk or for a pipe writer. Data already in the page cache, the common
// case for hot files, is then read by the worker itself, with no hop to the blocking
// pool and no copy; everything else falls back to the pool. It reports whether it
// produced an outcome: (n, true, nil), with n == 0 meaning end of file.
//
// The worker doing this system call is the exception to "only the I/O driver blocks in
// a system call" that RWF_NOWAIT makes safe: the call returns at once either way.
func readNoWait(f *os.File, nw *noWait, p []byte, off int64) (int, bool, error) {
	if nw.off.Load() || len(p) == 0 {
		return 0, false, nil
	}
	if nw.rc == nil {
		rc, err := f.SyscallConn() // it allocates: once per file, not per read
		if err != nil {
			nw.off.Store(true)
			return 0, false, nil
		}
		nw.rc = rc
	}
	var n int
	var rerr error
	if cerr := nw.rc.Control(func(fd uintptr) {
		// preadv2 with one iovec on the stack (x/sys's Preadv2 allocates its iovecs).
		var iov unix.Iovec
		iov.Base = &p[0]
		iov.SetLen(len(p))
		lo := uintptr(off)
		hi := uintptr(uint64(off) >> (unix.SizeofLong*8 - 1) >> 1)
		r, _, e := unix.Syscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
		n = int(r)
		if e != 0 {
			rerr = e
		}
	}); cerr != nil {
		return 0, false, nil
	}
	switch rerr {
	case nil:
		return n, true, nil
	case unix.EAGAIN:
		return 0, false, nil
	case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS, unix.ESPIPE:
		// This file (or kernel) does not do non-blocking reads: stop trying.
		nw.off.Store(true)
		return 0, false, nil
	}
	return 0, false, nil // let the blocking path report the error in os's form
}
