//go:build linux

package blitzio

import (
	"os"
	"sync"
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
func readNoWait(_ *os.File, nw *noWait, p []byte, off int64) (int, bool, error) {
	if nw.rc == nil || nw.off.Load() || len(p) == 0 {
		return 0, false, nil
	}
	if nw.misses.Load() >= noWaitMissLimit && nw.skips.Add(1)%noWaitProbe != 0 {
		return 0, false, nil // the last reads all missed: skip, save for a probe
	}
	c := nwCalls.Get().(*nwCall)
	c.p, c.off = p, off
	cerr := nw.rc.Control(c.fn)
	n, rerr := c.n, c.err
	c.p = nil
	nwCalls.Put(c)
	if cerr != nil {
		return 0, false, nil
	}
	switch rerr {
	case 0:
		if nw.misses.Load() != 0 {
			nw.misses.Store(0)
		}
		return n, true, nil
	case unix.EAGAIN:
		if nw.misses.Load() < noWaitMissLimit {
			nw.misses.Add(1)
		}
		return 0, false, nil
	case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS, unix.ESPIPE:
		// This file (or kernel) does not do non-blocking reads: stop trying.
		nw.off.Store(true)
		return 0, false, nil
	}
	return 0, false, nil // let the blocking path report the error in os's form
}

// nwCall is one preadv2 call made through RawConn.Control. The calls are pooled and each
// keeps its method value, so a read allocates nothing (a closure capturing the results
// would cost three allocations per read).
type nwCall struct {
	p   []byte
	off int64
	n   int
	err unix.Errno
	fn  func(fd uintptr)
}

var nwCalls = sync.Pool{New: func() any {
	c := &nwCall{}
	c.fn = c.do
	return c
}}

// do is preadv2 with one iovec on the stack (x/sys's Preadv2 allocates its iovecs).
func (c *nwCall) do(fd uintptr) {
	var iov unix.Iovec
	iov.Base = &c.p[0]
	iov.SetLen(len(c.p))
	lo := uintptr(c.off)
	hi := uintptr(uint64(c.off) >> (unix.SizeofLong*8 - 1) >> 1)
	r, _, e := unix.Syscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
	c.n, c.err = int(r), e
}
